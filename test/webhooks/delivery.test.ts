import t, { type Test } from 'tap'
import { Webhook } from 'standardwebhooks'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { webhookEvents } from '../../src/webhooks/events.js'
import { document } from '../helpers/contract.js'
import { startReceiver, verifiedBy, type Received } from '../helpers/webhook-receiver.js'

// Events end to end, on both engines: a change through the API, its event recorded in the same
// transaction, delivered to a real receiver on loopback with the Standard Webhooks headers, the
// signature checked apart from the library that made it (node:crypto here, as a partner might).

const QUICK = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms', WEBHOOK_TIMEOUT_MS: '1000' }
const events = webhookEvents(document)

type Endpoint = { id: number, secret: string, url: string, events: string[] }

async function setup (t: Test, database: 'sqlite' | 'postgres', env: Record<string, string> = {}) {
  const api = await buildTestApp(t, { database, env: { ...QUICK, ...env } })
  const headers = await api.authHeader('enterprise')
  const json = { ...headers, 'content-type': 'application/json' }
  const subscribe = async (url: string, types: readonly string[] = events.types): Promise<Endpoint> => {
    const res = await api.request({ method: 'POST', url: '/v1/webhooks', headers: json, payload: { url, events: types } })
    if (res.statusCode !== 201) throw new Error(`createWebhookEndpoint answered ${res.statusCode}: ${res.body}`)
    return res.json()
  }
  return { api, headers, json, subscribe }
}

const bodyOf = (received: Received) => JSON.parse(received.body) as { id: string, type: string, createdAt: string, data: Record<string, unknown> }

async function placeOrder (api: TestApp, json: Record<string, string>, petId: number, quantity: number) {
  const res = await api.request({ method: 'POST', url: '/v1/store/orders', headers: json, payload: { petId, quantity } })
  if (res.statusCode !== 201) throw new Error(`placeOrder answered ${res.statusCode}: ${res.body}`)
  return res.json() as { id: number }
}

type LogEntry = { id: number, eventId: string, eventType: string, attempt: number, statusCode: number | null, error: string | null, nextAttemptAt: string | null, responseBody: string | null }

/** The endpoint's delivery log, newest first, once it holds at least `count` attempts (an attempt is logged after its answer). */
async function deliveryLog (api: TestApp, headers: Record<string, string>, id: number, count: number): Promise<LogEntry[]> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const res = await api.request({ method: 'GET', url: `/v1/webhooks/${id}/deliveries`, headers })
    if (res.statusCode !== 200) throw new Error(`listWebhookDeliveries answered ${res.statusCode}: ${res.body}`)
    const log = res.json() as LogEntry[]
    if (log.length >= count || Date.now() > deadline) return log
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

for (const database of ['sqlite', 'postgres'] as const) {
  t.test(`${database}: every event type is delivered, signed, with its declared body`, async (t) => {
    const { api, json, subscribe } = await setup(t, database)
    const receiver = await startReceiver(t)
    const endpoint = await subscribe(receiver.url)
    t.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{32}$/, 'the secret is shown at creation')

    t.equal((await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: { quantity: 40 } })).statusCode, 200)
    const order = await placeOrder(api, json, 1, 2)
    t.equal((await api.request({ method: 'PATCH', url: `/v1/store/orders/${order.id}`, headers: json, payload: { status: 'approved' } })).statusCode, 200)
    t.equal((await api.request({ method: 'PATCH', url: `/v1/store/orders/${order.id}`, headers: json, payload: { status: 'delivered' } })).statusCode, 200)
    const second = await placeOrder(api, json, 1, 1)
    t.equal((await api.request({ method: 'DELETE', url: `/v1/store/orders/${second.id}`, headers: json })).statusCode, 204)

    // PATCH 1 → 40; placed; approved; delivered (stock 38); placed; cancelled. inventory.updated
    // comes with the PATCH and the delivery (quantity changed); the others leave the status alone.
    const received = await receiver.until(7)
    t.same(received.map((r) => bodyOf(r).type).sort(),
      ['inventory.updated', 'inventory.updated', 'order.approved', 'order.cancelled', 'order.delivered', 'order.placed', 'order.placed'], 'the events of the changes, and no others')
    for (const request of received) {
      const body = bodyOf(request)
      t.equal(request.headers['content-type'], 'application/json')
      t.equal(request.headers['webhook-id'], body.id, `${body.type}: webhook-id is the event's id`)
      t.match(String(request.headers['webhook-timestamp']), /^\d{10}$/, 'webhook-timestamp in Unix seconds')
      t.same(verifiedBy(request, [endpoint.secret]), [endpoint.secret], `${body.type}: signed with the endpoint's secret (node:crypto)`)
      t.doesNotThrow(() => new Webhook(endpoint.secret).verify(request.body, request.headers as Record<string, string>), 'and valid for the Standard Webhooks library')
      t.equal(events.problem(body.type, body), undefined, `${body.type}: the body matches its schema in openapi.yaml`)
    }
    const patched = received.map(bodyOf).find((b) => b.type === 'inventory.updated' && b.data.quantity === 40)
    t.match(patched?.data, { petId: 1, quantity: 40, status: 'available', previous: { quantity: Number, status: String } }, 'the PATCH\'s event has the entry as it is now, and as it was')
    t.not((patched?.data.previous as { quantity: number } | undefined)?.quantity, 40)
    const list = (await api.request({ method: 'GET', url: '/v1/inventory', headers: json })).json() as { petId: number, quantity: number, status: string }[]
    const delivered = received.map(bodyOf).find((b) => b.type === 'inventory.updated' && b.data.quantity === 38)!
    t.same({ petId: 1, quantity: delivered.data.quantity, status: delivered.data.status }, list.find((item) => item.petId === 1), 'the delivery\'s event agrees with the inventory as listed')
    t.equal(received.filter((r) => bodyOf(r).type === 'order.cancelled').map((r) => bodyOf(r).data.id)[0], second.id, 'order.cancelled carries the order as it was')

    const log = await deliveryLog(api, json, endpoint.id, received.length)
    t.equal(log.length, received.length, 'every attempt is in the delivery log (settled once its answer came)')
    t.match(log[0], { attempt: 1, statusCode: 200, error: null, nextAttemptAt: null })
    t.same(log.map((entry) => entry.eventId).sort(), received.map((r) => bodyOf(r).id).sort(), 'one entry per event delivered')
  })
}
