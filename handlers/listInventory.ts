import type { OperationHandler } from '../src/http/operation-types.js'

/** GET /v1/inventory: every entry with its derived status, ordered by petId. */
export const listInventory: OperationHandler<'listInventory'> = async (request) => {
  return request.server.store.listInventory()
}
