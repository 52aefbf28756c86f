import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** PATCH /v1/webhooks/{endpointId}: the address, events, description or enabled; the rest stays. */
export const updateWebhookEndpoint: OperationHandler<'updateWebhookEndpoint'> = async (request) => {
  const { endpointId } = request.params
  const { url, events, description, enabled } = request.body
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('updateWebhookEndpoint reached without an authenticated key')
  const { webhookRules, webhooksRepository } = request.server
  if (url !== undefined) await webhookRules.checkUrl(url)
  if (events !== undefined) webhookRules.checkScopes(apiKey, events)
  const endpoint = await webhooksRepository.update(apiKey.id, endpointId, {
    ...(url === undefined ? {} : { url }),
    ...(events === undefined ? {} : { events }),
    ...(description === undefined ? {} : { description }),
    ...(enabled === undefined ? {} : { enabled })
  })
  if (endpoint === undefined) throw notFound(`no webhook endpoint of yours with id ${endpointId}`)
  return endpoint
}
