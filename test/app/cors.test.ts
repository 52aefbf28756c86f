import t from 'tap'
import type { Response as InjectResponse } from 'light-my-request'
import { ConfigError, loadConfig } from '../../src/config.js'
import { EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../../src/plugins/external/cors.js'
import { expectUnauthorized } from '../helpers/assertions.js'
import { buildTestApp } from '../helpers/app.js'
import { apiDocument, documentMethods, methodsByPath, operations, sampleUrl } from '../helpers/surface.js'

const PAGE = 'http://127.0.0.1:5173'
const OTHER_PAGE = 'https://dashboard.partner.example'
const STRANGER = 'https://evil.example'

const corsHeaders = (res: InjectResponse) => Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))
const splitList = (value: unknown) => String(value).split(',').map((item) => item.trim())

// What a page may send: the bearer key, a JSON body, the header parameters, and X-Request-Id.
const requestHeaders = [...new Set(['Authorization', 'X-Request-Id',
  ...operations.some((op) => op.definition.requestBody !== undefined) ? ['Content-Type'] : [],
  ...operations.flatMap((op) => ((op.definition.parameters ?? []) as { in: string, name: string }[]).filter((p) => p.in === 'header').map((p) => p.name))])].sort()

// A preflight is no operation of openapi.yaml: it is sent with app.inject, outside the contract check.
function preflight (origin: string, url = '/v1/inventory', method = 'GET', headers = 'authorization,if-none-match') {
  return { method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers } }
}

t.test('CORS_ORIGINS: * or a list of origins; anything else is refused in one line naming the variable', async (t) => {
  t.equal(loadConfig({}).corsOrigins, undefined, 'unset: CORS is off')
  t.equal(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*')
  t.same(loadConfig({ CORS_ORIGINS: `${PAGE}, ${OTHER_PAGE}` }).corsOrigins, [PAGE, OTHER_PAGE], 'comma-separated, spaces ignored')
  t.same(loadConfig({ CORS_ORIGINS: 'http://[::1]:8080' }).corsOrigins, ['http://[::1]:8080'], 'an IPv6 origin')
  for (const value of ['https://app.example/', 'https://app.example/path', 'app.example', 'ftp://app.example', 'null',
    `${PAGE},`, `*,${PAGE}`, 'https://App.example', 'http://app.example:80', 'https://user@app.example', 'https://app.example?x=1']) {
    const error = t.throws(() => loadConfig({ CORS_ORIGINS: value }), ConfigError, `${JSON.stringify(value)} is refused`) as Error
    t.match(error.message, /^Invalid configuration: CORS_ORIGINS must be \* or a comma-separated list of origins/, `${JSON.stringify(value)}: the message names the variable`)
    t.notMatch(error.message, /\n/, 'in one line')
  }
})

t.test('a page may read every response header openapi.yaml declares but Allow and WWW-Authenticate; the introduction lists them', async (t) => {
  type Json = Record<string, unknown>
  const declared = new Set<string>()
  const responses = [...Object.values((apiDocument.resolved.components as Json).responses as Record<string, Json>),
    ...operations.flatMap((op) => Object.values(op.definition.responses as Record<string, Json>))]
  for (const response of responses) for (const name of Object.keys((response.headers ?? {}) as Json)) declared.add(name)
  t.ok(declared.has('Location') && declared.has('Idempotent-Replayed'), 'placeOrder\'s Location and Idempotent-Replayed are among them')
  // A page learns what Allow and WWW-Authenticate say from the Error body.
  t.same([...EXPOSED_HEADERS].sort(), [...declared].filter((name) => name !== 'Allow' && name !== 'WWW-Authenticate').sort(), 'exposed: the declared response headers')

  const introduction = String((apiDocument.resolved.info as Json).description)
  const paragraph = introduction.split('\n\n').find((text) => text.includes('`Access-Control-Expose-Headers`'))
  t.ok(paragraph, 'the introduction has a paragraph on the headers a page can read')
  const listed = [...String(paragraph).split('`Access-Control-Expose-Headers`')[1]!.matchAll(/`([A-Za-z-]+)`/g)].map((match) => match[1])
  t.same(listed.sort(), [...EXPOSED_HEADERS].sort(), 'it lists exactly the exposed headers')
})

t.test('without CORS_ORIGINS no response carries a CORS header, and a preflight is an unauthenticated OPTIONS', async (t) => {
  const api = await buildTestApp(t)
  const res = await api.app.inject(preflight(PAGE))
  expectUnauthorized(t, res, 'the preflight')
  t.same(corsHeaders(res), [], 'no Access-Control-* header on the preflight')
  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...await api.authHeader(), origin: PAGE } })
  t.equal(list.statusCode, 200)
  t.same(corsHeaders(list), [], 'none on a request with an Origin either')
})

t.test('a preflight from an allowed origin is answered 204 before authentication, and is not counted', async (t) => {
  const api = await buildTestApp(t, { env: { CORS_ORIGINS: `${PAGE},${OTHER_PAGE}` } })
  const remoteAddress = '203.0.113.7'
  // Every operation of openapi.yaml, from both origins in turn.
  for (const [index, op] of operations.entries()) {
    const [origin, url, method] = [index % 2 === 0 ? PAGE : OTHER_PAGE, sampleUrl(op), op.method]
    const res = await api.app.inject({ ...preflight(origin, url, method), remoteAddress })
    t.equal(res.statusCode, 204, `${method} ${url} from ${origin}: 204 without a key`)
    t.equal(res.rawPayload.length, 0, 'no body')
    t.equal(res.headers['access-control-allow-origin'], origin, 'the origin is allowed')
    t.same(splitList(res.headers['access-control-allow-methods']).sort(), documentMethods().sort(), 'the methods of the document\'s operations')
    t.same(splitList(res.headers['access-control-allow-headers']).sort(), requestHeaders, 'the request headers the document uses')
    t.same(splitList(res.headers['access-control-expose-headers']), EXPOSED_HEADERS, 'the response headers a page may read')
    t.equal(res.headers['access-control-max-age'], String(PREFLIGHT_MAX_AGE_SECONDS), 'cacheable for 10 minutes')
    t.equal(PREFLIGHT_MAX_AGE_SECONDS, 600)
    t.match(String(res.headers.vary), /Origin/, 'Vary: Origin')
    t.equal(res.headers['x-ratelimit-remaining'], undefined, 'no rate-limit headers: the limiter did not see it')
  }
  // Requests without a key are counted per client address: had a preflight been counted, this
  // first unauthenticated request of the address would show less than 59 left of its 60.
  const unauthenticated = await api.request({ method: 'GET', url: '/v1/inventory', remoteAddress })
  expectUnauthorized(t, unauthenticated)
  t.equal(unauthenticated.headers['x-ratelimit-remaining'], '59', 'the preflights were not counted for the address')
})

t.test('an origin not in the list gets no CORS header; its preflight is answered 204 without them, uncounted', async (t) => {
  const api = await buildTestApp(t, { env: { CORS_ORIGINS: PAGE } })
  const remoteAddress = '203.0.113.8'
  const refused = await api.app.inject({ ...preflight(STRANGER), remoteAddress })
  t.equal(refused.statusCode, 204, 'answered, not authenticated')
  t.same(corsHeaders(refused), [], 'without any Access-Control-* header, so the browser refuses the call')
  const unauthenticated = await api.request({ method: 'GET', url: '/v1/inventory', remoteAddress })
  t.equal(unauthenticated.headers['x-ratelimit-remaining'], '59', 'not counted')

  const headers = await api.authHeader()
  for (const origin of [STRANGER, 'http://127.0.0.1:5174', 'null']) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, origin } })
    t.equal(res.statusCode, 200, `${origin}: the request itself is served (CORS is enforced by the browser)`)
    t.same(corsHeaders(res), [], `${origin}: no Access-Control-* header`)
  }
  const serverToServer = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.same(corsHeaders(serverToServer), [], 'none without an Origin header')
})

t.test('requests from an allowed origin carry the CORS headers, errors included', async (t) => {
  const api = await buildTestApp(t, { env: { CORS_ORIGINS: PAGE } })
  const headers = { ...await api.authHeader(), origin: PAGE }
  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.equal(list.statusCode, 200)
  t.equal(list.headers['access-control-allow-origin'], PAGE)
  t.same(splitList(list.headers['access-control-expose-headers']), EXPOSED_HEADERS, 'the rate-limit headers, ETag and the rest are readable')
  t.equal(list.headers['access-control-allow-credentials'], undefined, 'no credentials mode: the key is a header, not a cookie')

  // placeOrder's answers: a page reads Location, and Idempotent-Replayed on a retry.
  const order = { ...headers, 'content-type': 'application/json', 'idempotency-key': 'page-order-1' }
  const placed = await api.request({ method: 'POST', url: '/v1/store/orders', headers: order, payload: { petId: 12, quantity: 1 } })
  const replayed = await api.request({ method: 'POST', url: '/v1/store/orders', headers: order, payload: { petId: 12, quantity: 1 } })
  t.equal(placed.statusCode, 201)
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  for (const res of [placed, replayed]) {
    t.equal(res.headers['access-control-allow-origin'], PAGE)
    t.ok(['Location', 'Idempotent-Replayed'].every((name) => splitList(res.headers['access-control-expose-headers']).includes(name)), 'Location and Idempotent-Replayed are readable')
  }

  const unauthorized = await api.request({ method: 'GET', url: '/v1/inventory', headers: { origin: PAGE } })
  expectUnauthorized(t, unauthorized)
  t.equal(unauthorized.headers['access-control-allow-origin'], PAGE, 'a 401 is readable by the page too')

  // OPTIONS without Access-Control-Request-Method is no preflight: it is a request like any other.
  const options = await api.request({ method: 'OPTIONS', url: '/v1/inventory', headers })
  t.equal(options.statusCode, 405, 'an OPTIONS that is not a preflight still gets 405')
  t.same(splitList(options.headers.allow).sort(), methodsByPath().get('/inventory')!.sort(), 'Allow: the methods of /inventory')
  t.equal(options.headers['access-control-allow-origin'], PAGE)
  expectUnauthorized(t, await api.request({ method: 'OPTIONS', url: '/v1/inventory', headers: { origin: PAGE } }), 'and 401 without a key')
  const healthz = await api.request({ method: 'OPTIONS', url: '/healthz', headers: { origin: PAGE } })
  t.equal(healthz.statusCode, 405, 'outside /v1 too')
})

t.test('CORS_ORIGINS=* allows every origin', async (t) => {
  const api = await buildTestApp(t, { env: { CORS_ORIGINS: '*' } })
  const res = await api.app.inject(preflight(STRANGER))
  t.equal(res.statusCode, 204)
  t.equal(res.headers['access-control-allow-origin'], '*')
  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...await api.authHeader(), origin: STRANGER } })
  t.equal(list.headers['access-control-allow-origin'], '*')
  t.same(splitList(list.headers['access-control-expose-headers']), EXPOSED_HEADERS)
})
