import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { AttemptOutcome, ClaimedDelivery, DeliveryQueue, Settlement } from '../../src/repositories/webhook-deliveries.js'
import { DeliveryWorker } from '../../src/webhooks/delivery.js'
import { webhookEvents } from '../../src/webhooks/events.js'
import { SecretBox } from '../../src/webhooks/secrets.js'
import { newSecret } from '../../src/webhooks/signing.js'
import { document } from '../helpers/contract.js'

// The worker settles the attempts that end together in one transaction. A settlement the
// storage refuses for its own content must not take the others down with it: the batch is
// settled again one by one, and the refused one once more without the receiver's answer.

t.test('a settlement refused for its content stays with its own attempt', async (t) => {
  // The receiver answers the three requests together, once all have arrived: their attempts end at once.
  const held: ServerResponse[] = []
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => { if (held.push(response) === 3) for (const r of held) r.end('thanks') })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const receiver = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events` }
  const event = (n: number) => JSON.stringify({ id: `evt_${'A'.repeat(21)}${n}`, type: 'inventory.updated', createdAt: '2026-11-28T09:05:00.000Z', data: { petId: n, quantity: 5, status: 'available', previous: { quantity: 7, status: 'available' } } })
  const deliveries: ClaimedDelivery[] = [1, 2, 3].map((n) => ({
    id: n, lease: 'test.1', endpointId: 1, apiKeyId: 'key_test', failingSince: null, attempts: 0, eventId: `evt_${'A'.repeat(21)}${n}`, type: 'inventory.updated',
    payload: event(n), url: receiver.url, secret: newSecret(), previousSecret: null, previousSecretExpiresAt: null
  }))
  const calls: number[][] = []
  const recorded = new Map<number, AttemptOutcome>()
  let claimed = false
  const queue: DeliveryQueue = {
    anyDue: async () => !claimed,
    claim: async () => { claimed = true; return deliveries },
    // Delivery 2's answer is what this storage refuses (as PostgreSQL refuses a NUL in text).
    settle: async (batch: readonly Settlement[]) => {
      calls.push(batch.map((s) => s.delivery.id))
      if (batch.some((s) => s.delivery.id === 2 && s.outcome.responseBody !== null)) throw new Error('invalid byte sequence')
      for (const s of batch) recorded.set(s.delivery.id, s.outcome)
      return batch.length
    },
    pending: async () => ({ count: 0, oldest: null }),
    redeliver: async () => ({ outcome: 'no_endpoint' })
  }
  const warnings: string[] = []
  const log = { warn: (_: unknown, message: string) => { warnings.push(message) }, info: () => {}, error: () => {}, debug: () => {}, child () { return this } }
  const worker = new DeliveryWorker({
    queue, events: webhookEvents(document), box: new SecretBox(undefined), timeoutMs: 2000, retrySchedule: [1000], allowPrivate: true, now: Date.now,
    log: log as unknown as ConstructorParameters<typeof DeliveryWorker>[0]['log'], metrics: null, pollMs: 20
  })
  worker.start()
  for (let i = 0; i < 150 && recorded.size < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  await worker.close()
  t.same([...recorded.keys()].sort(), [1, 2, 3], 'all three attempts are recorded')
  t.match(recorded.get(1), { delivered: true, responseBody: 'thanks' }, 'the others with the receiver\'s answer')
  t.match(recorded.get(3), { delivered: true, responseBody: 'thanks' })
  t.match(recorded.get(2), { delivered: true, responseBody: null }, 'the refused one without it')
  t.same(calls[0], [1, 2, 3], 'the attempts that ended together are settled as one batch first')
  t.ok(warnings.some((w) => /recorded without it/.test(w)), 'and the fallback is logged')
  t.equal(held.length, 3, 'no attempt made twice')
})
