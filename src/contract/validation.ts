import type { Readable } from 'node:stream'
import type { FastifySchema, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ResponseValidationError } from './errors.js'
import { createAjv } from './ajv.js'
import type { JsonListVersion } from './json-list.js'
import { bytesOfList, JsonListStream, JsonText } from './json-text.js'

type JsonSchema = Record<string, unknown>

/**
 * Bodies are validated as sent (no coercion). Path, query and header values arrive as text: each
 * is parsed as its declared type by OpenAPI's serialization rules, then validated by the same ajv.
 * - integer: plain decimal (`42`; not `042`, `+42`, `4.2e1`, `0x2a`), exactly representable;
 * - number: a JSON number (`-1.5`, `2e3`; not `.5`, `+1`, `Infinity`);
 * - boolean: exactly `true` or `false`;
 * - string: as sent;
 * - array: in the query, form style exploded (`?status=a&status=b`; one occurrence is a list of
 *   one); in the path or a header, simple style (`a,b`). Each item is parsed as its own type.
 * Every operation's query string is validated, and a parameter the operation does not declare
 * is refused, as an unknown body property is. Headers it does not declare are of course allowed.
 */
const ajv = createAjv()

/**
 * Compiled validators by schema, as text. Fastify asks for one per route, part and status, and
 * every app built in this process asks again for the same schemas: ajv's own cache goes by object
 * identity, and fastify-openapi-glue hands over a fresh clone of the document at each
 * registration. A server builds one app; the test suite builds hundreds, each of which compiled
 * every schema of openapi.yaml anew (about 0.2 s of CPU per app).
 */
const compiled = new Map<string, ValidateFunction>()

function compile (schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema)
  let validate = compiled.get(key)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    compiled.set(key, validate)
  }
  return validate
}

const PLAIN_DECIMAL = /^-?(0|[1-9][0-9]*)$/
const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/
const SAFE_RANGE = `from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`

type TextPart = 'params' | 'querystring' | 'headers'

/** A value that is not text of its declared type; `at` is its path under the parameter's. */
class Malformed {
  constructor (readonly type: string, readonly message: string, readonly at = '') {}
}

type Parse = (text: string) => unknown

function scalarParser (schema: JsonSchema, parameter: string): Parse {
  switch (schema.type) {
    case 'integer':
      return (text) => {
        if (!PLAIN_DECIMAL.test(text)) return new Malformed('integer', 'must be an integer written in plain decimal')
        const value = Number(text)
        return Number.isSafeInteger(value) ? value : new Malformed('integer', `must be an integer ${SAFE_RANGE}`)
      }
    case 'number':
      return (text) => {
        const value = JSON_NUMBER.test(text) ? Number(text) : Number.NaN
        return Number.isFinite(value) ? value : new Malformed('number', 'must be a number written in decimal')
      }
    case 'boolean':
      return (text) => text === 'true' ? true : text === 'false' ? false : new Malformed('boolean', 'must be boolean')
    case 'string':
    case undefined:
      return (text) => text
    default:
      throw new Error(`parameter ${parameter}: a ${JSON.stringify(schema.type)} cannot be sent as text; ` +
        'declare integer, number, boolean, string or an array of these')
  }
}

/** How one parameter's received value (text, or a list of texts for a repeated query parameter) becomes its value. */
function parameterParser (schema: JsonSchema, part: TextPart, parameter: string): (received: unknown) => unknown {
  if (schema.type !== 'array') {
    const parse = scalarParser(schema, parameter)
    return (received) => typeof received === 'string'
      ? parse(received)
      : new Malformed(String(schema.type ?? 'string'), 'must be given once')
  }
  const items = (schema.items ?? {}) as JsonSchema
  if (items.type === 'array') throw new Error(`parameter ${parameter}: an array of arrays cannot be sent as text`)
  const parse = scalarParser(items, parameter)
  const parseAll = (texts: readonly unknown[]) => {
    const values: unknown[] = []
    for (const [index, text] of texts.entries()) {
      const value = parse(String(text))
      if (value instanceof Malformed) return new Malformed(value.type, value.message, `/${index}`)
      values.push(value)
    }
    return values
  }
  if (part === 'querystring') return (received) => parseAll(Array.isArray(received) ? received : [received])
  // Node joins a repeated header with ", "; list headers allow spaces around their commas.
  const separator = part === 'headers' ? /[ \t]*,[ \t]*/ : ','
  return (received) => parseAll(String(received).split(separator))
}

/**
 * Node gives header names in lower case; Fastify lower-cases a headers schema to match only for
 * its own validator compiler, so this one does it.
 */
function lowerCaseHeaderNames (schema: JsonSchema): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema> | undefined
  const required = schema.required as string[] | undefined
  return {
    ...schema,
    ...(properties && { properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name.toLowerCase(), property])) }),
    ...(required && { required: required.map((name) => name.toLowerCase()) })
  }
}

function textValidator (given: JsonSchema, part: TextPart) {
  const schema = part === 'headers'
    ? lowerCaseHeaderNames(given)
    : part === 'querystring' && given.additionalProperties === undefined ? { ...given, additionalProperties: false } : given
  const validate = compile(schema)
  const parsers = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)
    .map(([name, property]) => [name, parameterParser(property, part, `${part}/${name}`)] as const)

  const validator = (data: Record<string, unknown> | null): boolean => {
    if (data !== null) {
      for (const [name, parse] of parsers) {
        if (!Object.hasOwn(data, name)) continue
        const value = parse(data[name])
        if (value instanceof Malformed) {
          validator.errors = [{
            instancePath: `/${name}${value.at}`,
            schemaPath: `#/properties/${name}/type`,
            keyword: 'type',
            params: { type: value.type },
            message: value.message
          }] satisfies ErrorObject[]
          return false
        }
        // Parsed in place, as Fastify's own coercion does, so the handler receives the values.
        data[name] = value
      }
    }
    const valid = validate(data)
    validator.errors = validate.errors
    return valid
  }
  validator.errors = null as ValidateFunction['errors']
  return validator
}

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) => {
  const validator = httpPart === 'params' || httpPart === 'querystring' || httpPart === 'headers'
    ? textValidator(schema as JsonSchema, httpPart)
    : compile(schema as JsonSchema)
  return validator as ReturnType<FastifySchemaCompiler<FastifySchema>>
}


/**
 * An array schema whose only constraint is on its items (annotations aside): a version of a list
 * whose earlier version passed is then valid when each element changed since passes the items
 * schema.
 */
function itemsOnly (schema: JsonSchema): JsonSchema | undefined {
  const annotations = new Set(['type', 'items', 'description', 'title', 'example', 'examples'])
  if (schema.type !== 'array' || typeof schema.items !== 'object' || schema.items === null) return undefined
  return Object.keys(schema).every((key) => annotations.has(key)) ? schema.items as JsonSchema : undefined
}

/** How often each list version has been sent as a stream (see bodyOf). */
const streamedTimes = new WeakMap<JsonListVersion, number>()

/**
 * Sends of one version as a stream before its parts are copied into one Buffer. Streaming a
 * version costs a write per part (100 parts at 100,000 entries: about 0.2–0.3 ms more per GET
 * than one Buffer); the copy costs 5 MB at once, and under writes, when each version is sent only
 * a few times, those copies made V8 collect the whole heap every few hundred milliseconds (its
 * external memory grew by 5 MB per version): PATCH and GET alternating at 100,000 entries
 * answered 240–300 requests/s with a copy from the second send, 560–590 with none (interleaved,
 * server on one core). Copying after 16 sends bounds both: a version read that often is read
 * often enough to repay the copy, and one that changes sooner is never copied.
 */
export const SENDS_BEFORE_COPY = 16

/**
 * How a list version is sent: as a stream of its parts, which the list's other versions share
 * (no copy of the whole body), until it has been sent SENDS_BEFORE_COPY times; from then on as
 * one Buffer, copied once and kept with the version, which Node sends with a single write.
 */
function bodyOf (version: JsonListVersion): Buffer | Readable {
  const times = streamedTimes.get(version) ?? 0
  if (times >= SENDS_BEFORE_COPY) return bytesOfList(version)
  streamedTimes.set(version, times + 1)
  return new JsonListStream(version)
}

/**
 * Whether nothing in a value can change any more: every object in it is a frozen plain object or
 * array. The stores freeze what they cache (src/store/sqlite/caches.ts,
 * src/store/postgres/entry-cache.ts), so a pet read from the cache is the same frozen object,
 * request after request; freezing cannot be undone, so a value found deeply frozen once stays so.
 * Other objects do not count: freezing a Date or a Map leaves its contents changeable (and
 * neither passes a schema of openapi.yaml as it is).
 */
function deeplyFrozen (value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  if (!Object.isFrozen(value)) return false
  if (!Array.isArray(value) && Object.getPrototypeOf(value) !== Object.prototype) return false
  for (const child of Object.values(value)) {
    if (!deeplyFrozen(child)) return false
  }
  return true
}

/**
 * Every response body is checked against its schema in openapi.yaml before it is sent. A body
 * outside its schema is a bug: it becomes a 500, never a silently reshaped response.
 *
 * A body given as JsonText is checked by parsing that text, so what is validated is exactly what
 * is sent. The last text that passed is remembered: the same text again (a list nothing has
 * changed since) is neither parsed nor checked again, since identical text gets an identical
 * verdict. Comparing costs nothing when it is the same string and a memcmp when it is an equal copy.
 *
 * A JsonText holding a list version (json-list.ts) is checked in full the first time; after that
 * the versions of that list from the first one checked to the last are known to pass, and a newer
 * version passes when every element changed since the last one passes the items schema (the
 * array around them is built by the list itself). When the list cannot tell what changed (it was
 * rebuilt, or too much changed) the new version is checked in full again.
 *
 * A body that is deeply frozen (a cached pet, say) is checked and turned into bytes once; those
 * bytes are sent for it from then on, and conditional-requests.ts keeps its entity tag with them.
 */
export const serializerCompiler: FastifySerializerCompiler<FastifySchema> = ({ schema, method, url, httpStatus }) => {
  const validate = compile(schema as JsonSchema)
  const items = itemsOnly(schema as JsonSchema)
  const validateItem = items && compile(items)
  const fail = (detail: string) => new ResponseValidationError(`${method} ${url} ${httpStatus}: ${detail}`)
  const check = (data: unknown) => {
    if (!validate(data)) throw fail(ajv.errorsText(validate.errors, { dataVar: 'response' }))
  }
  const parse = (text: string, what: string) => {
    try {
      return JSON.parse(text) as unknown
    } catch (error) {
      throw fail(`${what} is not JSON (${(error as Error).message})`)
    }
  }
  let lastValidText: string | undefined
  let lastValidBytes: Buffer | undefined
  // Checked bytes of bodies that can never change, kept per route and status (the same object may
  // be sent under another schema elsewhere, and is checked there on its own).
  const frozenBodies = new WeakMap<object, Buffer>()
  // The list whose versions from `validFrom` to `validTo` passed.
  let validList: object | undefined
  let validFrom = 0
  let validTo = -1

  const listBody = (data: JsonText): Buffer | Readable => {
    const current = data.list!
    const { version } = current
    if (current.list === validList && version >= validFrom && version <= validTo) return bodyOf(current)
    const changed = validateItem !== undefined && current.list === validList && version > validTo
      ? current.changedSince(validTo)
      : undefined
    if (changed !== undefined) {
      for (const text of changed) {
        if (!validateItem!(parse(text, 'a response list element'))) {
          throw fail(ajv.errorsText(validateItem!.errors, { dataVar: 'response[]' }) + ` in element ${text.slice(0, 200)}`)
        }
      }
      validTo = version
    } else {
      check(parse(data.text, 'response text'))
      validList = current.list
      validFrom = validTo = version
    }
    return bodyOf(current)
  }

  return (data: unknown) => {
    if (data instanceof JsonText) {
      // Fastify sends a Buffer payload as it is, and pipes a stream (its typings only mention
      // strings for a serializer's result).
      if (data.list !== undefined) return listBody(data) as unknown as string
      if (data.text !== lastValidText || lastValidBytes === undefined) {
        check(parse(data.text, 'response text'))
        lastValidText = data.text
        lastValidBytes = Buffer.from(data.text)
      }
      // The encoded bytes, kept with the text: a large list is then sent without encoding and
      // measuring it again per response.
      return lastValidBytes as unknown as string
    }
    // Object.isFrozen first: the bodies built per request (a PATCH's answer) pass on at once.
    if (typeof data === 'object' && data !== null && Object.isFrozen(data)) {
      const kept = frozenBodies.get(data)
      if (kept !== undefined) return kept as unknown as string
      if (deeplyFrozen(data)) {
        check(data)
        const bytes = Buffer.from(JSON.stringify(data))
        frozenBodies.set(data, bytes)
        return bytes as unknown as string
      }
    }
    check(data)
    return JSON.stringify(data)
  }
}
