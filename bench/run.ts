/**
 * npm run bench [-- options]: the service's benchmark (bench/README.md says what it measures).
 *
 * Every configuration runs as a real server process pinned to core 0 (with V8's collector on its main
 * thread, as docs/operations.md advises for one core); the load generator (wrk
 * when /usr/bin/wrk exists, else autocannon in this process) runs on core 1. After a warm-up the
 * configurations are measured interleaved, round after round (A B C A B C …), so every ratio
 * compares figures taken minutes apart at most, under the same conditions.
 *
 * Options: --quick (1 short round, results in bench/out/), --rounds N (default 5: a median that two
 * noisy rounds cannot move), --duration S, --warmup S,
 * --only w1,w2 (workloads), --configs c1,c2, --generator wrk|autocannon, --profile (service
 * processes and the floor run with --cpu-prof; profiles, their summaries and the per-stage account
 * of issue 23 land in bench/out/profiles/ and the report), --tsx
 * (run the service from src/ through tsx instead of compiling it first, as `npm start` runs it,
 * into bench/out/dist/), --baseline DIR (A/B: this checkout against the build in DIR/dist/),
 * --fresh-processes (every server restarted before each round after the first, and warmed up
 * again: each round measures new processes, so a ratio's median is not one process's luck).
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { projectRoot } from '../src/contract/paths.js'
import { compare, comparisonLines, describeCheckout, markdownComparison } from './lib/baseline.js'
import { compileService } from './lib/build.js'
import { encodeCursor } from '../src/contract/paging.js'
import { createPostgresDatabase, deleteRedisKeys, dropPostgresDatabase, type OrderStock, placedOrderIds, plainOrderCount, postgresBackends, postgresConnectionRoom, postgresUnavailable, redact, redisUnavailable, seedDatabase } from './lib/datasets.js'
import { defaultGenerator, type Generator, type RequestTemplate, runLoad } from './lib/load.js'
import { coreCount, cpuModel, cpuSeconds, hasTaskset, machineJiffies, peakRssBytes, pinSelf, resetPeakRss, rssBytes, waitMachineQuiet } from './lib/proc.js'
import { type Cell, type ConfigId, configTitles, evaluateFloorTargets, evaluateReferences, evaluateScaleTargets, type FocusedResults, isBare, evaluateTargets, type ListWritesResult, type RevocationResult, markdownReferences, markdownTable, markdownTargets, referenceLines, type StageColumn, stageMarkdown, stageText, summarize, targetLines, textTable } from './lib/report.js'
import { commandLine } from './lib/command-line.js'
import { compareAnswers, type Probe } from './lib/floor-check.js'
import { type StageAccount, stageAccounts, summarizeProfile } from './lib/profile.js'
import { startHealthzPoller } from './lib/stall.js'
import { nginxBinary, type ProxyHandle, startNginx } from './lib/nginx.js'
import { freePort, ONE_CORE_NODE_FLAGS, type ServerHandle, startServer, waitIdle } from './lib/servers.js'

const { usageError, parse, wholeNumber } = commandLine('npm run bench',
  'npm run bench [-- --quick] [--rounds N] [--duration S] [--warmup S] [--only list-100,patch] [--configs sqlite,express] [--generator wrk|autocannon] [--profile] [--tsx] [--baseline DIR] [--rate N] [--fresh-processes]')

const { values: args } = parse({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    only: { type: 'string' },
    configs: { type: 'string' },
    generator: { type: 'string' },
    profile: { type: 'boolean', default: false },
    tsx: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    rate: { type: 'string' },
    'fresh-processes': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
// Whole seconds: wrk takes no fractions.
const positiveInteger = (name: string, value: string | undefined, fallback: number) => wholeNumber(name, value, fallback, 1)

// --baseline DIR: the service from this checkout (A) against the one built in DIR (B).
const baselineDir = args.baseline === undefined ? undefined : resolve(args.baseline)
const baselineEntry = baselineDir === undefined ? undefined : join(baselineDir, 'dist', 'src', 'server.js')
if (baselineDir !== undefined) {
  if (!existsSync(baselineEntry!)) usageError(`${baselineEntry} does not exist: run \`npm run build\` in ${baselineDir} first`)
  if (!existsSync(join(baselineDir, 'node_modules'))) usageError(`${baselineDir} has no node_modules: run \`npm ci\` there first`)
  if (args.configs !== undefined) usageError('--baseline compares the SQLite service of both checkouts; it takes no --configs')
  if (args.tsx) usageError('--baseline runs both builds compiled (the baseline from its dist/); it takes no --tsx')
}

const quick = args.quick
// A/B rounds alternate which build goes first, so an even count gives each order the same weight.
const rounds = positiveInteger('rounds', args.rounds, baselineDir === undefined ? (quick ? 1 : 5) : (quick ? 2 : 6))
const durationSec = positiveInteger('duration', args.duration, quick ? 2 : 5)
const warmupSec = positiveInteger('warmup', args.warmup, quick ? 1 : 5)
// --rate N: every measurement asks for N requests a second (autocannon's overallRate) instead of
// as many as the server answers. At full speed a faster server also looks cheaper per answer than a
// slower one (likely: the kernel charges loopback's network work to the busier process); at one
// rate both do the same network work. bench/README.md, "CPU per answer at one rate".
const ratePerSec = args.rate === undefined ? undefined : positiveInteger('rate', args.rate, 1)
if (ratePerSec !== undefined && args.generator === 'wrk') usageError('--rate needs --generator autocannon: wrk cannot hold a rate')
// --fresh-processes: two processes of one build, on the same core and data, can differ by 10 % or
// more in CPU per answer for their whole lives (bench/README.md, "One process is one draw"). New
// processes for every round make the median of per-round ratios a median over processes too.
const freshProcesses = args['fresh-processes']
if (freshProcesses && args.profile) usageError('--fresh-processes takes no --profile: a profile covers one process, and the stage account reads one per configuration')
const generator = (args.generator ?? (ratePerSec === undefined ? defaultGenerator() : 'autocannon')) as Generator
if (generator !== 'wrk' && generator !== 'autocannon') usageError('--generator must be wrk or autocannon')
const adminPgUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
// The limiter's counters of this run, deleted at the end.
const redisPrefix = `petstore-bench:${process.pid}:`

const benchDir = join(projectRoot, 'bench')
const outDir = join(benchDir, 'out')
// Only a full run replaces bench/results.md; the others (CI, development, A/B) write to
// bench/out/, which git ignores.
const fullRun = !quick && args.only === undefined && args.configs === undefined && baselineDir === undefined
const resultsDir = fullRun ? benchDir : outDir
mkdirSync(outDir, { recursive: true })
const logDir = join(outDir, 'logs')
mkdirSync(logDir, { recursive: true })

// ---- Workloads ------------------------------------------------------------------------------

interface Workload {
  id: string
  title: string
  connections: number
  /** Entries in the dataset it runs on; undefined for the bare ceiling. */
  size: number | undefined
  /** One of orderDatasets, instead of the plain dataset of `size` entries. */
  dataset?: keyof typeof orderDatasets
  /**
   * The `{seq}` of its requests walks once through these ids over the whole run (warm-up and
   * rounds), each measurement starting where the one before stopped, for requests that may each
   * be made once (delivering an order).
   */
  sequence?: { first: number, last: number }
  configs: ConfigId[]
  /** What the service and the peer are asked. */
  requests: RequestTemplate[]
  /** What bare Fastify is asked instead, for the ceiling of the same workload; absent: the same requests. */
  barePath?: string
  /** Requests bare Fastify is sent instead (they take precedence over barePath). */
  bareRequests?: RequestTemplate[]
  /** Headers the service is sent besides the key (Accept-Encoding for the compressed lists). */
  headers?: Record<string, string>
  /** Milliseconds between two `/healthz` requests on a connection of their own during the load (the stall check). */
  pollHealthz?: number
}

const listRequest: RequestTemplate[] = [{ method: 'GET', path: '/v1/inventory' }]
const patchRequests: RequestTemplate[] = Array.from({ length: 1000 }, (_, i) => ({
  method: 'PATCH',
  path: `/v1/inventory/${(i % 100) + 1}`,
  body: JSON.stringify({ quantity: (i * 7) % 1000 })
}))
// Nine lists to one write, so the list changes before every tenth GET. Each pet's PATCHes
// alternate between two quantities (patchRequests i and i + 100): with one PATCH per pet, as
// before 2026-11-23 22:50 UTC, every write after the first pass set the value it already had and
// the list never changed again.
const listWithWritesRequests: RequestTemplate[] = patchRequests.slice(0, 200).flatMap((patch) => [...Array<RequestTemplate>(9).fill(listRequest[0]!), patch])
const gzip = { 'accept-encoding': 'gzip' }
const br = { 'accept-encoding': 'br' }
const getPetRequests: RequestTemplate[] = Array.from({ length: 100 }, (_, i) => ({ method: 'GET', path: `/v1/pets/${i + 1}` }))
const all: ConfigId[] = ['bare', 'sqlite', 'postgres', 'express']
const services: ConfigId[] = ['sqlite', 'postgres', 'express']
const engines: ConfigId[] = ['sqlite', 'postgres']
// The floor (issue 23, bench/servers/floor.ts): what a perfect implementation of the service
// costs for the same requests, measured right before the service in every round.
const withFloor: ConfigId[] = ['floor', ...engines]
// The small requests, where the limiter is a large part of the cost, also run with the limits
// counted in Redis (what several instances share), and with the Prometheus metrics kept.
const withRedis: ConfigId[] = ['bare', 'floor', 'sqlite', 'redis', 'metrics', 'postgres', 'express']
// Workloads judged against bare GET / measure it again just before the service, in every round:
// this VM's speed drifts by up to a third within minutes, and the round's own GET / ran minutes earlier.
const withCeiling: ConfigId[] = ['ceiling', ...withRedis]
const knownConfigs: ConfigId[] = ['ceiling', 'bare', 'floor', 'sqlite', 'redis', 'metrics', 'postgres', 'express', 'pg-redis', 'nginx']
// Scale-out: one instance on PostgreSQL with its limits in Redis, against two such instances
// sharing the database and Redis behind nginx, under a mix with writes (each instance's caches
// then see the other's writes).
const scaleOut: ConfigId[] = ['pg-redis', 'nginx']
// 1,000 templates, so that each PATCHed pet gets ten different quantities in turn (with 100, each
// got one, and its PATCHes changed nothing after the first pass).
const scaleOutRequests: RequestTemplate[] = Array.from({ length: 1000 }, (_, i) => i % 10).flatMap((slot, i) =>
  slot < 4 ? [listRequest[0]!] : slot < 8 ? [getPetRequests[i % 100]!] : slot === 8 ? [{ method: 'GET', path: '/v1/store/orders' }] : [patchRequests[i]!])

// ---- The order workloads (issue 21) and their datasets
// Each has datasets of its own (seeded through bench/lib/datasets.ts), so that the figures of the
// workloads above stay comparable with earlier runs, and so that one workload's orders do not
// change what another's cost: placing an order sums the units its pet's open orders reserve.

/** More units than a run ever orders or delivers (int32, as openapi.yaml allows). */
const STOCK = 1_000_000_000
/**
 * Deliveries per second that no run reaches (on the 2-core VM of the README's figures a PATCH
 * peaks under 10,000 req/s): the deliver dataset gets enough placed orders for this rate over the
 * warm-ups (one per round with --fresh-processes) and every round, so that no PATCH meets an order
 * delivered before. A faster run would run past the last one and get 404s, counted as errors.
 */
const MAX_DELIVERIES_PER_SECOND = 20_000
const deliverConnections = 50
const warmups = freshProcesses ? rounds : 1
const deliverable = Math.ceil(MAX_DELIVERIES_PER_SECOND * (warmups * warmupSec + rounds * durationSec)) + (warmups + rounds) * deliverConnections
const ORDER_PAGES = 100
const orderDatasets = {
  'place-order': { size: 100, stock: { pets: 100, units: STOCK } },
  'place-order-idem': { size: 100, stock: { pets: 100, units: STOCK } },
  deliver: { size: 100, stock: { pets: 100, units: STOCK, placedOrders: deliverable } },
  // 10,000 orders in all: the plain dataset's 10 and these.
  'orders-10k': { size: 100, stock: { pets: 100, units: STOCK, placedOrders: ORDER_PAGES * 100 - plainOrderCount(100) } },
  '100k-stock': { size: 100_000, stock: { pets: 100, units: STOCK } }
} satisfies Record<string, { size: number, stock: OrderStock }>

const placeOrderRequests: RequestTemplate[] = Array.from({ length: 100 }, (_, i) => ({
  method: 'POST',
  path: '/v1/store/orders',
  body: JSON.stringify({ petId: i + 1, quantity: 1 })
}))
// A key no other request sends, in this run or any other: with one key per template, every
// request after the first pass would get the kept answer replayed instead of placing an order.
const placeOrderIdemRequests: RequestTemplate[] = placeOrderRequests.map((r) => ({ ...r, headers: { 'idempotency-key': 'bench-{run}-{seq}' } }))
const deliverIds = placedOrderIds(orderDatasets.deliver.size, orderDatasets.deliver.stock)
const deliverRequests: RequestTemplate[] = [{ method: 'PATCH', path: '/v1/store/orders/{seq}', body: JSON.stringify({ status: 'delivered' }) }]
// The first page and the next 99, as each page's Link gives them (checked before the run).
const orderPageRequests: RequestTemplate[] = Array.from({ length: ORDER_PAGES }, (_, i) => ({
  method: 'GET',
  path: i === 0 ? '/v1/store/orders?limit=100' : `/v1/store/orders?limit=100&cursor=${encodeCursor(i * 100)}`
}))
// As list-100k-writes, with a placed order where that has a PATCH.
const listAfterOrderRequests: RequestTemplate[] = placeOrderRequests.flatMap((order) => [...Array<RequestTemplate>(9).fill(listRequest[0]!), order])
// Issue 23's stall check: a PATCH before every GET of the list, so that every GET gets a new
// version of the 100,000-entry list (each pet alternates between two quantities, as above).
const stallRequests: RequestTemplate[] = patchRequests.slice(0, 200).flatMap((patch) => [listRequest[0]!, patch])
// Bare Fastify under the same load: the same 5 MB from one constant Buffer, PATCHes set in a Map.
// What the machine allows: its /healthz waits are the stall of sending those bytes at that rate.
const bareStallRequests: RequestTemplate[] = patchRequests.slice(0, 200).flatMap((patch) => [{ method: 'GET', path: '/payload/list-100000' }, patch])
/** How often the stall check asks /healthz, ms. */
const HEALTHZ_EVERY_MS = 5

const allWorkloads: Workload[] = [
  { id: 'root', title: 'GET / (ceiling)', connections: 50, size: undefined, configs: ['bare'], requests: [], barePath: '/' },
  { id: 'list-100', title: 'GET list, 100', connections: 50, size: 100, configs: withCeiling, requests: listRequest, barePath: '/payload/list-100' },
  { id: 'list-10k', title: 'GET list, 10,000', connections: 50, size: 10_000, configs: ['bare', 'floor', 'sqlite', 'postgres', 'express'], requests: listRequest, barePath: '/payload/list-10000' },
  { id: 'list-100k', title: 'GET list, 100,000', connections: 10, size: 100_000, configs: all, requests: listRequest, barePath: '/payload/list-100000' },
  { id: 'list-100k-1c', title: 'GET list, 100,000, 1 conn', connections: 1, size: 100_000, configs: all, requests: listRequest, barePath: '/payload/list-100000' },
  { id: 'list-10k-writes', title: 'GET list, 10,000, 1 write in 10', connections: 50, size: 10_000, configs: services, requests: listWithWritesRequests },
  // Compressed lists (issue 14): the same requests with Accept-Encoding; the service keeps each
  // encoding with the list it was made from, so only the request after a write compresses.
  { id: 'list-10k-gzip', title: 'GET list, 10,000, gzip', connections: 50, size: 10_000, configs: ['sqlite'], requests: listRequest, headers: gzip },
  { id: 'list-10k-br', title: 'GET list, 10,000, br', connections: 50, size: 10_000, configs: ['sqlite'], requests: listRequest, headers: br },
  { id: 'list-100k-gzip', title: 'GET list, 100,000, gzip', connections: 10, size: 100_000, configs: ['sqlite'], requests: listRequest, headers: gzip },
  { id: 'list-100k-br', title: 'GET list, 100,000, br', connections: 10, size: 100_000, configs: ['sqlite'], requests: listRequest, headers: br },
  { id: 'list-10k-writes-gzip', title: 'GET list, 10,000, 1 write in 10, gzip', connections: 50, size: 10_000, configs: ['sqlite'], requests: listWithWritesRequests, headers: gzip },
  { id: 'list-10k-writes-br', title: 'GET list, 10,000, 1 write in 10, br', connections: 50, size: 10_000, configs: ['sqlite'], requests: listWithWritesRequests, headers: br },
  { id: 'list-100k-writes', title: 'GET list, 100,000, 1 write in 10', connections: 10, size: 100_000, configs: ['sqlite', 'postgres'], requests: listWithWritesRequests },
  { id: 'list-100k-writes-gzip', title: 'GET list, 100,000, 1 write in 10, gzip', connections: 10, size: 100_000, configs: ['sqlite'], requests: listWithWritesRequests, headers: gzip },
  { id: 'list-100k-writes-br', title: 'GET list, 100,000, 1 write in 10, br', connections: 10, size: 100_000, configs: ['sqlite'], requests: listWithWritesRequests, headers: br },
  // Bare Fastify answers these two from a Map (bench/servers/bare.ts): their ceiling without auth, limits or storage.
  { id: 'patch', title: 'PATCH inventory', connections: 50, size: 100, configs: withCeiling, requests: patchRequests },
  { id: 'get-pet', title: 'GET pet', connections: 50, size: 100, configs: withRedis, requests: getPetRequests },
  { id: 'scale-out', title: 'mix: 4 list 100, 4 pet, 1 orders, 1 PATCH', connections: 50, size: 100, configs: scaleOut, requests: scaleOutRequests },
  { id: 'place-order', title: 'POST order', connections: 50, size: 100, dataset: 'place-order', configs: withFloor, requests: placeOrderRequests },
  { id: 'place-order-idem', title: 'POST order, Idempotency-Key', connections: 50, size: 100, dataset: 'place-order-idem', configs: engines, requests: placeOrderIdemRequests },
  { id: 'deliver', title: 'PATCH order: delivered', connections: deliverConnections, size: 100, dataset: 'deliver', configs: withFloor, requests: deliverRequests, sequence: deliverIds },
  { id: 'orders-pages', title: 'GET orders, 100 pages of 100', connections: 50, size: 100, dataset: 'orders-10k', configs: withFloor, requests: orderPageRequests },
  { id: 'list-100k-after-order', title: 'GET list, 100,000, 1 order in 10', connections: 10, size: 100_000, dataset: '100k-stock', configs: engines, requests: listAfterOrderRequests },
  { id: 'stall-100k', title: 'PATCH and GET list alternating, 100,000; /healthz every 5 ms', connections: 10, size: 100_000, configs: ['bare', 'sqlite'], requests: stallRequests, bareRequests: bareStallRequests, pollHealthz: HEALTHZ_EVERY_MS }
]
// What --baseline compares unless --only names others.
const abWorkloads = ['list-100', 'patch', 'get-pet']

const onlyWorkloads = args.only?.split(',') ?? (baselineDir === undefined ? undefined : abWorkloads)
const onlyConfigs = (args.configs?.split(',') ?? (baselineDir === undefined ? undefined : ['sqlite', 'baseline'])) as ConfigId[] | undefined
for (const w of onlyWorkloads ?? []) if (!allWorkloads.some((x) => x.id === w)) usageError(`unknown workload ${w}; known: ${allWorkloads.map((x) => x.id).join(', ')}`)
for (const c of args.configs?.split(',') ?? []) if (!knownConfigs.includes(c as ConfigId)) usageError(`unknown configuration ${c}; known: ${knownConfigs.join(', ')}`)
if (baselineDir !== undefined && onlyWorkloads!.includes('root')) usageError('the workload root is bare Fastify alone: there is no service to compare with --baseline')

// ---- Set-up ---------------------------------------------------------------------------------

const twoCores = coreCount() >= 2 && hasTaskset()
const serverCore = twoCores ? 0 : undefined
const generatorCore = twoCores ? 1 : undefined
if (twoCores) pinSelf(1)

const scratch = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
const servers = new Map<string, ServerHandle>()
/** nginx in front of the instances of a configuration, by `${config}-${dataset}`. */
const proxies = new Map<string, ProxyHandle>()
/** The instances behind each proxy (also in `servers`, which stops them). */
const instanceGroups = new Map<string, ServerHandle[]>()
const pgDatabases: string[] = []
/** The PostgreSQL database of each service (by server name, as targetFor names it). */
const pgDatabaseOf = new Map<string, string>()
let cleaned = false

async function cleanup () {
  if (cleaned) return
  cleaned = true
  await Promise.all([...proxies.values()].map((p) => p.stop().catch(() => {})))
  await Promise.all([...servers.values()].map((s) => s.stop().catch(() => {})))
  for (const name of pgDatabases) await dropPostgresDatabase(adminPgUrl, name).catch((e: Error) => console.error(`could not drop ${name}: ${e.message}`))
  if ([...servers.keys()].some((name) => /^(redis|pg-redis|nginx)-/.test(name))) {
    await deleteRedisKeys(redisUrl, redisPrefix).catch((e: Error) => console.error(`could not delete the Redis keys ${redisPrefix}*: ${e.message}`))
  }
  rmSync(scratch, { recursive: true, force: true })
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => { void cleanup().finally(() => process.exit(130)) })
}

const notes: string[] = []
const note = (text: string) => { notes.push(text); console.log(`note: ${text}`) }

const workloads = allWorkloads
  .filter((w) => onlyWorkloads === undefined || onlyWorkloads.includes(w.id))
  // Every workload with a service on SQLite can run on the baseline build too.
  .map((w) => ({ ...w, configs: (baselineDir !== undefined && w.configs.includes('sqlite') ? [...w.configs, 'baseline' as const] : w.configs).filter((c) => onlyConfigs === undefined || onlyConfigs.includes(c)) }))
  .filter((w) => w.configs.length > 0)

const withPostgres: ConfigId[] = ['postgres', ...scaleOut]
const withRedisCounters: ConfigId[] = ['redis', ...scaleOut]
let postgresSkipped: string | undefined
if (workloads.some((w) => w.configs.some((c) => withPostgres.includes(c)))) {
  postgresSkipped = await postgresUnavailable(adminPgUrl)
  if (postgresSkipped !== undefined) {
    note(`PostgreSQL skipped: ${postgresSkipped}`)
    for (const w of workloads) w.configs = w.configs.filter((c) => !withPostgres.includes(c))
  }
}
let redisSkipped: string | undefined
if (workloads.some((w) => w.configs.some((c) => withRedisCounters.includes(c)))) {
  redisSkipped = await redisUnavailable(redisUrl)
  if (redisSkipped !== undefined) {
    note(`limits in Redis skipped: ${redisSkipped}`)
    for (const w of workloads) w.configs = w.configs.filter((c) => !withRedisCounters.includes(c))
  }
}
const nginx = nginxBinary()
if (nginx === undefined && workloads.some((w) => w.configs.includes('nginx'))) {
  note(`two instances behind nginx skipped: ${process.env.BENCH_NGINX ? `BENCH_NGINX=${process.env.BENCH_NGINX} does not exist` : 'nginx is not installed (apt-get install nginx)'}`)
  for (const w of workloads) w.configs = w.configs.filter((c) => c !== 'nginx')
}

/** The dataset a workload runs on: its plain one is named by its size, the others are orderDatasets. */
const datasetOf = (w: Workload) => w.dataset ?? String(w.size)
const datasetIds = [...new Set(workloads.filter((w) => w.size !== undefined && w.configs.some((c) => !isBare(c))).map(datasetOf))]
// The payload ceiling sends the service's own list bytes, so it needs the SQLite service too.
for (const w of workloads) if (w.size !== undefined && w.configs.includes('bare') && !datasetIds.includes(datasetOf(w))) datasetIds.push(datasetOf(w))
const needed = (config: ConfigId, dataset?: string) => workloads.some((w) => w.configs.includes(config) && (dataset === undefined || datasetOf(w) === dataset))
const isOrderDataset = (id: string): id is keyof typeof orderDatasets => Object.hasOwn(orderDatasets, id)

const keys = new Map<string, string>()
const serviceEnv = { SEED: 'false', LOG_LEVEL: 'warn', NODE_ENV: 'production' }

// Every service on PostgreSQL stays up for the whole run (the rounds interleave the workloads), and
// each holds its pool plus one listening connection. A full run starts about eleven of them: with
// the default pool of 10 that is more than the 97 connections a stock PostgreSQL accepts, and the
// last pools to fill were refused ("too many clients"). So the pools share what is free, less a
// margin for this runner's own short connections (seeding, the backends' CPU), and the report says
// when a pool is smaller than the service's default.
const POOL_DEFAULT = 10
const RUNNER_CONNECTIONS = 4
const pgInstances = datasetIds.filter((id) => needed('postgres', id)).length +
  datasetIds.filter((id) => needed('pg-redis', id)).length + 2 * datasetIds.filter((id) => needed('nginx', id)).length
let pgPoolMax = POOL_DEFAULT
if (pgInstances > 0) {
  const room = await postgresConnectionRoom(adminPgUrl)
  pgPoolMax = Math.min(POOL_DEFAULT, Math.floor((room - RUNNER_CONNECTIONS) / pgInstances) - 1)
  if (pgPoolMax < 1) {
    await cleanup()
    throw new Error(`PostgreSQL accepts ${room} more connections: too few for ${pgInstances} services (run fewer workloads with --only, or raise max_connections)`)
  }
  if (pgPoolMax < POOL_DEFAULT) note(`each of the ${pgInstances} services on PostgreSQL runs with DATABASE_POOL_MAX=${pgPoolMax} (default ${POOL_DEFAULT}): PostgreSQL accepts ${room} more connections`)
}
const pgServiceEnv = { ...serviceEnv, DATABASE_POOL_MAX: String(pgPoolMax) }
const profileDir = args.profile ? join(outDir, 'profiles') : undefined
// Only this run's profiles get summarised at the end.
if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true })
let serviceEntry = join(projectRoot, 'src', 'server.ts')
if (!args.tsx) {
  // Compiled JavaScript, as `npm start` runs it (tsx would add its loader's memory to the RSS
  // figures). Built into bench/out/ so that a dist/ other processes use is left alone.
  const build = compileService(join(outDir, 'dist'))
  serviceEntry = build.entry
  if (!existsSync(serviceEntry)) throw new Error('tsc produced no bench/out/dist/src/server.js')
  if (!build.ok) note('tsc reported type errors (the JavaScript it emitted is benchmarked all the same)')
}

console.log(`Preparing datasets ${datasetIds.map((id) => isOrderDataset(id) ? id : Number(id).toLocaleString('en')).join(' / ')} in ${scratch}`)
const starts: Promise<void>[] = []
/**
 * Records a server's start. One that fails while later datasets are still being seeded is reported
 * after the loop, which then stops the servers that did start: unhandled until then, its rejection
 * would end this process at once and leave them running (pinned to the servers' core).
 */
const starting = (start: Promise<void>) => {
  start.catch(() => {})
  starts.push(start)
}
// The floors start once the services have: fewer processes starting at once on the servers' core.
const floorStarts: (() => Promise<void>)[] = []
for (const id of datasetIds) {
  const { size, stock } = isOrderDataset(id) ? orderDatasets[id] : { size: Number(id), stock: undefined }
  const file = join(scratch, `service-${id}.db`)
  const key = await seedDatabase(`sqlite:${file}`, size, stock)
  keys.set(`sqlite-${id}`, key)
  // Every other SQLite configuration gets a copy of the same file (seedDatabase has closed it).
  const copyFor = (config: ConfigId) => {
    const copy = join(scratch, `${config}-${id}.db`)
    copyFileSync(file, copy)
    keys.set(`${config}-${id}`, key)
    return copy
  }
  starting(startServer({ name: `sqlite-${id}`, entry: serviceEntry, env: { ...serviceEnv, DATABASE_URL: `sqlite:${file}` }, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `sqlite-${id}`) })
    .then((s) => { servers.set(s.name, s) }))
  if (needed('redis', id)) {
    const env = { ...serviceEnv, DATABASE_URL: `sqlite:${copyFor('redis')}`, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix }
    starting(startServer({ name: `redis-${id}`, entry: serviceEntry, env, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `redis-${id}`) })
      .then((s) => { servers.set(s.name, s) }))
  }
  if (needed('metrics', id)) {
    // METRICS_PORT=0: a listener on a free port; nothing scrapes it, as between two scrapes.
    const env = { ...serviceEnv, DATABASE_URL: `sqlite:${copyFor('metrics')}`, METRICS_PORT: '0' }
    starting(startServer({ name: `metrics-${id}`, entry: serviceEntry, env, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `metrics-${id}`) })
      .then((s) => { servers.set(s.name, s) }))
  }
  if (baselineDir !== undefined && needed('baseline', id)) {
    // The baseline runs from its own checkout, so it loads its own openapi.yaml and node_modules.
    starting(startServer({ name: `baseline-${id}`, entry: baselineEntry!, env: { ...serviceEnv, DATABASE_URL: `sqlite:${copyFor('baseline')}` }, cwd: baselineDir, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `baseline-${id}`) })
      .then((s) => { servers.set(s.name, s) }))
  }
  if (needed('floor', id)) {
    // Through tsx, as bare Fastify runs; on its own copy of the dataset.
    const env = { DATABASE_FILE: copyFor('floor'), NODE_ENV: 'production' }
    floorStarts.push(() => startServer({ name: `floor-${id}`, entry: join(benchDir, 'servers', 'floor.ts'), env, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `floor-${id}`) })
      .then((s) => { servers.set(s.name, s) }))
  }
  if (needed('express', id)) {
    const peerFile = copyFor('express')
    starting(startServer({ name: `express-${id}`, entry: join(benchDir, 'peers', 'express.ts'), env: { DATABASE_URL: `sqlite:${peerFile}`, NODE_ENV: 'production' }, cwd: projectRoot, logDir, core: serverCore })
      .then((s) => { servers.set(s.name, s) }))
  }
  if (needed('postgres', id)) {
    const name = `petstore_bench_${process.pid}_${id.replace(/-/g, '_')}`
    const url = await createPostgresDatabase(adminPgUrl, name)
    pgDatabases.push(name)
    pgDatabaseOf.set(`postgres-${id}`, name)
    keys.set(`postgres-${id}`, await seedDatabase(url, size, stock))
    starting(startServer({ name: `postgres-${id}`, entry: serviceEntry, env: { ...pgServiceEnv, DATABASE_URL: url }, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, `postgres-${id}`) })
      .then((s) => { servers.set(s.name, s) }))
  }
  // Scale-out: each configuration on a database of its own; the two instances behind nginx share
  // theirs, and both configurations count their limits in Redis.
  for (const config of scaleOut) {
    if (!needed(config, id)) continue
    const name = `petstore_bench_${process.pid}_${id.replace(/-/g, '_')}_${config.replace('-', '_')}`
    const url = await createPostgresDatabase(adminPgUrl, name)
    pgDatabases.push(name)
    pgDatabaseOf.set(`${config}-${id}`, name)
    keys.set(`${config}-${id}`, await seedDatabase(url, size, stock))
    const env = { ...pgServiceEnv, DATABASE_URL: url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix }
    const start = (instance: string, extra: Record<string, string> = {}) =>
      startServer({ name: instance, entry: serviceEntry, env: { ...env, ...extra }, cwd: projectRoot, logDir, core: serverCore, cpuProfileDir: profileDir && join(profileDir, instance) })
        .then((s) => { servers.set(s.name, s); return s })
    if (config === 'pg-redis') {
      starting(start(`pg-redis-${id}`).then(() => {}))
      continue
    }
    // Both instances on the servers' core, as the one instance is; nginx on the generator's.
    starting(Promise.all([`nginx-a-${id}`, `nginx-b-${id}`].map((instance) => start(instance, { TRUST_PROXY: 'loopback' })))
      .then(async (instances) => {
        instanceGroups.set(`nginx-${id}`, instances)
        proxies.set(`nginx-${id}`, await startNginx({
          binary: nginx!,
          dir: join(scratch, `nginx-${id}`),
          port: await freePort(),
          upstreams: instances.map((s) => new URL(s.baseUrl).host),
          core: generatorCore
        }))
      }))
  }
}
// Every start settles first, so that the clean-up stops the servers that did start.
const failedStart = [...await Promise.allSettled(starts), ...await Promise.allSettled(floorStarts.map((start) => start()))].find((r) => r.status === 'rejected')
if (failedStart !== undefined) {
  await cleanup()
  throw failedStart.reason
}

// The list bodies, as the SQLite service sends them: the payload ceiling sends the same bytes,
// and the other configurations must send the same document.
const payloadDir = join(scratch, 'payloads')
mkdirSync(payloadDir)
let limiterSeen: boolean | undefined
const withoutLimiter = new Set<string>()
for (const id of datasetIds) {
  const get = async (config: ConfigId) => {
    const baseUrl = (proxies.get(`${config}-${id}`) ?? servers.get(`${config}-${id}`))?.baseUrl
    if (baseUrl === undefined) return undefined
    const res = await fetch(`${baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${keys.get(`${config}-${id}`)}` } })
    const body = await res.text()
    if (res.status !== 200) {
      await cleanup()
      throw new Error(`${config}-${id}: GET /v1/inventory answered ${res.status}: ${body.slice(0, 300)}`)
    }
    if (config !== 'express' && !res.headers.has('x-ratelimit-limit')) withoutLimiter.add(configTitles[config])
    if (config === 'sqlite') limiterSeen = res.headers.has('x-ratelimit-limit')
    return body
  }
  const reference = await get('sqlite')
  if (!isOrderDataset(id)) writeFileSync(join(payloadDir, `list-${id}`), reference!)
  for (const config of ['redis', 'metrics', 'postgres', 'express', 'baseline', ...scaleOut] as const) {
    const body = await get(config)
    if (body !== undefined && JSON.stringify(JSON.parse(body)) !== JSON.stringify(JSON.parse(reference!))) {
      note(`${config}-${id} sends a different list than sqlite-${id} (${body.length} vs ${reference!.length} bytes)`)
    }
  }
}
for (const title of withoutLimiter) note(`${title} sent no X-RateLimit-* headers: its rate limiter is not active`)
if (needed('bare') || needed('ceiling')) {
  try {
    servers.set('bare', await startServer({ name: 'bare', entry: join(benchDir, 'servers', 'bare.ts'), env: { PAYLOAD_DIR: payloadDir }, cwd: projectRoot, logDir, core: serverCore }))
  } catch (error) {
    await cleanup()
    throw error
  }
}

// The floor must answer what the service answers (bench/lib/floor-check.ts): the first request of
// each workload it runs goes to both, on copies of one dataset, before anything is measured.
for (const w of workloads.filter((x) => x.configs.includes('floor'))) {
  const service = servers.get(`sqlite-${datasetOf(w)}`)!
  const floor = servers.get(`floor-${datasetOf(w)}`)!
  const differences = await compareAnswers(service.baseUrl, floor.baseUrl, [await floorProbe(w, service.baseUrl)])
  if (differences.length > 0) {
    await cleanup()
    throw new Error(`the floor does not answer ${w.id} as the service does (bench/servers/floor.ts):\n  ${differences.join('\n  ')}`)
  }
}

/** The first request of a workload, as the floor check sends it. */
async function floorProbe (w: Workload, serviceUrl: string): Promise<Probe> {
  const template = w.requests[0]!
  const authorization = `Bearer ${keys.get(`sqlite-${datasetOf(w)}`)}`
  const headers: Record<string, string> = { authorization, ...w.headers, ...template.headers, ...(template.body === undefined ? {} : { 'content-type': 'application/json' }) }
  // A delivery is made once per order: the probe delivers the last one, which the workload only
  // reaches when it runs past its ids (and then says so).
  const path = w.sequence === undefined ? template.path : template.path.replace('{seq}', String(w.sequence.last))
  let body = template.body
  // A PATCH of a pet's stock sets the quantity it has, so that the lists measured after it are
  // still the bytes the bare ceiling sends.
  const patched = template.method === 'PATCH' ? /^\/v1\/inventory\/(\d+)$/.exec(path) : null
  if (patched !== null) {
    const entries = await (await fetch(`${serviceUrl}/v1/inventory`, { headers: { authorization } })).json() as { petId: number, quantity: number }[]
    body = JSON.stringify({ quantity: entries.find((e) => e.petId === Number(patched[1]))!.quantity })
  }
  return { method: template.method, path, body, headers }
}

// The page URLs of orders-pages must be the ones the service links: walk them once.
for (const config of workloads.find((w) => w.id === 'orders-pages')?.configs ?? []) {
  const w = allWorkloads.find((x) => x.id === 'orders-pages')!
  const { baseUrl } = targetFor(w, config)
  for (const [i, page] of w.requests.entries()) {
    const res = await fetch(baseUrl + page.path, { headers: { authorization: `Bearer ${keys.get(`${config}-${datasetOf(w)}`)}` } })
    const orders = await res.json() as unknown[]
    const next = w.requests[i + 1]
    const link = res.headers.get('link')
    if (res.status !== 200 || orders.length !== 100 || link !== (next === undefined ? null : `<${next.path}>; rel="next"`)) {
      await cleanup()
      throw new Error(`orders-pages on ${config}: ${page.path} answered ${res.status} with ${orders.length} orders and Link ${link}, not the page its workload expects`)
    }
  }
}

// ---- Measurement ----------------------------------------------------------------------------

/** Where a configuration's load goes, and the processes whose CPU time is the service's (and the proxy's). */
function targetFor (w: Workload, config: ConfigId) {
  const name = isBare(config) ? 'bare' : `${config}-${datasetOf(w)}`
  const proxy = proxies.get(name)
  const instances = instanceGroups.get(name) ?? [servers.get(name)!]
  return { name, baseUrl: proxy?.baseUrl ?? instances[0]!.baseUrl, pids: instances.map((s) => s.pid), proxy }
}
/** Where each server's walk through a workload's `sequence` has got to. */
const nextInSequence = new Map<string, number>()
const sum = (values: (number | undefined)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0)

async function measure (w: Workload, config: ConfigId, seconds: number, round: number) {
  const target = targetFor(w, config)
  const requests: RequestTemplate[] = config === 'ceiling'
    ? [{ method: 'GET', path: '/' }]
    : config === 'bare' && w.bareRequests !== undefined ? w.bareRequests
      : config === 'bare' && w.barePath !== undefined ? [{ method: 'GET', path: w.barePath }] : w.requests
  const headers: Record<string, string> = isBare(config) ? {} : { authorization: `Bearer ${keys.get(`${config}-${datasetOf(w)}`)}`, ...w.headers }
  if (requests.some((r) => r.body !== undefined)) headers['content-type'] = 'application/json'

  for (const pid of target.pids) await waitIdle(pid)
  // Full runs also wait for the rest of the machine (a quick run has no time to spare).
  if (!quick) {
    const busy = await waitMachineQuiet(0.15, 20_000)
    if (busy >= 0.15) noisyStarts++
  }
  // With several instances: the peak RSS of the largest, the CPU time of all.
  const resettable = target.pids.map((pid) => resetPeakRss(pid)).every(Boolean)
  const largestRss = () => Math.max(...target.pids.map((pid) => rssBytes(pid) ?? 0))
  let polledPeak = largestRss()
  const poller = setInterval(() => { polledPeak = Math.max(polledPeak, largestRss()) }, 100)
  const cpuBefore = target.pids.map((pid) => cpuSeconds(pid) ?? 0)
  const proxyPids = target.proxy?.pids() ?? []
  const proxyCpuBefore = sum(proxyPids.map(cpuSeconds))
  // PostgreSQL's processes serving this service: those there now, and any its pool opens meanwhile.
  const database = pgDatabaseOf.get(target.name)
  const dbCpuBefore = new Map((database === undefined ? [] : await postgresBackends(adminPgUrl, database)).map((pid) => [pid, cpuSeconds(pid) ?? 0]))
  const machineBefore = machineJiffies()
  const firstSeq = w.sequence === undefined ? undefined : nextInSequence.get(target.name) ?? w.sequence.first
  const healthzPoller = w.pollHealthz === undefined ? undefined : startHealthzPoller(target.baseUrl, w.pollHealthz)
  const startedUs = monotonicUs()
  const result = await runLoad(generator, {
    baseUrl: target.baseUrl,
    requests,
    headers,
    connections: w.connections,
    durationSec: seconds,
    timeoutSec: 30,
    core: generatorCore,
    scratchDir: scratch,
    firstSeq,
    ratePerSec
  })
  const window: [number, number] = [startedUs, monotonicUs()]
  if (ratePerSec !== undefined && result.rps < 0.95 * ratePerSec) {
    note(`${w.id} on ${config} answered ${Math.round(result.rps)} requests/s, under --rate ${ratePerSec}: its CPU per answer is not at the rate the others were measured at`)
  }
  // Stops asking now; the answer to the last request is awaited after the CPU time is read.
  const healthzStopped = healthzPoller?.stop()
  clearInterval(poller)
  if (w.sequence !== undefined) {
    // The requests still open when the load stopped may have been served too: skip past them.
    nextInSequence.set(target.name, firstSeq! + result.requests + w.connections)
    if (firstSeq! + result.requests - 1 > w.sequence.last) note(`${w.id} on ${config} ran past the last of its ids (${w.sequence.last}): its requests from there on got 404`)
  }
  const serverCpuSeconds = sum(target.pids.map((pid, i) => (cpuSeconds(pid) ?? cpuBefore[i]!) - cpuBefore[i]!))
  const proxyCpuSeconds = sum(proxyPids.map(cpuSeconds)) - proxyCpuBefore
  const dbCpuSeconds = database === undefined ? undefined : sum((await postgresBackends(adminPgUrl, database)).map((pid) => (cpuSeconds(pid) ?? 0) - (dbCpuBefore.get(pid) ?? 0)))
  const machineAfter = machineJiffies()
  const busyCores = coreCount() * (machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total)
  const serverCpu = serverCpuSeconds / result.seconds
  const generatorCpuShare = result.generatorCpu / result.seconds
  const proxyCpuShare = proxyCpuSeconds / result.seconds
  const dbCpuShare = (dbCpuSeconds ?? 0) / result.seconds
  const healthz = await healthzStopped
  const peakRss = resettable ? Math.max(...target.pids.map((pid) => peakRssBytes(pid) ?? 0)) || polledPeak : polledPeak
  return {
    ...result,
    round,
    peakRss: peakRss || undefined,
    serverCpu,
    cpuPerRequest: serverCpuSeconds * 1e6 / Math.max(1, result.requests),
    ...(dbCpuSeconds === undefined ? {} : { dbCpuPerRequest: dbCpuSeconds * 1e6 / Math.max(1, result.requests) }),
    ...(target.proxy === undefined ? {} : { proxyCpuPerRequest: proxyCpuSeconds * 1e6 / Math.max(1, result.requests) }),
    otherCpu: Math.max(0, busyCores - serverCpu - generatorCpuShare - proxyCpuShare - dbCpuShare),
    window,
    ...(healthz === undefined ? {} : { healthz })
  }
}

/** Microseconds of the monotonic clock, which V8 also stamps its CPU profiles with. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/** Measurements that started while the machine was still busy after 20 s of waiting. */
let noisyStarts = 0
/** A/B: which build goes first in a round (this checkout in odd rounds, the baseline in even ones). */
const firstInRound = (round: number): 'A' | 'B' => round % 2 === 1 ? 'A' : 'B'

const cells: Cell[] = []
for (const w of workloads) for (const config of w.configs) cells.push({ workload: w.id, workloadTitle: w.title, config, connections: w.connections, samples: [] })

const cellCount = cells.length
const estimate = cellCount * (warmups * warmupSec + rounds * durationSec)
console.log(`${cellCount} measurements × ${rounds} round(s) of ${durationSec} s after ${warmupSec} s warm-up each, with ${generator}` +
  `${twoCores ? ` (servers on core 0 with ${ONE_CORE_NODE_FLAGS.join(' ')}, generator on core 1)` : ' (no pinning: fewer than 2 cores or no taskset)'}: about ${Math.ceil(estimate / 60)} min`)

/**
 * --fresh-processes: every server not behind a proxy is stopped and started again (the same
 * options, a new port, the same data), then every measurement is warmed up again as at the start.
 * The instances behind nginx keep their processes: the proxy knows their ports.
 */
async function freshRound (round: number) {
  const grouped = new Set([...instanceGroups.values()].flat())
  const restartable = [...servers.values()].filter((s) => !grouped.has(s))
  process.stdout.write(`round ${round}/${rounds}: restarting ${restartable.length} server(s)…\r`)
  for (const server of restartable) servers.set(server.name, await server.restart())
  await warmUp(` (round ${round})`)
}

/** Every measurement once for warmupSec, not recorded (`label` is added to the progress line). */
async function warmUp (label = '') {
  for (const w of workloads) {
    for (const config of w.configs) {
      process.stdout.write(`warm-up ${w.id} on ${config}${label}…\r`)
      await measure(w, config, warmupSec, 0)
    }
  }
}

const startedAt = new Date()
const loadAverageBefore = (await import('node:os')).loadavg()
try {
  await warmUp()
  for (let round = 1; round <= rounds; round++) {
    if (freshProcesses && round > 1) await freshRound(round)
    for (const w of workloads) {
      const order = baselineDir !== undefined && firstInRound(round) === 'B' ? [...w.configs].reverse() : w.configs
      for (const config of order) {
        const sample = await measure(w, config, durationSec, round)
        cells.find((c) => c.workload === w.id && c.config === config)!.samples.push(sample)
        console.log(`round ${round}/${rounds} ${w.id.padEnd(21)} ${config.padEnd(8)} ${sample.rps.toFixed(0).padStart(7)} req/s  p50 ${sample.p50.toFixed(2).padStart(7)} ms  p99 ${sample.p99.toFixed(2).padStart(7)} ms  errors ${sample.non2xx + sample.socketErrors}  server CPU ${(sample.serverCpu * 100).toFixed(0)}% ${sample.cpuPerRequest.toFixed(0)} µs/req` +
          (sample.healthz === undefined ? '' : `  /healthz max ${sample.healthz.max.toFixed(1)} ms (${sample.healthz.polls} polls)`))
      }
    }
  }
} finally {
  await cleanup()
}
const focused = fullRun ? runFocusedScripts() : undefined
const finishedAt = new Date()
const loadAverageAfter = (await import('node:os')).loadavg()

/**
 * Issue 15's focused workloads, in a full run only: bench/list-writes.ts (100,000 entries, a PATCH
 * before every GET, one connection) and bench/revocation.ts (two PostgreSQL instances). Each runs
 * as its own process after the servers above have stopped, and hands its figures over as JSON.
 */
function runFocusedScripts (): FocusedResults {
  const tsx = createRequire(import.meta.url).resolve('tsx/cli')
  const script = (file: string, scriptArgs: string[]): string | undefined => {
    console.log(`\n${file} ${scriptArgs.join(' ')}`)
    // This runner is pinned to core 1 and a child inherits that: each script pins what it pins itself.
    const command = [process.execPath, tsx, join('bench', file), ...scriptArgs]
    if (twoCores) command.unshift('taskset', '-c', `0-${coreCount() - 1}`)
    const child = spawnSync(command[0]!, command.slice(1), { cwd: projectRoot, stdio: 'inherit', env: process.env })
    return child.status === 0 ? undefined : `${file} failed (exit ${child.status ?? child.signal})`
  }
  const listWritesFile = join(outDir, 'list-writes.json')
  rmSync(listWritesFile, { force: true })
  const listWritesFailed = script('list-writes.ts', ['--size', '100000', '--rounds', '200', '--json', listWritesFile])
  let revocation: FocusedResults['revocation']
  if (postgresSkipped !== undefined) {
    revocation = `PostgreSQL: ${postgresSkipped}`
  } else {
    const revocationFile = join(outDir, 'revocation.json')
    rmSync(revocationFile, { force: true })
    revocation = script('revocation.ts', []) ?? (JSON.parse(readFileSync(revocationFile, 'utf8')) as RevocationResult)
  }
  return {
    listWrites: listWritesFailed ?? (JSON.parse(readFileSync(listWritesFile, 'utf8')) as ListWritesResult),
    revocation
  }
}

// ---- Report ---------------------------------------------------------------------------------

const busy = cells.flatMap((c) => c.samples).map((s) => s.otherCpu)
const maxOther = busy.length === 0 ? 0 : Math.max(...busy)
if (noisyStarts > 0) note(`${noisyStarts} measurement(s) started while other processes still kept 0.15 cores or more busy after 20 s of waiting`)
if (maxOther > 0.2) note(`other processes kept up to ${maxOther.toFixed(2)} cores busy during some measurements: figures are noisy; rerun on a quiet machine`)
// The ratios that judge a change (A/B) or the service against its floor compare processes, and
// identical processes can differ for their whole lives (bench/README.md, "One process is one draw").
if ((baselineDir !== undefined || cells.some((c) => c.config === 'floor')) && (!freshProcesses || rounds === 1)) {
  note('every configuration was measured in one process for all its rounds: its ratios to the others can be off by up to about 15 % from the processes drawn alone (bench/README.md, "One process is one draw"); --fresh-processes with several rounds measures new processes each round')
}

/**
 * The per-stage account of issue 23, with --profile: for every process that was profiled (the
 * service's and the floor's), the stage times of its profile over each workload's measured rounds.
 */
function stageAccountsOfRun (): { title: string, columns: StageColumn[] }[] {
  if (profileDir === undefined) return []
  const byServer = new Map<string, Cell[]>()
  for (const cell of cells) {
    const w = workloads.find((x) => x.id === cell.workload)!
    const target = targetFor(w, cell.config)
    if (target.pids.length !== 1 || cell.samples.length === 0 || !existsSync(join(profileDir, target.name))) continue
    byServer.set(target.name, [...byServer.get(target.name) ?? [], cell])
  }
  const sections: { title: string, columns: StageColumn[] }[] = []
  for (const [server, serverCells] of byServer) {
    const dir = join(profileDir, server)
    const windowSets = serverCells.map((c) => c.samples.flatMap((s) => s.window === undefined ? [] : [s.window]))
    const totals = serverCells.map((): StageAccount | undefined => undefined)
    // The main thread's profiles only (node names them CPU.<date>.<time>.<pid>.<thread>.<n>; tsx's
    // loader thread in the floor writes one too).
    for (const file of readdirSync(dir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f))) {
      stageAccounts(join(dir, file), windowSets).forEach((account, i) => {
        const total = totals[i]
        if (total === undefined) {
          totals[i] = account
          return
        }
        total.busyUs += account.busyUs
        for (const stage of Object.keys(account.byStage) as (keyof StageAccount['byStage'])[]) total.byStage[stage] += account.byStage[stage]
      })
    }
    const columns = serverCells.flatMap((cell, i) => totals[i] === undefined
      ? []
      : [{ title: cell.workload, cpuPerRequest: summarize(cell).cpuPerRequest, account: totals[i], cpuUs: cell.samples.reduce((t, s) => t + s.cpuPerRequest * s.requests, 0) }])
    if (columns.length > 0) sections.push({ title: `${server} (${configTitles[serverCells[0]!.config]})`, columns })
  }
  return sections
}
const stageSections = stageAccountsOfRun()

const checkout = { a: describeCheckout(projectRoot), b: baselineDir === undefined ? undefined : describeCheckout(baselineDir) }
// The baseline's dist/ is whatever was last built there, which need not match its working tree.
const baselineBuilt = baselineEntry === undefined ? undefined : statSync(baselineEntry).mtime.toISOString()
const meta = {
  date: startedAt.toISOString(),
  durationMinutes: Number(((finishedAt.getTime() - startedAt.getTime()) / 60_000).toFixed(1)),
  cpu: cpuModel(),
  cores: coreCount(),
  node: process.version,
  generator,
  ratePerSec: ratePerSec ?? null,
  freshProcesses,
  pinned: twoCores,
  mode: quick ? 'quick' : baselineDir !== undefined ? 'baseline' : fullRun ? 'full' : 'partial',
  rounds,
  durationSec,
  warmupSec,
  logLevel: serviceEnv.LOG_LEVEL,
  rateLimiterActive: limiterSeen,
  postgres: postgresSkipped === undefined ? redact(adminPgUrl) : `skipped: ${postgresSkipped}`,
  redis: redisSkipped === undefined ? redact(redisUrl) : `skipped: ${redisSkipped}`,
  checkout: checkout.a,
  baseline: baselineDir === undefined ? undefined : { dir: baselineDir, checkout: checkout.b, built: baselineBuilt },
  loadAverage: { before: loadAverageBefore, after: loadAverageAfter },
  notes
}

const command = `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`
const setUp = `- CPU: ${meta.cpu}, ${meta.cores} cores${twoCores ? `; every server process pinned to core 0 and started with \`${ONE_CORE_NODE_FLAGS.join(' ')}\` (docs/operations.md, "One core"), the load generator to core 1` : '; no pinning'}
- Node ${meta.node}; load generator: ${generator}${ratePerSec === undefined ? '' : ` held at ${ratePerSec} requests/s (--rate)`}; ${rounds} round(s) of ${durationSec} s per measurement after ${warmupSec} s of warm-up, configurations interleaved${freshProcesses ? '; every round on new server processes, each warmed up again (--fresh-processes)' : ''}
- Service: \`${args.tsx ? 'src/server.ts through tsx' : 'src/server.ts compiled by tsc (as npm start runs it)'}\` at ${checkout.a}, with \`LOG_LEVEL=${serviceEnv.LOG_LEVEL}\`, \`NODE_ENV=production\`; one enterprise key whose limits never bind (the limiter still counts every request${limiterSeen === false ? ' — but this build had no limiter' : ''})
- Load average before / after: ${loadAverageBefore.map((n) => n.toFixed(2)).join(' ')} / ${loadAverageAfter.map((n) => n.toFixed(2)).join(' ')}`
const notesSection = notes.length > 0 ? '## Notes\n\n' + notes.map((n) => `- ${n}`).join('\n') + '\n' : ''

console.log('\n' + textTable(cells))
mkdirSync(resultsDir, { recursive: true })
const written: string[] = []

if (baselineDir !== undefined) {
  const comparison = compare(cells, firstInRound)
  console.log(`\nA = this checkout (${checkout.a}), B = ${baselineDir} (${checkout.b}, dist/ built ${baselineBuilt}); medians over ${rounds} round(s), ratios are medians of per-round A/B:`)
  for (const line of comparisonLines(comparison)) console.log('  ' + line)
  for (const { title, columns } of stageSections) console.log(`\nPer-stage account, ${title}: µs of CPU per request (self-time share × CPU µs/req)\n${stageText(columns)}`)
  for (const n of notes) console.log(`note: ${n}`)
  const markdown = `# A/B: this checkout against a baseline build

Written by \`${command}\` (bench/run.ts) on ${startedAt.toISOString()}; ${meta.durationMinutes} min.

- A: this checkout, ${projectRoot} at ${checkout.a} (compiled by tsc into bench/out/dist/)
- B: ${baselineDir} at ${checkout.b} (its dist/, built ${baselineBuilt}, run with its own node_modules and openapi.yaml)
- Both on copies of one SQLite dataset, seeded by this checkout; the order alternates (A B in odd rounds, B A in even ones)
${setUp}

"µs/req" is the server's CPU time (user + system, from /proc/PID/stat) per response: the figure to
compare, since the VM's speed drifts between rounds and req/s with it. A/B below 1 in µs/req means A
uses less CPU per request; above 1 in req/s means A serves more. "other CPU" is the cores anything
else on the machine used during A's and B's measurement (noise).

${markdownComparison(comparison)}
${stageSections.length > 0 ? `\n## Per-stage account (CPU profiles)\n\nAs in results.md (bench/README.md, "Per-stage account").\n\n${stageSections.map(({ title, columns }) => `### ${title}\n\n${stageMarkdown(columns)}\n`).join('\n')}` : ''}
${notesSection}`
  writeFileSync(join(resultsDir, 'baseline.md'), markdown)
  writeFileSync(join(resultsDir, 'baseline.json'), JSON.stringify({ meta, comparison, cells }, null, 2) + '\n')
  written.push('baseline.md', 'baseline.json')
} else {
  // With --rate every measurement answers the same requests/s: the targets and references that are
  // ratios of requests/s say nothing then (evaluateTargets marks them not judged).
  const targets = evaluateTargets(cells, 'sqlite', ratePerSec)
  const references = ratePerSec === undefined ? evaluateReferences(cells, 'sqlite') : []
  const pgTargets = postgresSkipped === undefined && cells.some((c) => c.config === 'postgres') ? evaluateTargets(cells, 'postgres', ratePerSec) : []
  const scaleTargets = evaluateScaleTargets(cells, focused, ratePerSec)
  const floorTargets = evaluateFloorTargets(cells, 'sqlite')
  console.log('\nTargets of issue 5 (medians of per-round ratios):')
  for (const line of [...targetLines(targets), ...targetLines(pgTargets)]) console.log('  ' + line)
  console.log('\nTargets of issue 15:')
  for (const line of targetLines(scaleTargets)) console.log('  ' + line)
  if (floorTargets.length > 0) console.log('\nTargets of issue 23 (server CPU per answer, medians of per-round ratios):')
  for (const line of targetLines(floorTargets)) console.log('  ' + line)
  for (const { title, columns } of stageSections) console.log(`\nPer-stage account, ${title}: µs of CPU per request (self-time share × CPU µs/req)\n${stageText(columns)}`)
  if (references.length > 0) console.log('\nReferences from the same run (not targets):')
  for (const line of referenceLines(references)) console.log('  ' + line)
  for (const n of notes) console.log(`note: ${n}`)

  const markdown = `# Benchmark results

Written by \`${command}\` (bench/run.ts) on ${startedAt.toISOString()}; ${meta.mode} run, ${meta.durationMinutes} min.

${setUp}
- PostgreSQL: ${meta.postgres}; Redis (for "limits in Redis"): ${meta.redis}

Figures are medians over rounds; errors are summed (non-2xx responses and socket errors).
Peak RSS is the server process's high-water mark during the measurement. "server CPU" is the
share of its core the server used (below ~95 % for bare Fastify means something else was the limit:
the load generator, or other processes, see "other CPU"); "CPU µs/req" is the server's CPU time per response, steadier than req/s
on a busy machine; "PG µs/req" is the CPU time of the PostgreSQL processes serving the service's
connections per response (on SQLite the database's work is in the service's own figure); "other
CPU" is cores used by anything else on the machine (noise).

${markdownTable(cells)}

## Targets of issue 5

Ratios are medians of per-round ratios (both figures from the same round).

${markdownTargets(targets)}
${pgTargets.length > 0 ? `\nThe same targets on PostgreSQL (informative):\n\n${markdownTargets(pgTargets)}\n` : ''}
## Targets of issue 15

The 1-in-10 and PostgreSQL rows come from the table above (medians of per-round ratios). The
others come from the focused scripts this run started after it, one at a time on the then idle
machine: \`bench/list-writes.ts\` (the GET's server time from the server's log, the event loop's
longest block from a monitor inside it) and \`bench/revocation.ts\` (two compiled instances on
PostgreSQL, not pinned); bench/README.md says how each measures.

${markdownTargets(scaleTargets)}
${floorTargets.length > 0 ? `\n## Targets of issue 23

All as the server's CPU time per answer, medians of per-round ratios. The floor
(bench/servers/floor.ts) is bare Fastify doing only the work the service cannot avoid for the
same requests (bench/README.md, "The floor and the cost of one request"); its own ratio to bare Fastify is what a perfect
implementation of the service would reach. stall-100k asks \`/healthz\` every ${HEALTHZ_EVERY_MS} ms on a
connection of its own while the load runs; its longest wait is the longest stall a client saw.

${markdownTargets(floorTargets)}
` : ''}${stageSections.length > 0 ? `\n## Per-stage account (CPU profiles)

Each profile sample taken during a workload's measured rounds is given to a stage by the functions
on its stack (bench/lib/stages.ts); a stage's µs per request is its share of the main thread's busy
samples times the process's CPU µs per request. "main thread busy / process CPU" says how much of
the process's CPU time the samples cover (V8's helper threads and the kernel's work outside the
main thread are spread over the stages in proportion).

${stageSections.map(({ title, columns }) => `### ${title}\n\n${stageMarkdown(columns)}\n`).join('\n')}` : ''}${references.length > 0 ? `\n## References from the same run (not targets)\n\nBare Fastify also answers the PATCH and GET pet requests, from a Map with Fastify's own validation\nof the same shapes (bench/servers/bare.ts): what those requests cost with no authentication, no rate\nlimits and no database, and what tail latency this machine gives even then. The service with its\nlimits counted in Redis shows what sharing them between instances costs per request; two instances\nbehind nginx against one, both on PostgreSQL with their limits in Redis, whether an instance costs the\nsame per request when another shares its database.\n\n${markdownReferences(references)}\n` : ''}
${notesSection}`
  writeFileSync(join(resultsDir, 'results.md'), markdown)
  writeFileSync(join(resultsDir, 'results.json'), JSON.stringify({
    meta,
    summary: cells.map(summarize),
    targets,
    postgresTargets: pgTargets,
    scaleTargets,
    floorTargets,
    stageAccounts: stageSections,
    focused,
    references,
    cells: cells.map((c) => ({ ...c, configTitle: configTitles[c.config] }))
  }, null, 2) + '\n')
  written.push('results.md', 'results.json')
}

// The service processes wrote their profiles as they exited (in the clean-up above).
if (profileDir !== undefined && existsSync(profileDir)) {
  for (const dir of readdirSync(profileDir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const file of readdirSync(join(profileDir, dir.name)).filter((f) => f.endsWith('.cpuprofile'))) {
      const summary = summarizeProfile(join(profileDir, dir.name, file), 25)
      writeFileSync(join(profileDir, dir.name, file.replace(/\.cpuprofile$/, '.txt')), summary)
      console.log('\n' + summary)
    }
  }
}
console.log(`\nwrote ${written.map((f) => relative(projectRoot, join(resultsDir, f))).join(' and ')}${profileDir ? `; CPU profiles and their summaries in ${relative(projectRoot, profileDir)}` : ''}`)
