/**
 * Soak: a bounded load against a real server process, with every kind of answer in the mix
 * (200s, 400, 401, 404, 429 and the ban), reporting its resident memory (VmRSS) before load,
 * after a warm-up and through the run. Memory that keeps growing under a steady load is a
 * leak: growth after the warm-up beyond SOAK_RSS_GROWTH_MB fails. Throughput is the
 * benchmark's business, not this test's.
 *
 * SOAK_SECONDS (default 20) and SOAK_WARMUP_SECONDS (default 5) set the phases.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { generateApiKey } from '../../src/store/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 20)
const WARMUP_SECONDS = Number(process.env.SOAK_WARMUP_SECONDS ?? 5)
/** Resident memory may grow this much from the end of the warm-up to the end of the run. */
const RSS_GROWTH_BOUND_MB = Number(process.env.SOAK_RSS_GROWTH_MB ?? 32)
const CONNECTIONS = 16

interface LoadResult { errors: number, timeouts: number, requests: { total: number } }
interface LoadInstance extends PromiseLike<LoadResult> {
  on (event: 'response', listener: (client: unknown, statusCode: number) => void): void
}
// autocannon ships no types; this is the part of its API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (options: Record<string, unknown>) => LoadInstance

const MB = 1024 * 1024
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`

function rss (pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!match) throw new Error(`no VmRSS for process ${pid}`)
  return Number(match[1]) * 1024
}

async function enterpriseKey (databaseUrl: string): Promise<string> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
    const key = generateApiKey()
    await store.createApiKey({ id: key.id, name: 'soak', plan: 'enterprise', keyHash: key.hash, perMinute: 10_000_000, perDay: 100_000_000 })
    return key.secret
  } finally {
    await store.close()
  }
}

t.test(`soak: ${WARMUP_SECONDS} s warm-up, then ${SOAK_SECONDS} s of mixed load; RSS growth after warm-up ≤ ${RSS_GROWTH_BOUND_MB} MB`, async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'soak.db')}`
  const key = await enterpriseKey(databaseUrl)
  const server = await startServer(t, { DATABASE_URL: databaseUrl })
  const pid = server.child.pid!
  const auth = { authorization: `Bearer ${key}` }
  const json = { ...auth, 'content-type': 'application/json' }

  // One cycle per connection: successes on every operation, and each kind of refusal.
  const requests = [
    { method: 'GET', path: '/v1/inventory', headers: auth },
    ...Array.from({ length: 10 }, (_, i) => ({ method: 'PATCH', path: `/v1/inventory/${i + 1}`, headers: json, body: JSON.stringify({ quantity: (i * 7) % 13 }) })),
    { method: 'GET', path: '/v1/pets/3', headers: auth },
    { method: 'GET', path: '/v1/store/orders', headers: auth },
    { method: 'PATCH', path: '/v1/inventory/1', headers: json, body: '{"quantity":"5","extra":true}' },
    { method: 'PATCH', path: '/v1/inventory/1', headers: json, body: '{"quantity":1,"__proto__":{"x":1}}' },
    { method: 'GET', path: '/v1/pets/999999', headers: auth },
    { method: 'GET', path: '/v1/no-such-route', headers: auth },
    { method: 'GET', path: '/v1/inventory', headers: { authorization: 'Bearer psk_not-a-key' } }, // 401, then 429 per address
    { method: 'GET', path: '/healthz' }
  ]

  const statuses = new Map<number, number>()
  const load = async (seconds: number) => {
    const instance = autocannon({ url: server.baseUrl, connections: CONNECTIONS, duration: seconds, requests })
    instance.on('response', (_client, status) => { statuses.set(status, (statuses.get(status) ?? 0) + 1) })
    return instance
  }

  const before = rss(pid)
  const warmup = await load(WARMUP_SECONDS)
  const afterWarmup = rss(pid)

  const samples: number[] = []
  const sampler = setInterval(() => { samples.push(rss(pid)) }, 1000)
  let result: LoadResult
  try {
    result = await load(SOAK_SECONDS)
  } finally {
    clearInterval(sampler)
  }
  const after = rss(pid)
  const peak = Math.max(afterWarmup, after, ...samples)
  const growth = after - afterWarmup

  const total = warmup.requests.total + result.requests.total
  const histogram = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ')
  t.comment(`soak: ${total} requests over ${WARMUP_SECONDS + SOAK_SECONDS} s with ${CONNECTIONS} connections; status codes ${histogram}`)
  t.comment(`soak RSS: before load ${mb(before)}, after warm-up ${mb(afterWarmup)}, after ${SOAK_SECONDS} s more ${mb(after)} ` +
    `(growth ${mb(growth)}, peak ${mb(peak)}); samples ${samples.map((s) => (s / MB).toFixed(0)).join(' ')} MB`)

  t.equal(warmup.errors + result.errors, 0, 'no connection errors')
  t.equal(warmup.timeouts + result.timeouts, 0, 'no timeouts')
  t.notOk([...statuses.keys()].some((s) => s >= 500), 'no 5xx under load')
  t.ok(statuses.get(200) && statuses.get(400) && statuses.get(404) && statuses.get(429), 'successes and each kind of refusal were in the mix')
  t.ok(growth <= RSS_GROWTH_BOUND_MB * MB, `RSS grew ${mb(growth)} after the warm-up (bound ${RSS_GROWTH_BOUND_MB} MB)`)

  const health = await fetch(`${server.baseUrl}/healthz`)
  t.equal(health.status, 200, 'the server is healthy after the soak')
  t.equal(await server.stop('SIGTERM'), 0, 'and stops cleanly')
})
