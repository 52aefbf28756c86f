import { JsonText } from '../src/http/json-text.js'
import type { OperationHandler, SuccessBody } from '../src/http/operation-types.js'

/**
 * GET /v1/store/orders: every order, ordered by id. Like the inventory list, the store hands over
 * JSON text it keeps up to date; the response serializer still validates it against openapi.yaml.
 */
export const listOrders: OperationHandler<'listOrders'> = async (request) => {
  return new JsonText<SuccessBody<'listOrders'>>(await request.server.store.listOrdersJson())
}
