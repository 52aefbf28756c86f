/**
 * Fuzzing from openapi.yaml: every operation, path parameter and request body schema is read
 * from the document, and fast-check builds requests from them, valid ones and ones mutated in
 * method, path values, body (type, bounds, missing/extra fields, nesting, length), encoding
 * (invalid UTF-8, NUL, BOM, UTF-16), prototype-pollution keys, duplicate keys, content type,
 * query string, headers and Authorization. The run is seeded, hence the same on every machine.
 *
 * Properties, for every request: no 5xx (but the 501 of an operation whose handler is still the
 * generated stub); the response honours openapi.yaml (request() checks it: every error is exactly
 * the Error body with `status` equal to the HTTP status, every 2xx body validates); a rejected
 * request or a read changes nothing in the store, an accepted updateInventory changes exactly its
 * own entry (what another accepted write changes, its own tests check); Object.prototype is never
 * polluted; /healthz keeps answering.
 *
 * FUZZ_SEED and FUZZ_RUNS override the seed and the number of requests (at least 5,000 in CI).
 */
import t from 'tap'
import fc from 'fast-check'
import { isDeepStrictEqual } from 'node:util'
import type { InjectOptions } from 'fastify'
import type { Response as InjectResponse } from 'light-my-request'
import { buildTestApp } from '../helpers/app.js'
import { EVENT_SCOPES, ALL_SCOPES, document } from '../helpers/contract.js'
import { isStub } from '../helpers/surface.js'
import { apiKeysRepository, generateApiKey } from '../../src/repositories/api-keys.js'
import type { InventoryItem } from '../../src/store/types.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20260901)
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000)
const HEALTH_EVERY = 250

type Json = Record<string, unknown>
type Schema = Json

// ---------------------------------------------------------------------------------------------
// The document, walked: operations, their path parameters and request body schemas.

const spec = document.spec as Json & { paths: Record<string, Json>, servers: { url: string }[] }
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

function resolve (node: unknown): Json {
  let current = node as Json
  const seen = new Set<string>()
  while (typeof current.$ref === 'string') {
    const ref = current.$ref
    if (!ref.startsWith('#/') || seen.has(ref)) throw new Error(`cannot resolve ${ref}`)
    seen.add(ref)
    current = ref.slice(2).split('/').reduce<unknown>((at, key) => (at as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec) as Json
  }
  return current
}

/** The path prefix of the running instance's server entry, e.g. /v1. */
const prefix = (() => {
  const url = spec.servers[0]?.url ?? ''
  return new URL(url.replace(/\{[^}]+\}/g, 'http://placeholder')).pathname.replace(/\/$/, '')
})()

interface Operation {
  operationId: string
  method: string
  /** Full path template with the prefix, e.g. /v1/inventory/{petId} */
  template: string
  params: { name: string, schema: Schema }[]
  body: Schema | undefined
}

const operations: Operation[] = Object.entries(spec.paths).flatMap(([path, rawItem]) => {
  const item = resolve(rawItem)
  const shared = (item.parameters ?? []) as unknown[]
  return Object.entries(item).filter(([method]) => HTTP_METHODS.has(method)).map(([method, rawOp]) => {
    const op = rawOp as Json
    const params = [...shared, ...((op.parameters ?? []) as unknown[])].map(resolve)
      .filter((p) => p.in === 'path')
      .map((p) => ({ name: String(p.name), schema: resolve(p.schema) }))
    const content = op.requestBody === undefined ? undefined : (resolve(op.requestBody).content as Json | undefined)
    const json = content?.['application/json'] as Json | undefined
    return { operationId: String(op.operationId), method: method.toUpperCase(), template: prefix + path, params, body: json ? resolve(json.schema) : undefined }
  })
})

/** The operation a request reaches, if any (HEAD reaches a GET), whether it was generated for it or stray. */
const operationOf = (method: string, path: string): Operation | undefined => operations.find((op) =>
  (op.method === method.toUpperCase() || (op.method === 'GET' && method.toUpperCase() === 'HEAD')) &&
  new RegExp('^' + op.template.replace(/\{[^}]+\}/g, '[^/]+') + '$').test(path))
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

// ---------------------------------------------------------------------------------------------
// Values from schemas: valid ones, and ones broken in type, bounds, fields, depth and length.

const MAX_SAFE = Number.MAX_SAFE_INTEGER

function integerIn (schema: Schema): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -MAX_SAFE
  const max = typeof schema.maximum === 'number' ? schema.maximum : MAX_SAFE
  return fc.oneof(
    fc.constantFrom(min, max),
    fc.integer({ min, max: Math.min(max, min + 20) }),
    fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number)
  )
}

function validValue (raw: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(raw)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  switch (schema.type) {
    case 'integer': return integerIn(schema)
    case 'number': return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'boolean': return fc.boolean()
    case 'string': {
      if (schema.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true }).map((d) => d.toISOString())
      const minLength = Number(schema.minLength ?? 0)
      return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(Number(schema.maxLength ?? 20), 20)) })
    }
    case 'array': return fc.array(validValue(schema.items as Schema), { maxLength: 3 })
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      const model = Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, validValue(s)]))
      return fc.record(model, { requiredKeys: (schema.required ?? []) as string[] })
    }
    default: return fc.jsonValue({ maxDepth: 2 })
  }
}

const nested = (depth: number, kind: 'array' | 'object', leaf: unknown): unknown => {
  let value = leaf
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value }
  return value
}

const deep = fc.tuple(fc.integer({ min: 2, max: 3000 }), fc.constantFrom('array', 'object') as fc.Arbitrary<'array' | 'object'>, fc.constantFrom(1, 'x', null))
  .map(([depth, kind, leaf]) => nested(depth, kind, leaf))

const longString = fc.tuple(fc.integer({ min: 201, max: 20_000 }), fc.constantFrom('x', 'é', '\u0000', '\uD83D\uDC3E', '\uD800'))
  .map(([n, c]) => c.repeat(n))

const EXTRA_KEYS = ['status', 'petId', 'id', 'Quantity', 'quantity ', '', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__proto__x', '$ref']

/** A value that the schema must reject. */
function invalidValue (raw: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(raw)
  const wrongType = fc.constantFrom<unknown>(null, true, 'text', '', [], {}, 1.5, 0)
    .filter((v) => schema.type === 'object' ? !isPlainObject(v) : schema.type === 'integer' ? !Number.isInteger(v) : typeof v !== schema.type)
  const options: fc.Arbitrary<unknown>[] = [wrongType, deep]
  if (schema.type === 'integer') {
    const min = typeof schema.minimum === 'number' ? schema.minimum : undefined
    const max = typeof schema.maximum === 'number' ? schema.maximum : undefined
    const outOfBounds: unknown[] = [1e308, -1e308, 2 ** 53, 2 ** 64]
    if (min !== undefined) outOfBounds.push(min - 1, -2147483648, Number.MIN_SAFE_INTEGER)
    if (max !== undefined) outOfBounds.push(max + 1, max * 2)
    options.push(
      fc.constantFrom(...outOfBounds.filter((n) => (min !== undefined && (n as number) < min) || (max !== undefined && (n as number) > max))),
      integerIn(schema).map((n) => String(n)), // "5": never coerced
      integerIn(schema).map((n) => n + 0.5),
      integerIn(schema).map((n) => [n]),
      integerIn(schema).map((n) => ({ value: n }))
    )
  }
  if (schema.type === 'string') {
    options.push(longString)
    if (typeof schema.minLength === 'number' && schema.minLength > 0) options.push(fc.constant(''))
  }
  if (schema.type === 'object') {
    const properties = (schema.properties ?? {}) as Record<string, Schema>
    const required = (schema.required ?? []) as string[]
    const base = validValue(schema) as fc.Arbitrary<Json>
    if (required.length > 0) {
      options.push(fc.tuple(base, fc.constantFrom(...required)).map(([value, drop]) => omit(value, drop)))
    }
    if (schema.additionalProperties === false) {
      const extraKey = fc.oneof(fc.constantFrom(...EXTRA_KEYS), fc.string({ maxLength: 12 })).filter((k) => !(k in properties))
      options.push(fc.tuple(base, extraKey, fc.jsonValue({ maxDepth: 2 })).map(([value, key, extra]) => ({ ...value, [key]: extra })))
    }
    for (const [name, propertySchema] of Object.entries(properties)) {
      options.push(fc.tuple(base, invalidValue(propertySchema)).map(([value, bad]) => ({ ...value, [name]: bad })))
    }
  }
  return fc.oneof(...options)
}

function isPlainObject (value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function omit (value: Json, key: string): Json {
  const copy = { ...value }
  delete copy[key]
  return copy
}

// ---------------------------------------------------------------------------------------------
// Bodies: a value and how it is written, or a raw text.

type Encoding = 'json' | 'pretty' | 'bom' | 'nul' | 'invalid-utf8' | 'truncated' | 'trailing' | 'utf16le' | 'latin1'

type Body =
  | { kind: 'value', value: unknown, encoding: Encoding, at: number, byte: number }
  | { kind: 'raw', text: string }
  | { kind: 'bytes', hex: string }
  | { kind: 'huge', size: number }

function payloadOf (body: Body): string | Buffer {
  switch (body.kind) {
    case 'raw': return body.text
    case 'bytes': return Buffer.from(body.hex, 'hex')
    case 'huge': return `{"quantity":1,"pad":"${'x'.repeat(body.size)}"}`
    case 'value': {
      const json = JSON.stringify(body.value) ?? 'null'
      const cut = json.length === 0 ? 0 : body.at % (json.length + 1)
      switch (body.encoding) {
        case 'json': return json
        case 'pretty': return JSON.stringify(body.value, null, 2) ?? 'null'
        case 'bom': return '\uFEFF' + json
        case 'nul': return json.slice(0, cut) + '\u0000' + json.slice(cut)
        case 'invalid-utf8': return Buffer.concat([Buffer.from(json.slice(0, cut)), Buffer.from([body.byte]), Buffer.from(json.slice(cut))])
        case 'truncated': return json.slice(0, cut === json.length ? Math.max(0, cut - 1) : cut)
        case 'trailing': return json + [',', ' x', '}', '\u0000', ' // comment'][body.byte % 5]
        case 'utf16le': return Buffer.from(json, 'utf16le')
        case 'latin1': return Buffer.from(json.replace(/"/, '"\u00e9'), 'latin1')
      }
    }
  }
}

const encoding = fc.constantFrom<Encoding>('json', 'pretty', 'bom', 'nul', 'invalid-utf8', 'truncated', 'trailing', 'utf16le', 'latin1')
// Bytes that are never valid on their own in UTF-8: continuation bytes, overlong leads, 0xF5–0xFF.
const badByte = fc.oneof(fc.integer({ min: 0x80, max: 0xbf }), fc.constantFrom(0xc0, 0xc1, 0xf5, 0xf8, 0xfe, 0xff))

const valueBody = (value: fc.Arbitrary<unknown>, enc: fc.Arbitrary<Encoding>): fc.Arbitrary<Body> =>
  fc.record({ kind: fc.constant('value' as const), value, encoding: enc, at: fc.nat(), byte: badByte })

// Texts that JSON.stringify cannot produce: duplicate keys, prototype-pollution keys (also
// \u-escaped), and not-quite-JSON literals.
const rawBodies = fc.oneof(
  fc.tuple(fc.integer({ min: -5, max: 50 }), fc.jsonValue({ maxDepth: 1 })).chain(([a, b]) => fc.constantFrom(
    `{"quantity":${a},"quantity":${JSON.stringify(b)}}`,
    `{"quantity":${JSON.stringify(b)},"quantity":${a}}`,
    `{"quantity":${a},"quantity":${a}}`
  )),
  fc.constantFrom(
    '{"__proto__":{"quantity":1}}',
    '{"quantity":1,"__proto__":{"polluted":true}}',
    '{"quantity":1,"\\u005f_proto__":{"polluted":true}}',
    '{"quantity":1,"constructor":{"prototype":{"polluted":true}}}',
    '{"constructor":{"prototype":{"polluted":true}},"quantity":1}',
    '{"quantity":{"__proto__":{"polluted":true}}}',
    '[{"__proto__":{"polluted":true}}]',
    '{"a":{"b":{"__proto__":{"polluted":true}}},"quantity":1}',
    '{"quantity":1,"constructor":{"polluted":true}}',
    '{"quantity":1,"prototype":{"polluted":true}}'
  ),
  fc.constantFrom(
    '', ' ', '\n', 'null', 'true', '0', '"quantity"', '[]', '{}', '{"quantity":}', 'NaN',
    '{quantity: 1}', "{'quantity': 1}", '{"quantity":01}', '{"quantity":1e0}', '{"quantity":1.0}',
    '{"quantity":-0}', '{"quantity":0x10}', '{"quantity":Infinity}', '{"quantity":1E400}',
    '{"quantity":1}/*c*/', '{"quantity":"\\u0000"}', '{"quantity":1,}', '{"quantity":9007199254740993}',
    '{"quantity":2147483647.0000001}', '{"quantity":12345678901234567890}', '{"quantity":1}{"quantity":2}',
    '\u0000', '{"quantity":"\\ud800"}', '{"\\u0071uantity":3}'
  )
).map((text): Body => ({ kind: 'raw', text }))

const invalidUtf8Bytes = fc.tuple(fc.nat({ max: 12 }), fc.array(badByte, { minLength: 1, maxLength: 4 }))
  .map(([at, bytes]): Body => {
    const json = Buffer.from('{"quantity":12}')
    const i = Math.min(at, json.length)
    return { kind: 'bytes', hex: Buffer.concat([json.subarray(0, i), Buffer.from(bytes), json.subarray(i)]).toString('hex') }
  })

const hugeBody = fc.integer({ min: 16_000, max: 200_000 }).map((size): Body => ({ kind: 'huge', size }))

// ---------------------------------------------------------------------------------------------
// Everything else a request carries.

const VALID_CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8']
const ODD_CONTENT_TYPES = [
  '', 'text/plain', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=xyz',
  'application/merge-patch+json', 'application/json-patch+json', 'application/jsonx', 'application/json; charset=utf-16',
  'application/json; charset=latin1', 'application/json; charset=ebcdic', '*/*', 'application/*', 'json', ';;;',
  'application/json, text/plain', 'application/xml', 'application/octet-stream', 'application/json; boundary=',
  'application/json\u0000', 'application/json; charset="utf-8"; charset=utf-16', 'APPLICATION/JSON; CHARSET=UTF-8'
]
// Every method Node's HTTP parser knows (light-my-request accepts only these); the real server's
// answer to unknown method tokens is tested in test/security.
const ODD_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', 'PROPFIND',
  'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'REPORT', 'MKCALENDAR', 'PURGE', 'QUERY',
  'MERGE', 'LINK', 'UNLINK', 'NOTIFY', 'SUBSCRIBE', 'BIND', 'ACL', 'M-SEARCH', 'SOURCE', 'patch', 'get']

const STRAY_PATHS = [
  '/', prefix, `${prefix}/`, `${prefix}/inventory/`, `${prefix}//inventory`, `${prefix}/Inventory`, `${prefix}/INVENTORY`,
  `${prefix}/inventory/1/`, `${prefix}/inventory/1/extra`, `${prefix}/pets`, `${prefix}/store`, `${prefix}/store/orders/1`,
  '/v2/inventory', '/v0/inventory', '/healthz', '/readyz', '/openapi.json', '/openapi.yaml', '/docs', '/docs/',
  '/docs/json', `${prefix}/inventory%2F1`, '/..%2fhealthz', `${prefix}/inventory;x=1`,
  '//v1/inventory', `${prefix}/inventory/%`, '/%zz', '/%c0%ae%c0%ae/', `${prefix}/%ff`, `${prefix}/inventory%00`,
  `${prefix}/store/orders%23x`, '/.env', '/.git/config'
]
// No dot segments (`..`, `%2e%2e`): app.inject resolves them as a browser would, so the server
// would see another path than the one checked. Path traversal is tested on a real server in test/security.

const QUERIES = ['', '', '', '?quantity=5', '?petId=1', '?__proto__[polluted]=1', '?constructor[prototype][polluted]=1',
  '?a=%ff', '?a=%zz', '?a=1&a=2', '?' + 'a=1&'.repeat(500), '?%00=%00', '?x=' + 'y'.repeat(4000), '?#frag']

function oddIntegerTexts (schema: Schema): string[] {
  const min = typeof schema.minimum === 'number' ? schema.minimum : 1
  const max = typeof schema.maximum === 'number' ? BigInt(schema.maximum) : BigInt(MAX_SAFE)
  return [
    String(min - 1), '-1', '-0', (max + 1n).toString(), (max + 2n).toString(), (max * 10n).toString(), `-${max}`,
    `${min}.0`, `${min}.5`, `${min}e0`, '1e3', '1E3', '1e-3', `0${min}`, '00', '007', `+${min}`, '0x10', '0b1', '0o7',
    '1_000', 'Infinity', 'NaN', 'null', 'true', 'abc', '1,2', '1;2', '%31', '%31%30', '%2B1', '%2D1', '%20%31', '%31%20',
    '%', '%zz', '%ff', '%c0%b1', '%00', '%2F', '%2e%2e%2e', '%EF%BC%91' /* fullwidth 1 */, '%D9%A1' /* Arabic-Indic 1 */,
    '%C2%B2' /* superscript 2 */, '1%00', '%E2%80%AE1'
  ]
}

function pathParameter (schema: Schema): fc.Arbitrary<string> {
  const odd = oddIntegerTexts(schema)
  const digits = fc.array(fc.constantFrom(...'0123456789'), { minLength: 16, maxLength: 400 }).map((d) => d.join(''))
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...odd) },
    { weight: 1, arbitrary: digits },
    { weight: 1, arbitrary: fc.string({ maxLength: 12, unit: 'binary' }).map(encodeURIComponentLoose) },
    { weight: 1, arbitrary: integerIn(schema).map((n) => n.toExponential()) }
  )
}

/** Percent-encodes a string, tolerating lone surrogates (encoded as U+FFFD). */
function encodeURIComponentLoose (text: string): string {
  return encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, '\uFFFD'))
}

// ---------------------------------------------------------------------------------------------
// A request, as parts: valid parts for the operation, odd parts, and which aspects are odd.

interface Parts {
  method: string
  path: string
  query: string
  body: Body | undefined
  contentType: string | undefined
  authorization: string | string[] | undefined
  headers: Record<string, string>
}

interface FuzzRequest extends Parts {
  remoteAddress: string
  label: string
}

const ASPECTS = ['method', 'path', 'body', 'contentType', 'authorization', 'headers', 'query'] as const

function fillPath (op: Operation, values: Record<string, string>): string {
  return op.template.replace(/\{([^}]+)\}/g, (_m, name: string) => values[name] ?? '1')
}

function requests (keys: { valid: string, revoked: string }): fc.Arbitrary<FuzzRequest> {
  const auth = `Bearer ${keys.valid}`
  const oddAuthorization = fc.oneof(
    fc.constantFrom<string | string[] | undefined>(
      undefined, '', 'Bearer', 'Bearer ', `bearer ${keys.valid}`, `BEARER ${keys.valid}`, `Token ${keys.valid}`,
      `Basic ${Buffer.from('admin:admin').toString('base64')}`, `Bearer ${keys.revoked}`, `Bearer ${keys.valid}x`,
      `Bearer ${keys.valid.slice(0, -1)}`, `Bearer ${keys.valid.toUpperCase()}`, `Bearer ${keys.valid} ${keys.valid}`,
      `Bearer ${keys.valid},Bearer x`, `Bearer ${keys.valid}\u0000`, 'Bearer \u0000', `${keys.valid}`, `Bearer\t${keys.valid}`,
      [auth, 'Bearer x'], ['Bearer x', auth], `Bearer ${'A'.repeat(8000)}`, 'Bearer psk_', 'Bearer ../../etc/passwd',
      `Bearer ${keys.valid.slice(0, 20)}`, 'Bearer é', 'Bearer \uD83D\uDC3E'
    ),
    fc.string({ maxLength: 60 }).map((s) => `Bearer psk_${s}`),
    fc.string({ maxLength: 60, unit: 'binary' })
  )
  const oddHeaders = fc.constantFrom<Record<string, string>>(
    { 'x-request-id': 'x'.repeat(300) },
    { 'x-request-id': '../../etc/passwd\r\nx: y'.replace(/\r\n/g, ' ') },
    { 'content-encoding': 'gzip' },
    { 'content-encoding': 'br, identity' },
    { 'content-length': '0' },
    { 'content-length': '-1' },
    { 'content-length': 'abc' },
    { 'transfer-encoding': 'chunked' },
    { accept: 'application/xml' },
    { accept: 'text/html;q=0.1, */*;q=0' },
    { 'x-http-method-override': 'DELETE' },
    { 'x-forwarded-for': '1.2.3.4, ' + 'x'.repeat(100) },
    { 'x-forwarded-host': 'evil.example' },
    { expect: '100-continue' },
    { 'accept-encoding': 'gzip, deflate, br' },
    { origin: 'https://evil.example' },
    { cookie: '__proto__=1; constructor=2' }
  )

  const forOperation = (op: Operation): fc.Arbitrary<FuzzRequest> => {
    const validParams = fc.record(Object.fromEntries(op.params.map((p) => [p.name, fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: 1, max: 13 }).map(String) }, // the demo catalogue's pets (1 to 10, 12), and just past them
      { weight: 1, arbitrary: validValue(p.schema).map(String) }
    )])))
    const oddParams = fc.record(Object.fromEntries(op.params.map((p) => [p.name, pathParameter(p.schema)])))
    const validBody: fc.Arbitrary<Body | undefined> = op.body === undefined
      ? fc.constant(undefined)
      : valueBody(validValue(op.body), fc.constant<Encoding>('json'))
    const oddBody: fc.Arbitrary<Body | undefined> = fc.oneof(
      { weight: 4, arbitrary: valueBody(op.body === undefined ? fc.jsonValue({ maxDepth: 2 }) : invalidValue(op.body), fc.constant<Encoding>('json')) },
      { weight: 3, arbitrary: valueBody(op.body === undefined ? fc.jsonValue({ maxDepth: 2 }) : validValue(op.body), encoding) },
      { weight: 3, arbitrary: rawBodies },
      { weight: 1, arbitrary: invalidUtf8Bytes },
      { weight: 1, arbitrary: hugeBody },
      { weight: 1, arbitrary: fc.constant(undefined) }
    )
    const valid = fc.record({
      method: fc.constant(op.method),
      path: validParams.map((v) => fillPath(op, v)),
      query: fc.constant(''),
      body: validBody,
      contentType: fc.constantFrom<string | undefined>(...(op.body === undefined ? [undefined] : VALID_CONTENT_TYPES)),
      authorization: fc.constant<string | string[] | undefined>(auth),
      headers: fc.constant<Record<string, string>>({})
    })
    const odd = fc.record({
      method: fc.constantFrom(...ODD_METHODS),
      path: oddParams.map((v) => fillPath(op, v)),
      query: fc.constantFrom(...QUERIES),
      body: oddBody,
      contentType: fc.constantFrom<string | undefined>(undefined, ...ODD_CONTENT_TYPES),
      authorization: oddAuthorization,
      headers: oddHeaders
    })
    const mutated = fc.record({
      valid,
      odd,
      aspects: fc.subarray([...ASPECTS], { minLength: 1, maxLength: 3 })
    }).map(({ valid, odd, aspects }): Parts => {
      const parts: Parts = { ...valid }
      for (const aspect of aspects) (parts as unknown as Json)[aspect] = odd[aspect]
      // A body without a content type is common in the wild; so is a content type without a body.
      return parts
    })
    return fc.tuple(
      fc.oneof({ weight: 1, arbitrary: valid }, { weight: 3, arbitrary: mutated }),
      fc.ipV4()
    ).map(([parts, remoteAddress]) => ({ ...parts, remoteAddress, label: op.operationId }))
  }

  const stray = fc.record({
    method: fc.constantFrom(...ODD_METHODS),
    path: fc.constantFrom(...STRAY_PATHS),
    query: fc.constantFrom(...QUERIES),
    body: fc.oneof(fc.constant(undefined), rawBodies),
    contentType: fc.constantFrom<string | undefined>(undefined, 'application/json', 'text/plain'),
    authorization: fc.oneof(fc.constant<string | string[] | undefined>(auth), oddAuthorization),
    headers: fc.constant<Record<string, string>>({}),
    remoteAddress: fc.ipV4(),
    label: fc.constant('stray')
  })

  return fc.oneof(
    ...operations.map((op) => ({ weight: 4, arbitrary: forOperation(op) })),
    { weight: 1, arbitrary: stray }
  )
}

function toInject (request: FuzzRequest): InjectOptions & { method: string, url: string } {
  const headers: Record<string, string | string[]> = { ...request.headers }
  if (request.authorization !== undefined) headers.authorization = request.authorization
  if (request.contentType !== undefined) headers['content-type'] = request.contentType
  const options: InjectOptions & { method: string, url: string } = {
    method: request.method,
    url: request.path + request.query,
    headers,
    remoteAddress: request.remoteAddress
  }
  if (request.body !== undefined) options.payload = payloadOf(request.body)
  return options
}

/** The request as an HTTP message, to reproduce a failure with curl or by hand. */
function render (request: FuzzRequest): string {
  const options = toInject(request)
  const lines = [`${options.method} ${options.url} HTTP/1.1`]
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    for (const v of [value].flat()) lines.push(`${name}: ${JSON.stringify(String(v)).slice(1, -1)}`)
  }
  const payload = options.payload as string | Buffer | undefined
  if (payload !== undefined) {
    const text = Buffer.isBuffer(payload) ? `(hex) ${payload.toString('hex')}` : JSON.stringify(payload)
    lines.push('', text.length > 600 ? `${text.slice(0, 600)}… (${text.length} chars)` : text)
  }
  return lines.join('\n')
}

/** The quantity a successful PATCH must have stored, when the payload is JSON we can read. */
function sentQuantity (payload: unknown): number | undefined {
  try {
    const text = Buffer.isBuffer(payload) ? payload.toString('utf8') : String(payload)
    const value = JSON.parse(text.replace(/^\uFEFF/, '')) as unknown
    return isPlainObject(value) && typeof (value as Json).quantity === 'number' ? (value as Json).quantity as number : undefined
  } catch {
    return undefined
  }
}

class PropertyFailure extends Error {}

function check (condition: boolean, message: string): void {
  if (!condition) throw new PropertyFailure(message)
}

t.test(`fuzzing every operation of openapi.yaml (seed ${SEED}, ${RUNS} requests)`, async (t) => {
  // FUZZ_LOG_LEVEL=error shows the server's own account of a failure.
  const api = await buildTestApp(t, { env: { LOG_LEVEL: process.env.FUZZ_LOG_LEVEL ?? 'silent' } })
  // Enterprise limits far above the run, so the rate limiter never binds the fuzzer's key.
  const valid = await api.createKey('enterprise', { perMinute: 10_000_000, perDay: 100_000_000 })
  const revokedKey = generateApiKey()
  await apiKeysRepository(api.store).create({ id: revokedKey.id, name: 'revoked', plan: 'enterprise', keyHash: revokedKey.hash, perMinute: 10_000_000, perDay: 100_000_000, scopes: ALL_SCOPES })
  await apiKeysRepository(api.store).revoke(revokedKey.id)
  const revoked = revokedKey.secret

  t.ok(operations.length >= 4, `the document has ${operations.length} operations: ${operations.map((o) => `${o.method} ${o.template}`).join(', ')}`)
  t.ok(operations.some((o) => o.body !== undefined && o.params.length > 0), 'at least one operation has a path parameter and a request body')

  const histogram = new Map<number, number>()
  const byOperation = new Map<string, number>()
  let count = 0
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()

  const send = async (options: InjectOptions & { method: string, url: string }): Promise<InjectResponse> => {
    count++
    const res = await api.request(options) // throws when the response breaks openapi.yaml
    histogram.set(res.statusCode, (histogram.get(res.statusCode) ?? 0) + 1)
    return res
  }

  const property = fc.asyncProperty(requests({ valid, revoked }), async (request) => {
    byOperation.set(request.label, (byOperation.get(request.label) ?? 0) + 1)
    const options = toInject(request)
    const before = await inventoryRepository(api.store, EVENT_SCOPES).list()
    const res = await send(options)
    const operation = operationOf(options.method, request.path)
    const stub = operation !== undefined && isStub(operation.operationId)
    check(res.statusCode < 500 || (stub && res.statusCode === 501), `status ${res.statusCode}: ${res.body.slice(0, 300)}`)
    const after = await inventoryRepository(api.store, EVENT_SCOPES).list()

    const accepted = res.statusCode >= 200 && res.statusCode < 300
    if (accepted && operation?.operationId === 'updateInventory') {
      const item = res.json() as InventoryItem
      const addressed = Number(decodeURIComponent(request.path.split('/').at(-1) ?? ''))
      check(item.petId === addressed, `the PATCH of pet ${addressed} answered for pet ${item.petId}`)
      const expected = before.map((entry) => entry.petId === item.petId ? item : entry)
      check(isDeepStrictEqual(after, expected), `an accepted PATCH changed more than its own entry:\nbefore ${JSON.stringify(before)}\nafter  ${JSON.stringify(after)}`)
      const quantity = sentQuantity(options.payload)
      if (quantity !== undefined) check(item.quantity === quantity, `sent quantity ${quantity}, stored ${item.quantity}`)
    } else if (!accepted || SAFE_METHODS.has(options.method.toUpperCase())) {
      check(isDeepStrictEqual(before, after), `a ${res.statusCode} ${options.method} changed the store:\nbefore ${JSON.stringify(before)}\nafter  ${JSON.stringify(after)}`)
    }

    const polluted = Object.getOwnPropertyNames(Object.prototype).sort()
    check(isDeepStrictEqual(polluted, prototypeKeys), `Object.prototype was polluted: its own properties are now ${polluted.join(', ')}`)

    if (count % HEALTH_EVERY === 0) {
      const health = await send({ method: 'GET', url: '/healthz' })
      check(health.statusCode === 200, `/healthz answered ${health.statusCode}`)
    }
  })

  const details = await fc.check(property, { seed: SEED, numRuns: RUNS })
  const health = await send({ method: 'GET', url: '/healthz' })
  t.equal(health.statusCode, 200, '/healthz still answers 200 after the run')

  const statuses = [...histogram].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`).join(', ')
  t.comment(`fuzz: ${count} requests (seed ${SEED}, ${details.numRuns} generated cases, ${details.numShrinks} shrinks)`)
  t.comment(`fuzz status codes: ${statuses}`)
  t.comment(`fuzz cases per operation: ${[...byOperation].map(([op, n]) => `${op} ${n}`).join(', ')}`)

  if (details.failed) {
    const [minimal] = details.counterexample ?? []
    const error = details.errorInstance as Error | undefined
    // Comments keep the line breaks of the HTTP message; the failure itself names the seed.
    t.comment(`minimal failing request (after ${details.numShrinks} shrinks):\n${minimal === undefined ? '(none)' : render(minimal)}`)
    t.comment(`failure: ${error?.message ?? String(details.errorInstance)}`)
    t.fail(`fuzzing found a failing request: seed ${details.seed}, path ${details.counterexamplePath ?? '?'} ` +
      `(replay: FUZZ_SEED=${details.seed} npx tap test/fuzz/openapi-fuzz.test.ts); request and failure printed above`)
  } else {
    t.equal(details.numRuns, RUNS, `${RUNS} generated requests, every one holding every property`)
    t.ok(histogram.has(200) && histogram.has(400) && histogram.has(401), 'the run reached successes, validation errors and authentication errors')
  }
})

// Defects the fuzzer found, kept as plain cases so they stay fixed whatever the seed.
t.test('regressions found by fuzzing', async (t) => {
  const api = await buildTestApp(t)
  const authorization = `Bearer ${await api.createKey('enterprise', { perMinute: 10_000_000, perDay: 100_000_000 })}`
  const before = await inventoryRepository(api.store, EVENT_SCOPES).list()

  // Fastify validates a body only when one arrived: a PATCH without any body reached the handler (500).
  let res = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { authorization } })
  t.equal(res.statusCode, 400, 'a PATCH without a body is 400, not 500')
  t.match(res.json(), { code: 'invalid_request', message: /body is required/ })

  // Malformed percent-encoding and over-long path segments are refused before routing, where
  // Fastify answered with its own body instead of the Error body.
  for (const url of ['/v1/pets/%zz', '/v1/inventory/%c0%80', '/%ff', `/v1/pets/${'9'.repeat(150)}`]) {
    res = await api.request({ method: url.startsWith('/v1/inventory') ? 'PATCH' : 'GET', url, headers: { authorization, 'content-type': 'application/json' }, payload: '{"quantity":1}' })
    t.equal(res.statusCode, 400, `${url.slice(0, 40)} is 400`)
    t.equal(res.json().code, 'invalid_request', `${url.slice(0, 40)} answers with the Error body`)
  }
  t.same(await inventoryRepository(api.store, EVENT_SCOPES).list(), before, 'nothing changed')
})
