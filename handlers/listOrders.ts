import type { OperationHandler } from '../src/http/operation-types.js'

/** GET /v1/store/orders: every order, ordered by id. */
export const listOrders: OperationHandler<'listOrders'> = async (request) => {
  return request.server.store.listOrders()
}
