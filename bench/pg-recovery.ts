/**
 * npx tsx bench/pg-recovery.ts [--cycles N] [--outage-ms MS]
 *
 * How long a real server process takes to serve again after PostgreSQL comes back. The server
 * reaches PostgreSQL through a TCP proxy (test/helpers/tcp-proxy.ts); each cycle cuts it (every
 * connection dropped, new ones refused), checks that requests answer 503, restores it, and polls
 * GET /v1/inventory every 5 ms until it answers 200. The shared server is never stopped.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { projectRoot } from '../src/paths.js'
import { issueApiKey } from '../src/store/api-keys.js'
import { BENCH_LIMITS } from './lib/datasets.js'
import { createStore } from '../src/store/create-store.js'
import { startTcpProxy } from '../test/helpers/tcp-proxy.js'

const { values: args } = parseArgs({ options: { cycles: { type: 'string', default: '10' }, 'outage-ms': { type: 'string', default: '1000' } } })
const cycles = Number(args.cycles)
const outageMs = Number(args['outage-ms'])

const cleanups: (() => unknown)[] = []
const teardown = { teardown: (fn: () => unknown) => { cleanups.push(fn) } }

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

const schema = `petstore_bench_${randomBytes(6).toString('hex')}`
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' })
await admin.connect()
await admin.query(`CREATE SCHEMA ${schema}`)
let child: ChildProcess | undefined
try {
  const proxy = await startTcpProxy(teardown, 5432)
  const databaseUrl = `postgres://postgres@127.0.0.1:${proxy.port}/test?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  const store = await createStore(databaseUrl)
  await store.migrate()
  const key = await issueApiKey(store, { name: 'bench', plan: 'enterprise', ...BENCH_LIMITS })
  await store.close()

  const port = await freePort()
  child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'src', 'server.ts')], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'production', PORT: String(port), LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const url = `http://127.0.0.1:${port}/v1/inventory`
  const headers = { authorization: `Bearer ${key.secret}` }
  const status = async () => { try { return (await fetch(url, { headers })).status } catch { return 0 } }
  while (await status() !== 200) await sleep(100)

  const recoveries: number[] = []
  const unavailable: number[] = []
  for (let cycle = 1; cycle <= cycles; cycle++) {
    proxy.cut()
    const start = performance.now()
    const during = await status()
    unavailable.push(performance.now() - start)
    if (during !== 503) throw new Error(`expected 503 during the outage, got ${during}`)
    await sleep(outageMs)
    proxy.restore()
    const restored = performance.now()
    while (await status() !== 200) await sleep(5)
    recoveries.push(performance.now() - restored)
    await sleep(200)
  }
  const stats = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b)
    return `min ${sorted[0]!.toFixed(0)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`
  }
  console.log(`${cycles} outages of ${outageMs} ms (connections dropped and refused)`)
  console.log(`503 during the outage: ${stats(unavailable)}`)
  console.log(`first 200 after PostgreSQL came back: ${stats(recoveries)}`)
} finally {
  child?.kill('SIGTERM')
  await sleep(300)
  for (const fn of cleanups.reverse()) await fn()
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await admin.end()
}
