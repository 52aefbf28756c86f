/**
 * Security headers (src/plugins/security-headers.ts, @fastify/helmet): every response carries
 * them; API responses have a content-security-policy that allows nothing, the docs page one that
 * lets Swagger UI run its own assets only and "Try it out" reach the documented servers. That
 * Swagger UI really works under it is proven in a browser by test/e2e/docs-browser.test.ts.
 */
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { specFile } from '../helpers/spec-file.js'

const PUBLIC_BASE_URL = 'https://docs.petstore.test:8443'

/** The directives of a content-security-policy header, by name. */
function directives (header: unknown): Map<string, string[]> {
  const map = new Map<string, string[]>()
  for (const part of String(header ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/)
    if (name) map.set(name.toLowerCase(), values)
  }
  return map
}

const COMMON: Record<string, RegExp> = {
  'x-content-type-options': /^nosniff$/,
  'strict-transport-security': /max-age=\d{7,}/,
  'referrer-policy': /^no-referrer$/,
  'x-frame-options': /^(DENY|SAMEORIGIN)$/,
  'cross-origin-opener-policy': /^same-origin$/,
  'cross-origin-resource-policy': /^same-origin$/
}

t.test('every response carries the security headers; API responses a policy that allows nothing', async (t) => {
  const api = await buildTestApp(t, { env: { PUBLIC_BASE_URL } })
  const authorization = `Bearer ${await api.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })}`
  const cases: [string, string, Record<string, string>, number][] = [
    ['GET', '/v1/inventory', { authorization }, 200],
    ['GET', '/v1/inventory', {}, 401],
    ['PATCH', '/v1/inventory/1', { authorization, 'content-type': 'application/json' }, 400],
    ['GET', '/v1/pets/424242', { authorization }, 404],
    ['DELETE', '/v1/inventory', { authorization }, 405],
    ['GET', '/openapi.json', {}, 200],
    ['GET', '/openapi.yaml', {}, 200],
    ['GET', '/healthz', {}, 200],
    ['GET', '/nowhere', {}, 404]
  ]
  for (const [method, url, headers, status] of cases) {
    const res = await api.request({ method, url, headers, ...(method === 'PATCH' ? { payload: '{}' } : {}) })
    const what = `${method} ${url} (${status})`
    t.equal(res.statusCode, status, what)
    for (const [name, pattern] of Object.entries(COMMON)) t.match(res.headers[name], pattern, `${what}: ${name}`)
    const csp = directives(res.headers['content-security-policy'])
    t.same(csp.get('default-src'), ["'none'"], `${what}: default-src 'none'`)
    t.same(csp.get('frame-ancestors'), ["'none'"], `${what}: frame-ancestors 'none'`)
  }
})

t.test('the docs page: Swagger UI\'s own scripts only, and "Try it out" may reach the documented servers', async (t) => {
  const api = await buildTestApp(t, { env: { PUBLIC_BASE_URL } })
  const documented = specFile.servers.filter((s) => /^https?:/.test(s.url))
  t.ok(documented.length > 0, 'openapi.yaml documents servers with a fixed address')
  for (const url of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/json']) {
    const res = await api.request({ method: 'GET', url })
    t.equal(res.statusCode, 200, `${url}: 200`)
    for (const [name, pattern] of Object.entries(COMMON)) t.match(res.headers[name], pattern, `${url}: ${name}`)
    const csp = directives(res.headers['content-security-policy'])
    t.same(csp.get('default-src'), ["'self'"], `${url}: default-src 'self'`)
    t.same(csp.get('script-src'), ["'self'"], `${url}: scripts from this origin only (no inline script, no eval)`)
    t.same(csp.get('script-src-attr'), ["'none'"], `${url}: no inline event handlers`)
    t.same(csp.get('object-src'), ["'none'"], `${url}: no plugins`)
    t.same(csp.get('base-uri'), ["'self'"], `${url}: base-uri 'self'`)
    t.same(csp.get('frame-ancestors'), ["'self'"], `${url}: not framed by other sites`)
    const styles = csp.get('style-src') ?? []
    t.equal(styles[0], "'self'", `${url}: styles from this origin`)
    t.ok(styles.slice(1).every((s) => /^'sha256-[A-Za-z0-9+/=]+'$/.test(s)), `${url}: any inline style only by its hash, never 'unsafe-inline'`)
    t.notOk(csp.has('upgrade-insecure-requests'), `${url}: no upgrade-insecure-requests (it would break "Try it out" on plain http)`)

    const connect = csp.get('connect-src') ?? []
    t.ok(connect.includes("'self'"), `${url}: connect-src 'self'`)
    t.ok(connect.includes(new URL(PUBLIC_BASE_URL).origin), `${url}: connect-src has this instance's PUBLIC_BASE_URL`)
    for (const server of documented) {
      t.ok(connect.includes(new URL(server.url).origin), `${url}: connect-src has ${new URL(server.url).origin} from openapi.yaml`)
    }
    t.notOk(connect.some((source) => source === '*' || source === 'https:' || source === 'http:'), `${url}: no wildcard connect-src`)
  }
})
