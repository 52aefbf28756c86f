import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startServer } from '../../bench/lib/servers.js'
import { projectRoot } from '../../src/contract/paths.js'
import { run } from '../helpers/cli.js'
import { typescriptArgs } from '../helpers/node-args.js'

// bench/process-spread.ts and the runner's --fresh-processes (bench/README.md, "One process is one draw").
const spread = join(projectRoot, 'bench', 'process-spread.ts')
const runner = join(projectRoot, 'bench', 'run.ts')

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('process-spread measures each of several identical processes, round after round', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, spread, '--server', 'floor', '--processes', '2', '--rounds', '2', '--duration', '1', '--warmup', '1'], {}, 300_000)
  t.equal(result.code, 0, `exits 0 (stderr: ${result.stderr.slice(-500)})`)
  const rounds = [...result.stdout.matchAll(/^round +(\d+) +µs per answer: +([\d.]+) +([\d.]+)$/gm)]
  t.equal(rounds.length, 2, `one line per round, with a figure per process (output: ${result.stdout.slice(-600)})`)
  const rows = [...result.stdout.matchAll(/^\| (\d) \| ([\d.]+) \| ([\d.]+) \| (\d) of 2 \|$/gm)]
  t.same(rows.map((row) => row[1]), ['1', '2'], 'a row per process')
  for (const row of rows) {
    // A GET of the floor costs tens of microseconds of CPU; zero would mean nothing was measured.
    t.ok(Number(row[2]) > 1, `process ${row[1]}: CPU per answer measured (${row[2]} µs)`)
    t.ok(Number(row[3]) > 0, `process ${row[1]}: a ratio to the other (${row[3]})`)
  }
  const slowestToFastest = /^slowest ÷ fastest process \(medians\): ([\d.]+)$/m.exec(result.stdout)
  t.ok(slowestToFastest !== null && Number(slowestToFastest[1]) >= 1, 'the spread of the medians is reported')
})

t.test('process-spread: a usage error is one line on stderr and exit status 2', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, spread, '--processes', '1'], {})
  t.equal(result.code, 2)
  t.equal(result.stderr.trim(), 'bench/process-spread.ts: --processes must be a whole number from 2 up, not 1 (--help lists the options)')
})

t.test('the runner refuses --fresh-processes with --profile, in one line', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, runner, '--fresh-processes', '--profile'], {})
  t.equal(result.code, 2)
  t.equal(result.stderr.trim(), 'npm run bench: --fresh-processes takes no --profile: a profile covers one process, and the stage account reads one per configuration (--help lists the options)')
})

t.test('the runner with --fresh-processes restarts its servers between rounds and measures each round', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, runner, '--quick', '--fresh-processes', '--only', 'get-pet', '--configs', 'floor,sqlite', '--rounds', '2'], {}, 600_000)
  t.equal(result.code, 0, `exits 0 (stderr: ${result.stderr.slice(-500)})`)
  t.match(result.stdout, /round 2\/2: restarting 2 server\(s\)/, 'both servers restarted before round 2')
  t.match(result.stdout, /warm-up get-pet on sqlite \(round 2\)/, 'and warmed up again')
  const written = JSON.parse(readFileSync(join(projectRoot, 'bench', 'out', 'results.json'), 'utf8')) as {
    meta: { freshProcesses: boolean, rounds: number }
    cells: { config: string, samples: { round: number, requests: number, cpuPerRequest: number }[] }[]
  }
  t.equal(written.meta.freshProcesses, true, 'results.json records it')
  for (const config of ['floor', 'sqlite']) {
    const cell = written.cells.find((c) => c.config === config)
    t.same(cell?.samples.map((s) => s.round), [1, 2], `${config}: a sample from each round`)
    t.ok(cell?.samples.every((s) => s.requests > 0 && s.cpuPerRequest > 0), `${config}: every round answered requests and measured their CPU`)
  }
  const report = readFileSync(join(projectRoot, 'bench', 'out', 'results.md'), 'utf8')
  t.match(report, /every round on new server processes, each warmed up again \(--fresh-processes\)/, 'results.md says so')
  t.notMatch(report, /measured in one process for all its rounds/, 'and carries no warning about one process per configuration')
})

t.test('a run that keeps one process per configuration says what that does to its ratios', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, runner, '--quick', '--only', 'get-pet', '--configs', 'floor,sqlite'], {}, 600_000)
  t.equal(result.code, 0, `exits 0 (stderr: ${result.stderr.slice(-500)})`)
  const warning = 'every configuration was measured in one process for all its rounds: its ratios to the others can be off by up to about 15 % from the processes drawn alone (bench/README.md, "One process is one draw"); --fresh-processes with several rounds measures new processes each round'
  t.ok(result.stdout.includes(`note: ${warning}`), 'printed')
  t.ok(readFileSync(join(projectRoot, 'bench', 'out', 'results.md'), 'utf8').includes(`- ${warning}`), 'and in the notes of results.md')
})

t.test('a restarted server is a new process on the same options, and the old one is gone', async (t) => {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-restart-'))
  t.teardown(() => rmSync(logDir, { recursive: true, force: true }))
  const first = await startServer({ name: 'bare', entry: join(projectRoot, 'bench', 'servers', 'bare.ts'), env: {}, cwd: projectRoot, logDir, core: undefined })
  const second = await first.restart()
  t.teardown(() => second.stop())
  t.not(second.pid, first.pid, 'a new process')
  t.notOk(alive(first.pid), 'the first process has exited')
  t.equal(second.name, 'bare', 'under the same name')
  const res = await fetch(`${second.baseUrl}/`)
  t.same(await res.json(), { hello: 'world' }, 'the new process answers as the first did')
})
