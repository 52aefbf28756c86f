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
  /** With an endpoint subscribed: the webhook requests its receiver got for this measurement's answers. */
  deliveries?: number
  /** The delivery workload: seconds until every change was answered, events the receiver never got, and got twice. */
  delivery?: { changesSeconds: number, lost: number, duplicates: number }
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

/** `reference` names the cell each cell's ratios are to: the same workload on another configuration, or another workload. */
export function summarize (cells: Cell[], reference: (cell: Cell) => { workload: string, config: string }): Summary[] {
  return cells.map((cell) => {
    const { workload, config } = reference(cell)
    const ref = cells.find((c) => c.workload === workload && c.config === config)
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

/** The delivery workload's table: a row per configuration, medians over rounds (the seconds' maximum too). */
export function deliveryTable (cells: Cell[], titles: Record<string, string>, events: number): string {
  const rows = cells.map((cell) => {
    const of = (figure: (s: Sample) => number) => median(cell.samples.map(figure))
    const total = (figure: (s: Sample) => number) => cell.samples.reduce((n, s) => n + figure(s), 0)
    return `| ${titles[cell.config] ?? cell.config} | ${cell.samples.length} | ${fixed(of((s) => s.delivery!.changesSeconds), 1)} | ${fixed(of((s) => s.seconds), 1)} | ` +
      `${fixed(Math.max(...cell.samples.map((s) => s.seconds)), 1)} | ${fixed(of((s) => s.rps), 0)} | ${fixed(of((s) => s.cpuPerAnswer), 1)} | ` +
      `${fixed(cell.samples[0]?.dbPerAnswer === undefined ? undefined : of((s) => s.dbPerAnswer!), 1)} | ${total((s) => s.delivery!.lost)} | ${total((s) => s.delivery!.duplicates)} | ` +
      `${total((s) => s.errors)} | ${Math.max(0, ...cell.samples.map((s) => s.otherCpu)).toFixed(2)} |`
  })
  return [
    `| ${events.toLocaleString('en')} events to one receiver | rounds | changes answered, s | last delivery, s | slowest round, s | events/s | CPU µs/event | PG µs/event | lost | twice | errors | other cores |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows
  ].join('\n')
}

/** The console's line for one measurement. */
export function sampleLine (workload: string, config: string, rounds: number, s: Sample): string {
  const head = `round ${s.round}/${rounds} ${workload.padEnd(16)} ${config.padEnd(8)}`
  const cpu = `${s.cpuPerAnswer.toFixed(1).padStart(8)} µs/${s.delivery === undefined ? 'answer' : 'event'}${s.dbPerAnswer === undefined ? '' : ` + PG ${s.dbPerAnswer.toFixed(1)}`}`
  const tail = `server CPU ${(s.serverCpu * 100).toFixed(0)}%  errors ${s.errors}  other cores ${s.otherCpu.toFixed(2)}`
  if (s.delivery !== undefined) {
    return `${head} changes answered in ${s.delivery.changesSeconds.toFixed(1)} s, last delivery after ${s.seconds.toFixed(1)} s (${s.rps.toFixed(0)} events/s), ` +
      `${s.delivery.lost} lost, ${s.delivery.duplicates} twice  ${cpu}  ${tail}`
  }
  return `${head} ${s.rps.toFixed(0).padStart(7)} req/s  p99 ${s.p99.toFixed(2).padStart(8)} ms  ${cpu}${s.deliveries === undefined ? '' : `  ${s.deliveries} deliveries`}  ${tail}`
}
