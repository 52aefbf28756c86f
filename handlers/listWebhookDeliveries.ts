import { notFound } from '../src/contract/errors.js'
import { nextPageLink } from '../src/contract/paging.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/webhooks/{endpointId}/deliveries: the endpoint's attempts, newest first, one page at a time. */
export const listWebhookDeliveries: OperationHandler<'listWebhookDeliveries'> = async (request, reply) => {
  const { endpointId } = request.params
  const { limit = 100, cursor } = request.query
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('listWebhookDeliveries reached without an authenticated key')
  const { paging } = request.server
  const list = `webhooks/${endpointId}/deliveries`
  const filters = { key: apiKey.id }
  const page = await request.server.webhooksRepository.attempts(apiKey.id, endpointId, paging.after(list, filters, cursor), limit)
  if (page === undefined) throw notFound(`no webhook endpoint of yours with id ${endpointId}`)
  const last = page.attempts.at(-1)
  if (page.more && last !== undefined) reply.header('link', nextPageLink(`/v1/webhooks/${endpointId}/deliveries`, { limit }, paging.cursor(list, filters, last.id)))
  return page.attempts
}
