/**
 * The A/B comparison of `--baseline DIR`: this checkout (A) against another build of the service
 * (B), measured round after round on copies of one dataset. Per round and workload: req/s and the
 * server's CPU time per request of each, and the ratios A/B; then their medians.
 */
import { execFileSync } from 'node:child_process'
import { median, type Cell, type Sample } from './report.js'

/** The commit a checkout is at, and whether it has uncommitted changes. */
export function describeCheckout (dir: string): string {
  try {
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== ''
    return dirty ? `${commit} + uncommitted changes` : commit
  } catch {
    return 'not a git checkout'
  }
}

export interface AbRound {
  round: number
  /** Which build was measured first in this round. */
  first: 'A' | 'B'
  a: Sample
  b: Sample
  rpsRatio: number
  cpuRatio: number
}

export interface AbWorkload {
  workload: string
  title: string
  connections: number
  rounds: AbRound[]
  median: { rpsA: number, rpsB: number, rpsRatio: number, cpuA: number, cpuB: number, cpuRatio: number }
  errors: { a: number, b: number }
}

export function compare (cells: Cell[], firstInRound: (round: number) => 'A' | 'B'): AbWorkload[] {
  const out: AbWorkload[] = []
  for (const a of cells.filter((c) => c.config === 'sqlite')) {
    const b = cells.find((c) => c.workload === a.workload && c.config === 'baseline')
    if (b === undefined) continue
    const rounds: AbRound[] = []
    for (const sa of a.samples) {
      const sb = b.samples.find((s) => s.round === sa.round)
      if (sb === undefined) continue
      rounds.push({ round: sa.round, first: firstInRound(sa.round), a: sa, b: sb, rpsRatio: sa.rps / sb.rps, cpuRatio: sa.cpuPerRequest / sb.cpuPerRequest })
    }
    const errors = (samples: Sample[]) => samples.reduce((n, s) => n + s.non2xx + s.socketErrors, 0)
    out.push({
      workload: a.workload,
      title: a.workloadTitle,
      connections: a.connections,
      rounds,
      median: {
        rpsA: median(rounds.map((r) => r.a.rps)),
        rpsB: median(rounds.map((r) => r.b.rps)),
        rpsRatio: median(rounds.map((r) => r.rpsRatio)),
        cpuA: median(rounds.map((r) => r.a.cpuPerRequest)),
        cpuB: median(rounds.map((r) => r.b.cpuPerRequest)),
        cpuRatio: median(rounds.map((r) => r.cpuRatio))
      },
      errors: { a: errors(a.samples), b: errors(b.samples) }
    })
  }
  return out
}

const rps = (n: number) => n.toFixed(0)
const us = (n: number) => n.toFixed(1)
const ratio = (n: number) => `${n.toFixed(3)} ×`

export function markdownComparison (results: AbWorkload[]): string {
  const header = '| round | order | A req/s | B req/s | A/B req/s | A µs/req | B µs/req | A/B µs/req | other CPU |\n|---|---|---:|---:|---:|---:|---:|---:|---:|'
  return results.map((w) => [
    `### ${w.title}, ${w.connections} connections`,
    '',
    header,
    ...w.rounds.map((r) => `| ${r.round} | ${r.first === 'A' ? 'A B' : 'B A'} | ${rps(r.a.rps)} | ${rps(r.b.rps)} | ${ratio(r.rpsRatio)} | ${us(r.a.cpuPerRequest)} | ${us(r.b.cpuPerRequest)} | ${ratio(r.cpuRatio)} | ${r.a.otherCpu.toFixed(2)} / ${r.b.otherCpu.toFixed(2)} |`),
    `| **median** | | ${rps(w.median.rpsA)} | ${rps(w.median.rpsB)} | **${ratio(w.median.rpsRatio)}** | ${us(w.median.cpuA)} | ${us(w.median.cpuB)} | **${ratio(w.median.cpuRatio)}** | |`,
    '',
    `Errors (non-2xx and socket errors, all rounds): A ${w.errors.a}, B ${w.errors.b}.`
  ].join('\n')).join('\n\n')
}

/** One line per workload, for the console. */
export function comparisonLines (results: AbWorkload[]): string[] {
  return results.map((w) => `${w.title.padEnd(16)} req/s A ${rps(w.median.rpsA).padStart(6)}  B ${rps(w.median.rpsB).padStart(6)}  A/B ${ratio(w.median.rpsRatio)}   ` +
    `CPU µs/req A ${us(w.median.cpuA).padStart(6)}  B ${us(w.median.cpuB).padStart(6)}  A/B ${ratio(w.median.cpuRatio)}` +
    `${w.errors.a + w.errors.b > 0 ? `   errors A ${w.errors.a}, B ${w.errors.b}` : ''}`)
}
