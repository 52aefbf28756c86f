import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** DELETE /v1/webhooks/{endpointId}: removes the endpoint, its log and what was still to send to it. */
export const deleteWebhookEndpoint: OperationHandler<'deleteWebhookEndpoint'> = async (request, reply) => {
  const { endpointId } = request.params
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('deleteWebhookEndpoint reached without an authenticated key')
  if (!await request.server.webhooksRepository.remove(apiKey.id, endpointId)) throw notFound(`no webhook endpoint of yours with id ${endpointId}`)
  return reply.code(204).send()
}
