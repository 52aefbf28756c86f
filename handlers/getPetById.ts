import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/pets/{petId} (deprecated: its headers and sunset come from openapi.yaml). */
export const getPetById: OperationHandler<'getPetById'> = async (request) => {
  const { petId } = request.params
  const pet = await request.server.petsRepository.get(petId)
  if (pet === undefined) throw notFound(`no pet with id ${petId}`)
  return pet
}
