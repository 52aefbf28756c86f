/**
 * Summaries of the V8 CPU profiles `--profile` records (node --cpu-prof): self time by module or
 * package, the top functions by self time and by total (inclusive) time, from the first request
 * on; and the per-stage account of issue 23 (self time by stage, bench/lib/stages.ts) over the
 * time windows of given measurements.
 */
import { readFileSync } from 'node:fs'
import { type Frame, type Stage, STAGES, stageOf } from './stages.js'

interface CallFrame { functionName: string, url: string, lineNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number }

function where (frame: CallFrame): string {
  const url = frame.url
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)'
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm) return nm[1]!
  if (url.startsWith('node:')) return url
  // The project's own files, from the last src/, handlers/ or bench/ in the path (the checkout's
  // own directory may carry one of those names too).
  const path = url.replace('/bench/out/dist/', '/')
  const at = Math.max(...['/src/', '/handlers/', '/bench/'].map((dir) => path.lastIndexOf(dir)))
  return at >= 0 ? path.slice(at + 1) : url
}

const label = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${where(f)}:${f.lineNumber + 1}`

export function summarizeProfile (file: string, top: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

  // Start-up (module loading, schema compilation) is left out: counting starts at the first
  // sample taken while an HTTP request was being parsed.
  const servingRequest = (id: number) => {
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      if (byId.get(n)!.callFrame.functionName === 'parserOnHeadersComplete') return true
    }
    return false
  }
  const first = Math.max(0, profile.samples.findIndex(servingRequest))
  const selfTime = new Map<number, number>()
  profile.samples.forEach((id, i) => { if (i >= first) selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)) })
  const total = [...selfTime.values()].reduce((a, b) => a + b, 0)
  const idle = [...selfTime].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0)
  const busy = total - idle

  const bySelf = new Map<string, number>()
  const byModule = new Map<string, number>()
  const inclusive = new Map<string, number>()
  for (const [id, t] of selfTime) {
    const frame = byId.get(id)!.callFrame
    if (frame.functionName === '(idle)') continue
    bySelf.set(label(frame), (bySelf.get(label(frame)) ?? 0) + t)
    byModule.set(where(frame), (byModule.get(where(frame)) ?? 0) + t)
    // Charge the sample to every distinct function on its stack once.
    const seen = new Set<string>()
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const l = label(byId.get(n)!.callFrame)
      if (seen.has(l)) continue
      seen.add(l)
      inclusive.set(l, (inclusive.get(l) ?? 0) + t)
    }
  }
  const pct = (t: number) => `${(100 * t / Math.max(1, busy)).toFixed(1).padStart(5)}%`
  const list = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, t]) => `  ${pct(t)}  ${k}`).join('\n')

  return [
    `${file}\n  busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms sampled (percentages are of busy time)`,
    `\nSelf time by module:\n${list(byModule)}`,
    `\nTop functions by self time:\n${list(bySelf)}`,
    `\nTop functions by total time:\n${list(inclusive)}\n`
  ].join('\n')
}

/** Self time by stage of one process, over some measurements' time windows. */
export interface StageAccount {
  /** Microseconds sampled while the main thread was busy (not idle) in the windows. */
  busyUs: number
  /** Microseconds of each stage (they add up to busyUs). */
  byStage: Record<Stage, number>
}

/**
 * For each set of time windows (microseconds of the monotonic clock: V8 stamps its profiles with
 * the clock `process.hrtime` reads, on Linux CLOCK_MONOTONIC), the self time by stage of the
 * samples taken inside them. A sample counts for the interval that ends with it.
 */
export function stageAccounts (file: string, windowSets: readonly (readonly [number, number][])[]): StageAccount[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const stageById = new Map<number, Stage | 'idle'>()
  const stageOfNode = (id: number): Stage | 'idle' => {
    let stage = stageById.get(id)
    if (stage !== undefined) return stage
    if (byId.get(id)!.callFrame.functionName === '(idle)') {
      stage = 'idle'
    } else {
      const stack: Frame[] = []
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.push(byId.get(n)!.callFrame)
      stage = stageOf(stack)
    }
    stageById.set(id, stage)
    return stage
  }
  const accounts = windowSets.map((): StageAccount => ({ busyUs: 0, byStage: Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number> }))
  let t = profile.startTime
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    t += delta
    windowSets.forEach((windows, k) => {
      if (!windows.some(([from, to]) => t >= from && t <= to)) return
      const stage = stageOfNode(id)
      if (stage === 'idle') return
      accounts[k]!.busyUs += delta
      accounts[k]!.byStage[stage] += delta
    })
  })
  return accounts
}
