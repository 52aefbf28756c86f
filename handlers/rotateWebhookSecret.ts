import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'
import { newSecret } from '../src/webhooks/signing.js'

/** POST /v1/webhooks/{endpointId}/secret: a new signing secret; the one before signs too for 24 hours. */
export const rotateWebhookSecret: OperationHandler<'rotateWebhookSecret'> = async (request) => {
  const { endpointId } = request.params
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('rotateWebhookSecret reached without an authenticated key')
  const secret = newSecret()
  const rotated = await request.server.webhooksRepository.rotate(apiKey.id, endpointId, secret)
  if (rotated === undefined) throw notFound(`no webhook endpoint of yours with id ${endpointId}`)
  return { ...rotated.endpoint, secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt }
}
