/**
 * npx tsx bench/counts.ts [--requests N]: what one request asks of PostgreSQL and Redis, and how
 * many bytes it answers with — counted, not timed, so the figures do not depend on how busy the
 * machine is. The inputs of docs/capacity.md besides CPU time.
 *
 * The service runs in this process on a fresh PostgreSQL database of its own (from
 * BENCH_DATABASE_URL, dropped afterwards), with its limits counted in Redis (BENCH_REDIS_URL)
 * under a key prefix of its own (deleted afterwards). Requests are sent one at a time over one
 * keep-alive connection, after a warm-up (prepared statements, caches), as an enterprise key whose
 * limits never bind.
 *
 * - PostgreSQL: the statements the service sends (each is one round trip), counted by wrapping
 *   pg's Client#query, by name. The server's own counters cannot be used here: pg_stat_statements
 *   needs a restart to be loaded, and pg_stat_database counts transactions, not statements, and
 *   publishes a backend's figures only when it flushes them (up to 10 s after it goes idle).
 * - Redis: the commands the service sends (wrapping ioredis' sendCommand), and the commands Redis
 *   executes (INFO commandstats deltas, which include those run inside the limiter's Lua script).
 *   commandstats is server-wide: when the scripts it counts differ from the ones sent, another
 *   client used the server meanwhile and the executed figures are marked.
 * - Bytes: the response as it leaves the socket (status line, headers, body), and the request as
 *   sent here (request line, Host, Authorization, and for PATCH its body); for the GETs, also the
 *   response to the same request accepting gzip, br, and with If-None-Match its ETag (a 304).
 */
import { request as httpRequest, Agent, type IncomingMessage } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import pg from 'pg'
import app, { serverOptions } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { commandLine } from './lib/command-line.js'
import { createPostgresDatabase, deleteRedisKeys, dropPostgresDatabase, postgresUnavailable, redact, redisUnavailable, seedDatabase } from './lib/datasets.js'

const { parse, wholeNumber } = commandLine('bench/counts.ts',
  'npx tsx bench/counts.ts [--requests N]   (N requests counted per operation on the 100-entry dataset, default 200)')
const { values: args } = parse({ options: { requests: { type: 'string' }, help: { type: 'boolean', default: false } } })
const requests = wholeNumber('requests', args.requests, 200, 10)
const WARM_UP = 10
const SIZES = [100, 10_000, 100_000]

const adminPgUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const redisPrefix = `petstore-counts:${process.pid}:`

// ---- Counting in the client ------------------------------------------------------------------

const pgSent = new Map<string, number>()
const redisSent = new Map<string, number>()
/** This script's own Redis connection (INFO), which is not the service's. */
let infoClient: Redis | undefined

const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1)

// Statements are labelled by their prepared name, else by the start of their text.
const statementLabel = (config: unknown): string => {
  const c = config as { name?: string, text?: string } | string
  const text = typeof c === 'string' ? c : c?.name ?? c?.text ?? '?'
  return text.replace(/\s+/g, ' ').trim().slice(0, 40)
}
const pgQuery = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  bump(pgSent, statementLabel(args[0]))
  return pgQuery.apply(this, args)
} as typeof pg.Client.prototype.query

const redisSend = Redis.prototype.sendCommand
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<typeof redisSend>) {
  if (this !== infoClient) bump(redisSent, args[0].name.toLowerCase())
  return redisSend.apply(this, args)
}

/** This script's own PostgreSQL connection: the cluster's snapshot, which only writes change. */
let snapshotClient: pg.Client | undefined
const clusterSnapshot = async () => snapshotClient === undefined
  ? undefined
  : (await snapshotClient.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s')).rows[0]!.s

async function commandStats (): Promise<Map<string, number>> {
  const text = await infoClient!.info('commandstats')
  const stats = new Map<string, number>()
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(match[1]!, Number(match[2]))
  return stats
}

function delta (after: Map<string, number>, before: Map<string, number>, skip: string[] = []): Map<string, number> {
  const d = new Map<string, number>()
  for (const [name, n] of after) {
    const change = n - (before.get(name) ?? 0)
    if (change !== 0 && !skip.includes(name)) d.set(name, change)
  }
  return d
}

const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0)

// ---- One keep-alive connection, counting bytes --------------------------------------------------

interface Sent {
  method: 'GET' | 'PATCH'
  path: string
  body?: string
}

interface Exchange {
  status: number
  etag: string | undefined
  requestBytes: number
  responseBytes: number
  /** As received, still encoded when the response was compressed. */
  body: Buffer
}

function send (agent: Agent, port: number, secret: string, sent: Sent, extra: Record<string, string> = {}): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${secret}`, ...extra }
    if (sent.body !== undefined) {
      headers['content-type'] = 'application/json'
      headers['content-length'] = String(Buffer.byteLength(sent.body))
    }
    const req = httpRequest({ host: '127.0.0.1', port, method: sent.method, path: sent.path, headers, agent }, (res: IncomingMessage) => {
      const socket = res.socket
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      res.on('end', () => {
        // One request at a time on this socket: its counters up to the end of this response,
        // less where they stood before it, are exactly this exchange.
        const before = readAt.get(socket) ?? { read: 0, written: 0 }
        readAt.set(socket, { read: socket.bytesRead, written: socket.bytesWritten })
        const etag = res.headers.etag
        resolve({ status: res.statusCode ?? 0, etag, requestBytes: socket.bytesWritten - before.written, responseBytes: socket.bytesRead - before.read, body: Buffer.concat(chunks) })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(sent.body)
  })
}
const readAt = new WeakMap<object, { read: number, written: number }>()

// ---- Operations -------------------------------------------------------------------------------

interface Operation {
  id: string
  title: string
  /** The requests of the i-th repetition (a pair for "PATCH, then GET list"). */
  requests: (i: number) => Sent[]
  /** Run on every dataset size (their cost or size depends on it), not only the 100-entry one. */
  bySize?: boolean
}

const patch = (i: number): Sent => ({ method: 'PATCH', path: `/v1/inventory/${(i % 100) + 1}`, body: JSON.stringify({ quantity: (i * 7) % 1000 }) })
const list: Sent = { method: 'GET', path: '/v1/inventory' }
const operations: Operation[] = [
  { id: 'list', title: 'GET list (unchanged since the last one)', requests: () => [list], bySize: true },
  { id: 'patch', title: 'PATCH inventory', requests: (i) => [patch(i)] },
  { id: 'patch+list', title: 'PATCH, then GET list (the list after a write)', requests: (i) => [patch(i), list], bySize: true },
  { id: 'get-pet', title: 'GET pet', requests: (i) => [{ method: 'GET', path: `/v1/pets/${(i % 100) + 1}` }] },
  { id: 'orders', title: 'GET orders (one open order per 10 pets)', requests: () => [{ method: 'GET', path: '/v1/store/orders' }], bySize: true }
]

interface Row {
  size: number
  operation: Operation
  repetitions: number
  statuses: Set<number>
  pg: Map<string, number>
  redisSent: Map<string, number>
  redisExecuted: Map<string, number> | undefined
  /** Another client used Redis meanwhile: the executed counts include its commands. */
  redisShared: boolean
  /** Another session wrote to the PostgreSQL cluster meanwhile (only known for rows that do not write). */
  othersWrote: boolean
  requestBytes: number
  responseBytes: number
  bodyBytes: number
  /** The GET once more as a client accepting gzip, then br, would get it, and with If-None-Match its ETag: response bytes. */
  variants: { gzip: number, br: number, notModified: number | undefined } | undefined
}

async function measure (agent: Agent, port: number, secret: string, size: number, operation: Operation, repetitions: number): Promise<Row> {
  for (let i = 0; i < WARM_UP; i++) for (const sent of operation.requests(i)) await send(agent, port, secret, sent)
  const statsBefore = infoClient === undefined ? undefined : await commandStats()
  const clusterBefore = await clusterSnapshot()
  const pgBefore = new Map(pgSent)
  const redisBefore = new Map(redisSent)
  const row: Row = { size, operation, repetitions, statuses: new Set(), pg: new Map(), redisSent: new Map(), redisExecuted: undefined, redisShared: false, othersWrote: false, requestBytes: 0, responseBytes: 0, bodyBytes: 0, variants: undefined }
  for (let i = WARM_UP; i < WARM_UP + repetitions; i++) {
    for (const sent of operation.requests(i)) {
      const exchange = await send(agent, port, secret, sent)
      row.statuses.add(exchange.status)
      row.requestBytes += exchange.requestBytes
      row.responseBytes += exchange.responseBytes
      row.bodyBytes += exchange.body.length
    }
  }
  row.pg = delta(pgSent, pgBefore)
  const readOnly = operation.requests(0).every((sent) => sent.method === 'GET')
  row.othersWrote = readOnly && clusterBefore !== await clusterSnapshot()
  row.redisSent = delta(redisSent, redisBefore)
  if (statsBefore !== undefined) {
    // INFO itself is this script's; the service sends none.
    row.redisExecuted = delta(await commandStats(), statsBefore, ['info'])
    const scripts = (m: Map<string, number>) => (m.get('evalsha') ?? 0) + (m.get('eval') ?? 0)
    row.redisShared = scripts(row.redisExecuted) !== scripts(row.redisSent)
  }
  // After the counting: the last request again, compressed, then conditional.
  const last = operation.requests(WARM_UP + repetitions - 1).at(-1)!
  if (last.method === 'GET') {
    const gzip = await send(agent, port, secret, last, { 'accept-encoding': 'gzip' })
    const br = await send(agent, port, secret, last, { 'accept-encoding': 'br' })
    const again = br.etag === undefined ? undefined : await send(agent, port, secret, last, { 'accept-encoding': 'br', 'if-none-match': br.etag })
    for (const e of [gzip, br]) row.statuses.add(e.status)
    row.variants = { gzip: gzip.responseBytes, br: br.responseBytes, notModified: again?.status === 304 ? again.responseBytes : undefined }
  }
  return row
}

// ---- Run --------------------------------------------------------------------------------------

const notes: string[] = []
const pgSkipped = await postgresUnavailable(adminPgUrl)
const redisSkipped = await redisUnavailable(redisUrl)
if (pgSkipped !== undefined) notes.push(`PostgreSQL not counted: ${pgSkipped}; the service ran on SQLite`)
if (redisSkipped !== undefined) notes.push(`Redis not counted: ${redisSkipped}; the limits were counted in memory`)
for (const n of notes) console.log(`note: ${n}`)

const scratch = mkdtempSync(join(tmpdir(), 'petstore-counts-'))
const databases: string[] = []
const rows: Row[] = []
if (redisSkipped === undefined) {
  infoClient = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 })
  await infoClient.connect()
}
if (pgSkipped === undefined) {
  snapshotClient = new pg.Client({ connectionString: adminPgUrl })
  await snapshotClient.connect()
}

try {
  for (const size of SIZES) {
    let databaseUrl = `sqlite:${join(scratch, `counts-${size}.db`)}`
    if (pgSkipped === undefined) {
      const name = `petstore_counts_${process.pid}_${size}`
      databaseUrl = await createPostgresDatabase(adminPgUrl, name)
      databases.push(name)
    }
    console.log(`${size.toLocaleString('en')} entries: seeding ${pgSkipped === undefined ? 'PostgreSQL' : 'SQLite'}…`)
    const secret = await seedDatabase(databaseUrl, size)
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      ...(redisSkipped === undefined ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix } : {}),
      SEED: 'false',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production'
    })
    const server = Fastify(serverOptions(config))
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      await server.register(app, { config })
      await server.listen({ port: 0, host: '127.0.0.1' })
      const { port } = server.server.address() as { port: number }
      for (const operation of operations) {
        if (size !== SIZES[0] && operation.bySize !== true) continue
        // The large lists take long enough that fewer repetitions say the same.
        const repetitions = size === SIZES[0] ? requests : 10
        process.stdout.write(`  ${operation.id}…\r`)
        rows.push(await measure(agent, port, secret, size, operation, repetitions))
      }
    } finally {
      agent.destroy()
      await server.close()
    }
  }
} finally {
  infoClient?.disconnect()
  await snapshotClient?.end()
  for (const name of databases) await dropPostgresDatabase(adminPgUrl, name).catch((e: Error) => console.error(`could not drop ${name}: ${e.message}`))
  if (redisSkipped === undefined) await deleteRedisKeys(redisUrl, redisPrefix).catch((e: Error) => console.error(`could not delete ${redisPrefix}*: ${e.message}`))
  rmSync(scratch, { recursive: true, force: true })
}

// ---- Report -----------------------------------------------------------------------------------

const perRequest = (n: number, row: Row) => String(Number((n / row.repetitions).toFixed(3)))
const breakdown = (counts: Map<string, number>, row: Row) =>
  counts.size === 0 ? '—' : [...counts].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${perRequest(n, row)} ${name}`).join(', ')
const bytes = (n: number, row: Row) => Math.round(n / row.repetitions).toLocaleString('en')

// Rows during which other sessions wrote to the cluster (only writes to this run's own schema,
// announced by NOTIFY, make the service read again; the note says the row may include such
// re-reads), and rows whose requests did not all send the same statements.
for (const row of rows) {
  const where = `${row.operation.title}, ${row.size.toLocaleString('en')} entries`
  if (row.othersWrote) {
    notes.push(`${where}: other sessions wrote to the PostgreSQL cluster meanwhile; only writes to this run's database make the service read again, so a re-read counted here came from one of those`)
  }
  const uneven = [...row.pg].filter(([, n]) => n % row.repetitions !== 0).map(([name, n]) => `${perRequest(n, row)} ${name}`)
  if (uneven.length > 0) notes.push(`${where}: not every request sent the same statements (${uneven.join(', ')} per request)`)
}

const statusText = (row: Row) => [...row.statuses].sort().join('/')
const anyBadStatus = rows.some((r) => [...r.statuses].some((s) => s >= 300))

console.log(`
# Counts per request

Written by \`npx tsx bench/counts.ts${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}\` on ${new Date().toISOString()}.
Service in-process on ${pgSkipped === undefined ? `PostgreSQL (${redact(adminPgUrl)}, a database of its own per size)` : 'SQLite'}, limits in ${redisSkipped === undefined ? `Redis (${redact(redisUrl)})` : 'memory'};
one enterprise key whose limits never bind; requests one at a time on one keep-alive connection,
after ${WARM_UP} of warm-up; ${requests} counted per operation on 100 entries, 10 on the larger datasets.
"PATCH, then GET list" is counted per pair.

## Per request, 100 entries

| operation | status | PostgreSQL statements | by statement | Redis commands sent | Redis commands executed | request bytes | response bytes (headers + body) |
|---|---|---:|---|---:|---|---:|---:|
${rows.filter((r) => r.size === SIZES[0]).map((r) => `| ${r.operation.title} | ${statusText(r)} | ${pgSkipped === undefined ? perRequest(total(r.pg), r) : 'n/a'} | ${breakdown(r.pg, r)} | ${redisSkipped === undefined ? perRequest(total(r.redisSent), r) : 'n/a'} | ${r.redisExecuted === undefined ? 'n/a' : `${perRequest(total(r.redisExecuted), r)}: ${breakdown(r.redisExecuted, r)}${r.redisShared ? ' (**other clients were active: inflated**)' : ''}`} | ${bytes(r.requestBytes, r)} | ${bytes(r.responseBytes, r)} (${bytes(r.responseBytes - r.bodyBytes, r)} + ${bytes(r.bodyBytes, r)}) |`).join('\n')}

## By dataset size

Bytes are per request (per pair for "PATCH, then GET list"), sent without Accept-Encoding. The
last GET was then sent again with \`Accept-Encoding: gzip\`, with \`br\`, and with \`br\` and
\`If-None-Match\` its ETag: the response bytes (headers included) of each, and whether it was a 304.

| operation | entries | PostgreSQL statements | Redis commands sent | response bytes | of which body | GET, gzip | GET, br | GET, br, If-None-Match (304) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.filter((r) => r.operation.bySize === true).sort((a, b) => a.operation.id.localeCompare(b.operation.id) || a.size - b.size).map((r) => `| ${r.operation.title} | ${r.size.toLocaleString('en')} | ${pgSkipped === undefined ? perRequest(total(r.pg), r) : 'n/a'} | ${redisSkipped === undefined ? perRequest(total(r.redisSent), r) : 'n/a'} | ${bytes(r.responseBytes, r)} | ${bytes(r.bodyBytes, r)} | ${r.variants?.gzip.toLocaleString('en') ?? '—'} | ${r.variants?.br.toLocaleString('en') ?? '—'} | ${r.variants?.notModified?.toLocaleString('en') ?? 'no 304'} |`).join('\n')}
${notes.length > 0 ? '\n' + notes.map((n) => `- ${n}`).join('\n') + '\n' : ''}`)
if (anyBadStatus) {
  console.error('bench/counts.ts: some requests were not answered 2xx (see the status column): the counts are not those of a served request')
  process.exit(1)
}
