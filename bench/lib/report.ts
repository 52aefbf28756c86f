/** A run's figures: one sample per measurement, their medians, and ratios to a reference configuration. */

export interface Sample {
  round: number
  answers: number
  seconds: number
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  errors: number
  /** The server process's CPU time (user + system) per answer, µs. */
  cpuPerAnswer: number
  /** PostgreSQL's backends' CPU time per answer, µs (on PostgreSQL only). */
  dbPerAnswer?: number
  /** Share of its core the server used. */
  serverCpu: number
  /** Cores anything else on the machine used meanwhile. */
  otherCpu: number
}

export interface Cell {
  workload: string
  config: string
  samples: Sample[]
}

export interface Summary {
  workload: string
  config: string
  rounds: number
  rps: number
  p99: number
  cpuPerAnswer: number
  dbPerAnswer: number | undefined
  errors: number
  /** The most any one measurement saw. */
  otherCpu: number
  /** Medians of the per-round ratios to the reference configuration of the same workload. */
  cpuRatio: number | undefined
  rpsRatio: number | undefined
}

export function median (values: number[]): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Per round: this cell's figure over the reference's of the same round; then their median. */
function ratio (cell: Cell, reference: Cell | undefined, figure: (s: Sample) => number): number | undefined {
  if (reference === undefined || reference === cell) return undefined
  const ratios = cell.samples.flatMap((s) => {
    const r = reference.samples.find((x) => x.round === s.round)
    return r === undefined ? [] : [figure(s) / figure(r)]
  })
  return ratios.length === 0 ? undefined : median(ratios)
}

export function summarize (cells: Cell[], reference: string): Summary[] {
  return cells.map((cell) => {
    const ref = cells.find((c) => c.workload === cell.workload && c.config === reference)
    const db = cell.samples.flatMap((s) => s.dbPerAnswer === undefined ? [] : [s.dbPerAnswer])
    return {
      workload: cell.workload,
      config: cell.config,
      rounds: cell.samples.length,
      rps: median(cell.samples.map((s) => s.rps)),
      p99: median(cell.samples.map((s) => s.p99)),
      cpuPerAnswer: median(cell.samples.map((s) => s.cpuPerAnswer)),
      dbPerAnswer: db.length === 0 ? undefined : median(db),
      errors: cell.samples.reduce((n, s) => n + s.errors, 0),
      otherCpu: Math.max(0, ...cell.samples.map((s) => s.otherCpu)),
      cpuRatio: ratio(cell, ref, (s) => s.cpuPerAnswer),
      rpsRatio: ratio(cell, ref, (s) => s.rps)
    }
  })
}

const fixed = (n: number | undefined, digits: number) => n === undefined || Number.isNaN(n) ? '' : n.toFixed(digits)
const times = (n: number | undefined) => n === undefined ? '' : `${n.toFixed(2)} ×`

/** One table: a row per workload and configuration. */
export function markdownTable (summaries: Summary[], titles: Record<string, string>, referenceTitle: string): string {
  const rows = summaries.map((s) => `| ${titles[s.workload] ?? s.workload} | ${titles[s.config] ?? s.config} | ${fixed(s.rps, 0)} | ${fixed(s.p99, 1)} | ` +
    `${fixed(s.cpuPerAnswer, 1)} | ${times(s.cpuRatio)} | ${times(s.rpsRatio)} | ${fixed(s.dbPerAnswer, 1)} | ${s.errors} | ${s.otherCpu.toFixed(2)} |`)
  return [
    `| workload | configuration | req/s | p99 ms | CPU µs/answer | CPU ÷ ${referenceTitle} | req/s ÷ ${referenceTitle} | PG µs/answer | errors | other cores |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows
  ].join('\n')
}

/** The console's line for one measurement. */
export function sampleLine (workload: string, config: string, rounds: number, s: Sample): string {
  return `round ${s.round}/${rounds} ${workload.padEnd(16)} ${config.padEnd(8)} ${s.rps.toFixed(0).padStart(7)} req/s  p99 ${s.p99.toFixed(2).padStart(8)} ms  ` +
    `${s.cpuPerAnswer.toFixed(1).padStart(8)} µs/answer${s.dbPerAnswer === undefined ? '' : ` + PG ${s.dbPerAnswer.toFixed(1)}`}  server CPU ${(s.serverCpu * 100).toFixed(0)}%  errors ${s.errors}  other cores ${s.otherCpu.toFixed(2)}`
}
