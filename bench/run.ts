/**
 * npm run bench [-- options]: the service's benchmark. bench/README.md says what it measures and
 * how to read the figures.
 *
 * Each round measures every workload on every configuration in turn (A B C, then B C A, …). Each
 * measurement starts a fresh server process pinned to core 0, on a fresh copy of its data, warms
 * it up, then reads the server's CPU time from /proc around a wrk run pinned to core 1.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { projectRoot } from '../src/contract/paths.js'
import { compileService } from './lib/build.js'
import { type Build, copySqlite, Postgres, removeSqlite, seed } from './lib/datasets.js'
import { type Answer, ask, differences } from './lib/floor-check.js'
import { type Request, runLoad } from './lib/load.js'
import { coreCount, cpuModel, cpuSeconds, machineJiffies, onPath } from './lib/proc.js'
import { type Cell, deliveryTable, markdownTable, type Sample, sampleLine, summarize } from './lib/report.js'
import { type Server, type ServerSpec, startServer, waitIdle } from './lib/servers.js'
import { allArrived, changes, quiet, startReceiver, subscribe } from './lib/webhooks.js'

const USAGE = 'npm run bench [-- --quick] [--only w1,w2] [--configs c1,c2] [--rounds N] [--duration S] [--warmup S] [--baseline DIR] [--out DIR]'
const usageError = (message: string): never => {
  console.error(`npm run bench: ${message}; usage: ${USAGE}`)
  process.exit(2)
}

let args: { quick?: boolean, only?: string, configs?: string, rounds?: string, duration?: string, warmup?: string, baseline?: string, out?: string, help?: boolean }
try {
  args = parseArgs({
    options: {
      quick: { type: 'boolean' },
      only: { type: 'string' },
      configs: { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      baseline: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean' }
    }
  }).values
} catch (error) {
  usageError((error as Error).message)
}
if (args!.help === true) {
  console.log(`usage: ${USAGE}`)
  process.exit(0)
}
const quick = args!.quick === true

// ---- Workloads and configurations -----------------------------------------------------------

const CONFIGS = ['bare', 'floor', 'sqlite', 'postgres', 'express', 'baseline', 'baseline-pg'] as const
type Config = typeof CONFIGS[number]
const titles: Record<string, string> = {
  bare: 'bare Fastify (ceiling)',
  floor: 'floor',
  sqlite: 'service, SQLite',
  postgres: 'service, PostgreSQL',
  express: 'Express peer, SQLite',
  baseline: 'baseline build, SQLite',
  'baseline-pg': 'baseline build, PostgreSQL'
}

interface Workload {
  id: string
  title: string
  /** Pets in its dataset. */
  size: number
  connections: number
  /** Sent in turn, over and over. */
  requests: Request[]
  configs: Config[]
  /** Sent once to each fresh server before its warm-up. */
  prepare?: Request[]
  /** `subscribed`: an endpoint takes every change's event; `delivery`: the delivery run (no wrk). */
  webhooks?: 'subscribed' | 'delivery'
}

const list: Request = { method: 'GET', path: '/v1/inventory' }
// Each pet gets ten different quantities in turn, so that every PATCH changes its entry.
const patches: Request[] = Array.from({ length: 1000 }, (_, i) => ({ method: 'PATCH', path: `/v1/inventory/${(i % 100) + 1}`, body: JSON.stringify({ quantity: (i * 7) % 1000 }) }))
const getPets: Request[] = Array.from({ length: 100 }, (_, i) => ({ method: 'GET', path: `/v1/pets/${i + 1}` }))
const orders: Request[] = Array.from({ length: 100 }, (_, i) => ({ method: 'POST', path: '/v1/store/orders', body: JSON.stringify({ petId: i + 1, quantity: 1 }) }))
// Stock that no run orders away (a pet of the synthetic data has 0 to 49 units): every order is placed.
const stock: Request[] = Array.from({ length: 100 }, (_, i) => ({ method: 'PATCH', path: `/v1/inventory/${i + 1}`, body: JSON.stringify({ quantity: 2_000_000_000 }) }))
// Nine reads of the list to one PATCH; each pet alternates between two quantities, so the list changes.
const listWhileWriting: Request[] = patches.slice(0, 200).flatMap((patch) => [...Array<Request>(9).fill(list), patch])

const everyone: Config[] = ['bare', 'floor', 'sqlite', 'postgres', 'express']
const allWorkloads: Workload[] = [
  { id: 'list-100', title: 'GET list, 100', size: 100, connections: 50, requests: [list], configs: everyone },
  { id: 'get-pet', title: 'GET pet', size: 100, connections: 50, requests: getPets, configs: everyone },
  { id: 'patch', title: 'PATCH inventory', size: 100, connections: 50, requests: patches, configs: everyone },
  // Its ratios are to the PATCH without an endpoint on the same engine, in the same round.
  { id: 'patch-hooked', title: 'PATCH inventory, 1 endpoint subscribed (÷ PATCH)', size: 100, connections: 50, requests: patches, configs: ['sqlite', 'postgres'], webhooks: 'subscribed' },
  // The Express peer cannot place orders (bench/peers/express.ts says why).
  { id: 'place-order', title: 'POST order', size: 100, connections: 50, requests: orders, configs: ['bare', 'floor', 'sqlite', 'postgres'], prepare: stock },
  { id: 'list-10k', title: 'GET list, 10,000', size: 10_000, connections: 50, requests: [list], configs: everyone },
  // The floor rebuilds its whole list after each write (no floor there); the peer takes ~0.3 s per answer.
  { id: 'list-100k-writes', title: 'GET list, 100,000, 1 PATCH in 10', size: 100_000, connections: 10, requests: listWhileWriting, configs: ['bare', 'sqlite', 'postgres'] },
  { id: 'deliver-10k', title: 'events delivered', size: 100, connections: 50, requests: [], configs: ['sqlite', 'postgres'], webhooks: 'delivery' }
]
for (const w of allWorkloads) titles[w.id] = w.title
// An A/B compares the per-request path unless --only says otherwise.
const abWorkloads = ['list-100', 'get-pet', 'patch', 'place-order']

const baselineDir = args!.baseline === undefined ? undefined : resolve(args!.baseline)
if (baselineDir !== undefined) {
  for (const needed of [join('dist', 'src', 'server.js'), join('dist', 'src', 'cli', 'db.js'), 'node_modules']) {
    if (!existsSync(join(baselineDir, needed))) usageError(`--baseline ${baselineDir} has no ${needed}: run npm ci there (it builds dist/ too)`)
  }
}
const split = (text: string | undefined) => text?.split(',').filter((s) => s !== '')
const onlyWorkloads = split(args!.only) ?? (baselineDir === undefined ? allWorkloads.map((w) => w.id) : abWorkloads)
const onlyConfigs = split(args!.configs) ?? (baselineDir === undefined ? everyone : ['sqlite', 'baseline'])
for (const id of onlyWorkloads) if (!allWorkloads.some((w) => w.id === id)) usageError(`unknown workload ${id} (known: ${allWorkloads.map((w) => w.id).join(', ')})`)
for (const c of onlyConfigs) if (!(CONFIGS as readonly string[]).includes(c)) usageError(`unknown configuration ${c} (known: ${CONFIGS.join(', ')})`)
for (const c of ['baseline', 'baseline-pg']) if (onlyConfigs.includes(c) && baselineDir === undefined) usageError(`the configuration ${c} needs --baseline DIR`)

const wholeNumber = (option: string, value: string | undefined, fallback: number, min: number): number => {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value) || Number(value) < min) usageError(`--${option} must be a whole number from ${min} up, not ${value}`)
  return Number(value)
}
// An A/B's rounds alternate which build goes first: an even count gives each order the same weight.
const rounds = wholeNumber('rounds', args!.rounds, quick ? 1 : baselineDir === undefined ? 5 : 6, 1)
// Whole seconds: wrk takes no fractions.
const durationSec = wholeNumber('duration', args!.duration, quick ? 1 : 4, 1)
const warmupSec = wholeNumber('warmup', args!.warmup, quick ? 0 : 2, 0)

const workloads = allWorkloads
  .filter((w) => onlyWorkloads.includes(w.id))
  // A baseline build has no webhooks.
  .map((w) => ({ ...w, configs: [...w.configs, ...(w.webhooks === undefined ? (['baseline', 'baseline-pg'] as const).filter((b) => w.configs.includes(b === 'baseline' ? 'sqlite' : 'postgres')) : [])].filter((c) => onlyConfigs.includes(c)) }))
  .filter((w) => w.configs.length > 0)
if (workloads.length === 0) usageError(`none of the workloads ${onlyWorkloads.join(', ')} runs on ${onlyConfigs.join(', ')}`)
if (!onPath('wrk')) {
  console.error('npm run bench: wrk is not installed (apt-get install wrk)')
  process.exit(1)
}

// ---- Set-up ---------------------------------------------------------------------------------

const notes: string[] = []
const note = (text: string) => { notes.push(text); console.log(`note: ${text}`) }
const pinned = coreCount() >= 2 && onPath('taskset')
const serverCore = pinned ? 0 : undefined
const wrkCore = pinned ? 1 : undefined
if (!pinned) note('fewer than 2 cores or no taskset: nothing is pinned, and the figures say little')

const outDir = resolve(args!.out ?? join(projectRoot, 'bench', 'out'))
mkdirSync(outDir, { recursive: true })
const scratch = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
// Inside the project: the compiled code finds openapi.yaml and node_modules from where it is.
const buildDir = join(projectRoot, 'bench', 'out', `service-${process.pid}`)
const pg = new Postgres(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
const pgPrefix = `petstore_bench_${process.pid}`
const pgDatabases = new Set<string>()
let running: Server | undefined
let cleaning: Promise<void> | undefined

/** Stops the server, drops the databases, removes the files; once, however often it is called. */
function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    await running?.stop().catch(() => {})
    for (const name of pgDatabases) await pg.drop(name).catch((e: Error) => console.error(`could not drop ${name}: ${e.message}`))
    rmSync(scratch, { recursive: true, force: true })
    rmSync(buildDir, { recursive: true, force: true })
    // Gone again unless a report went there (a fresh clone has no bench/out/).
    try { rmdirSync(dirname(buildDir)) } catch { /* not empty */ }
  })()
  return cleaning
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { void cleanup().finally(() => process.exit(130)) })

function checkout (dir: string): string {
  try {
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== ''
    return dirty ? `${commit} + uncommitted changes` : commit
  } catch {
    return 'not a git checkout'
  }
}

/** Which template a configuration's data is copied from: its engine and build. */
const templateKind = (config: Config) => config === 'baseline-pg' ? 'baselinepg' : config === 'postgres' || config === 'baseline' ? config : 'sqlite'
// Webhook endpoints on loopback (the benchmark's receiver); a build without webhooks ignores it.
const serviceEnv = { NODE_ENV: 'production', LOG_LEVEL: 'warn', SEED: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' }
const thisBuild: Build = { dist: buildDir, cwd: projectRoot }
const baselineBuild: Build = { dist: join(baselineDir ?? '', 'dist'), cwd: baselineDir ?? '' }
const builds: Record<'sqlite' | 'postgres' | 'baseline' | 'baselinepg', Build> = { sqlite: thisBuild, postgres: thisBuild, baseline: baselineBuild, baselinepg: baselineBuild }
const templates = new Map<string, { location: string, key: string }>()
const payloads = new Map<number, string>()
const cells: Cell[] = workloads.flatMap((w) => w.configs.map((config) => ({ workload: w.id, config, samples: [] as Sample[] })))
const startedAt = new Date()
const loadBefore = loadavg()
// What is compiled and measured: the working tree as the run starts.
const checkouts = { this: checkout(projectRoot), baseline: baselineDir === undefined ? undefined : checkout(baselineDir) }
let failed = false

// ---- Measurement ----------------------------------------------------------------------------

let nextDatabase = 1
/** A configuration's server on a fresh copy of its template, and how to remove that copy. */
async function freshData (config: Config, size: number): Promise<{ spec: ServerSpec, key: string, database?: string, dispose: () => Promise<void> }> {
  const kind = config === 'bare' ? 'sqlite' : templateKind(config)
  const template = templates.get(`${kind}-${size}`)!
  const tsx = (file: string) => ['--import', 'tsx', join(projectRoot, 'bench', file)]
  if (config === 'postgres' || config === 'baseline-pg') {
    const name = `${pgPrefix}_${nextDatabase++}`
    pgDatabases.add(name)
    const url = await pg.create(name, template.location)
    const dispose = async () => { await pg.drop(name); pgDatabases.delete(name) }
    const build = config === 'postgres' ? thisBuild : baselineBuild
    return { spec: { args: [join(build.dist, 'src', 'server.js')], env: { ...serviceEnv, DATABASE_URL: url }, cwd: build.cwd }, key: template.key, database: name, dispose }
  }
  if (config === 'bare') {
    return { spec: { args: tsx('servers/bare.ts'), env: { NODE_ENV: 'production', PAYLOAD_FILE: payloads.get(size)!, ENTRIES: String(size) }, cwd: projectRoot }, key: template.key, dispose: async () => {} }
  }
  const file = join(scratch, `${config}-${size}.db`)
  copySqlite(template.location, file)
  const dispose = async () => removeSqlite(file)
  const spec: ServerSpec = config === 'floor'
    ? { args: tsx('servers/floor.ts'), env: { NODE_ENV: 'production', DATABASE_FILE: file }, cwd: projectRoot }
    : config === 'express'
      ? { args: tsx('peers/express.ts'), env: { NODE_ENV: 'production', DATABASE_URL: `sqlite:${file}` }, cwd: projectRoot }
      : config === 'baseline'
        ? { args: [join(builds.baseline.dist, 'src', 'server.js')], env: { ...serviceEnv, DATABASE_URL: `sqlite:${file}` }, cwd: builds.baseline.cwd }
        : { args: [join(buildDir, 'src', 'server.js')], env: { ...serviceEnv, DATABASE_URL: `sqlite:${file}` }, cwd: projectRoot }
  return { spec, key: template.key, dispose }
}

/** The first round's answers of the service and the floor to each workload's first request. */
const probes = new Map<string, Answer>()

async function measure (w: Workload, config: Config, round: number): Promise<Sample> {
  const fresh = await freshData(config, w.size)
  const receiver = w.webhooks === 'subscribed' ? await startReceiver() : undefined
  try {
    const server = running = await startServer(fresh.spec, serverCore, join(scratch, `${config}-${w.id}.log`))
    const headers: Record<string, string> = { authorization: `Bearer ${fresh.key}` }
    if (w.requests.some((r) => r.body !== undefined)) headers['content-type'] = 'application/json'
    if (receiver !== undefined) await subscribe(server.baseUrl, headers, receiver)
    for (const request of w.prepare ?? []) {
      const answer = await ask(server.baseUrl, request, headers)
      if (answer.status >= 400) throw new Error(`${config}: ${request.method} ${request.path} answered ${answer.status}: ${answer.body.slice(0, 200)}`)
    }
    if (round === 1 && (config === 'sqlite' || config === 'floor')) probes.set(`${w.id} ${config}`, await ask(server.baseUrl, w.requests[0]!, headers))
    const load = { baseUrl: server.baseUrl, requests: w.requests, headers, connections: w.connections, core: wrkCore, scriptFile: join(scratch, 'wrk.lua') }
    if (warmupSec > 0) {
      await runLoad({ ...load, seconds: warmupSec })
      if (receiver !== undefined) await quiet(receiver)
      await waitIdle(server.pid)
    }

    const before = await cpuNow(server.pid, fresh.database)
    const deliveredBefore = receiver?.requests ?? 0
    const result = await runLoad({ ...load, seconds: durationSec })
    // The deliveries of the events recorded by the measured PATCHes are part of their cost.
    if (receiver !== undefined && !await quiet(receiver)) throw new Error(`${config}: the deliveries of ${w.id} did not end within 2 min`)
    const { cpu, dbCpu, serverCpu, otherCpu } = await cpuSince(before, server.pid, fresh.database, result.wrkCpu, receiver === undefined ? result.seconds : undefined)
    return {
      round,
      answers: result.answers,
      seconds: result.seconds,
      rps: result.rps,
      p50: result.p50,
      p99: result.p99,
      errors: result.errors,
      cpuPerAnswer: cpu * 1e6 / result.answers,
      ...(dbCpu === undefined ? {} : { dbPerAnswer: dbCpu * 1e6 / result.answers }),
      serverCpu,
      otherCpu,
      ...(receiver === undefined ? {} : { deliveries: receiver.requests - deliveredBefore })
    }
  } finally {
    await running?.stop()
    running = undefined
    await receiver?.close()
    await fresh.dispose()
  }
}

type CpuMark = Awaited<ReturnType<typeof cpuNow>>
/** CPU times at the start of a measurement: the server's, its database backends', the machine's and the runner's own (the receiver runs in it). */
async function cpuNow (pid: number, database: string | undefined) {
  const db = new Map(database === undefined ? [] : (await pg.backends(database)).map((p) => [p, cpuSeconds(p) ?? 0]))
  return { db, server: cpuSeconds(pid)!, machine: machineJiffies(), runner: process.cpuUsage(), at: performance.now() }
}

/** CPU used since `before`; shares of a core over `seconds` (default: the wall time since). */
async function cpuSince (before: CpuMark, pid: number, database: string | undefined, wrkCpu: number, seconds = (performance.now() - before.at) / 1000) {
  const cpu = (cpuSeconds(pid) ?? before.server) - before.server
  const machine = machineJiffies()
  const runner = process.cpuUsage(before.runner)
  // Backends the pool opened meanwhile count from zero.
  const dbCpu = database === undefined ? undefined : sum((await pg.backends(database)).map((p) => (cpuSeconds(p) ?? 0) - (before.db.get(p) ?? 0)))
  const busyCores = coreCount() * (machine.busy - before.machine.busy) / Math.max(1, machine.total - before.machine.total)
  const serverCpu = cpu / seconds
  const mine = (runner.user + runner.system) / 1e6
  return { cpu, dbCpu, serverCpu, otherCpu: Math.max(0, busyCores - serverCpu - (wrkCpu + (dbCpu ?? 0) + mine) / seconds) }
}

/** Events of the delivery run: one per PATCH. --quick sends a tenth, as a smoke run. */
const EVENTS = quick ? 1000 : 10_000

/**
 * The delivery run: an endpoint subscribed, then EVENTS PATCHes as fast as 50 connections send
 * them; the figure is the time from the first change to the last event's arrival at the receiver.
 */
async function measureDelivery (w: Workload, config: Config, round: number): Promise<Sample> {
  const fresh = await freshData(config, w.size)
  const receiver = await startReceiver()
  try {
    const server = running = await startServer(fresh.spec, serverCore, join(scratch, `${config}-${w.id}.log`))
    const headers = { authorization: `Bearer ${fresh.key}`, 'content-type': 'application/json' }
    await subscribe(server.baseUrl, headers, receiver)
    await waitIdle(server.pid)
    const before = await cpuNow(server.pid, fresh.database)
    const startedAt = Date.now()
    const { failed } = await changes(server.baseUrl, headers, EVENTS, w.connections)
    const changesSeconds = (Date.now() - startedAt) / 1000
    await allArrived(receiver, EVENTS - failed, 180_000)
    const seconds = ((receiver.ids.size >= EVENTS - failed ? receiver.lastNewAt : Date.now()) - startedAt) / 1000
    const { cpu, dbCpu, serverCpu, otherCpu } = await cpuSince(before, server.pid, fresh.database, 0)
    return {
      round,
      answers: EVENTS - failed,
      seconds,
      rps: receiver.ids.size / seconds,
      p50: NaN,
      p99: NaN,
      errors: failed,
      cpuPerAnswer: cpu * 1e6 / receiver.ids.size,
      ...(dbCpu === undefined ? {} : { dbPerAnswer: dbCpu * 1e6 / receiver.ids.size }),
      serverCpu,
      otherCpu,
      delivery: { changesSeconds, lost: Math.max(0, EVENTS - failed - receiver.ids.size), duplicates: receiver.requests - receiver.ids.size }
    }
  } finally {
    await running?.stop()
    running = undefined
    await receiver.close()
    await fresh.dispose()
  }
}

try {
  if (workloads.some((w) => w.configs.includes('postgres'))) {
    const why = await pg.unavailable()
    if (why !== undefined) {
      note(`PostgreSQL skipped: ${why}`)
      for (const w of workloads) w.configs = w.configs.filter((c) => c !== 'postgres')
      cells.splice(0, cells.length, ...cells.filter((c) => c.config !== 'postgres'))
    }
  }
  if (!compileService(buildDir).ok) note('tsc reported type errors (the JavaScript it emitted is benchmarked all the same)')

  // bare Fastify sends the service's own list, read from a service on the same data.
  const needed = new Set(workloads.flatMap((w) => w.configs.map((c) => `${c === 'bare' ? 'sqlite' : templateKind(c)}-${w.size}`)))
  console.log(`Seeding ${[...needed].join(', ')} through the CLIs of each build`)
  // Each template on its own database: they are seeded side by side.
  await Promise.all([...needed].map(async (id) => {
    const [kind, size] = id.split('-') as ['sqlite' | 'postgres' | 'baseline' | 'baselinepg', string]
    if (kind === 'postgres' || kind === 'baselinepg') {
      const name = `${pgPrefix}_template_${kind}_${size}`
      pgDatabases.add(name)
      templates.set(id, { location: name, key: await seed(builds[kind], await pg.create(name), Number(size)) })
      await pg.analyze(name)
    } else {
      const file = join(scratch, `template-${id}.db`)
      templates.set(id, { location: file, key: await seed(builds[kind], `sqlite:${file}`, Number(size)) })
    }
  }))
  for (const size of new Set(workloads.filter((w) => w.configs.includes('bare')).map((w) => w.size))) {
    const fresh = await freshData('sqlite', size)
    running = await startServer(fresh.spec, serverCore, join(scratch, `payload-${size}.log`))
    const res = await fetch(`${running.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${fresh.key}` } })
    const body = await res.text()
    await running.stop()
    await fresh.dispose()
    if (res.status !== 200) throw new Error(`the service answered GET /v1/inventory with ${res.status}: ${body.slice(0, 200)}`)
    payloads.set(size, join(scratch, `payload-${size}.json`))
    writeFileSync(payloads.get(size)!, body)
  }

  // From here the runner's own work (starting servers, reading /proc) stays off the servers' core.
  if (pinned) execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
  const measurements = cells.length * rounds
  console.log(`${measurements} measurements (${cells.length} per round × ${rounds}) of ${durationSec} s after ${warmupSec} s of warm-up, ` +
    `each on a fresh server${pinned ? ' on core 0, wrk on core 1' : ''}: about ${Math.ceil(measurements * (durationSec + warmupSec + 2) / 60)} min`)
  for (let round = 1; round <= rounds; round++) {
    for (const w of workloads) {
      // Each round starts one configuration further on: no configuration always goes first.
      const shift = (round - 1) % w.configs.length
      for (const config of [...w.configs.slice(shift), ...w.configs.slice(0, shift)]) {
        const sample = w.webhooks === 'delivery' ? await measureDelivery(w, config, round) : await measure(w, config, round)
        cells.find((c) => c.workload === w.id && c.config === config)!.samples.push(sample)
        console.log(sampleLine(w.id, config, rounds, sample))
      }
      const service = probes.get(`${w.id} sqlite`)
      const floor = probes.get(`${w.id} floor`)
      if (round === 1 && service !== undefined && floor !== undefined) {
        const found = differences(service, floor)
        if (found.length > 0) throw new Error(`the floor does not answer ${w.id}'s first request as the service does (bench/servers/floor.ts):\n  ${found.join('\n  ')}`)
      }
    }
  }
} catch (error) {
  failed = true
  console.error(`npm run bench: ${(error as Error).message}`)
} finally {
  await cleanup()
}

// ---- Report ---------------------------------------------------------------------------------

const samples = cells.flatMap((c) => c.samples)
const errorCount = sum(samples.map((s) => s.errors))
if (errorCount > 0) note(`${errorCount} requests failed (status 400 or more, or socket errors): the figures of those measurements are not the workload's`)
if (samples.some((s) => s.answers === 0)) note('some measurements got no answer at all')
const lost = sum(samples.map((s) => s.delivery?.lost ?? 0))
if (lost > 0) note(`${lost} events never reached the receiver within 3 min of their change`)
const busiest = Math.max(0, ...samples.map((s) => s.otherCpu))
if (busiest > 0.2) note(`other processes kept up to ${busiest.toFixed(2)} cores busy during a measurement: compare figures only within this run`)

function sum (values: number[]): number {
  return values.reduce((a, b) => a + b, 0)
}

const reference = workloads.some((w) => w.configs.includes('baseline') || w.configs.includes('baseline-pg')) ? 'baseline' : 'sqlite'
// In an A/B each engine's build is compared with the baseline's on the same engine.
const referenceOf = (cell: Cell) => cell.workload === 'patch-hooked' ? { workload: 'patch', config: cell.config }
  : { workload: cell.workload, config: reference === 'sqlite' ? 'sqlite' : cell.config === 'postgres' || cell.config === 'baseline-pg' ? 'baseline-pg' : 'baseline' }
const measured = cells.filter((c) => c.samples.length > 0)
const summaries = summarize(measured.filter((c) => c.workload !== 'deliver-10k'), referenceOf)
const delivered = measured.filter((c) => c.workload === 'deliver-10k')
const table = markdownTable(summaries, titles, reference === 'baseline' ? 'baseline' : 'service') +
  (delivered.length === 0 ? '' : `\n\n${deliveryTable(delivered, titles, EVENTS)}`)
const minutes = ((Date.now() - startedAt.getTime()) / 60_000).toFixed(1)
const meta = {
  command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  date: startedAt.toISOString(),
  minutes: Number(minutes),
  cpu: cpuModel(),
  cores: coreCount(),
  node: process.version,
  pinned,
  rounds,
  durationSec,
  warmupSec,
  checkout: checkouts.this,
  ...(baselineDir === undefined ? {} : { baseline: { dir: baselineDir, checkout: checkouts.baseline } }),
  loadAverage: { before: loadBefore, after: loadavg() },
  notes
}
const report = `# Benchmark report

Written by \`${meta.command}\` on ${meta.date}; ${minutes} min.

- ${meta.cpu}, ${meta.cores} cores; ${pinned ? 'each server pinned to core 0 (`taskset -c 0`, `node --single-threaded-gc`), wrk to core 1' : 'nothing pinned'}; Node ${meta.node}
- ${rounds} round(s); each measurement a fresh server process on a fresh copy of its data, ${warmupSec} s of warm-up, then ${durationSec} s measured
- this checkout at ${meta.checkout}${baselineDir === undefined ? '' : `; baseline: ${baselineDir} at ${meta.baseline!.checkout} (its dist/)`}
- load average before / after: ${meta.loadAverage.before.map((n) => n.toFixed(2)).join(' ')} / ${meta.loadAverage.after.map((n) => n.toFixed(2)).join(' ')}

Medians over rounds; ratios are medians of per-round ratios to the ${reference === 'baseline' ? 'baseline build on the same engine' : 'service on SQLite'} of the same workload (with an endpoint subscribed: to PATCH without one, same engine).

${table}
${notes.length === 0 ? '' : `\n## Notes\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`}`
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, 'report.md'), report)
writeFileSync(join(outDir, 'report.json'), JSON.stringify({ meta, summaries, cells }, null, 2) + '\n')
console.log(`\n${table}\n\nwrote ${relative(process.cwd(), join(outDir, 'report.md'))} and report.json`)
process.exitCode = failed || errorCount > 0 || lost > 0 || samples.some((s) => s.answers === 0) ? 1 : 0
