import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse as parseYaml } from 'yaml'
import { openapiPath } from '../../src/contract/paths.js'
import { buildTestApp } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'

// The dates are read from openapi.yaml here, independently of the app's own reading of it.
type Operation = { operationId: string, tags?: string[], deprecated?: boolean, 'x-deprecated-at'?: string, 'x-sunset'?: string }
const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as { paths: Record<string, Record<string, Operation>> }
const operations = Object.values(spec.paths).flatMap((item) => Object.values(item))
const getPetById = operations.find((op) => op.operationId === 'getPetById')!
const deprecatedAt = Date.parse(getPetById['x-deprecated-at']!)
const sunset = Date.parse(getPetById['x-sunset']!)

t.test('openapi.yaml marks getPetById deprecated, with a deprecation date before its sunset', async (t) => {
  t.equal(getPetById.deprecated, true)
  t.ok(Number.isFinite(deprecatedAt), 'x-deprecated-at is a date')
  t.ok(Number.isFinite(sunset), 'x-sunset is a date')
  t.ok(deprecatedAt < sunset, 'deprecated before the sunset')
  t.same(operations.filter((op) => op.deprecated === true).map((op) => op.operationId), ['getPetById'], 'the only deprecated operation')
})

t.test('getPetById answers with Deprecation, Sunset and a deprecation Link taken from openapi.yaml', async (t) => {
  const publicBaseUrl = 'https://petstore.test:8443'
  const api = await buildTestApp(t, { env: { PUBLIC_BASE_URL: publicBaseUrl }, now: () => sunset - 1 })
  const headers = await api.authHeader()
  const res = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.equal(res.statusCode, 200, 'still answers one millisecond before the sunset')

  t.equal(res.headers.deprecation, `@${Math.floor(deprecatedAt / 1000)}`, 'Deprecation: @<unix seconds> (RFC 9745)')
  t.equal(res.headers.sunset, new Date(sunset).toUTCString(), 'Sunset: an HTTP-date (RFC 8594)')
  t.match(String(res.headers.sunset), /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, 'IMF-fixdate form')
  const link = String(res.headers.link)
  t.match(link, /rel="deprecation"/, 'Link with rel="deprecation"')
  const target = /^<([^>]+)>/.exec(link)?.[1]
  t.ok(target?.startsWith(`${publicBaseUrl}/docs`), `the link points at this instance's docs (${target})`)
  // Swagger UI (deepLinking) opens an operation from the fragment #/<tag>/<operationId>.
  const tag = getPetById.tags?.[0] ?? 'default'
  t.equal(new URL(target!).hash, `#/${encodeURIComponent(tag)}/${getPetById.operationId}`, 'and opens the operation itself there')

  const notFound = await api.request({ method: 'GET', url: '/v1/pets/999', headers })
  expectError(t, notFound, 404, 'not_found', 'unknown pet')
  t.equal(notFound.headers.deprecation, res.headers.deprecation, 'error answers carry the deprecation too')
  t.equal(notFound.headers.sunset, res.headers.sunset)
})

t.test('from the sunset on, getPetById answers 410 gone', async (t) => {
  for (const [name, at] of [['at the sunset', sunset], ['a year after', sunset + 365 * 86400_000]] as const) {
    const api = await buildTestApp(t, { now: () => at })
    const headers = await api.authHeader()
    const body = expectError(t, await api.request({ method: 'GET', url: '/v1/pets/1', headers }), 410, 'gone', name)
    t.match(body.message, /retired/, 'says the operation was retired')
    expectError(t, await api.request({ method: 'GET', url: '/v1/pets/999', headers }), 410, 'gone', `${name}, unknown pet`)
    expectUnauthorized(t, await api.request({ method: 'GET', url: '/v1/pets/1' }), `${name}, without a key`)
    t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, `${name}: other operations still answer`)
  }
})

t.test('operations that are not deprecated carry no deprecation headers', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  const calls = [
    { method: 'GET', url: '/v1/inventory' },
    { method: 'PATCH', url: '/v1/inventory/1', payload: { quantity: 3 } },
    { method: 'GET', url: '/v1/store/orders' },
    { method: 'GET', url: '/healthz' }
  ]
  for (const call of calls) {
    const res = await api.request({ ...call, headers })
    t.equal(res.statusCode, 200, `${call.method} ${call.url}`)
    t.equal(res.headers.deprecation, undefined, `${call.method} ${call.url}: no Deprecation`)
    t.equal(res.headers.sunset, undefined, `${call.method} ${call.url}: no Sunset`)
    t.notMatch(String(res.headers.link ?? ''), /deprecation/, `${call.method} ${call.url}: no deprecation Link`)
  }
})
