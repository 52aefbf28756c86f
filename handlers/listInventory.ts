import { JsonText } from '../src/contract/json-text.js'
import type { OperationHandler, SuccessBody } from '../src/contract/operation-types.js'

/**
 * GET /v1/inventory: every entry with its derived status, ordered by petId. The store builds the
 * JSON text itself (no object per row); the response serializer still validates it against
 * openapi.yaml before it is sent.
 */
export const listInventory: OperationHandler<'listInventory'> = async (request) => {
  return new JsonText<SuccessBody<'listInventory'>>(await request.server.inventoryRepository.listJson())
}
