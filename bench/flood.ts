/**
 * Key-guessing flood (issue 13, item 2), against a real server process on PostgreSQL with
 * DATABASE_POOL_MAX=4 and the in-memory rate-limit store:
 *
 *   npx tsx bench/flood.ts                 # 10,000 random keys from 50 loopback addresses
 *   npx tsx bench/flood.ts --requests 2000 --addresses 20
 *   npx tsx bench/flood.ts --memory        # memory per tracked client, and the sweep's steps
 *
 * One valid (enterprise) key sends a request every 20 ms, first alone (its unloaded latency),
 * then while the flood runs. Each flood address is a loopback source address of its own
 * (127.0.1.1, 127.0.1.2, …) with its own keep-alive connections.
 *
 * Key lookups that reached PostgreSQL are read from the statistics of the api_keys table (every
 * lookup is one scan of it; the server process is stopped first, so that its connections flush
 * their counters): the scans during the run minus the valid key's requests are the guesses that
 * cost a query. They are compared with what the Free plan allows the flood's addresses in the
 * minute windows the flood touched.
 *
 * PostgreSQL comes from BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); the
 * run creates a schema of its own and drops it afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { Agent, request as httpRequest } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { runInNewContext } from 'node:vm'
import { setFlagsFromString } from 'node:v8'
import Fastify from 'fastify'
import pg from 'pg'
import app, { serverOptions } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { loadDocument } from '../src/contract/document.js'
import { projectRoot } from '../src/contract/paths.js'
import { MemoryRateLimitStore } from '../src/rate-limit/memory-store.js'
import { issueApiKey } from '../src/repositories/api-keys.js'
import { createStore } from '../src/store/create-store.js'
import { freePort } from './lib/servers.js'

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    addresses: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '1' },
    memory: { type: 'boolean', default: false },
    clients: { type: 'string', default: '100000' }
  }
})

const VALID_INTERVAL_MS = 20
const UNLOADED_REQUESTS = 300

const percentile = (sorted: number[], p: number) => sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
const ms = (value: number) => `${value.toFixed(1)} ms`

interface Answer { status: number, ms: number }

function get (agent: Agent, port: number, key: string): Promise<Answer> {
  const started = performance.now()
  return new Promise((resolve) => {
    const request = httpRequest({ host: '127.0.0.1', port, path: '/v1/inventory', agent, headers: { authorization: `Bearer ${key}` } }, (response) => {
      response.resume()
      response.on('end', () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }))
    })
    request.on('error', () => resolve({ status: 0, ms: performance.now() - started }))
    request.end()
  })
}

/** The valid key's steady traffic: one request every VALID_INTERVAL_MS until `stop` says so. */
async function steady (port: number, key: string, stop: () => boolean): Promise<Answer[]> {
  const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.1' })
  const answers: Answer[] = []
  const pending: Promise<void>[] = []
  while (!stop()) {
    pending.push(get(agent, port, key).then((answer) => { answers.push(answer) }))
    await sleep(VALID_INTERVAL_MS)
  }
  await Promise.all(pending)
  agent.destroy()
  return answers
}

function summary (answers: Answer[]) {
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b)
  return { count: answers.length, errors: answers.filter((a) => a.status !== 200).length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN }
}

async function apiKeyScans (admin: pg.Client, schema: string): Promise<number> {
  const { rows } = await admin.query<{ scans: string }>(
    'SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS scans FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2', [schema, 'api_keys'])
  return Number(rows[0]?.scans ?? 0)
}

function startServer (databaseUrl: string, port: number): { child: ChildProcess, ready: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'src', 'server.ts')], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'production', LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, DATABASE_POOL_MAX: '4' },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const ready = (async () => {
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return
      } catch { /* not listening yet */ }
      await sleep(100)
    }
    throw new Error('the server did not start within 30 s')
  })()
  return { child, ready }
}

async function flood () {
  const requests = Number(args.requests)
  const addresses = Number(args.addresses)
  const perAddressConcurrency = Number(args.concurrency)
  const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = `petstore_flood_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  const url = new URL(base)
  url.searchParams.set('options', `-c search_path=${schema}`)
  const databaseUrl = url.toString()
  let child: ChildProcess | undefined
  try {
    const store = await createStore(databaseUrl)
    await store.migrate()
    const { secret } = await issueApiKey(store, { name: 'steady', plan: 'enterprise', perMinute: 10_000_000, perDay: 100_000_000 })
    await store.close()
    await sleep(500)
    const scansBefore = await apiKeyScans(admin, schema)

    const port = await freePort()
    const server = startServer(databaseUrl, port)
    child = server.child
    await server.ready

    let sent = 0
    const unloaded = summary(await steady(port, secret, () => sent++ >= UNLOADED_REQUESTS))

    let flooding = true
    const during = steady(port, secret, () => !flooding)
    const statuses = new Map<number, number>()
    const floodStart = Date.now()
    const started = performance.now()
    const perAddress = Math.ceil(requests / addresses)
    await Promise.all(Array.from({ length: addresses }, async (_, i) => {
      const agent = new Agent({ keepAlive: true, maxSockets: perAddressConcurrency, localAddress: `127.0.1.${i + 1}` })
      let left = Math.max(0, Math.min(perAddress, requests - i * perAddress))
      await Promise.all(Array.from({ length: perAddressConcurrency }, async () => {
        while (left > 0) {
          left--
          const { status } = await get(agent, port, `psk_${randomBytes(32).toString('base64url')}`)
          statuses.set(status, (statuses.get(status) ?? 0) + 1)
        }
      }))
      agent.destroy()
    }))
    const floodMs = performance.now() - started
    const floodEnd = Date.now()
    flooding = false
    const loaded = summary(await during)

    child.kill('SIGTERM')
    await once(child, 'exit')
    child = undefined
    await sleep(1000) // the backends' counters are flushed as they exit
    const scans = await apiKeyScans(admin, schema) - scansBefore
    const validRequests = unloaded.count + loaded.count
    const guessedLookups = scans - validRequests

    const free = (await loadDocument()).plans.free!
    const minuteWindows = Math.floor(floodEnd / 60_000) - Math.floor(floodStart / 60_000) + 1
    const allowed = addresses * Math.min(free.perDay, free.perMinute * minuteWindows)
    const floodSeconds = floodMs / 1000

    console.log(`machine load average (1, 5, 15 min) at the end: ${loadavg().map((l) => l.toFixed(1)).join(', ')} on ${cpus().length} cores`)
    console.log(`flood: ${requests} requests with random keys from ${addresses} addresses (${perAddressConcurrency} connections each) in ${floodSeconds.toFixed(1)} s`)
    console.log(`  answers: ${[...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`).join(', ')}`)
    console.log(`valid key, alone:        ${unloaded.count} requests, ${unloaded.errors} errors, p50 ${ms(unloaded.p50)}, p99 ${ms(unloaded.p99)}, max ${ms(unloaded.max)}`)
    console.log(`valid key, during flood: ${loaded.count} requests, ${loaded.errors} errors, p50 ${ms(loaded.p50)}, p99 ${ms(loaded.p99)}, max ${ms(loaded.max)} (p99 ${(loaded.p99 / unloaded.p99).toFixed(2)} × unloaded)`)
    const refusedUnknown = statuses.get(401) ?? 0
    console.log(`key lookups that reached PostgreSQL (api_keys scans): ${scans}, of which the valid key's ${validRequests}: guesses looked up ${guessedLookups}`)
    console.log(`  = ${refusedUnknown} answered 401 (within the addresses' allowance) + ${guessedLookups - refusedUnknown} from limited addresses (the trickle, answered 429)`)
    console.log(`  the Free plan allows these ${addresses} addresses ${allowed} requests in the ${minuteWindows} minute window(s) the flood touched (${free.perMinute} each a minute);`)
    console.log(`  the trickle adds at most one lookup per limited address per second: ${addresses} × ${Math.ceil(floodSeconds)} s = ${addresses * Math.ceil(floodSeconds)}`)
  } finally {
    if (child !== undefined && child.exitCode === null) child.kill('SIGKILL')
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  }
}

/** Heap per tracked client, measured in this process with the service's own code. */
async function memory () {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const heap = () => {
    gc()
    gc()
    return process.memoryUsage().heapUsed
  }
  const clients = Number(args.clients)
  const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`

  // Over real HTTP, behind a trusted proxy (this process): every request names another client in
  // X-Forwarded-For. (app.inject is not used: with Fastify 5.12 each injected request stays
  // reachable, about 9.5 kB apiece, which would swamp the figure.)
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', TRUST_PROXY: '127.0.0.1' })
  const server = Fastify(serverOptions(config))
  await server.register(app, { config })
  await server.listen({ port: 0, host: '127.0.0.1' })
  const { port } = server.server.address() as { port: number }
  const agent = new Agent({ keepAlive: true, maxSockets: 50 })
  const send = (client: string) => new Promise<void>((resolve, reject) => {
    httpRequest({
      host: '127.0.0.1', port, path: '/v1/inventory', agent,
      headers: { authorization: `Bearer psk_${randomBytes(32).toString('base64url')}`, 'x-forwarded-for': client }
    }, (response) => { response.resume(); response.on('end', resolve) }).on('error', reject).end()
  })
  // Warm up every code path first, so that compiled code is not counted as client state.
  for (let i = 0; i < 2000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => send(address(clients + i + j))))
  const start = heap()
  for (let i = 0; i < clients; i += 50) await Promise.all(Array.from({ length: Math.min(50, clients - i) }, (_, j) => send(address(i + j))))
  const counted = heap()
  const guard = server.rateLimits.keyGuard
  for (let i = 0; i < clients; i++) guard.addressLimited(address(i), Date.now() + 60_000)
  const limited = heap()
  console.log(`${clients} addresses, each sending one request with an unknown key (its two window counters in the memory store; the last 10,000 keys in the negative cache):`)
  console.log(`  heap ${((counted - start) / 1e6).toFixed(1)} MB: ${Math.round((counted - start) / clients)} bytes per address`)
  console.log(`the same addresses, each limited (one entry in the key guard): ${Math.round((limited - counted) / clients)} bytes per address more (bounded at 100,000 entries)`)
  console.log(`  key guard: ${JSON.stringify(guard.sizes())}`)
  agent.destroy()
  await server.close()

  const store = new MemoryRateLimitStore()
  const rule = { max: 60, banAfter: 10, banMs: 900_000 }
  const t0 = Date.UTC(2026, 4, 4, 12, 0, 20)
  for (let i = 0; i < clients; i++) {
    store.hit(`ip:${address(i)}`, 86_400_000, t0, rule)
    store.hit(`ip:${address(i)}`, 60_000, t0, rule)
  }
  gc()
  const steps: number[] = []
  for (let now = t0 + 61_000; store.sizes().counters > clients + 1; now += 20) {
    const before = process.cpuUsage()
    store.hit('ip:192.0.2.1', 60_000, now, rule)
    const used = process.cpuUsage(before)
    steps.push((used.user + used.system) / 1000)
  }
  steps.sort((a, b) => a - b)
  console.log(`memory store sweep after ${clients} clients' minute windows ended: ${steps.length} steps, CPU per step p50 ${ms(percentile(steps, 0.5))}, p99 ${ms(percentile(steps, 0.99))}, max ${ms(steps.at(-1)!)}`)
}

if (args.memory) await memory()
else await flood()
