/**
 * npx tsx bench/sqlite-lock.ts [--hold-ms N] [--timeout-ms N] [--checkout DIR]: issue 13's figure for
 * SQLite shared with other processes. Another process holds the database's write lock for
 * --hold-ms (default 3,000; test/helpers/hold-write-lock.mjs) while a PATCH waits for it; meanwhile
 * one client asks /healthz in a loop. Reports /healthz latency during the lock (p50, p99, max), the
 * longest event-loop block of the server (bench/lib/loop-delay.mjs), and when and how the PATCH
 * was answered. The server runs from src/ through tsx with DATABASE_TIMEOUT_MS=--timeout-ms
 * (default 10,000), pinned to core 0 when taskset exists; `--checkout DIR` runs DIR's build instead.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { projectRoot } from '../src/contract/paths.js'
import { seedDatabase } from './lib/datasets.js'
import { coreCount, hasTaskset, pinSelf } from './lib/proc.js'
import { startServer } from './lib/servers.js'

const { values: args } = parseArgs({ options: { 'hold-ms': { type: 'string' }, 'timeout-ms': { type: 'string' }, checkout: { type: 'string' } } })
const holdMs = Number(args['hold-ms'] ?? 3000)
const timeoutMs = Number(args['timeout-ms'] ?? 10_000)
const checkout = resolve(args.checkout ?? projectRoot)
const pinned = coreCount() >= 2 && hasTaskset()
if (pinned) pinSelf(1)

const scratch = mkdtempSync(join(tmpdir(), 'petstore-sqlite-lock-'))
const file = join(scratch, 'lock.db')
const key = await seedDatabase(`sqlite:${file}`, 100)
const loopFile = join(scratch, 'loop.json')
const server = await startServer({
  name: 'sqlite-lock',
  entry: join(checkout, 'src', 'server.ts'),
  env: { DATABASE_URL: `sqlite:${file}`, DATABASE_TIMEOUT_MS: String(timeoutMs), SEED: 'false', NODE_ENV: 'production', LOG_LEVEL: 'warn', LOOP_DELAY_FILE: loopFile, NODE_OPTIONS: `--import=${join(projectRoot, 'bench', 'lib', 'loop-delay.mjs')}` },
  cwd: checkout,
  logDir: scratch,
  core: pinned ? 0 : undefined
})
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN

try {
  const holder = spawn(process.execPath, [join(projectRoot, 'test', 'helpers', 'hold-write-lock.mjs'), file, String(holdMs)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = once(holder, 'exit')
  let held = false
  let releasedAt = 0
  await new Promise<void>((resolve) => {
    createInterface({ input: holder.stdout }).on('line', (line) => {
      if (line === 'locked') { held = true; resolve() }
      if (line === 'releasing') { held = false; releasedAt = performance.now() }
    })
  })
  const lockedAt = performance.now()
  const startedAt = Date.now()
  const patch = fetch(`${server.baseUrl}/v1/inventory/1`, {
    method: 'PATCH', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"quantity":7}'
  }).then(async (res) => ({ status: res.status, retryAfter: res.headers.get('retry-after'), at: performance.now(), body: await res.text() }))
  const latencies: number[] = []
  while (held) {
    const started = performance.now()
    await (await fetch(`${server.baseUrl}/healthz`)).arrayBuffer()
    latencies.push(performance.now() - started)
    await sleep(5)
  }
  const answered = await patch
  await exited
  await sleep(400)
  const windows = readFileSync(loopFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { t: number, max: number })
  const block = Math.max(...windows.filter((w) => w.t > startedAt).map((w) => w.max))
  latencies.sort((a, b) => a - b)
  console.log(`${checkout}: write lock held ${holdMs} ms by another process, DATABASE_TIMEOUT_MS=${timeoutMs}${pinned ? ', server on core 0, clients on core 1' : ''}`)
  console.log(`/healthz during the lock: ${latencies.length} requests, p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, max ${latencies.at(-1)?.toFixed(1)} ms`)
  console.log(`longest event-loop block of the server: ${block.toFixed(1)} ms`)
  console.log(`PATCH: ${answered.status}${answered.retryAfter === null ? '' : ` (Retry-After: ${answered.retryAfter})`} after ${(answered.at - lockedAt).toFixed(0)} ms, ` +
    (releasedAt === 0 || answered.at < releasedAt ? 'while the lock was held' : `${(answered.at - releasedAt).toFixed(0)} ms after the lock was released`))
} finally {
  await server.stop()
  rmSync(scratch, { recursive: true, force: true })
}
