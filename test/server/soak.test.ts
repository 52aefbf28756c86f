/**
 * Soak: a bounded load against a real server process, with every kind of answer in the mix
 * (200s, 400, 401, 404, 429 and the ban), reporting its resident memory (VmRSS) before load,
 * after a warm-up and through the run. Memory that keeps growing under a steady load is a leak.
 *
 * RSS alone is a poor witness: under load V8 lets its heap grow for a while before collecting
 * (by tens of MB, depending on the request rate), which is not a leak. So the server process is
 * started with test/helpers/gc-probe.mjs preloaded: at each measuring point it collects all
 * garbage and reports the heap still in use. The run fails when, from the end of the warm-up to
 * the end of the run, the live heap grows by more than SOAK_HEAP_GROWTH_MB or RSS (after that
 * collection) by more than SOAK_RSS_GROWTH_MB. Throughput is the benchmark's business.
 *
 * SOAK_SECONDS (default 20) and SOAK_WARMUP_SECONDS (default 5) set the phases.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'
import { keyInDatabase } from '../helpers/keys.js'

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 20)
const WARMUP_SECONDS = Number(process.env.SOAK_WARMUP_SECONDS ?? 5)
/** From the end of the warm-up to the end of the run, after a full collection each time. */
const HEAP_GROWTH_BOUND_MB = Number(process.env.SOAK_HEAP_GROWTH_MB ?? 4)
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


interface Memory { heapUsed: number, rss: number }

/** Asks the gc-probe in the server to collect all garbage, and returns what is still in use. */
async function collectAndMeasure (server: ServerProcess): Promise<Memory> {
  const seen = server.logs.length
  server.child.kill('SIGWINCH')
  for (let waited = 0; waited < 10_000; waited += 20) {
    const report = server.logs.slice(seen).find((line) => line.msg === 'gc-probe')
    if (report) return { heapUsed: Number(report.heapUsed), rss: Number(report.rss) }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('the gc-probe did not answer')
}

t.test(`soak: ${WARMUP_SECONDS} s warm-up, then ${SOAK_SECONDS} s of mixed load; then live heap growth ≤ ${HEAP_GROWTH_BOUND_MB} MB, RSS growth ≤ ${RSS_GROWTH_BOUND_MB} MB`, async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'soak.db')}`
  const key = (await keyInDatabase(databaseUrl, 'soak')).secret
  const server = await startServer(t, {
    DATABASE_URL: databaseUrl,
    NODE_OPTIONS: `--expose-gc --import ${join(projectRoot, 'test', 'helpers', 'gc-probe.mjs')}`
  })
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

  const before = { ...await collectAndMeasure(server), vmRss: rss(pid) }
  const warmup = await load(WARMUP_SECONDS)
  const warm = { vmRss: rss(pid), ...await collectAndMeasure(server) }

  const samples: number[] = []
  const sampler = setInterval(() => { samples.push(rss(pid)) }, 1000)
  let result: LoadResult
  try {
    result = await load(SOAK_SECONDS)
  } finally {
    clearInterval(sampler)
  }
  const end = { vmRss: rss(pid), ...await collectAndMeasure(server) }
  const heapGrowth = end.heapUsed - warm.heapUsed
  const rssGrowth = end.rss - warm.rss

  const total = warmup.requests.total + result.requests.total
  const histogram = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ')
  t.comment(`soak: ${total} requests over ${WARMUP_SECONDS + SOAK_SECONDS} s with ${CONNECTIONS} connections; status codes ${histogram}`)
  t.comment(`soak VmRSS under load: before ${mb(before.vmRss)}, at the end of the warm-up ${mb(warm.vmRss)}, at the end ${mb(end.vmRss)}; ` +
    `peak ${mb(Math.max(...samples, end.vmRss))}; per second ${samples.map((s) => (s / MB).toFixed(0)).join(' ')} MB`)
  t.comment(`soak after a full GC: live heap ${mb(before.heapUsed)} → ${mb(warm.heapUsed)} (warm) → ${mb(end.heapUsed)} (end), ` +
    `growth ${mb(heapGrowth)}; RSS ${mb(before.rss)} → ${mb(warm.rss)} → ${mb(end.rss)}, growth ${mb(rssGrowth)}`)

  t.equal(warmup.errors + result.errors, 0, 'no connection errors')
  t.equal(warmup.timeouts + result.timeouts, 0, 'no timeouts')
  t.notOk([...statuses.keys()].some((s) => s >= 500), 'no 5xx under load')
  t.ok(statuses.get(200) && statuses.get(400) && statuses.get(404) && statuses.get(429), 'successes and each kind of refusal were in the mix')
  t.ok(heapGrowth <= HEAP_GROWTH_BOUND_MB * MB, `the live heap grew ${mb(heapGrowth)} after the warm-up (bound ${HEAP_GROWTH_BOUND_MB} MB)`)
  t.ok(rssGrowth <= RSS_GROWTH_BOUND_MB * MB, `RSS grew ${mb(rssGrowth)} after the warm-up (bound ${RSS_GROWTH_BOUND_MB} MB)`)

  const health = await fetch(`${server.baseUrl}/healthz`)
  t.equal(health.status, 200, 'the server is healthy after the soak')
  t.equal(await server.stop('SIGTERM'), 0, 'and stops cleanly')
})
