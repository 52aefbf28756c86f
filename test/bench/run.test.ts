import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { run } from '../helpers/cli.js'
import { typescriptArgs } from '../helpers/node-args.js'

// A smoke run of npm run bench: it starts its servers, measures and reports. Speed is not judged.
// One workload, on the service and the floor, in two rounds: what the rounds, the ratio and the
// report are made of. Every workload runs once in CI's own smoke run (`npm run bench -- --quick`).
const runner = join(projectRoot, 'bench', 'run.ts')

interface Report {
  cells: { workload: string, config: string, samples: { round: number, answers: number, rps: number, p99: number, cpuPerAnswer: number, errors: number }[] }[]
  summaries: { workload: string, config: string, cpuPerAnswer: number, cpuRatio?: number }[]
}

t.test('a short run measures the workload on each configuration once a round, and writes its report', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'bench-report-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const result = await run(process.execPath, [...typescriptArgs, runner, '--quick', '--rounds', '2', '--only', 'patch', '--configs', 'floor,sqlite', '--out', out], {}, 600_000)
  t.equal(result.code, 0, `exits 0 (stderr: ${result.stderr.slice(-800)})`)

  const lines = [...result.stdout.matchAll(/^round (\d)\/2 (\S+) +(\S+) +([\d.]+) req\/s +p99 +([\d.]+) ms +([\d.]+) µs\/answer/gm)]
  t.same(lines.map((l) => `${l[1]} ${l[2]} ${l[3]}`).sort(),
    ['1 patch floor', '1 patch sqlite', '2 patch floor', '2 patch sqlite'],
    'one line per round and configuration')
  t.ok(lines.every((l) => Number(l[4]) > 0 && Number(l[5]) > 0 && Number(l[6]) > 0), 'each with req/s, p99 and CPU per answer above zero')

  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as Report
  t.equal(report.cells.length, 2, 'report.json has the two configurations\' measurements')
  for (const cell of report.cells) {
    t.same(cell.samples.map((s) => s.round), [1, 2], `${cell.workload} on ${cell.config}: a sample from each round`)
    t.ok(cell.samples.every((s) => s.answers > 0 && s.rps > 0 && s.p99 > 0 && s.cpuPerAnswer > 0 && s.errors === 0),
      `${cell.workload} on ${cell.config}: answers, req/s, p99 and CPU per answer measured, no errors`)
  }
  const floor = report.summaries.find((s) => s.workload === 'patch' && s.config === 'floor')
  t.ok(floor?.cpuRatio !== undefined && floor.cpuRatio > 0, `the floor's CPU per answer as a ratio to the service's (${floor?.cpuRatio})`)
  const markdown = readFileSync(join(out, 'report.md'), 'utf8')
  t.match(markdown, /^\| PATCH inventory \| floor \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ × \|/m, 'report.md has the table, a row per workload and configuration')
})

t.test('a usage error is one line on stderr and exit status 2', async (t) => {
  for (const [args, message] of [
    [['--rounds', '0'], '--rounds must be a whole number from 1 up, not 0'],
    [['--only', 'list-1m'], 'unknown workload list-1m'],
    [['--configs', 'baseline'], 'the configuration baseline needs --baseline DIR'],
    [['--fresh-processes'], "Unknown option '--fresh-processes'"]
  ] as const) {
    const result = await run(process.execPath, [...typescriptArgs, runner, ...args], {})
    t.equal(result.code, 2, `${args.join(' ')}: exit status 2`)
    t.equal(result.stderr.trim().split('\n').length, 1, `${args.join(' ')}: one line`)
    t.ok(result.stderr.startsWith(`npm run bench: ${message}`), `${args.join(' ')}: says what is wrong (${result.stderr.trim()})`)
  }
})
