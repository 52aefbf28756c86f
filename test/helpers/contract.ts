import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import type { ValidateFunction } from 'ajv'
import type { Response as InjectResponse } from 'light-my-request'
import { createAjv } from '../../src/contract/ajv.js'
import { webhookEvents } from '../../src/webhooks/events.js'
import { loadDocument } from '../../src/contract/document.js'

/**
 * Checks a response against openapi.yaml: the status is documented for the operation, the body
 * matches its schema, every error is the Error body with `status` equal to the HTTP status, and
 * the headers the document declares for that response are present (unless declared
 * `required: false`), with values their schemas accept (and Deprecation or Sunset on no response
 * that does not declare them). Besides:
 * X-Request-Id is the request's own when the document's pattern accepts it, else a fresh UUID;
 * HEAD is answered as GET, without a body; another method on a documented path is the 405 that
 * path declares, with Allow listing exactly its methods (HEAD with GET).
 */
export const document = await loadDocument()

/** Every scope an API key can hold (openapi.yaml): keys of tests hold them all unless a test says otherwise. */
export const ALL_SCOPES = document.scopes

/** The scope each webhook event type needs (openapi.yaml's webhooks), as the repositories are given it. */
export const EVENT_SCOPES = webhookEvents(document).scopes
const ajv = createAjv()
const API_PREFIX = '/v1'

type Json = Record<string, unknown>
// The document with its $refs resolved by the app's own loader (src/contract/document.ts).
const spec = document.resolved as Json & { paths: Record<string, Record<string, Json>>, components: { schemas: Record<string, Json>, headers: Record<string, Json> } }

const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.keys(item).filter((key) => key !== 'parameters' && !key.startsWith('x-')).map((method) => ({
    method: method.toUpperCase(),
    path,
    pattern: new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$')
  })))

const validators = new WeakMap<Json, ValidateFunction>()
function validatorFor (schema: Json): ValidateFunction {
  let validate = validators.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    validators.set(schema, validate)
  }
  return validate
}

export class ContractError extends Error {}

// A URL the router cannot decode, or an over-long path parameter, is refused (400) by Fastify's
// frameworkErrors before routing, so no hook runs for it: it is not rate-limited and reaches no
// operation, so of the headers its operation's 400 declares it carries X-Request-Id alone
// (openapi.yaml says so).
const preRoutingMessages = new Set(['the URL is not valid: malformed percent-encoding', 'a path parameter is longer than the server accepts'])
// A HEAD response has no body to tell it by: there, a 400 without the rate-limit headers.
const refusedBeforeRouting = (method: string, res: InjectResponse, body: unknown) => res.statusCode === 400 && (method === 'HEAD'
  ? res.headers['x-ratelimit-limit'] === undefined
  : preRoutingMessages.has(String((body as { message?: unknown } | undefined)?.message)))

const requestIdSchema = spec.components.headers['X-Request-Id']!.schema as Json
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const PLAIN_DECIMAL = /^-?(0|[1-9][0-9]*)$/
const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/

/** A header's text read as its schema's type, as the document's parameter rules read text. */
function headerValue (text: string, schema: Json): unknown {
  if (schema.type === 'integer') return PLAIN_DECIMAL.test(text) ? Number(text) : text
  if (schema.type === 'number') return JSON_NUMBER.test(text) ? Number(text) : text
  return text
}

function fail (what: string, res: InjectResponse, detail: string): never {
  throw new ContractError(`${what} → ${res.statusCode}: ${detail}\nbody: ${res.body.slice(0, 500)}`)
}

/** The body as text, decoded from its Content-Encoding (br and gzip are what the service sends). */
function bodyText (what: string, res: InjectResponse): string {
  const coding = res.headers['content-encoding']
  try {
    if (coding === 'br') return brotliDecompressSync(res.rawPayload).toString()
    if (coding === 'gzip') return gunzipSync(res.rawPayload).toString()
  } catch (error) {
    fail(what, res, `the body does not decode as ${coding}: ${(error as Error).message}`)
  }
  if (coding !== undefined && coding !== 'identity') fail(what, res, `unexpected Content-Encoding ${String(coding)}`)
  return res.body
}

export function checkResponse (method: string, url: string, res: InjectResponse): void {
  const what = `${method} ${url}`
  const path = url.split('?', 1)[0] ?? url
  const status = res.statusCode
  if (method === 'HEAD' && res.body.length > 0) fail(what, res, 'a HEAD response with a body')

  const id = res.headers['x-request-id']
  const given = res.raw.req.headers['x-request-id']
  if (typeof id !== 'string') fail(what, res, 'no X-Request-Id')
  if (typeof given === 'string' && validatorFor(requestIdSchema)(given)) {
    if (id !== given) fail(what, res, `X-Request-Id is ${id}, not the ${given} the request carried`)
  } else if (!UUID.test(id)) fail(what, res, `X-Request-Id ${id} is not a fresh UUID, though the request carried ${String(given)}`)

  // A 304 answers a conditional GET: headers only (RFC 9110 §15.4.5).
  if (status === 304 && res.rawPayload.length > 0) fail(what, res, 'a 304 with a body')
  const text = method === 'HEAD' ? '' : bodyText(what, res)
  let body: unknown
  if (text.length > 0) {
    if (!String(res.headers['content-type']).startsWith('application/json') && path.startsWith(API_PREFIX)) {
      fail(what, res, `content-type is ${String(res.headers['content-type'])}, not application/json`)
    }
    try { body = JSON.parse(text) } catch { body = undefined }
  }

  if (status >= 400 && method !== 'HEAD') {
    const validate = validatorFor(spec.components.schemas.Error!)
    if (!validate(body)) fail(what, res, `not the Error body: ${ajv.errorsText(validate.errors)}`)
    if ((body as { status: number }).status !== status) fail(what, res, 'Error.status differs from the HTTP status')
    if (/at .+:\d+:\d+|\/work\/|node_modules/.test(text)) fail(what, res, 'the body leaks a stack trace or a file path')
  }
  if (status === 401 && !String(res.headers['www-authenticate'] ?? '').startsWith('Bearer')) fail(what, res, 'a 401 without WWW-Authenticate: Bearer')
  if (status === 405 && res.headers.allow === undefined) fail(what, res, 'a 405 without an Allow header')

  if (!path.startsWith(API_PREFIX + '/')) return
  const apiPath = path.slice(API_PREFIX.length)
  const onPath = operations.filter((o) => o.pattern.test(apiPath))
  let op = onPath.find((o) => o.method === method || (method === 'HEAD' && o.method === 'GET'))
  if (op === undefined && onPath.length > 0) {
    // Another method on a documented path: its 405 is the one the path's operations declare.
    // An earlier refusal (a 401, a 429) is no response of theirs: only the Error body applies.
    // A CORS preflight is the one success such a method may get.
    const preflight = method === 'OPTIONS' && res.raw.req.headers['access-control-request-method'] !== undefined
    if (status < 400 && !preflight) fail(what, res, `a success for ${method}, which ${onPath[0]!.path} does not have`)
    if (status !== 405) return
    op = onPath[0]!
    const methods = onPath.map((o) => o.method)
    if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD')
    const allow = String(res.headers.allow).split(/,\s*/)
    if (allow.length !== methods.length || methods.some((m) => !allow.includes(m))) fail(what, res, `Allow is ${String(res.headers.allow)}, not the methods of ${op.path}: ${methods.join(', ')}`)
  }
  if (op === undefined) {
    // Unknown route: only the Error body applies (checked above).
    if (status < 400) fail(what, res, 'a success for a route openapi.yaml does not have')
    return
  }
  const declared = (spec.paths[op.path]![op.method.toLowerCase()]!.responses as Record<string, Json>)[String(status)]
  // 404/413/415 can come from the framework on any route; their body is checked above.
  if (declared === undefined) {
    if (status >= 400) return
    fail(what, res, `status ${status} is not documented for ${op.method} ${op.path}`)
  }
  const response = declared
  const schema = ((response.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined
  if (schema !== undefined && method !== 'HEAD') {
    const validate = validatorFor(schema)
    if (!validate(body)) fail(what, res, `body does not match openapi.yaml: ${ajv.errorsText(validate.errors)}`)
  }
  const headers = Object.entries((response.headers ?? {}) as Record<string, Json>)
  const beforeRouting = refusedBeforeRouting(method, res, body)
  for (const [header, definition] of headers) {
    if (beforeRouting && header.toLowerCase() !== 'x-request-id') continue
    const value = res.headers[header.toLowerCase()]
    // A header declared `required: false` is sent only sometimes (Link while more pages follow,
    // Idempotent-Replayed on a replay); every other declared header always.
    if (value === undefined && definition.required === false) continue
    if (value === undefined) fail(what, res, `missing header ${header} that openapi.yaml declares`)
    const headerSchema = definition.schema as Json | undefined
    if (headerSchema === undefined) continue
    const validate = validatorFor(headerSchema)
    if (!validate(headerValue(String(value), headerSchema))) fail(what, res, `header ${header}: ${String(value)} does not match openapi.yaml: ${ajv.errorsText(validate.errors, { dataVar: header })}`)
  }
  for (const header of ['Deprecation', 'Sunset']) {
    if (res.headers[header.toLowerCase()] !== undefined && !headers.some(([name]) => name.toLowerCase() === header.toLowerCase())) {
      fail(what, res, `a ${header} header, which openapi.yaml does not declare for ${op.method} ${op.path} ${status}`)
    }
  }
}
