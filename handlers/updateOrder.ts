import { notImplemented } from '../src/http/not-implemented.js'

/**
 * updateOrder: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const updateOrder: OperationHandler<'updateOrder'> = async (request, reply) => { … }
 * and `import type { OperationHandler } from '../src/http/operation-types.js'` (see docs/changing-the-api.md).
 */
export const updateOrder = notImplemented('updateOrder')
