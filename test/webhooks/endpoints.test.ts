import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { webhookEvents } from '../../src/webhooks/events.js'
import { document } from '../helpers/contract.js'

// The webhook endpoints of an API key, managed through the API (scope webhooks): each key sees and
// changes only its own; bad input is a clear 4xx. Every response is checked against openapi.yaml.

const events = webhookEvents(document)
const receiverUrl = 'http://127.0.0.1:9/events' // nothing listens: these tests deliver nothing

async function setup (t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = { WEBHOOK_ALLOW_PRIVATE: 'true' }) {
  const api = await buildTestApp(t, { env })
  const keyHeaders = async (scopes?: readonly string[]) => ({
    authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 100_000, perDay: 10_000_000 }, scopes)}`,
    'content-type': 'application/json'
  })
  return { api, keyHeaders }
}

t.test('an endpoint is created with its secret shown once, then read, listed, changed, rotated and removed by its key alone', async (t) => {
  const { api, keyHeaders } = await setup(t)
  const mine = await keyHeaders()
  const other = await keyHeaders()
  const created = await api.request({ method: 'POST', url: '/v1/webhooks', headers: mine, payload: { url: receiverUrl, events: ['order.placed'], description: 'orders' } })
  t.equal(created.statusCode, 201)
  const endpoint = created.json() as { id: number, secret: string, enabled: boolean, events: string[], previousSecretExpiresAt: null }
  t.equal(created.headers.location, `/v1/webhooks/${endpoint.id}`, 'Location names it')
  t.match(endpoint, { url: receiverUrl, events: ['order.placed'], description: 'orders', enabled: true, disabledReason: null, previousSecretExpiresAt: null })
  t.match(endpoint.secret, /^whsec_/)

  const read = await api.request({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, headers: mine })
  t.equal(read.statusCode, 200)
  t.notOk('secret' in read.json(), 'the secret is never shown again')
  t.ok(read.headers.etag !== undefined, 'a GET has its ETag')
  t.equal((await api.request({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, headers: { ...mine, 'if-none-match': String(read.headers.etag) } })).statusCode, 304)

  for (const [method, url, payload] of [
    ['GET', `/v1/webhooks/${endpoint.id}`], ['PATCH', `/v1/webhooks/${endpoint.id}`, { enabled: false }], ['DELETE', `/v1/webhooks/${endpoint.id}`],
    ['POST', `/v1/webhooks/${endpoint.id}/secret`], ['GET', `/v1/webhooks/${endpoint.id}/deliveries`]
  ] as const) {
    expectError(t, await api.request({ method, url, headers: other, ...(payload === undefined ? {} : { payload }) }), 404, 'not_found', `${method} ${url} with another key`)
  }
  t.same((await api.request({ method: 'GET', url: '/v1/webhooks', headers: other })).json(), [], 'another key lists none of them')

  const changed = await api.request({ method: 'PATCH', url: `/v1/webhooks/${endpoint.id}`, headers: mine, payload: { events: ['order.placed', 'inventory.updated'], enabled: false } })
  t.equal(changed.statusCode, 200)
  t.match(changed.json(), { events: ['order.placed', 'inventory.updated'], enabled: false, description: 'orders', url: receiverUrl }, 'what is left out stays')
  t.match((await api.request({ method: 'PATCH', url: `/v1/webhooks/${endpoint.id}`, headers: mine, payload: { description: null, enabled: true } })).json(), { description: null, enabled: true })
  const multiLine = expectError(t, await api.request({ method: 'PATCH', url: `/v1/webhooks/${endpoint.id}`, headers: mine, payload: { description: 'stock\r\nsync' } }), 400, 'invalid_request', 'a description of two lines')
  t.match(multiLine.message, /body\/description must match pattern/)

  const rotated = await api.request({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/secret`, headers: mine })
  t.equal(rotated.statusCode, 200)
  const next = rotated.json() as { secret: string, previousSecretExpiresAt: string }
  t.not(next.secret, endpoint.secret, 'a new secret')
  const overlap = Date.parse(next.previousSecretExpiresAt) - Date.now()
  t.ok(overlap > 23.9 * 3600_000 && overlap <= 24 * 3600_000, 'the one before signs for 24 hours more')

  t.equal((await api.request({ method: 'DELETE', url: `/v1/webhooks/${endpoint.id}`, headers: mine })).statusCode, 204)
  expectError(t, await api.request({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, headers: mine }), 404, 'not_found', 'gone once removed')
})

t.test('a key has at most 10 endpoints: the 11th is 409 limit_exceeded; the list pages them', async (t) => {
  const { api, keyHeaders } = await setup(t)
  const headers = await keyHeaders()
  const ids: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: `${receiverUrl}/${i}`, events: ['order.placed'] } })
    t.equal(res.statusCode, 201)
    ids.push((res.json() as { id: number }).id)
  }
  expectError(t, await api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: receiverUrl, events: ['order.placed'] } }), 409, 'limit_exceeded', 'the 11th')
  const seen: number[] = []
  for (let url: string | undefined = '/v1/webhooks?limit=4'; url !== undefined;) {
    const res = await api.request({ method: 'GET', url, headers })
    t.equal(res.statusCode, 200)
    seen.push(...(res.json() as { id: number }[]).map((e) => e.id))
    url = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
  }
  t.same(seen, ids, 'pages of 4 list all 10, in id order, each once')
  const page = await api.request({ method: 'GET', url: '/v1/webhooks?limit=4', headers })
  const cursor = /cursor=([^&>]+)/.exec(String(page.headers.link))![1]
  const other = await keyHeaders()
  expectError(t, await api.request({ method: 'GET', url: `/v1/webhooks?cursor=${cursor}`, headers: other }), 400, 'invalid_request', 'another key cannot use the cursor')
  // Removing one makes room.
  await api.request({ method: 'DELETE', url: `/v1/webhooks/${ids[0]}`, headers })
  t.equal((await api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: receiverUrl, events: ['order.placed'] } })).statusCode, 201)
})

t.test('bad input is 400 invalid_request naming what is wrong', async (t) => {
  const { api, keyHeaders } = await setup(t, {})
  const headers = await keyHeaders()
  const cases: [string, unknown, RegExp][] = [
    ['a private address', { url: 'https://10.0.0.8/hook', events: ['order.placed'] }, /body\/url .*10\.0\.0\.8/],
    ['loopback', { url: 'https://127.0.0.1:8443/hook', events: ['order.placed'] }, /body\/url/],
    ['localhost', { url: 'https://localhost/hook', events: ['order.placed'] }, /body\/url .*localhost/],
    ['an IPv6 unique-local address', { url: 'https://[fd00::1]/hook', events: ['order.placed'] }, /body\/url/],
    ['an IPv4-mapped private address', { url: 'https://[::ffff:192.168.1.4]/hook', events: ['order.placed'] }, /body\/url/],
    ['plain http', { url: 'http://partner.example.com/hook', events: ['order.placed'] }, /body\/url must be an https address/],
    ['user info in the address', { url: 'https://user:pw@partner.example.com/hook', events: ['order.placed'] }, /body\/url must not carry user info/],
    ['a relative address', { url: '/hook', events: ['order.placed'] }, /body\/url/],
    ['an unknown event type', { url: 'https://partner.example.com/hook', events: ['order.shipped'] }, /body\/events/],
    ['no events', { url: 'https://partner.example.com/hook', events: [] }, /body\/events/],
    ['no url', { events: ['order.placed'] }, /url/],
    ['an unknown property', { url: 'https://partner.example.com/hook', events: ['order.placed'], secret: 'mine' }, /additional properties/],
    // PostgreSQL's text cannot hold a NUL: refused on both engines alike, before storage.
    ['a NUL in the description', { url: 'https://partner.example.com/hook', events: ['order.placed'], description: 'stock\u0000sync' }, /body\/description must match pattern/],
    ['a line break in the description', { url: 'https://partner.example.com/hook', events: ['order.placed'], description: 'stock\nsync' }, /body\/description must match pattern/]
  ]
  for (const [what, payload, message] of cases) {
    const body = expectError(t, await api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: payload as Record<string, unknown> }), 400, 'invalid_request', what)
    t.match(body.message, message, `${what}: ${body.message}`)
  }
  t.same((await api.request({ method: 'GET', url: '/v1/webhooks', headers })).json(), [], 'and nothing was made')
})

t.test('receiving an event type needs the scope that reads its data; the webhooks scope manages endpoints', async (t) => {
  const { api, keyHeaders } = await setup(t)
  const inventoryOnly = await keyHeaders(['webhooks', 'inventory:read'])
  const refused = await api.request({ method: 'POST', url: '/v1/webhooks', headers: inventoryOnly, payload: { url: receiverUrl, events: ['inventory.updated', 'order.placed'] } })
  expectError(t, refused, 403, 'insufficient_scope', 'order events without orders:read')
  t.equal(refused.headers['www-authenticate'], `Bearer realm="petstore", error="insufficient_scope", scope="${events.scopes['order.placed']}"`)
  t.equal((await api.request({ method: 'POST', url: '/v1/webhooks', headers: inventoryOnly, payload: { url: receiverUrl, events: ['inventory.updated'] } })).statusCode, 201, 'inventory events with inventory:read')
  const noWebhooks = await keyHeaders(['inventory:read', 'orders:read'])
  expectError(t, await api.request({ method: 'GET', url: '/v1/webhooks', headers: noWebhooks }), 403, 'insufficient_scope', 'without the webhooks scope')
})
