import { ApiError } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'
import { newSecret } from '../src/webhooks/signing.js'

/** POST /v1/webhooks: a new endpoint of the key, with its signing secret (shown only now). */
export const createWebhookEndpoint: OperationHandler<'createWebhookEndpoint'> = async (request, reply) => {
  const { url, events, description } = request.body
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('createWebhookEndpoint reached without an authenticated key')
  const { webhookRules, webhooksRepository } = request.server
  await webhookRules.checkUrl(url)
  webhookRules.checkScopes(apiKey, events)
  const secret = newSecret()
  const outcome = await webhooksRepository.create(apiKey.id, { url, events, description }, secret)
  if (outcome.kind === 'limit_exceeded') {
    throw new ApiError('limit_exceeded', 'this API key has 10 webhook endpoints, the most it may have: remove one first')
  }
  reply.header('location', `/v1/webhooks/${outcome.endpoint.id}`)
  return reply.code(201).send({ ...outcome.endpoint, secret, previousSecretExpiresAt: null })
}
