import { notImplemented } from '../src/http/not-implemented.js'

/**
 * placeOrder: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const placeOrder: OperationHandler<'placeOrder'> = async (request, reply) => { … }
 * and `import type { OperationHandler } from '../src/http/operation-types.js'` (see docs/changing-the-api.md).
 */
export const placeOrder = notImplemented('placeOrder')
