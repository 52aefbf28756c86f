/** Linux /proc readings: one process's CPU time, the machine's busy cores, the CPU model. */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'

let ticksPerSecond = 100
try { ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100 } catch { /* keep 100 */ }

/** User + system CPU seconds of a process (utime + stime), or undefined when it has gone. */
export function cpuSeconds (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces: the fields counted here start after its closing ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** Busy and total jiffies of the whole machine, to see what else ran during a measurement. */
export function machineJiffies (): { busy: number, total: number } {
  const v = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total }
}

export const coreCount = () => cpus().length

export function cpuModel (): string {
  const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
  return match?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown'
}

/** Whether a program is on PATH (taskset, wrk). */
export function onPath (program: 'taskset' | 'wrk'): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
