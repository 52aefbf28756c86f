import { ApiError, notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** DELETE /v1/store/orders/{orderId}: an open order is deleted (204); a delivered one stays (409). */
export const cancelOrder: OperationHandler<'cancelOrder'> = async (request, reply) => {
  const { orderId } = request.params
  const outcome = await request.server.ordersRepository.cancel(orderId)
  switch (outcome.kind) {
    case 'cancelled': return reply.code(204).send()
    case 'not_found': throw notFound(`no order with id ${orderId}`)
    case 'invalid_transition': throw new ApiError('invalid_transition', `order ${orderId} is ${outcome.from}; it cannot be cancelled`)
  }
}
