/**
 * npx tsx bench/process-spread.ts [--server service|floor] [--processes N] [--rounds R]
 * [--duration S] [--warmup S] [--workload list-100|get-pet]: how far apart identical processes
 * are. N processes of one build, each on its own copy of the same 100-entry dataset, all pinned to
 * core 0 with the flags bench/run.ts gives its servers, are measured in turn (the order rotated
 * each round) with the load generator on core 1. Each process's CPU per answer is the median of its
 * rounds, and its ratio to the others is the median of per-round ratios, as bench/run.ts computes
 * them. When those ratios stay on one side of 1 round after round, the difference belongs to the
 * process, not to the machine's drift, and a run that starts one process per configuration
 * compares two such draws (bench/README.md, "One process is one draw").
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compileService } from './lib/build.js'
import { projectRoot } from '../src/contract/paths.js'
import { commandLine } from './lib/command-line.js'
import { seedDatabase } from './lib/datasets.js'
import { defaultGenerator, runLoad } from './lib/load.js'
import { coreCount, cpuSeconds, hasTaskset, pinSelf } from './lib/proc.js'
import { median } from './lib/report.js'
import { type ServerHandle, startServer, waitIdle } from './lib/servers.js'

const { usageError, parse, wholeNumber } = commandLine('bench/process-spread.ts',
  'npx tsx bench/process-spread.ts [--server service|floor] [--processes N] [--rounds R] [--duration S] [--warmup S] [--workload list-100|get-pet]')
const { values: args } = parse({
  options: {
    server: { type: 'string' },
    processes: { type: 'string' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    workload: { type: 'string' },
    help: { type: 'boolean', default: false }
  }
})
const serverKind = args.server ?? 'service'
if (serverKind !== 'service' && serverKind !== 'floor') usageError('--server must be service or floor')
const workload = args.workload ?? 'list-100'
if (workload !== 'list-100' && workload !== 'get-pet') usageError('--workload must be list-100 or get-pet')
const processes = wholeNumber('processes', args.processes, 4, 2)
const rounds = wholeNumber('rounds', args.rounds, 8, 1)
const durationSec = wholeNumber('duration', args.duration, 2, 1)
const warmupSec = wholeNumber('warmup', args.warmup, 2, 1)

const twoCores = coreCount() >= 2 && hasTaskset()
if (twoCores) pinSelf(1)
const benchDir = import.meta.dirname
const scratch = mkdtempSync(join(tmpdir(), 'process-spread-'))
const logDir = join(benchDir, 'out', 'logs')

let entry = join(benchDir, 'servers', 'floor.ts')
if (serverKind === 'service') {
  // Compiled, as bench/run.ts runs it; a build of its own leaves bench/out/dist/ to the runner.
  const build = compileService(join(benchDir, 'out', 'spread-dist'))
  if (!build.ok) process.exit(1)
  entry = build.entry
}

const seeded = join(scratch, 'seeded.db')
const key = await seedDatabase(`sqlite:${seeded}`, 100)
const servers: ServerHandle[] = []

try {
  for (let i = 1; i <= processes; i++) {
    const file = join(scratch, `copy-${i}.db`)
    copyFileSync(seeded, file)
    const env = serverKind === 'service'
      ? { DATABASE_URL: `sqlite:${file}`, SEED: 'false', LOG_LEVEL: 'warn', NODE_ENV: 'production' }
      : { DATABASE_FILE: file, NODE_ENV: 'production' }
    servers.push(await startServer({ name: `spread-${serverKind}-${i}`, entry, env, cwd: projectRoot, logDir, core: twoCores ? 0 : undefined }))
  }
  const generator = defaultGenerator()
  const path = workload === 'list-100' ? '/v1/inventory' : '/v1/pets/42'
  const measure = async (server: ServerHandle, seconds: number) => {
    await waitIdle(server.pid)
    const before = cpuSeconds(server.pid) ?? 0
    const result = await runLoad(generator, {
      baseUrl: server.baseUrl,
      requests: [{ method: 'GET', path }],
      headers: { authorization: `Bearer ${key}` },
      connections: 50,
      durationSec: seconds,
      timeoutSec: 30,
      core: twoCores ? 1 : undefined,
      scratchDir: scratch
    })
    if (result.non2xx + result.socketErrors > 0) throw new Error(`${server.name}: ${result.non2xx} non-2xx answers, ${result.socketErrors} socket errors`)
    return ((cpuSeconds(server.pid) ?? 0) - before) * 1e6 / result.requests
  }

  console.log(`${processes} ${serverKind} processes, ${workload} (GET ${path}), ${rounds} rounds of ${durationSec} s after ${warmupSec} s of warm-up, ${generator}${twoCores ? ', servers on core 0, generator on core 1' : ', no pinning'}`)
  for (const server of servers) await measure(server, warmupSec)
  const samples: number[][] = servers.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const line: string[] = []
    for (let j = 0; j < processes; j++) {
      const i = (j + round) % processes
      samples[i]!.push(await measure(servers[i]!, durationSec))
    }
    for (let i = 0; i < processes; i++) line.push(samples[i]!.at(-1)!.toFixed(1).padStart(6))
    console.log(`round ${String(round + 1).padStart(2)}  µs per answer: ${line.join(' ')}`)
  }

  // Each process against the others: the median over rounds of its cost ÷ the others' median in that round.
  console.log('\n| process | µs per answer (median of rounds) | ÷ the others, median of rounds | rounds below 1 |')
  console.log('|---|---:|---:|---:|')
  const medians = samples.map(median)
  samples.forEach((own, i) => {
    const ratios = own.map((value, round) => value / median(samples.filter((_, k) => k !== i).map((other) => other[round]!)))
    console.log(`| ${i + 1} | ${medians[i]!.toFixed(1)} | ${median(ratios).toFixed(3)} | ${ratios.filter((r) => r < 1).length} of ${rounds} |`)
  })
  console.log(`\nslowest ÷ fastest process (medians): ${(Math.max(...medians) / Math.min(...medians)).toFixed(3)}`)
} finally {
  await Promise.all(servers.map((server) => server.stop()))
  rmSync(scratch, { recursive: true, force: true })
}
