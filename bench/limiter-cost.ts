/**
 * What the rate limiter costs per request: GET /v1/inventory against the service built by
 * buildApp with the limits off, on with the in-memory store, and on with Redis (when one answers
 * at REDIS_URL, default redis://127.0.0.1:6379), all in the same run. Each configuration is its
 * own server process (pinned to core 0 when taskset exists); autocannon runs here (core 1), in
 * interleaved rounds so that background load falls on every configuration alike. The key is an
 * enterprise key with limits no run reaches, so every response is a 200 that went through the
 * whole limiter. Besides req/s it reports the server's CPU time per request (from /proc), which
 * other load on the machine disturbs much less than req/s.
 *
 *   npx tsx bench/limiter-cost.ts [--duration 8] [--rounds 3] [--connections 16]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { Redis } from 'ioredis'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { issueApiKey } from '../src/store/api-keys.js'
import { BENCH_LIMITS } from './lib/datasets.js'

type Variant = 'off' | 'memory' | 'redis'

interface Served { port: number, key: string }

/** Child mode: one server for one configuration; prints {port, key} once it listens. */
async function serve (variant: Variant, databaseFile: string, redisUrl: string, redisPrefix: string): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: `sqlite:${databaseFile}`,
    LOG_LEVEL: 'warn',
    ...(variant === 'redis' ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix } : {})
  })
  const app = await buildApp(config, { rateLimit: variant !== 'off', logger: false })
  const { secret } = await issueApiKey(app.store, { name: 'bench', plan: 'enterprise', ...BENCH_LIMITS })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  console.log(JSON.stringify({ port: address.port, key: secret } satisfies Served))
  process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
}

const here = fileURLToPath(import.meta.url)
const taskset = existsSync('/usr/bin/taskset')

function startChild (variant: Variant, databaseFile: string, redisUrl: string, redisPrefix: string): Promise<{ child: ChildProcess } & Served> {
  const args = ['--import', 'tsx', here, '--serve', variant, databaseFile, redisUrl, redisPrefix]
  const child = taskset
    ? spawn('taskset', ['-c', '0', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${variant} server exited with ${String(code)}`)))
    createInterface({ input: child.stdout! }).once('line', (line) => resolve({ child, ...JSON.parse(line) as Served }))
  })
}

interface Run { rps: number, p50: number, p99: number, non2xx: number, errors: number, cpuMicros: number }

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks (USER_HZ = 100)
}

async function load (pid: number, port: number, key: string, seconds: number, connections: number): Promise<Run> {
  const cpuBefore = cpuSeconds(pid)
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/v1/inventory`,
    headers: { authorization: `Bearer ${key}` },
    connections,
    duration: seconds
  }) as unknown as { requests: { total: number }, duration: number, latency: { p50: number, p99: number }, non2xx: number, errors: number }
  const cpuMicros = (cpuSeconds(pid) - cpuBefore) * 1e6 / result.requests.total
  return { rps: result.requests.total / result.duration, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors, cpuMicros }
}

async function redisAnswers (url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.ping()
    return true
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}

async function deleteKeys (url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 0 })
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    if (keys.length > 0) await client.del(...keys)
    cursor = next
  } while (cursor !== '0')
  client.disconnect()
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '8' }, rounds: { type: 'string', default: '3' }, connections: { type: 'string', default: '16' }, redis: { type: 'string', default: 'redis://127.0.0.1:6379' } } })
  const seconds = Number(values.duration)
  const rounds = Number(values.rounds)
  const connections = Number(values.connections)
  const redisUrl = values.redis
  const redisPrefix = `petstore-bench:${randomUUID()}:`
  if (taskset) execFileSync('taskset', ['-p', '-c', '1', String(process.pid)], { stdio: 'ignore' })

  const variants: Variant[] = ['off', 'memory']
  if (await redisAnswers(redisUrl)) variants.push('redis')
  else console.log(`(Redis does not answer at ${redisUrl}: measuring off and memory only)`)

  const dir = mkdtempSync(join(tmpdir(), 'limiter-cost-'))
  const servers = new Map<Variant, { child: ChildProcess } & Served>()
  try {
    for (const variant of variants) servers.set(variant, await startChild(variant, join(dir, `${variant}.db`), redisUrl, redisPrefix))
    const loadOn = (variant: Variant, duration: number) => {
      const server = servers.get(variant)!
      return load(server.child.pid!, server.port, server.key, duration, connections)
    }
    for (const variant of variants) await loadOn(variant, 2) // warm-up

    const runs = new Map<Variant, Run[]>(variants.map((v) => [v, []]))
    for (let round = 1; round <= rounds; round++) {
      // The order rotates each round, so no configuration always follows the same one.
      for (const variant of variants.map((_, i) => variants[(i + round) % variants.length]!)) {
        const run = await loadOn(variant, seconds)
        if (run.non2xx > 0 || run.errors > 0) throw new Error(`${variant}: ${run.non2xx} non-2xx, ${run.errors} errors`)
        runs.get(variant)!.push(run)
        console.log(`round ${round} ${variant.padEnd(6)} ${run.rps.toFixed(0)} req/s  p50 ${run.p50} ms  p99 ${run.p99} ms  server CPU ${run.cpuMicros.toFixed(1)} µs/request`)
      }
    }

    const offRps = median(runs.get('off')!.map((r) => r.rps))
    const offCpu = median(runs.get('off')!.map((r) => r.cpuMicros))
    console.log(`\nGET /v1/inventory, ${connections} connections, ${rounds} × ${seconds} s per configuration${taskset ? ', server on core 0, autocannon on core 1' : ''}\n`)
    console.log('| rate limits | req/s (median) | req/s per round | vs off | server CPU per request (median) | added by the limiter |')
    console.log('|---|---|---|---|---|---|')
    for (const variant of variants) {
      const rps = median(runs.get(variant)!.map((r) => r.rps))
      const cpu = median(runs.get(variant)!.map((r) => r.cpuMicros))
      const perRound = runs.get(variant)!.map((r) => r.rps.toFixed(0)).join(', ')
      const vsOff = variant === 'off' ? '' : `${(100 * (rps / offRps - 1)).toFixed(1)} %`
      const added = variant === 'off' ? '' : `${(cpu - offCpu).toFixed(1)} µs`
      console.log(`| ${variant} | ${rps.toFixed(0)} | ${perRound} | ${vsOff} | ${cpu.toFixed(1)} µs | ${added} |`)
    }
  } finally {
    for (const { child } of servers.values()) child.kill('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
    if (variants.includes('redis')) await deleteKeys(redisUrl, redisPrefix)
  }
}

if (process.argv[2] === '--serve') {
  await serve(process.argv[3] as Variant, process.argv[4]!, process.argv[5]!, process.argv[6]!)
} else {
  await main()
}
