/** Linux /proc readings for one process (CPU time, peak RSS) and the machine (busy cores). */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'

let ticksPerSecond = 100
try { ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100 } catch { /* keep 100 */ }

/** User + system CPU seconds of a process, or undefined when it has gone. */
export function cpuSeconds (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
  } catch {
    return undefined
  }
}

function statusField (pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}

export const rssBytes = (pid: number) => statusField(pid, 'VmRSS')
export const peakRssBytes = (pid: number) => statusField(pid, 'VmHWM')

/** Resets the kernel's peak-RSS mark (VmHWM) of a process; false when this kernel or sandbox refuses. */
export function resetPeakRss (pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/** Busy and total jiffies of the whole machine, to see what else ran during a measurement. */
export function machineJiffies (): { busy: number, total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!
  const v = line.trim().split(/\s+/).slice(1).map(Number)
  const idle = (v[3] ?? 0) + (v[4] ?? 0)
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

/**
 * Waits until the whole machine is quiet: fewer than `maxBusyCores` cores busy over a 500 ms
 * window (PostgreSQL's autovacuum after a write workload, say, would otherwise run during the next
 * measurement). Resolves with the busy cores last seen; gives up after `maxMs`.
 */
export async function waitMachineQuiet (maxBusyCores = 0.1, maxMs = 30_000): Promise<number> {
  const deadline = Date.now() + maxMs
  let busy = Infinity
  while (Date.now() < deadline) {
    const before = machineJiffies()
    await new Promise((resolve) => setTimeout(resolve, 500))
    const after = machineJiffies()
    busy = coreCount() * (after.busy - before.busy) / Math.max(1, after.total - before.total)
    if (busy < maxBusyCores) break
  }
  return busy
}

export const coreCount = () => cpus().length
export const cpuModel = (): string => {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (match) return match[1]!.trim()
  } catch { /* fall through */ }
  return cpus()[0]?.model ?? 'unknown'
}

/** Pins this process (all its threads) to one core; false when taskset is missing or refuses. */
export function pinSelf (core: number): boolean {
  try {
    execFileSync('taskset', ['-a', '-cp', String(core), String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

export function hasTaskset (): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
