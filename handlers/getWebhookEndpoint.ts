import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/webhooks/{endpointId}: one endpoint of the key (another key's is 404). */
export const getWebhookEndpoint: OperationHandler<'getWebhookEndpoint'> = async (request) => {
  const { endpointId } = request.params
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('getWebhookEndpoint reached without an authenticated key')
  const endpoint = await request.server.webhooksRepository.get(apiKey.id, endpointId)
  if (endpoint === undefined) throw notFound(`no webhook endpoint of yours with id ${endpointId}`)
  return endpoint
}
