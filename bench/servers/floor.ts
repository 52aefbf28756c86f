/**
 * The floor (issue 23): what a perfect implementation of the service would cost for the requests
 * of the benchmark's workloads `list-100`, `list-10k`, `patch`, `get-pet` and `place-order`. Bare
 * Fastify (no plugin) doing only the work those requests cannot avoid, each step the cheapest way
 * this machine offers:
 *
 * - HTTP's framing rules checked (Host once and valid, one Authorization), the request id kept or
 *   made (randomUUID), the security headers set from one constant object;
 * - the API key hashed (SHA-256, as the service stores it) and found in a Map of the active keys;
 *   once per event-loop turn `PRAGMA data_version` says whether another connection (the keys
 *   CLI, another process) committed, and then everything kept in memory is read again, so a
 *   revoked key is refused from its next request, as openapi.yaml promises;
 * - both rate-limit windows (minute and day, aligned to UTC, the plans of openapi.yaml or the
 *   key's own limits) counted in a Map, with the X-RateLimit-* headers of the binding window;
 * - parameters and bodies validated by Fastify's own validator against the schemas of
 *   openapi.yaml, responses built by Fastify's own serializer from the same schemas;
 * - the inventory list answered from one Buffer kept per version (its exact bytes), with its
 *   entity tag (SHA-256 of the bytes, computed once per version) and its encodings (made once per
 *   version, when a client asks for one); a pet from a Buffer and tag kept per pet; If-None-Match
 *   answered 304; Vary and content coding negotiated for bodies of 1 KiB or more;
 * - every write committed before it is answered: SQLite through better-sqlite3, WAL,
 *   synchronous=NORMAL, the writes of one event-loop turn in one IMMEDIATE transaction (group
 *   commit, as the service does); a PATCH is one single-row UPDATE. The database is the
 *   service's own file (a copy of the dataset), so its change-log triggers fire, and the log is
 *   pruned once per commit as the service prunes it: that is the file format other processes
 *   read, not part of the request pipeline;
 * - the status of an entry (sold, pending, available) from the stock and the units its open
 *   orders reserve, both kept in memory: placing an order checks the stock there, not with a
 *   query over the pet's open orders.
 *
 * Left out, because the service does not have to do them per request: a per-request logger (at
 * LOG_LEVEL=warn nothing is logged), response validation (the bodies are built from typed values),
 * the key guard (every active key is in memory: a guessed key costs a hash and a Map lookup).
 * Not served: Idempotency-Key, listing, changing or cancelling orders, /readyz, the docs.
 *
 * Environment: DATABASE_FILE (a SQLite file made by the service's migrations), PORT, HOST.
 */
import { hash, randomUUID } from 'node:crypto'
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib'
import { negotiate } from '@fastify/accept-negotiator'
import type { Ajv } from 'ajv'
import Database from 'better-sqlite3'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { ApiError, notFound } from '../../src/contract/errors.js'
import { loadDocument } from '../../src/contract/document.js'
import { replyHeadersStarter } from '../../src/plugins/external/reply-headers.js'

type Json = Record<string, unknown>

const port = Number(process.env.PORT ?? 0)
const host = process.env.HOST ?? '127.0.0.1'
const file = process.env.DATABASE_FILE
if (file === undefined) throw new Error('floor: DATABASE_FILE is not set')
/** Where the deprecation Link points, as the service's default PUBLIC_BASE_URL is its own address. */
const publicBaseUrl = `http://${host}:${port}`

/**
 * The security headers of every service response (helmet with the service's options), as a real
 * response of the service sends them. bench/run.ts compares every header of the floor's answers
 * with the service's in its first round, and stops when they differ (bench/lib/floor-check.ts).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0'
}
const JSON_TYPE = 'application/json; charset=utf-8'
const BEARER_REALM = 'Bearer realm="petstore"'
/** The service's defaults (RATE_LIMIT_BAN_AFTER, RATE_LIMIT_BAN_SECONDS, BODY_LIMIT, REQUEST_TIMEOUT_MS). */
const BAN_AFTER = 10
const BAN_MS = 900_000
const BODY_LIMIT = 16_384
const REQUEST_TIMEOUT_MS = 30_000
/** Bodies below this are sent as they are (COMPRESSION_THRESHOLD of the service). */
const COMPRESSION_THRESHOLD = 1024
const CODINGS = ['br', 'gzip'] as const
type Coding = typeof CODINGS[number]
const MINUTE_MS = 60_000
const DAY_MS = 86_400_000
/** Rows of list_changes kept, as the service keeps them (src/store/sqlite/statements.ts). */
const CHANGES_KEPT = 50_000

// ---- The contract: openapi.yaml ---------------------------------------------------------------

const document = await loadDocument()
const operation = (id: string) => {
  const op = document.operations.get(id)
  if (op === undefined) throw new Error(`floor: openapi.yaml has no operation ${id}`)
  return op
}
const definition = (id: string) => operation(id).definition as {
  parameters?: { in: string, name: string, required?: boolean, schema: Json }[]
  requestBody?: { content: { 'application/json': { schema: Json } } }
  responses: Record<string, { content?: { 'application/json'?: { schema: Json } } }>
}
/** A route's schemas from openapi.yaml: its path and query parameters, its body, its success body. */
function schemasOf (id: string, status: string) {
  const def = definition(id)
  const part = (where: string) => {
    const params = (def.parameters ?? []).filter((p) => p.in === where)
    if (params.length === 0) return undefined
    return {
      type: 'object',
      additionalProperties: false,
      required: params.filter((p) => p.required === true).map((p) => p.name),
      properties: Object.fromEntries(params.map((p) => [p.name, p.schema]))
    }
  }
  const body = def.requestBody?.content['application/json'].schema
  const response = def.responses[status]?.content?.['application/json']?.schema
  const headers = part('header')
  return {
    ...(part('path') === undefined ? {} : { params: part('path') }),
    // An operation without query parameters refuses any (as the service does).
    querystring: part('query') ?? { type: 'object', additionalProperties: false, properties: {} },
    // Other headers are of course allowed.
    ...(headers === undefined ? {} : { headers: { ...headers, additionalProperties: true } }),
    ...(body === undefined ? {} : { body }),
    ...(response === undefined ? {} : { response: { [status]: response } })
  }
}
const plans = document.plans
const anonymousLimits = plans.free
if (anonymousLimits === undefined) throw new Error('floor: openapi.yaml has no free plan')
const getPetOperation = operation('getPetById')
const deprecationHeaders: Record<string, string> = {
  link: `<${publicBaseUrl}/docs${getPetOperation.docsAnchor}>; rel="deprecation"; type="text/html"`,
  ...(getPetOperation.deprecatedAt === undefined ? {} : { deprecation: `@${Math.floor(getPetOperation.deprecatedAt.getTime() / 1000)}` }),
  ...(getPetOperation.sunset === undefined ? {} : { sunset: getPetOperation.sunset.toUTCString() })
}
const sunsetAt = getPetOperation.sunset?.getTime() ?? Number.POSITIVE_INFINITY

// ---- The database and what is kept of it in memory ------------------------------------------

const db = new Database(file)
// The service's settings (src/store/sqlite/database.ts): a commit is in the WAL before it returns.
db.pragma('journal_mode = WAL')
db.pragma('synchronous = NORMAL')
db.pragma('foreign_keys = ON')
db.pragma('busy_timeout = 0')

interface Limits { perMinute: number, perDay: number }
interface Key { id: string, limits: Limits }
interface Entry { quantity: number, reserved: number }
type Status = 'available' | 'pending' | 'sold'
/** A body and what is derived from it, kept while it is current. */
interface Representation { bytes: Buffer, etag: string, encoded: Partial<Record<Coding, Promise<Buffer>>> }

const sql = {
  dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
  keys: db.prepare<[], { id: string, plan: string, perMinute: number | null, perDay: number | null, keyHash: string }>(
    'SELECT id, plan, per_minute AS perMinute, per_day AS perDay, key_hash AS keyHash FROM api_keys WHERE revoked_at IS NULL'),
  inventory: db.prepare<[], [number, number]>('SELECT pet_id, quantity FROM inventory ORDER BY pet_id').raw(),
  reserved: db.prepare<[], [number, number]>("SELECT pet_id, SUM(quantity) FROM orders WHERE status IN ('placed', 'approved') GROUP BY pet_id").raw(),
  pet: db.prepare<[number], { id: number, name: string, categoryId: number | null, categoryName: string | null, photoUrls: string, tags: string | null }>(
    'SELECT id, name, category_id AS categoryId, category_name AS categoryName, photo_urls AS photoUrls, tags FROM pets WHERE id = ?'),
  setQuantity: db.prepare<[number, number]>('UPDATE inventory SET quantity = ? WHERE pet_id = ?'),
  insertOrder: db.prepare<[number, number, string], { id: number }>(
    "INSERT INTO orders (pet_id, quantity, ship_date, status, complete) VALUES (?, ?, ?, 'placed', 0) RETURNING id"),
  pruneChangeLog: db.prepare(`DELETE FROM list_changes WHERE seq <= (SELECT MIN(seq) FROM list_changes) + 1000
    AND seq < (SELECT MAX(seq) FROM list_changes) - ${CHANGES_KEPT}`)
}

let keys = new Map<string, Key>()
let entries = new Map<number, Entry>()
/** Pet ids with an inventory entry, ascending (the list's order). */
let listIds: number[] = []
let list: Representation | undefined
const pets = new Map<number, Representation>()

const statusOf = (entry: Entry): Status => entry.quantity === 0 ? 'sold' : entry.reserved >= entry.quantity ? 'pending' : 'available'

/** Reads everything kept in memory from the database (at start, and after another connection's commit). */
function load (): void {
  keys = new Map(sql.keys.all().map((k) => [k.keyHash, {
    id: k.id,
    limits: k.perMinute !== null && k.perDay !== null ? { perMinute: k.perMinute, perDay: k.perDay } : plans[k.plan] ?? anonymousLimits!
  }]))
  entries = new Map(sql.inventory.all().map(([petId, quantity]) => [petId, { quantity, reserved: 0 }]))
  for (const [petId, units] of sql.reserved.all()) {
    const entry = entries.get(petId)
    if (entry !== undefined) entry.reserved = units
  }
  listIds = [...entries.keys()]
  list = undefined
  pets.clear()
}
load()

let dataVersion = sql.dataVersion.get()
let versionSeen = false
const nextTurn = () => { versionSeen = false }

/** Once per event-loop turn: has another connection committed since? Then read everything again. */
function seeOtherCommits (): void {
  if (versionSeen) return
  versionSeen = true
  setImmediate(nextTurn)
  const version = sql.dataVersion.get()
  if (version === dataVersion) return
  dataVersion = version
  load()
}

/** An entry's quantity or reservation changed: the list and that pet's body are stale. */
function changed (petId: number): void {
  list = undefined
  pets.delete(petId)
}

function representation (bytes: Buffer): Representation {
  return { bytes, etag: `"${hash('sha256', bytes, 'base64url')}"`, encoded: {} }
}

/** The list's bytes as the service sends them: each entry's JSON in petId order. */
function listBody (): Representation {
  if (list !== undefined) return list
  const parts: string[] = []
  for (const petId of listIds) {
    const entry = entries.get(petId)!
    parts.push(`{"petId":${petId},"quantity":${entry.quantity},"status":"${statusOf(entry)}"}`)
  }
  list = representation(Buffer.from(`[${parts.join(',')}]`))
  return list
}

/** A pet's bytes as the service sends them (its fields in the order src/store/rows.ts gives them). */
function petBody (petId: number): Representation | undefined {
  const cached = pets.get(petId)
  if (cached !== undefined) return cached
  const row = sql.pet.get(petId)
  if (row === undefined) return undefined
  const entry = entries.get(petId)
  const pet: Json = { id: row.id, name: row.name, photoUrls: JSON.parse(row.photoUrls), status: entry === undefined ? 'sold' : statusOf(entry) }
  if (row.categoryId !== null && row.categoryName !== null) pet.category = { id: row.categoryId, name: row.categoryName }
  if (row.tags !== null) pet.tags = JSON.parse(row.tags)
  const body = representation(Buffer.from(JSON.stringify(pet)))
  pets.set(petId, body)
  return body
}

// ---- Group commit ---------------------------------------------------------------------------

interface Pending { apply: () => unknown, resolve: (value: unknown) => void, reject: (error: unknown) => void }
type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

let queue: Pending[] = []
const waitingReads: (() => void)[] = []
const isConstraint = (error: unknown) => String((error as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT')
const applyAll = db.transaction((batch: Pending[]) => {
  const outcomes = batch.map((call): Outcome => {
    try {
      return { ok: true, value: call.apply() }
    } catch (error) {
      if (!isConstraint(error) || !db.inTransaction) throw error
      return { ok: false, error }
    }
  })
  sql.pruneChangeLog.run()
  return outcomes
})

/**
 * Runs `apply` in the transaction of this turn's writes; resolves once that has committed. An
 * apply changes what is kept in memory as it changes the rows (the batch runs synchronously, so
 * no request reads in between); when the transaction fails, everything is read again.
 */
function commit<T> (apply: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (queue.length === 0) setImmediate(flush)
    queue.push({ apply, resolve: resolve as (value: unknown) => void, reject })
  })
}

function flush (): void {
  const batch = queue
  queue = []
  let outcomes: Outcome[]
  try {
    outcomes = applyAll.immediate(batch)
  } catch (error) {
    load()
    const code = String((error as { code?: unknown }).code)
    if (code.startsWith('SQLITE_BUSY')) {
      // Only another process could hold the lock: try again shortly, in the same order.
      queue = [...batch, ...queue]
      setTimeout(flush, 1)
      return
    }
    for (const call of batch) call.reject(error)
    return wakeReads()
  }
  batch.forEach((call, i) => {
    const outcome = outcomes[i]!
    if (outcome.ok) call.resolve(outcome.value)
    else call.reject(outcome.error)
  })
  wakeReads()
}

function wakeReads (): void {
  if (queue.length > 0) return
  for (const wake of waitingReads.splice(0)) wake()
}

/** A read waits for the writes already accepted (read your writes, as the service does). */
const afterWrites = (): Promise<void> | undefined => queue.length === 0 ? undefined : new Promise((resolve) => { waitingReads.push(resolve) })

// ---- Per request: framing, request id, key, windows ------------------------------------------

// As the service does (src/plugins/external/reply-headers.ts): the security headers start each
// reply's header object, which then stays out of V8's dictionary mode at 20 headers and more.
const startHeaders = replyHeadersStarter(SECURITY_HEADERS)
function securityHeaders (reply: FastifyReply): void {
  startHeaders(reply)
}

const REQUEST_ID = /^[\w.:-]{1,128}$/
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::\d{0,5})?$/

function requestId (request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/** What breaks HTTP's framing rules (Host once and valid, at most one Authorization), if anything. */
function framingError (request: FastifyRequest): ApiError | undefined {
  const raw = request.raw.rawHeaders
  let hosts = 0
  let authorizations = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++
  }
  if (hosts === 0 && request.raw.httpVersion !== '1.0') return new ApiError('invalid_request', 'the Host header is required')
  if (hosts > 1) return new ApiError('invalid_request', 'the Host header must be sent once')
  if (hosts === 1 && !HOST.test(request.headers.host ?? '')) return new ApiError('invalid_request', 'the Host header must be a host name or address, with an optional port')
  if (authorizations > 1) return new ApiError('invalid_request', 'the Authorization header must be sent once')
  return undefined
}

const BEARER = /^bearer\s+(\S+)\s*$/i

/** The active key the request presents, or why it is refused. */
function checkKey (request: FastifyRequest): Key | ApiError {
  seeOtherCommits()
  const header = request.headers.authorization
  if (header === undefined) return new ApiError('unauthorized', 'missing Authorization header: send Authorization: Bearer <API_KEY>', { 'www-authenticate': BEARER_REALM })
  const match = BEARER.exec(header)
  if (match === null) return new ApiError('unauthorized', 'the Authorization header must use the Bearer scheme', { 'www-authenticate': `${BEARER_REALM}, error="invalid_request"` })
  const key = keys.get(hash('sha256', match[1]!, 'hex'))
  return key ?? new ApiError('unauthorized', 'invalid or revoked API key', { 'www-authenticate': `${BEARER_REALM}, error="invalid_token"` })
}

interface Windows { minute: number, minuteCount: number, day: number, dayCount: number, bannedUntil: number }
const counters = new Map<string, Windows>()

/**
 * Counts the request in both windows of its client (`key:<id>`, or `ip:<address>` without a
 * valid key) and sets the X-RateLimit-* headers of the binding window (fewest left; on a tie the
 * later reset). A refusal (limit reached, or banned) is returned.
 */
function countWindows (reply: FastifyReply, client: string, limits: Limits, now: number): ApiError | undefined {
  const minute = Math.floor(now / MINUTE_MS)
  const day = Math.floor(now / DAY_MS)
  let c = counters.get(client)
  if (c === undefined) {
    c = { minute, minuteCount: 0, day, dayCount: 0, bannedUntil: 0 }
    counters.set(client, c)
  }
  if (c.minute !== minute) { c.minute = minute; c.minuteCount = 0 }
  if (c.day !== day) { c.day = day; c.dayCount = 0 }
  if (c.bannedUntil > now) {
    setLimitHeaders(reply, Math.min(limits.perMinute, limits.perDay), 0, c.bannedUntil)
    return new ApiError('api_key_banned', `this client is banned until ${new Date(c.bannedUntil).toISOString()}`, { 'retry-after': String(Math.ceil((c.bannedUntil - now) / 1000)) })
  }
  c.dayCount++
  c.minuteCount++
  if (c.minuteCount - limits.perMinute > BAN_AFTER || c.dayCount - limits.perDay > BAN_AFTER) c.bannedUntil = now + BAN_MS
  const dayLeft = Math.max(0, limits.perDay - c.dayCount)
  const minuteLeft = Math.max(0, limits.perMinute - c.minuteCount)
  const dayBinds = dayLeft <= minuteLeft
  const limit = dayBinds ? limits.perDay : limits.perMinute
  const resetAt = dayBinds ? (day + 1) * DAY_MS : (minute + 1) * MINUTE_MS
  setLimitHeaders(reply, limit, dayBinds ? dayLeft : minuteLeft, resetAt)
  if (c.dayCount <= limits.perDay && c.minuteCount <= limits.perMinute) return undefined
  const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000))
  return new ApiError('rate_limited', `rate limit of ${limit} requests per ${dayBinds ? 'day' : 'minute'} exceeded; retry in ${retryAfter} s`, { 'retry-after': String(retryAfter) })
}

function setLimitHeaders (reply: FastifyReply, limit: number, remaining: number, resetAt: number): void {
  reply.header('x-ratelimit-limit', limit)
  reply.header('x-ratelimit-remaining', remaining)
  reply.header('x-ratelimit-reset', Math.ceil(resetAt / 1000))
}

// ---- Responses --------------------------------------------------------------------------------

const ENTITY_TAG = /(?:W\/)?("[^"]*")/g

/** If-None-Match against the current tag (weak comparison, RFC 9110 §13.1.2). */
function matches (ifNoneMatch: string | undefined, tag: string): boolean {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === '*') return true
  for (const [, opaque] of ifNoneMatch.matchAll(ENTITY_TAG)) if (opaque === tag) return true
  return false
}

function chooseCoding (request: FastifyRequest): Coding | undefined {
  const accepted = request.headers['accept-encoding']
  if (accepted === undefined || request.headers['x-no-compression'] !== undefined) return undefined
  return (negotiate(accepted.toLowerCase().replace(/\*|x-gzip/g, 'gzip'), [...CODINGS]) ?? undefined) as Coding | undefined
}

function encode (bytes: Buffer, coding: Coding): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, result: Buffer) => { if (error === null) resolve(result); else reject(error) }
    const chunkSize = Math.min(2 ** 20, Math.max(zlibConstants.Z_DEFAULT_CHUNK, bytes.length))
    if (coding === 'br') brotliCompress(bytes, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 }, chunkSize }, done)
    else gzip(bytes, { level: 6, chunkSize }, done)
  })
}

/** A JSON body of a GET: its entity tag, a 304 when the client holds it, its coding when asked for one. */
async function sendJson (request: FastifyRequest, reply: FastifyReply, body: Representation): Promise<FastifyReply> {
  reply.header('content-type', JSON_TYPE)
  const compressible = body.bytes.length >= COMPRESSION_THRESHOLD
  const coding = compressible ? chooseCoding(request) : undefined
  if (compressible) reply.header('vary', 'Accept-Encoding')
  const tag = coding === undefined ? body.etag : `${body.etag.slice(0, -1)}-${coding}"`
  reply.header('etag', tag)
  if (matches(request.headers['if-none-match'], tag)) {
    reply.removeHeader('content-type')
    return reply.code(304).send()
  }
  if (coding === undefined) return reply.send(body.bytes)
  const encoded = await (body.encoded[coding] ??= encode(body.bytes, coding))
  reply.header('content-encoding', coding)
  return reply.send(encoded)
}

// ---- The server -------------------------------------------------------------------------------

const app = Fastify({
  logger: false,
  bodyLimit: BODY_LIMIT,
  requestIdHeader: false,
  genReqId: requestId,
  onProtoPoisoning: 'error',
  onConstructorPoisoning: 'error',
  requestTimeout: REQUEST_TIMEOUT_MS,
  http: { requireHostHeader: false, requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
  return503OnClosing: false,
  // Fastify's own validator (ajv), refusing unknown properties as openapi.yaml's
  // additionalProperties: false says (Fastify's default would drop them), with the document's
  // integer formats. It still coerces types ('array'), as Fastify does.
  ajv: {
    customOptions: { removeAdditional: false, strict: false },
    plugins: [(ajv: Ajv) => {
      ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) })
      return ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
    }]
  }
})

app.setErrorHandler((error: Error & { statusCode?: number, validation?: unknown }, _request, reply) => {
  if (error instanceof ApiError) return reply.headers(error.headers).code(error.statusCode).send(error.toBody())
  const status = error.validation !== undefined ? 400 : error.statusCode ?? 500
  const code = status === 400 ? 'invalid_request' : status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : status === 404 ? 'not_found' : 'internal_error'
  return reply.code(status).send({ code, message: status === 500 ? 'internal error' : error.message, status })
})

app.get('/healthz', (_request, reply) => { reply.send({ status: 'ok' }) })

app.register(async (v1) => {
  v1.decorateRequest('key', null)
  // One hook for every /v1 request: security headers, request id, framing, key, both windows.
  v1.addHook('onRequest', function v1Request (request, reply, done) {
    securityHeaders(reply)
    reply.header('x-request-id', request.id)
    const framing = framingError(request)
    const key = framing === undefined ? checkKey(request) : framing
    const valid = key instanceof ApiError ? undefined : key
    const refusal = valid === undefined
      ? countWindows(reply, `ip:${request.ip}`, anonymousLimits, Date.now())
      : countWindows(reply, `key:${valid.id}`, valid.limits, Date.now())
    if (refusal !== undefined) return done(refusal)
    if (key instanceof ApiError) return done(key)
    request.key = valid!
    done()
  })

  v1.get('/inventory', { schema: schemasOf('listInventory', '200') }, async function listInventory (request, reply) {
    const pending = afterWrites()
    if (pending !== undefined) await pending
    return sendJson(request, reply, listBody())
  })

  v1.patch<{ Params: { petId: number }, Body: { quantity: number } }>('/inventory/:petId', { schema: schemasOf('updateInventory', '200') },
    async function updateInventory (request) {
      const { petId } = request.params
      const { quantity } = request.body
      const status = await commit(() => {
        const entry = entries.get(petId)
        if (entry === undefined) return undefined
        sql.setQuantity.run(quantity, petId)
        entry.quantity = quantity
        changed(petId)
        return statusOf(entry)
      })
      if (status === undefined) throw notFound(`no inventory entry for pet ${petId}`)
      return { petId, quantity, status }
    })

  v1.get<{ Params: { petId: number } }>('/pets/:petId', {
    schema: schemasOf('getPetById', '200'),
    onSend: function deprecation (_request, reply, payload, done) { reply.headers(deprecationHeaders); done(null, payload) }
  }, async function getPet (request, reply) {
    if (Date.now() >= sunsetAt) throw new ApiError('gone', 'GET /pets/{petId} was retired')
    const pending = afterWrites()
    if (pending !== undefined) await pending
    const { petId } = request.params
    const body = petBody(petId)
    if (body === undefined) throw notFound(`no pet with id ${petId}`)
    return sendJson(request, reply, body)
  })

  v1.post<{ Body: { petId: number, quantity: number, shipDate?: string } }>('/store/orders', { schema: schemasOf('placeOrder', '201') },
    async function placeOrder (request, reply) {
      const { petId, quantity } = request.body
      const shipDate = request.body.shipDate ?? new Date().toISOString()
      const placed = await commit(() => {
        const entry = entries.get(petId)
        if (entry === undefined) return new ApiError('not_found', `no inventory entry for pet ${petId}`)
        const available = Math.max(0, entry.quantity - entry.reserved)
        if (quantity > available) return new ApiError('insufficient_stock', `pet ${petId} has ${available} units left to reserve; ${quantity} requested`)
        const { id } = sql.insertOrder.get(petId, quantity, shipDate)!
        entry.reserved += quantity
        changed(petId)
        return id
      })
      if (placed instanceof ApiError) throw placed
      reply.header('location', `/v1/store/orders/${placed}`)
      return reply.code(201).send({ id: placed, petId, quantity, shipDate, status: 'placed', complete: false })
    })
}, { prefix: '/v1' })

declare module 'fastify' {
  interface FastifyRequest {
    key: Key | null
  }
}

await app.listen({ port, host })
// On SIGTERM (the benchmark's stop) the writes still queued are committed before the file is closed.
process.once('SIGTERM', () => {
  app.close().then(() => {
    if (queue.length > 0) flush()
    db.close()
  }).finally(() => process.exit(0))
})
