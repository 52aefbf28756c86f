/**
 * npx tsx bench/per-request.ts [--requests N] [--baseline DIR]: the promises a request creates
 * and the bytes it allocates on V8's heap, in the service and in the floor (issue 23), and in
 * another build with --baseline. Counted, not timed: the figures are the same on a busy machine
 * as on a quiet one, so a change of a microsecond's worth of work shows even where a timed A/B
 * cannot separate it from the machine's drift (bench/README.md, "Promises and bytes per request").
 *
 * Each server is a process of its own (the service compiled into bench/out/per-request-dist/ as
 * bench/run.ts builds it, the floor through tsx, the baseline from DIR's dist/), on its own copy of the
 * 100-entry dataset, with bench/lib/per-request-probe.mjs preloaded. Requests go one at a time
 * over one keep-alive connection, as an enterprise key whose limits never bind: N to warm up, N
 * with the bytes measured, N with the promises counted (the counting hook allocates itself).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { Agent, request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { projectRoot } from '../src/contract/paths.js'
import { compileService } from './lib/build.js'
import { commandLine } from './lib/command-line.js'
import { seedDatabase } from './lib/datasets.js'
import { freePort } from './lib/servers.js'

const { usageError, parse, wholeNumber } = commandLine('bench/per-request.ts',
  'npx tsx bench/per-request.ts [--requests N] [--baseline DIR]   (N requests per measurement, default 2000; DIR: a checkout with its dist/ built)')
const { values: args } = parse({ options: { requests: { type: 'string' }, baseline: { type: 'string' }, help: { type: 'boolean', default: false } } })
const requests = wholeNumber('requests', args.requests, 2000, 100)
const baselineDir = args.baseline === undefined ? undefined : resolve(args.baseline)
if (baselineDir !== undefined && !existsSync(join(baselineDir, 'dist', 'src', 'server.js'))) usageError(`${baselineDir} has no dist/src/server.js: run npm run build there`)

const benchDir = import.meta.dirname
const probe = join(benchDir, 'lib', 'per-request-probe.mjs')
// A build of its own, so that a run of bench/run.ts (bench/out/dist/) is left alone.
const build = compileService(join(benchDir, 'out', 'per-request-dist'))
if (!build.ok) process.exit(1)

interface Measured { allocatedBytes: number, promises: number, collections: number }
interface Server { name: string, port: number, child: ChildProcess, ask (message: object): Promise<Measured> }

const scratch = mkdtempSync(join(tmpdir(), 'per-request-'))
const seeded = join(scratch, 'seeded.db')
const key = await seedDatabase(`sqlite:${seeded}`, 100)

async function start (name: string, nodeArgs: string[], env: Record<string, string>, cwd: string): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', probe, ...nodeArgs], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const ask = async (message: object) => {
    const answer = once(child, 'message')
    child.send(message)
    return (await answer)[0] as Measured
  }
  return { name, port, child, ask }
}

const copyOf = (name: string) => {
  const file = join(scratch, `${name}.db`)
  copyFileSync(seeded, file)
  return file
}
const serviceEnv = (file: string) => ({ DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'warn', NODE_ENV: 'production', SEED: 'false' })
const servers: Server[] = []
servers.push(await start('service', [build.entry], serviceEnv(copyOf('service')), projectRoot))
if (baselineDir !== undefined) servers.push(await start('baseline', [join(baselineDir, 'dist', 'src', 'server.js')], serviceEnv(copyOf('baseline')), baselineDir))
servers.push(await start('floor', ['--import', 'tsx', join(benchDir, 'servers', 'floor.ts')], { DATABASE_FILE: copyOf('floor'), NODE_ENV: 'production' }, projectRoot))

const agent = new Agent({ keepAlive: true, maxSockets: 1 })
function send (port: number, method: string, path: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` }
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** The requests of bench/run.ts's workloads of the same names. */
const workloads: { id: string, request: (i: number) => [string, string, string?] }[] = [
  { id: 'list-100', request: () => ['GET', '/v1/inventory'] },
  { id: 'get-pet', request: (i) => ['GET', `/v1/pets/${(i % 100) + 1}`] },
  { id: 'patch', request: (i) => ['PATCH', `/v1/inventory/${(i % 100) + 1}`, JSON.stringify({ quantity: (i * 7) % 1000 })] }
]

try {
  for (const server of servers) {
    const deadline = Date.now() + 60_000
    for (;;) {
      try {
        if (await send(server.port, 'GET', '/healthz') === 200) break
      } catch { /* not listening yet */ }
      if (Date.now() > deadline || server.child.exitCode !== null) throw new Error(`${server.name} did not start`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  console.log(`${requests} requests per measurement, one at a time, after ${requests} to warm up\n`)
  console.log('| workload | server | bytes allocated per request | promises per request |')
  console.log('|---|---|---:|---:|')
  for (const workload of workloads) {
    for (const server of servers) {
      let i = 0
      const run = async () => {
        for (let n = 0; n < requests; n++) {
          const [method, path, body] = workload.request(i++)
          const status = await send(server.port, method, path, body)
          if (status !== 200) throw new Error(`${server.name}: ${method} ${path} answered ${status}`)
        }
      }
      await run()
      await server.ask({ command: 'start' })
      await run()
      const bytes = await server.ask({ command: 'stop' })
      await server.ask({ command: 'start', promises: true })
      await run()
      const counted = await server.ask({ command: 'stop' })
      console.log(`| ${workload.id} | ${server.name} | ${Math.round(bytes.allocatedBytes / requests).toLocaleString('en')} | ${(counted.promises / requests).toFixed(1)} |`)
    }
  }
} finally {
  agent.destroy()
  for (const server of servers) server.child.kill('SIGTERM')
  await Promise.all(servers.map((server) => server.child.exitCode === null ? once(server.child, 'exit') : undefined))
  rmSync(scratch, { recursive: true, force: true })
}
