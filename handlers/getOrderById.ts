import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/store/orders/{orderId}: one order, whatever its status; a cancelled order is gone (404). */
export const getOrderById: OperationHandler<'getOrderById'> = async (request) => {
  const { orderId } = request.params
  const order = await request.server.ordersRepository.get(orderId)
  if (order === undefined) throw notFound(`no order with id ${orderId}`)
  return order
}
