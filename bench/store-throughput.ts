/**
 * npx tsx bench/store-throughput.ts [--duration S] [--connections N] [--rounds N]
 *
 * Throughput of PATCH /v1/inventory/{petId} and GET /v1/inventory on PostgreSQL vs SQLite, in the
 * same run: one real server process per engine (demo catalogue, logs at warn), autocannon in this
 * process, cells interleaved round after round so both engines see the same machine conditions.
 * PostgreSQL gets a fresh schema with a random name, dropped at the end. Not a test: no thresholds.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'
import { projectRoot } from '../src/paths.js'
import { issueApiKey } from '../src/store/api-keys.js'
import { BENCH_LIMITS } from './lib/datasets.js'
import { createStore } from '../src/store/create-store.js'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' }
  }
})
const durationSec = Number(args.duration)
const connections = Number(args.connections)
const rounds = Number(args.rounds)
const adminUrl = 'postgres://postgres@127.0.0.1:5432/test'

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

interface Instance { name: string, baseUrl: string, child: ChildProcess, key: string }

async function startInstance (name: string, databaseUrl: string): Promise<Instance> {
  // A key with limits far above what a run sends, so the limiter never refuses.
  const store = await createStore(databaseUrl)
  await store.migrate()
  const key = await issueApiKey(store, { name: 'bench', plan: 'enterprise', ...BENCH_LIMITS })
  await store.close()

  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'src', 'server.ts')], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'production', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const baseUrl = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${baseUrl}/readyz`)).ok) return { name, baseUrl, child, key: key.secret }
    } catch { /* not listening yet */ }
    await sleep(100)
  }
  child.kill('SIGKILL')
  throw new Error(`${name} did not become ready`)
}

interface Cell { engine: string, workload: string, rps: number[], p50: number[], p99: number[], errors: number }

async function measure (instance: Instance, workload: 'GET list' | 'PATCH', seconds: number) {
  const headers = { authorization: `Bearer ${instance.key}`, 'content-type': 'application/json' }
  let n = 0
  const options = workload === 'GET list'
    ? { url: `${instance.baseUrl}/v1/inventory`, headers }
    : {
        url: instance.baseUrl,
        headers,
        // Writes spread over the ten demo pets, each a new quantity.
        requests: [{ method: 'PATCH', setupRequest: (req: Record<string, unknown>) => ({ ...req, path: `/v1/inventory/${(n % 10) + 1}`, body: JSON.stringify({ quantity: n++ % 1000 }) }) }]
      }
  const result = await autocannon({ ...options, connections, duration: seconds }) as unknown as {
    requests: { total: number }, duration: number, latency: { p50: number, p99: number }, errors: number, non2xx: number
  }
  return { rps: result.requests.total / result.duration, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const schema = `petstore_bench_${randomBytes(6).toString('hex')}`
const admin = new pg.Client({ connectionString: adminUrl })
await admin.connect()
await admin.query(`CREATE SCHEMA ${schema}`)
const sqliteDir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
const instances: Instance[] = []
try {
  instances.push(await startInstance('sqlite', `sqlite:${join(sqliteDir, 'bench.db')}`))
  instances.push(await startInstance('postgres', `${adminUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`))
  const cells = new Map<string, Cell>()
  for (const instance of instances) for (const workload of ['GET list', 'PATCH'] as const) await measure(instance, workload, 1) // warm-up

  for (let round = 1; round <= rounds; round++) {
    for (const workload of ['GET list', 'PATCH'] as const) {
      for (const instance of instances) {
        const r = await measure(instance, workload, durationSec)
        const id = `${workload} ${instance.name}`
        const cell = cells.get(id) ?? { engine: instance.name, workload, rps: [], p50: [], p99: [], errors: 0 }
        cell.rps.push(r.rps)
        cell.p50.push(r.p50)
        cell.p99.push(r.p99)
        cell.errors += r.errors
        cells.set(id, cell)
        console.error(`round ${round}: ${id}: ${Math.round(r.rps)} req/s`)
      }
    }
  }

  console.log(`\n${connections} connections, ${durationSec} s per cell, ${rounds} interleaved rounds, medians (demo catalogue: 10 pets)\n`)
  console.log('| workload | engine | req/s | p50 ms | p99 ms | errors |')
  console.log('|---|---|---:|---:|---:|---:|')
  for (const cell of cells.values()) {
    console.log(`| ${cell.workload} | ${cell.engine} | ${Math.round(median(cell.rps))} | ${median(cell.p50)} | ${median(cell.p99)} | ${cell.errors} |`)
  }
  for (const workload of ['GET list', 'PATCH']) {
    const ratio = median(cells.get(`${workload} postgres`)!.rps) / median(cells.get(`${workload} sqlite`)!.rps)
    console.log(`\n${workload}: PostgreSQL at ${(ratio * 100).toFixed(0)}% of SQLite's throughput`)
  }
} finally {
  for (const instance of instances) instance.child.kill('SIGTERM')
  await sleep(500)
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await admin.end()
  rmSync(sqliteDir, { recursive: true, force: true })
}
