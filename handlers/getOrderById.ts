import { notImplemented } from '../src/http/not-implemented.js'

/**
 * getOrderById: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const getOrderById: OperationHandler<'getOrderById'> = async (request, reply) => { … }
 * and `import type { OperationHandler } from '../src/http/operation-types.js'` (see docs/changing-the-api.md).
 */
export const getOrderById = notImplemented('getOrderById')
