import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** PATCH /v1/inventory/{petId}: sets the stock; the status follows from the new quantity. */
export const updateInventory: OperationHandler<'updateInventory'> = async (request) => {
  const { petId } = request.params
  const item = await request.server.inventoryRepository.update(petId, request.body.quantity)
  if (item === undefined) throw notFound(`no inventory entry for pet ${petId}`)
  return item
}
