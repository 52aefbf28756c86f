import { ApiError, notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** PATCH /v1/store/orders/{orderId}: approves or delivers an order (transitions in openapi.yaml). */
export const updateOrder: OperationHandler<'updateOrder'> = async (request) => {
  const { orderId } = request.params
  const { status } = request.body
  const outcome = await request.server.ordersRepository.setStatus(orderId, status)
  switch (outcome.kind) {
    case 'updated': return outcome.order
    case 'not_found': throw notFound(`no order with id ${orderId}`)
    case 'invalid_transition': throw new ApiError('invalid_transition', `order ${orderId} is ${outcome.from}; it cannot become ${status}`)
    case 'insufficient_stock':
      throw new ApiError('insufficient_stock', `pet ${outcome.order.petId} has ${outcome.stock} units in stock; order ${orderId} needs ${outcome.order.quantity}`)
  }
}
