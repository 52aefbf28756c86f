import { createHash } from 'node:crypto'
import { ApiError } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/**
 * POST /v1/store/orders: reserves stock with a new order, once per Idempotency-Key (the rules are
 * in openapi.yaml). Replays answer the kept outcome as it was first answered.
 */
export const placeOrder: OperationHandler<'placeOrder'> = async (request, reply) => {
  const { petId, quantity, shipDate } = request.body
  const key = request.headers['idempotency-key']
  const apiKey = request.apiKey
  if (apiKey === null) throw new Error('placeOrder reached without an authenticated key')
  // The body as a JSON value: property order and white space make no other request.
  const fingerprint = createHash('sha256').update(JSON.stringify([petId, quantity, shipDate ?? null])).digest('base64url')
  const result = await request.server.ordersRepository.place(
    { petId, quantity, shipDate: shipDate ?? new Date().toISOString() },
    key === undefined ? undefined : { apiKeyId: apiKey.id, key, fingerprint })

  if (result.kind === 'in_use') throw new ApiError('idempotency_key_in_use', 'a request with this Idempotency-Key is still in progress')
  if (result.kind === 'reused') throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used with another request body')
  const replayed: Record<string, string> = result.replayed ? { 'idempotent-replayed': 'true' } : {}
  const { outcome } = result
  switch (outcome.kind) {
    case 'no_inventory': throw new ApiError('not_found', `no inventory entry for pet ${petId}`, replayed)
    case 'insufficient_stock':
      throw new ApiError('insufficient_stock', `pet ${petId} has ${outcome.available} units left to reserve; ${quantity} requested`, replayed)
    case 'placed':
      reply.headers({ location: `/v1/store/orders/${outcome.order.id}`, ...replayed })
      return reply.code(201).send(outcome.order)
  }
}
