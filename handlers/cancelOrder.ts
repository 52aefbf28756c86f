import { notImplemented } from '../src/http/not-implemented.js'

/**
 * cancelOrder: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const cancelOrder: OperationHandler<'cancelOrder'> = async (request, reply) => { … }
 * and `import type { OperationHandler } from '../src/http/operation-types.js'` (see docs/changing-the-api.md).
 */
export const cancelOrder = notImplemented('cancelOrder')
