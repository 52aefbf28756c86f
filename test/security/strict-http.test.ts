/**
 * HTTP strictness: Host exactly once and valid, Authorization at most once, JSON bodies without
 * repeated member names and in valid UTF-8, no Content-Encoding on a body; with CORS on, OPTIONS
 * that is not a preflight is a request like any other. Every refusal under /v1 is the Error body
 * with the rate-limit headers, counted like the other /v1 errors.
 */
import { gzipSync } from 'node:zlib'
import type { Response as InjectResponse } from 'light-my-request'
import t, { type Test } from 'tap'
import { duplicateMemberName } from '../../src/contract/json-parser.js'
import { buildTestApp } from '../helpers/app.js'

// Node keeps both occurrences of a repeated header in rawHeaders; light-my-request does too when
// given an array, which its typings do not declare.
const repeated = (headers: Record<string, string | string[]>) => headers as unknown as Record<string, string>

function expectRefusal (t: Test, res: InjectResponse, status: number, code: string, message: string | RegExp, what: string): void {
  t.equal(res.statusCode, status, `${what}: ${status}`)
  t.match(res.json(), { code, message, status }, `${what}: the Error body (${res.body})`)
}

function expectCounted (t: Test, res: InjectResponse, remaining: number, what: string): void {
  t.equal(res.headers['x-ratelimit-remaining'], String(remaining), `${what}: counted, with the rate-limit headers`)
}

t.test('Host: exactly once, a host name or address with an optional port', async (t) => {
  const api = await buildTestApp(t)
  const auth = await api.authHeader()
  // Refused before the key is looked up, so counted per client address (the Free plan's 60 a minute).
  const cases: [string, Record<string, string | string[]>][] = [
    ['two Host headers', { host: ['api.example', 'evil.example'] }],
    ['two equal Host headers', { host: ['api.example', 'api.example'] }],
    ['a space in Host', { host: 'a b' }],
    ['a path in Host', { host: 'api.example/v1' }],
    ['userinfo in Host', { host: 'user@api.example' }]
  ]
  let remaining = 59
  for (const [what, headers] of cases) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: repeated({ ...auth, ...headers }) })
    expectRefusal(t, res, 400, 'invalid_request', /^the Host header must /, what)
    expectCounted(t, res, remaining--, what)
  }
  for (const host of ['api.example', 'api.example:8443', '127.0.0.1:3000', '[::1]:3000', 'xn--bcher-kva.example']) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...auth, host } })
    t.equal(res.statusCode, 200, `Host: ${host} is accepted`)
  }
  const outside = await api.app.inject({ method: 'GET', url: '/healthz', headers: repeated({ host: ['a.example', 'b.example'] }) })
  expectRefusal(t, outside, 400, 'invalid_request', 'the Host header must be sent once', 'outside /v1')
  t.equal(outside.headers['x-ratelimit-limit'], undefined, 'outside /v1: not counted')
})

t.test('Authorization: more than one is 400, counted per address, the keys not looked up', async (t) => {
  const api = await buildTestApp(t)
  const { authorization } = await api.authHeader()
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: repeated({ authorization: [authorization, authorization] }) })
  expectRefusal(t, res, 400, 'invalid_request', 'the Authorization header must be sent once', 'two equal Authorization headers')
  t.equal(res.headers['x-ratelimit-limit'], '60', 'counted under the client address (the Free plan\'s numbers), not the key\'s')
  const other = await api.request({ method: 'GET', url: '/v1/inventory', headers: repeated({ authorization: [authorization, 'Bearer psk_other'] }) })
  expectRefusal(t, other, 400, 'invalid_request', 'the Authorization header must be sent once', 'two different Authorization headers')
  expectCounted(t, other, 58, 'the second refusal')
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization } })).statusCode, 200, 'one header: served')
})

t.test('JSON bodies: a repeated member name (I-JSON) and invalid UTF-8 are 400; any Content-Encoding is 415', async (t) => {
  const api = await buildTestApp(t)
  const headers = { ...await api.authHeader(), 'content-type': 'application/json' }
  const patch = (payload: string | Buffer, extra: Record<string, string> = {}) =>
    api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, ...extra }, payload })

  let remaining = 59
  const repeatedNames: [string, string, string][] = [
    ['{"quantity":1,"quantity":2}', 'quantity', 'the same name twice'],
    ['{"quantity":1,"quantit\\u0079":2}', 'quantity', 'the same name, once escaped'],
    ['{"quantity":1,"x":{"a":1,"b":[{"c":1}],"a":2}}', 'a', 'in a nested object']
  ]
  for (const [payload, name, what] of repeatedNames) {
    const res = await patch(payload)
    expectRefusal(t, res, 400, 'invalid_request', `body has the member "${name}" more than once in one object`, what)
    expectCounted(t, res, remaining--, what)
  }
  const invalid = Buffer.concat([Buffer.from('{"quantity":1,"note":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])
  const bytes = await patch(invalid)
  expectRefusal(t, bytes, 400, 'invalid_request', 'body is not valid UTF-8', 'invalid UTF-8')
  expectCounted(t, bytes, remaining--, 'invalid UTF-8')
  const overlong = await patch(Buffer.from([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]))
  expectRefusal(t, overlong, 400, 'invalid_request', 'body is not valid UTF-8', 'an overlong UTF-8 sequence')
  remaining--

  for (const coding of ['gzip', 'br', 'identity', 'deflate, gzip']) {
    const body = coding === 'gzip' ? gzipSync('{"quantity":3}') : Buffer.from('{"quantity":3}')
    const res = await patch(body, { 'content-encoding': coding })
    expectRefusal(t, res, 415, 'unsupported_media_type', 'request body must not have a Content-Encoding: send it uncompressed', `Content-Encoding: ${coding}`)
    expectCounted(t, res, remaining--, `Content-Encoding: ${coding}`)
  }

  const ok = await patch('{"quantity":7}')
  t.equal(ok.statusCode, 200, 'a plain body is still served')
  t.same(ok.json(), { petId: 1, quantity: 7, status: 'available' })
  const text = await patch('\uFEFF{"quantity":8}')
  t.equal(text.statusCode, 200, 'a UTF-8 byte order mark is still accepted, as before')
  t.equal((await patch('{"quantity":1,,}')).statusCode, 400, 'malformed JSON is still 400')
})

t.test('duplicateMemberName scans valid JSON for a name repeated within one object', async (t) => {
  const cases: [string, string | undefined][] = [
    ['{}', undefined],
    ['{"a":1,"b":2}', undefined],
    ['[{"a":1},{"a":2}]', undefined],
    ['{"a":{"a":1},"b":{"a":2}}', undefined],
    ['{"a":"\\"a\\":1","b":"a"}', undefined],
    ['{"a\\\\":1,"a":2}', undefined],
    ['{"a":[1,{"b":1,"c":2}],"d":3}', undefined],
    ['{"a":1,"a":1}', 'a'],
    ['{"a\\\\":1,"a\\u005c":2}', 'a\\'],
    ['{"x":[{"y":1,"y":2}]}', 'y'],
    ['{"":1,"":2}', ''],
    ['"just a string, with commas"', undefined],
    ['[1,2,3]', undefined]
  ]
  for (const [text, name] of cases) t.equal(duplicateMemberName(text), name, `${text} → ${name ?? 'none'}`)
})

t.test('with CORS on, an OPTIONS request that is not a preflight is authenticated and counted like any other', async (t) => {
  const api = await buildTestApp(t, { env: { CORS_ORIGINS: 'https://app.example' } })
  const auth = await api.authHeader()
  const origin = { origin: 'https://app.example' }

  const unknown = await api.app.inject({ method: 'OPTIONS', url: '/v1/no-such-path', headers: origin })
  expectRefusal(t, unknown, 401, 'unauthorized', /^missing Authorization header/, 'OPTIONS on an unknown /v1 path without a key')
  expectCounted(t, unknown, 59, 'unauthenticated OPTIONS')
  const root = await api.app.inject({ method: 'OPTIONS', url: '/v1', headers: origin })
  expectRefusal(t, root, 401, 'unauthorized', /^missing Authorization header/, 'OPTIONS on /v1 itself without a key')

  const known = await api.app.inject({ method: 'OPTIONS', url: '/v1/inventory', headers: origin })
  expectRefusal(t, known, 401, 'unauthorized', /^missing Authorization header/, 'OPTIONS on a known path without a key: the same answer')

  const withKey = await api.app.inject({ method: 'OPTIONS', url: '/v1/no-such-path', headers: { ...auth, ...origin } })
  expectRefusal(t, withKey, 404, 'not_found', 'no route OPTIONS /v1/no-such-path', 'OPTIONS on an unknown path with a key')
  expectCounted(t, withKey, 59, 'the key\'s first request')
  const allowed = await api.request({ method: 'OPTIONS', url: '/v1/inventory', headers: { ...auth, ...origin } })
  expectRefusal(t, allowed, 405, 'method_not_allowed', 'OPTIONS is not allowed on /v1/inventory; allowed: GET, HEAD', 'OPTIONS on a known path with a key')
  t.equal(allowed.headers.allow, 'GET, HEAD', 'with Allow')
  expectCounted(t, allowed, 58, 'the key\'s second request')

  const preflight = await api.app.inject({ method: 'OPTIONS', url: '/v1/no-such-path', headers: { ...origin, 'access-control-request-method': 'GET' } })
  t.equal(preflight.statusCode, 204, 'a preflight is still answered 204 without a key')
  t.equal(preflight.headers['x-ratelimit-limit'], undefined, 'and not counted')
})
