import { nextPageLink } from '../src/contract/paging.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/webhooks: the key's own endpoints, in id order, one page at a time. */
export const listWebhookEndpoints: OperationHandler<'listWebhookEndpoints'> = async (request, reply) => {
  const { limit = 100, cursor } = request.query
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('listWebhookEndpoints reached without an authenticated key')
  const { paging } = request.server
  // A cursor belongs to the key's own list: another key's is refused.
  const filters = { key: apiKey.id }
  const page = await request.server.webhooksRepository.page(apiKey.id, paging.after('webhooks', filters, cursor), limit)
  const last = page.endpoints.at(-1)
  if (page.more && last !== undefined) reply.header('link', nextPageLink('/v1/webhooks', { limit }, paging.cursor('webhooks', filters, last.id)))
  return page.endpoints
}
