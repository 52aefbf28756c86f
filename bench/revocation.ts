/**
 * npx tsx bench/revocation.ts [--revocations N] [--writes N]: how long two PostgreSQL instances
 * take to act on each other's writes, now that each caches keys and lists and learns of changes by
 * LISTEN/NOTIFY (src/store/postgres/).
 *
 * - Revocation: a key is used on both instances (so both have it cached), revoked through the
 *   store as `keys revoke` does, and both are then asked with it (GET /v1/pets/1, each key from
 *   a loopback address of its own) again and again until each refuses it (401; or 429 once the
 *   address has failed authentication too often). Measured from the moment the revocation has
 *   committed to the refusal of each instance (a request in flight counts: the figure is an
 *   upper bound). "Every instance" is the later of the two.
 * - Visibility: a PATCH on one instance, then the other instance's GET /v1/inventory, again and
 *   again, until it shows the new quantity; from the PATCH's 200 to that list. Alternately A→B, B→A.
 *
 * Targets (issue 15): p99 of "every instance" ≤ 1 s for revocations, p99 ≤ 100 ms for
 * visibility. Two compiled server processes (NODE_ENV=production) on a database of their own,
 * created under BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) and dropped
 * after; figures printed and written to bench/out/revocation.json. Not pinned to cores: on a busy
 * machine every figure includes waiting for a core.
 */
import { spawnSync } from 'node:child_process'
import { get as httpGet } from 'node:http'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { projectRoot } from '../src/contract/paths.js'
import { issueApiKey } from '../src/repositories/api-keys.js'
import { createStore } from '../src/store/create-store.js'
import { createPostgresDatabase, dropPostgresDatabase, postgresUnavailable, redact, seedDatabase } from './lib/datasets.js'
import { type ServerHandle, startServer } from './lib/servers.js'

const { values: args } = parseArgs({
  options: {
    revocations: { type: 'string', default: '200' },
    writes: { type: 'string', default: '500' }
  }
})
const count = (name: string, text: string) => {
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`bench/revocation.ts: --${name} must be a whole number from 1 up, not ${text}`)
    process.exit(2)
  }
  return n
}
const revocations = count('revocations', args.revocations)
const writes = count('writes', args.writes)

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const unavailable = await postgresUnavailable(adminUrl)
if (unavailable !== undefined) {
  console.error(`bench/revocation.ts: ${unavailable}`)
  process.exit(1)
}

const outDir = join(projectRoot, 'bench', 'out')
const distDir = join(outDir, 'dist')
mkdirSync(outDir, { recursive: true })
console.log('Compiling the service (tsc -p tsconfig.build.json) into bench/out/dist/')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', distDir], { cwd: projectRoot, stdio: 'inherit' })

const database = `petstore_revocation_${process.pid}`
const databaseUrl = await createPostgresDatabase(adminUrl, database)
const servers: ServerHandle[] = []
const store = await createStore(databaseUrl)

/** Percentile by the nearest-rank method, in ms with one decimal. */
function percentile (sorted: number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return Math.round(sorted[rank - 1]! * 10) / 10
}

function summary (samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b)
  return { n: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: percentile(sorted, 100) }
}

/** Asks `server` until `done` says the answer is the awaited one; ms from `since` to that answer. */
async function until<R> (since: number, ask: () => Promise<R>, done: (answer: R) => Promise<boolean>, limitMs = 10_000): Promise<number> {
  for (;;) {
    const res = await ask()
    const now = performance.now()
    if (await done(res)) return now - since
    if (now - since > limitMs) throw new Error(`not seen within ${limitMs} ms`)
  }
}

try {
  const benchKey = await seedDatabase(databaseUrl, 100)
  const logDir = mkdtempSync(join(tmpdir(), 'petstore-revocation-'))
  const env = { DATABASE_URL: databaseUrl, SEED: 'false', LOG_LEVEL: 'warn', NODE_ENV: 'production' }
  for (const name of ['a', 'b']) {
    servers.push(await startServer({ name, entry: join(distDir, 'src', 'server.js'), env, cwd: projectRoot, logDir, core: undefined }))
  }
  const [a, b] = [servers[0]!, servers[1]!]
  const get = (server: ServerHandle, secret: string, path = '/v1/inventory') =>
    fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${secret}` } })
  /**
   * The status of GET /v1/pets/1 with `secret`, sent from the loopback address `from`. Each key
   * gets an address of its own: the polls of a revoked key fail authentication, and after a few
   * of them an address is limited, its new keys no longer looked up at once (the key guard,
   * src/authentication/key-guard.ts), which would hold up the next key rather than measure anything.
   */
  const status = (server: ServerHandle, secret: string, from: string) => new Promise<number>((resolve, reject) => {
    const url = new URL('/v1/pets/1', server.baseUrl)
    const request = httpGet({ host: url.hostname, port: url.port, path: url.pathname, localAddress: from, agent: false, headers: { authorization: `Bearer ${secret}` } }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    request.on('error', reject)
  })

  console.log(`Revocation: ${revocations} keys, each used on both instances, revoked, then asked for until refused`)
  const perInstance: number[] = []
  const everyInstance: number[] = []
  for (let i = 0; i < revocations; i++) {
    const { record, secret } = await issueApiKey(store, { name: `revocation ${i}`, plan: 'enterprise', perMinute: 1_000_000, perDay: 1_000_000 })
    const from = `127.0.${1 + Math.floor(i / 250) % 250}.${1 + i % 250}`
    for (const server of [a, b]) {
      const answer = await status(server, secret, from)
      if (answer !== 200) throw new Error(`a new key answered ${answer} on ${server.name}`)
    }
    await store.revokeApiKey(record.id)
    const committed = performance.now()
    // Refused: 401, or 429 once this address has failed authentication too often (a key still
    // accepted would be counted under its own, unreachable limits instead).
    const refused = await Promise.all([a, b].map((server) => until(committed, () => status(server, secret, from), async (answer) => {
      if (answer !== 200 && answer !== 401 && answer !== 429) throw new Error(`a revoked key answered ${answer}`)
      return answer !== 200
    })))
    perInstance.push(...refused)
    everyInstance.push(Math.max(...refused))
  }

  console.log(`Visibility: ${writes} PATCHes, each awaited in the other instance's list`)
  const visible: number[] = []
  for (let i = 0; i < writes; i++) {
    const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a]
    const petId = (i % 100) + 1
    const quantity = 1000 + i
    const res = await fetch(`${writer.baseUrl}/v1/inventory/${petId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${benchKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ quantity })
    })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`PATCH answered ${res.status}`)
    const acknowledged = performance.now()
    visible.push(await until(acknowledged, () => get(reader, benchKey), async (list) => {
      const items = await list.json() as { petId: number, quantity: number }[]
      return items.find((item) => item.petId === petId)?.quantity === quantity
    }))
  }

  const results = {
    when: new Date().toISOString(),
    database: redact(adminUrl),
    revocation: { perInstance: summary(perInstance), everyInstance: summary(everyInstance) },
    visibility: summary(visible),
    samples: { revocationEveryInstance: everyInstance, visibility: visible }
  }
  const line = (label: string, s: ReturnType<typeof summary>) =>
    console.log(`${label.padEnd(40)} n=${String(s.n).padStart(4)}  p50 ${s.p50} ms  p90 ${s.p90} ms  p99 ${s.p99} ms  max ${s.max} ms`)
  console.log('')
  line('revoked key refused, per instance', results.revocation.perInstance)
  line('revoked key refused, by every instance', results.revocation.everyInstance)
  line('PATCH visible in the other\'s list', results.visibility)
  console.log(`\ntargets: refused by every instance p99 ≤ 1000 ms: ${results.revocation.everyInstance.p99 <= 1000 ? 'met' : 'NOT met'}; ` +
    `visible p99 ≤ 100 ms: ${results.visibility.p99 <= 100 ? 'met' : 'NOT met'}`)
  writeFileSync(join(outDir, 'revocation.json'), JSON.stringify(results, null, 2) + '\n')
  console.log('wrote bench/out/revocation.json')
} finally {
  await Promise.all(servers.map((server) => server.stop()))
  await store.close()
  await dropPostgresDatabase(adminUrl, database)
}
