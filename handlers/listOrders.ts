import { nextPageLink } from '../src/contract/paging.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/**
 * GET /v1/store/orders: one page of orders in id order, with a `Link` to the next while more
 * follow. Keyset paging (after the last id of the page before) keeps pages stable while orders
 * are placed and cancelled.
 */
export const listOrders: OperationHandler<'listOrders'> = async (request, reply) => {
  const { status, petId, limit = 100, cursor } = request.query
  const { paging } = request.server
  const filters = { status, petId }
  const page = await request.server.ordersRepository.page({ statuses: status, petId, afterId: paging.after('orders', filters, cursor), limit })
  const last = page.orders.at(-1)
  if (page.more && last !== undefined) {
    reply.header('link', nextPageLink('/v1/store/orders', { ...filters, limit }, paging.cursor('orders', filters, last.id)))
  }
  return page.orders
}
