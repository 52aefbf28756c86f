/**
 * npx tsx bench/list-writes.ts [--size N] [--rounds N] [--accept-encoding br] [--checkout DIR]: issue 15's workload for
 * incremental lists. One connection, a PATCH of a random entry before every GET /v1/inventory, on
 * N entries (default 100,000). Reports the GET's server time (Fastify's responseTime, from the
 * server's own log), its time at the client, the same for GETs with no write before them (the
 * list unchanged), and the longest event-loop block of the server during each phase
 * (bench/lib/loop-delay.mjs, in windows of 200 ms). The server runs from src/ through tsx, pinned to core 0 when
 * taskset exists; `--checkout DIR` runs DIR's src/server.ts instead (another build, for a before /
 * after figure), on a dataset seeded by this checkout. The GETs ask for no content coding (as wrk
 * does) unless --accept-encoding says otherwise. `--json FILE` also writes the figures of each
 * phase there (a full `npm run bench` runs this script and judges issue 15's targets from them).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { projectRoot } from '../src/contract/paths.js'
import { seedDatabase } from './lib/datasets.js'
import { coreCount, hasTaskset, pinSelf } from './lib/proc.js'
import { startServer } from './lib/servers.js'

const { values: args } = parseArgs({ options: { size: { type: 'string' }, rounds: { type: 'string' }, checkout: { type: 'string' }, only: { type: 'string' }, profile: { type: 'string' }, 'accept-encoding': { type: 'string' }, json: { type: 'string' } } })
const size = Number(args.size ?? 100_000)
const rounds = Number(args.rounds ?? 200)
const checkout = resolve(args.checkout ?? projectRoot)
const pinned = coreCount() >= 2 && hasTaskset()
if (pinned) pinSelf(1)

const scratch = mkdtempSync(join(tmpdir(), 'petstore-list-writes-'))
const file = join(scratch, 'list.db')
console.log(`seeding ${size.toLocaleString('en')} entries…`)
const key = await seedDatabase(`sqlite:${file}`, size)
const loopFile = join(scratch, 'loop.json')
const server = await startServer({
  name: 'list-writes',
  entry: join(checkout, 'src', 'server.ts'),
  env: { DATABASE_URL: `sqlite:${file}`, SEED: 'false', NODE_ENV: 'production', LOG_LEVEL: 'info', LOOP_DELAY_FILE: loopFile, NODE_OPTIONS: `--import=${join(projectRoot, 'bench', 'lib', 'loop-delay.mjs')}` },
  cpuProfileDir: args.profile === undefined ? undefined : resolve(args.profile),
  cwd: checkout,
  logDir: scratch,
  core: pinned ? 0 : undefined
})

// wrk (npm run bench) asks for no content coding; fetch would ask for br and gzip.
const headers = { authorization: `Bearer ${key}`, 'accept-encoding': args['accept-encoding'] ?? 'identity' }
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!
/** The responseTime of every GET /v1/inventory in the server's log so far, in order. */
const serverTimes = () => {
  const lists = new Set<unknown>()
  const times: number[] = []
  for (const line of readFileSync(server.logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue
    const entry = JSON.parse(line) as { reqId?: unknown, req?: { method?: string, url?: string }, responseTime?: number }
    if (entry.req?.method === 'GET' && entry.req.url === '/v1/inventory') lists.add(entry.reqId)
    else if (entry.responseTime !== undefined && lists.has(entry.reqId)) times.push(entry.responseTime)
  }
  return times
}
interface LoopWindow { t: number, max: number, gc: { count: number, major: number, longest: number } }
/** The server's event-loop and GC figures between two times (from windows of 200 ms). */
const loopFigures = (from: number, to: number) => {
  const windows = readFileSync(loopFile, 'utf8').trim().split('\n')
    .map((line) => JSON.parse(line) as LoopWindow).filter((w) => w.t > from && w.t - 200 < to)
  return {
    block: Math.max(0, ...windows.map((w) => w.max)),
    gcs: windows.reduce((n, w) => n + w.gc.count, 0),
    majorGcs: windows.reduce((n, w) => n + w.gc.major, 0),
    longestGc: Math.max(0, ...windows.map((w) => w.gc.longest))
  }
}

/** What each phase measured, in ms (written with --json). */
export interface ListWritesPhase {
  name: string
  writes: boolean
  gets: number
  serverP50: number
  serverP99: number
  clientP50: number
  longestBlock: number
  gcs: number
  majorGcs: number
  longestGc: number
}
const phases: ListWritesPhase[] = []

async function phase (name: string, withWrites: boolean) {
  const logged = serverTimes().length
  const startedAt = Date.now()
  const client: number[] = []
  for (let i = 0; i < rounds; i++) {
    if (withWrites) {
      const res = await fetch(`${server.baseUrl}/v1/inventory/${1 + Math.floor(Math.random() * size)}`, {
        method: 'PATCH', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ quantity: Math.floor(Math.random() * 60) })
      })
      if (res.status !== 200) throw new Error(`PATCH answered ${res.status}`)
      await res.arrayBuffer()
    }
    const started = performance.now()
    const res = await fetch(`${server.baseUrl}/v1/inventory`, { headers })
    const body = await res.arrayBuffer()
    client.push(performance.now() - started)
    if (res.status !== 200 || (headers['accept-encoding'] === 'identity' && body.byteLength < size * 40)) throw new Error(`GET answered ${res.status} with ${body.byteLength} bytes`)
  }
  const endedAt = Date.now()
  await sleep(400)
  const loop = loopFigures(startedAt, endedAt)
  const times = serverTimes().slice(logged)
  phases.push({
    name,
    writes: withWrites,
    gets: times.length,
    serverP50: quantile(times, 0.5),
    serverP99: quantile(times, 0.99),
    clientP50: quantile(client, 0.5),
    longestBlock: loop.block,
    gcs: loop.gcs,
    majorGcs: loop.majorGcs,
    longestGc: loop.longestGc
  })
  console.log(`${name.padEnd(28)} GET server time p50 ${quantile(times, 0.5).toFixed(2)} ms, p99 ${quantile(times, 0.99).toFixed(2)} ms; ` +
    `at the client p50 ${quantile(client, 0.5).toFixed(2)} ms; longest event-loop block ${loop.block.toFixed(1)} ms; ${loop.gcs} GCs (${loop.majorGcs} major), longest ${loop.longestGc.toFixed(1)} ms`)
}

try {
  console.log(`${checkout}: ${rounds} GETs per phase, one connection${pinned ? ', server on core 0, this client on core 1' : ''}`)
  // The first GET builds the list (and the serializer checks it in full): not measured.
  await (await fetch(`${server.baseUrl}/v1/inventory`, { headers })).arrayBuffer()
  if (args.only !== 'writes') await phase('unchanged list', false)
  if (args.only !== 'unchanged') await phase('a PATCH before every GET', true)
  if (args.only !== 'writes') await phase('unchanged list (again)', false)
  if (args.json !== undefined) writeFileSync(resolve(args.json), JSON.stringify({ size, rounds, pinned, acceptEncoding: headers['accept-encoding'], phases }, null, 2) + '\n')
} catch (error) {
  console.error(`failed; the server's log:\n${readFileSync(server.logFile, 'utf8').split('\n').filter((line) => !line.includes('responseTime') && !line.includes('incoming request')).slice(-20).join('\n')}`)
  throw error
} finally {
  await server.stop()
  rmSync(scratch, { recursive: true, force: true })
}
