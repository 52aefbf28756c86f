/**
 * npm run lint:openapi [-- FILE] — validates openapi.yaml (or FILE) against the OpenAPI schema of
 * its version (@seriousme/openapi-schema-validator, as fastify-openapi-glue does at start), then
 * checks the project's own rules:
 * - every operation has an operationId, and a security requirement of its own naming exactly one
 *   scope of bearerAuth, from the list the scheme declares (x-scopes);
 * - every operation declares the responses any /v1 request can get: 400 (input is strict
 *   everywhere: even an operation without parameters refuses unknown query parameters), 401, 403
 *   (a key without the operation's scope), 405 (another method on its path), 429, 500 and 503;
 *   every response of 400 or more is the Error body;
 * - every response declares the rate-limit headers and X-Request-Id, a 429 also Retry-After, a
 *   405 also Allow; every response of a deprecated operation but its 405 (which answers another
 *   method) declares Deprecation, Sunset and Link;
 * - every operation takes the X-Request-Id header parameter, and never refuses it (not required,
 *   any string, a maxLength only if Node refuses a longer request head first: the service
 *   replaces an id it does not keep);
 * - HEAD: Fastify answers it on every GET route, so a GET operation's description says so, and a
 *   path with a GET has no head operation of its own (the second HEAD route would not start);
 * - conditional GET (src/plugins/app/conditional-requests.ts): a GET answering 200 with JSON
 *   declares ETag on that 200, a 304 (NotModified, with ETag) and the If-None-Match parameter;
 * - deprecated operations carry x-deprecated-at and x-sunset; x-stability is experimental or beta;
 * - every example (of a schema, a media type, a parameter or a header) is valid against its
 *   schema, as the service's own ajv (src/contract/ajv.ts) judges it; a schema gives its
 *   examples as `examples: [...]` (JSON Schema 2020-12), not OpenAPI 3.0's `example`;
 * - no example shows a limit of its schema, at any depth (the docs page shows examples as they
 *   are): a number at its maximum (or the last integer under an exclusiveMaximum), a string as
 *   long as its maxLength. Lower bounds are values the service sends (a stock of 0, status 400,
 *   id 1), so they are allowed;
 * - every request and response body has an example of the document's own (on the media type,
 *   or as the examples of its schema, or of an array's items): Swagger UI makes up a missing one
 *   from the schema's bounds;
 * - every code of the Error schema has an example in a response carrying the Error body.
 */
import { existsSync } from 'node:fs'
import { maxHeaderSize } from 'node:http'
import { isAbsolute, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import SwaggerParser from '@apidevtools/swagger-parser'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { ValidateFunction } from 'ajv'
import { createDocumentAjv, DOCUMENT_SCHEMA_ID } from '../src/contract/ajv.js'
import { openapiPath } from '../src/contract/paths.js'

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const entries = (value: unknown): [string, unknown][] => isObject(value) ? Object.entries(value) : []
const isRef = (value: unknown) => isObject(value) && typeof value.$ref === 'string'

const { positionals } = parseArgs({ allowPositionals: true, options: {} })
const file = resolve(positionals[0] ?? openapiPath)
const fromHere = relative(process.cwd(), file)
const shown = fromHere.startsWith('..') || isAbsolute(fromHere) ? file : fromHere
const problems: string[] = []

{
  if (!existsSync(file)) {
    console.error(`${shown} is not a valid OpenAPI document: there is no file ${file}`)
    process.exit(1)
  }
  const validation = await new Validator().validate(file)
  if (!validation.valid) {
    // A file that cannot be read or parsed is reported as a sentence, a document that breaks the schema as a list.
    const errors = (Array.isArray(validation.errors) ? validation.errors : [validation.errors]) as ({ instancePath?: string, message?: string } | string)[]
    console.error(`${shown} is not a valid OpenAPI document: ${errors.slice(0, 5).map((e) => typeof e === 'string' ? e : `${e.instancePath || '/'} ${e.message ?? ''}`).join('; ')}`)
    process.exit(1)
  }
}
// Two copies: the document as written (for the locations of examples and $refs), and one with
// every $ref replaced by what it points to (the same object for the same target).
const raw = await SwaggerParser.parse(file) as unknown as Json
const api = await SwaggerParser.dereference(file) as unknown as Json & { paths: Record<string, Json> }

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
const bearerAuth = ((api.components as Json | undefined)?.securitySchemes as Json | undefined)?.bearerAuth as Json | undefined
const declaredScopes = Object.keys(isObject(bearerAuth?.['x-scopes']) ? bearerAuth['x-scopes'] : {})
if (declaredScopes.length === 0) problems.push('components/securitySchemes/bearerAuth: no x-scopes (the scopes a key can hold, each with its meaning)')
const errorSchema = ((api.components as Json | undefined)?.schemas as Json | undefined)?.Error
const everyResponseHeaders = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id']
const headersByStatus: Record<string, string[]> = { 304: ['ETag'], 405: ['Allow'], 429: ['Retry-After'] }
const jsonMediaType = /^application\/(?:[\w.+-]+\+)?json$/i
const deprecationHeaders = ['Deprecation', 'Sunset', 'Link']
const requiredResponses: Record<string, string> = {
  400: 'invalid input: a malformed parameter or body, or an unknown query parameter',
  401: 'a missing, unknown or revoked API key',
  403: 'a valid API key without the operation\'s scope',
  405: 'a method its path does not have, with Allow',
  429: 'over the rate limit, or banned',
  500: 'an unexpected error',
  503: 'the storage unavailable'
}

const rawResponses = isObject(raw.components) && isObject(raw.components.responses) ? raw.components.responses : {}

/** For a deprecated operation's response that $refs a shared one, the Deprecated… variant when it exists. */
function deprecatedVariant (path: string, method: string, status: string): string | undefined {
  const written = ((((raw.paths as Json)[path] as Json)[method] as Json).responses as Json)[status]
  const ref = isObject(written) && typeof written.$ref === 'string' ? /^#\/components\/responses\/(.+)$/.exec(written.$ref)?.[1] : undefined
  return ref !== undefined && `Deprecated${ref}` in rawResponses ? `#/components/responses/Deprecated${ref}` : undefined
}

/** The X-Request-Id parameter may only describe: the service keeps or replaces an id, never refuses one. */
const describingKeys = new Set(['type', 'description', 'title', 'example'])
/** A maxLength no shorter than a whole request head refuses nothing: Node answers 431 to a longer head first. */
const neverBinding = (schema: Json) => schema.maxLength === undefined ||
  (typeof schema.maxLength === 'number' && schema.maxLength >= maxHeaderSize)

// Rules on operations and their responses, on the dereferenced document.
let count = 0
for (const [path, item] of Object.entries(api.paths)) {
  for (const [method, value] of Object.entries(item)) {
    if (!httpMethods.includes(method) || !isObject(value)) continue
    const op = value as Json & { responses: Record<string, Json> }
    count++
    const where = `${typeof op.operationId === 'string' ? `${op.operationId} ` : ''}(${method.toUpperCase()} ${path})`
    if (typeof op.operationId !== 'string') problems.push(`${where}: no operationId`)
    const scopes = (op.security as Json[] | undefined)?.flatMap((requirement) => Array.isArray(requirement.bearerAuth) ? requirement.bearerAuth as unknown[] : [])
    if (op.security === undefined || scopes === undefined || (op.security as Json[]).length !== 1 || scopes.length !== 1) {
      problems.push(`${where}: its security requirement must name exactly one scope of bearerAuth, e.g. security: [{ bearerAuth: ['${declaredScopes[0] ?? 'scope'}'] }] (the scopes: ${declaredScopes.join(', ')})`)
    } else if (!declaredScopes.includes(String(scopes[0]))) {
      problems.push(`${where}: the scope ${String(scopes[0])} is not one bearerAuth declares (x-scopes: ${declaredScopes.join(', ')}); add it there with its meaning, or use one of those`)
    }

    const parameters = [...(Array.isArray(item.parameters) ? item.parameters : []), ...(Array.isArray(op.parameters) ? op.parameters : [])] as Json[]
    const requestId = parameters.find((p) => p.in === 'header' && String(p.name).toLowerCase() === 'x-request-id')
    if (requestId === undefined) {
      problems.push(`${where}: no X-Request-Id header parameter (every operation takes one: - $ref: '#/components/parameters/RequestId')`)
    } else if (requestId.required === true || !isObject(requestId.schema) || requestId.schema.type !== 'string' ||
      Object.keys(requestId.schema).some((key) => !describingKeys.has(key) && key !== 'maxLength') || !neverBinding(requestId.schema)) {
      problems.push(`${where}: the X-Request-Id parameter must accept any value (not required, schema { type: string } alone, or with a maxLength of at least ${maxHeaderSize}, Node's whole request head): an id the service does not keep is replaced, never refused`)
    }

    if (method === 'get' && !/\bHEAD\b/.test(String(op.description ?? ''))) {
      problems.push(`${where}: the description does not mention HEAD; Fastify answers HEAD on every GET route (same status and headers, no body): say so`)
    }
    // Every 200 with a JSON body to a GET gets an ETag, and an If-None-Match holding it a 304.
    const ok = op.responses['200']
    if (method === 'get' && isObject(ok) && Object.keys(isObject(ok.content) ? ok.content : {}).some((type) => jsonMediaType.test(type))) {
      const okHeaders = Object.keys(isObject(ok.headers) ? ok.headers : {}).map((h) => h.toLowerCase())
      if (!okHeaders.includes('etag')) {
        problems.push(`${where}: response 200 does not declare the header ETag; the service tags every 200 of a GET with its body's entity tag: add ETag: { $ref: '#/components/headers/ETag' } to its headers`)
      }
      if (op.responses['304'] === undefined) {
        const notModified = op.deprecated === true && 'DeprecatedNotModified' in rawResponses ? 'DeprecatedNotModified' : 'NotModified'
        problems.push(`${where}: no 304 response; the service answers 304 without a body when If-None-Match holds the current ETag: add '304': { $ref: '#/components/responses/${notModified}' }`)
      }
      if (!parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'if-none-match')) {
        problems.push(`${where}: no If-None-Match header parameter; the service reads it on every GET and answers 304 when it holds the current ETag: add - $ref: '#/components/parameters/IfNoneMatch'`)
      }
    }
    if (method === 'head' && isObject(item.get)) {
      problems.push(`${where}: a head operation beside GET ${path}; Fastify already answers HEAD on every GET route, and a second HEAD route stops the service from starting: remove it and say so in the GET operation's description`)
    }

    for (const [status, why] of Object.entries(requiredResponses)) {
      if (op.responses[status] === undefined) problems.push(`${where}: no ${status} response (${why}); every /v1 operation can answer it`)
    }
    for (const [status, response] of Object.entries(op.responses)) {
      const schema = (isObject(response.content) ? response.content['application/json'] as Json | undefined : undefined)?.schema
      if (Number(status) >= 400 && (errorSchema === undefined || schema !== errorSchema)) {
        problems.push(`${where}: response ${status} is not the Error body (content application/json, schema #/components/schemas/Error)`)
      }
      const declared = new Set(Object.keys(isObject(response.headers) ? response.headers : {}).map((h) => h.toLowerCase()))
      // A 405 answers a method the path does not have: no operation's route, so no deprecation headers.
      const deprecated = op.deprecated === true && status !== '405'
      const wanted = [...everyResponseHeaders, ...headersByStatus[status] ?? [], ...deprecated ? deprecationHeaders : []]
      const missing = wanted.filter((h) => !declared.has(h.toLowerCase()))
      if (missing.length === 0) continue
      const variant = deprecated && missing.some((h) => deprecationHeaders.includes(h)) ? deprecatedVariant(path, method, status) : undefined
      const why = deprecated && missing.some((h) => deprecationHeaders.includes(h))
        ? ` (a deprecated operation sends Deprecation, Sunset and Link on every response${variant === undefined ? '' : `: use ${variant}`})`
        : ''
      problems.push(`${where}: response ${status} does not declare the header${missing.length > 1 ? 's' : ''} ${missing.join(', ')}${why}`)
    }

    if (op.deprecated === true && (op['x-deprecated-at'] === undefined || op['x-sunset'] === undefined)) {
      problems.push(`${where}: deprecated without x-deprecated-at and x-sunset`)
    }
    const stability = op['x-stability']
    if (stability !== undefined && stability !== 'experimental' && stability !== 'beta') problems.push(`${where}: x-stability must be experimental or beta`)
  }
}

// Examples, on the document as written: each is checked against the schema beside it, which ajv
// reaches by JSON pointer into the document (so its $refs resolve as they do at run time).
const ajv = createDocumentAjv(raw)
const validators = new Map<string, ValidateFunction>()
const segment = (key: string) => encodeURIComponent(key.replace(/~/g, '~0').replace(/\//g, '~1'))
let examples = 0

function checkExample (schemaPointer: string | undefined, value: unknown, where: string): void {
  examples++
  if (schemaPointer === undefined) {
    problems.push(`${where}: an example without a schema to check it against`)
    return
  }
  let validate = validators.get(schemaPointer)
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `${DOCUMENT_SCHEMA_ID}#${schemaPointer}` })
    validators.set(schemaPointer, validate)
  }
  if (!validate(value)) problems.push(`${where}: does not match its schema: ${ajv.errorsText(validate.errors, { dataVar: 'example' })}`)
  else for (const limit of new Set(limitsShown(schemaAt(schemaPointer), value, 'example'))) problems.push(`${where}: ${limit}; an example shows a realistic value, not a limit of its schema: change it`)
}

/** The node at a JSON pointer of the document as written (segments as `segment` writes them). */
const schemaAt = (pointer: string): unknown => pointer.split('/').slice(1)
  .reduce<unknown>((node, key) => typeof node === 'object' && node !== null ? (node as Json)[decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~')] : undefined, raw)

/** Where `value` sits on an upper bound of `schema` or of the schemas of its properties and items ($refs followed). */
function limitsShown (schema: unknown, value: unknown, at: string, depth = 0): string[] {
  if (!isObject(schema) || depth > 64) return []
  const found = typeof schema.$ref === 'string' ? limitsShown(follow(schema), value, at, depth + 1) : []
  for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
    const list = schema[keyword]
    if (Array.isArray(list)) for (const sub of list) found.push(...limitsShown(sub, value, at, depth + 1))
  }
  if (typeof value === 'number') {
    // A schema whose bounds meet (minimum = maximum) has one value, which is no limit shown.
    if (value === schema.maximum && schema.minimum !== schema.maximum) found.push(`${at} is ${value}, its schema's maximum`)
    if (typeof schema.exclusiveMaximum === 'number' && schema.type === 'integer' && value === schema.exclusiveMaximum - 1) {
      found.push(`${at} is ${value}, the last integer under its schema's exclusiveMaximum`)
    }
  } else if (typeof value === 'string') {
    // JSON Schema counts a string's length in code points.
    const length = [...value].length
    if (length === schema.maxLength && schema.minLength !== schema.maxLength) found.push(`${at} is ${length} characters long, its schema's maxLength`)
  } else if (Array.isArray(value)) {
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : []
    value.forEach((item, i) => { found.push(...limitsShown(prefix[i] ?? schema.items, item, `${at}[${i}]`, depth + 1)) })
  } else if (isObject(value)) {
    const properties = isObject(schema.properties) ? schema.properties : {}
    for (const [name, item] of Object.entries(value)) {
      found.push(...limitsShown(properties[name] ?? schema.additionalProperties, item, `${at}.${name}`, depth + 1))
    }
  }
  return found
}

/** Whether the docs page can show a body of this schema from the document's examples alone. */
function exemplified (schema: unknown, depth = 0): boolean {
  if (!isObject(schema) || depth > 64) return false
  if (typeof schema.$ref === 'string' && exemplified(follow(schema), depth + 1)) return true
  if ((Array.isArray(schema.examples) && schema.examples.length > 0) || 'const' in schema || Array.isArray(schema.enum)) return true
  return schema.type === 'array' && exemplified(schema.items, depth + 1)
}

/** Follows a local $ref (#/components/examples/…) to the object it names. */
function follow (node: unknown): Json | undefined {
  let at: unknown = node
  for (let hops = 0; isRef(at) && hops < 20; hops++) {
    const ref = (at as Json).$ref as string
    if (!ref.startsWith('#/')) return undefined
    at = ref.slice(2).split('/').reduce<unknown>((n, key) => isObject(n) ? n[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined, raw)
  }
  return isObject(at) ? at : undefined
}

function walkSchema (schema: unknown, pointer: string, where: string): void {
  if (!isObject(schema) || isRef(schema)) return
  if ('example' in schema) problems.push(`${where}: a schema's \`example\` is OpenAPI 3.0's; write examples: [${JSON.stringify(schema.example)}] (JSON Schema 2020-12)`)
  if (Array.isArray(schema.examples)) schema.examples.forEach((value, i) => { checkExample(pointer, value, `${where} examples[${i}]`) })
  for (const [name, sub] of entries(schema.properties)) walkSchema(sub, `${pointer}/properties/${segment(name)}`, `${where}.${name}`)
  if (isObject(schema.items)) walkSchema(schema.items, `${pointer}/items`, `${where}[]`)
  if (isObject(schema.additionalProperties)) walkSchema(schema.additionalProperties, `${pointer}/additionalProperties`, `${where}{}`)
  if (isObject(schema.not)) walkSchema(schema.not, `${pointer}/not`, `${where} (not)`)
  for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
    const list = schema[keyword]
    if (Array.isArray(list)) list.forEach((sub, i) => { walkSchema(sub, `${pointer}/${keyword}/${i}`, `${where} (${keyword} ${i})`) })
  }
}

/** The `example` and `examples` of a media type, parameter or header, against its schema. */
function walkExamples (node: Json, pointer: string, where: string, onValue?: (value: unknown) => void): void {
  const schemaPointer = node.schema === undefined ? undefined : `${pointer}/schema`
  if ('example' in node) {
    checkExample(schemaPointer, node.example, `${where} example`)
    onValue?.(node.example)
  }
  for (const [name, example] of entries(node.examples)) {
    const resolved = follow(example)
    if (resolved === undefined) problems.push(`${where} examples.${name}: cannot be resolved`)
    else if ('value' in resolved) {
      checkExample(schemaPointer, resolved.value, `${where} examples.${name}`)
      onValue?.(resolved.value)
    }
  }
}

/** Error codes with an example of an error response, and where. */
const errorExamples = new Map<string, string>()

function walkContent (content: unknown, pointer: string, where: string, body = false): void {
  for (const [type, media] of entries(content)) {
    if (!isObject(media)) continue
    const at = `${pointer}/content/${segment(type)}`
    walkSchema(media.schema, `${at}/schema`, `${where} ${type} schema`)
    if (body && media.schema !== undefined && !('example' in media) && entries(media.examples).length === 0 && !exemplified(media.schema)) {
      problems.push(`${where} ${type}: no example; Swagger UI would make one up at the schema's bounds (2147483647 for a stock count): add example: … beside its schema, or examples: [ … ] to the schema`)
    }
    const isError = isObject(media.schema) && media.schema.$ref === '#/components/schemas/Error'
    walkExamples(media, at, `${where} ${type}`, isError
      ? (value) => { if (isObject(value) && typeof value.code === 'string') errorExamples.set(value.code, where) }
      : undefined)
  }
}

function walkParameter (parameter: unknown, pointer: string, where: string): void {
  if (!isObject(parameter) || isRef(parameter)) return
  walkSchema(parameter.schema, `${pointer}/schema`, `${where} schema`)
  walkExamples(parameter, pointer, where)
  walkContent(parameter.content, pointer, where)
}

function walkResponse (response: unknown, pointer: string, where: string): void {
  if (!isObject(response) || isRef(response)) return
  for (const [name, header] of entries(response.headers)) walkParameter(header, `${pointer}/headers/${segment(name)}`, `${where} header ${name}`)
  walkContent(response.content, pointer, where, true)
}

function walkRequestBody (body: unknown, pointer: string, where: string): void {
  if (!isObject(body) || isRef(body)) return
  walkContent(body.content, pointer, where, true)
}

const components = isObject(raw.components) ? raw.components : {}
for (const [name, schema] of entries(components.schemas)) walkSchema(schema, `/components/schemas/${segment(name)}`, `components/schemas/${name}`)
for (const [name, p] of entries(components.parameters)) walkParameter(p, `/components/parameters/${segment(name)}`, `components/parameters/${name}`)
for (const [name, h] of entries(components.headers)) walkParameter(h, `/components/headers/${segment(name)}`, `components/headers/${name}`)
for (const [name, r] of entries(components.responses)) walkResponse(r, `/components/responses/${segment(name)}`, `components/responses/${name}`)
for (const [name, b] of entries(components.requestBodies)) walkRequestBody(b, `/components/requestBodies/${segment(name)}`, `components/requestBodies/${name}`)
// The webhooks (the requests the service sends) are path items too: their bodies need examples
// that match, as the operations' do.
for (const [section, path, item] of [...entries(raw.paths).map(([p, i]) => ['paths', p, i] as const), ...entries(raw.webhooks).map(([p, i]) => ['webhooks', p, i] as const)]) {
  if (!isObject(item)) continue
  const itemPointer = `/${section}/${segment(path)}`
  const parameters = (at: string, list: unknown, where: string) => {
    if (Array.isArray(list)) list.forEach((p, i) => { walkParameter(p, `${at}/parameters/${i}`, `${where} parameter ${isObject(p) && typeof p.name === 'string' ? p.name : i}`) })
  }
  parameters(itemPointer, item.parameters, path)
  for (const [method, op] of entries(item)) {
    if (!httpMethods.includes(method) || !isObject(op)) continue
    const at = `${itemPointer}/${method}`
    const where = `${typeof op.operationId === 'string' ? `${op.operationId} ` : ''}(${method.toUpperCase()} ${path})`
    parameters(at, op.parameters, where)
    walkRequestBody(op.requestBody, `${at}/requestBody`, `${where} request body`)
    for (const [status, response] of entries(op.responses)) walkResponse(response, `${at}/responses/${segment(status)}`, `${where} response ${status}`)
  }
}

const codes = ((errorSchema as Json | undefined)?.properties as Record<string, Json> | undefined)?.code?.enum
if (!Array.isArray(codes)) problems.push('components/schemas/Error: no enum of codes')
else {
  for (const code of codes as string[]) {
    if (!errorExamples.has(code)) problems.push(`Error code ${code} has no example: give a response that carries it an example with the message the service sends`)
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`${shown}: ${p}`)
  process.exit(1)
}
console.log(`${shown} is valid OpenAPI ${String(api.openapi)}; ${count} operations follow the project's rules; ${examples} examples match their schemas`)
