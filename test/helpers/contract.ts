import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import type { ValidateFunction } from 'ajv'
import type { Response as InjectResponse } from 'light-my-request'
import { createAjv } from '../../src/openapi/ajv.js'
import { loadDocument } from '../../src/openapi/document.js'

/**
 * Checks a response against openapi.yaml: the status is documented for the operation, the body
 * matches its schema, every error is the Error body with `status` equal to the HTTP status, and
 * the headers the document declares for that response are present.
 */
export const document = await loadDocument()
const ajv = createAjv()
const API_PREFIX = '/v1'

type Json = Record<string, unknown>
// The document with its $refs resolved by the app's own loader (swagger-parser).
const spec = document.resolved as Json & { paths: Record<string, Record<string, Json>>, components: { schemas: Record<string, Json> } }

const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.keys(item).map((method) => ({
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
// frameworkErrors before routing, so no hook runs for it: it is not rate-limited and carries no
// rate-limit headers (openapi.yaml says so). It is the one response without an X-Request-Id.
const rateLimitHeaders = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
const refusedBeforeRouting = (res: InjectResponse) => res.statusCode === 400 && res.headers['x-request-id'] === undefined

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
  const op = operations.find((o) => (o.method === method || (method === 'HEAD' && o.method === 'GET')) && o.pattern.test(apiPath))
  if (op === undefined) {
    // Unknown route or method: only the Error body applies (checked above).
    if (status < 400) fail(what, res, 'a success for a route openapi.yaml does not have')
    return
  }
  const declared = (spec.paths[op.path]![op.method.toLowerCase()]!.responses as Record<string, Json>)[String(status)]
  // 404/405/413/415 can come from the framework on any route; their body is checked above.
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
  for (const header of Object.keys((response.headers ?? {}) as Json)) {
    if (rateLimitHeaders.has(header.toLowerCase()) && refusedBeforeRouting(res)) continue
    if (res.headers[header.toLowerCase()] === undefined) fail(what, res, `missing header ${header} that openapi.yaml declares`)
  }
}
