/** Starts each configuration as its own server process, pinned to one core, and stops it. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { projectRoot } from '../../src/contract/paths.js'
import { ONE_CORE_FLAG } from '../../src/startup.js'
import { freePort } from '../../test/helpers/ports.js'
import { cpuSeconds } from './proc.js'

export interface ServerHandle {
  name: string
  pid: number
  baseUrl: string
  logFile: string
  child: ChildProcess
  stop (): Promise<void>
  /**
   * Stops this process and starts a new one with the same options (on a new port, over the same
   * data): `--fresh-processes` gives every round processes of its own (bench/README.md, "One
   * process is one draw").
   */
  restart (): Promise<ServerHandle>
}

export interface StartOptions {
  name: string
  /** The entry point: a .ts file runs through tsx, a .js file as it is. */
  entry: string
  env: Record<string, string>
  cwd: string
  logDir: string
  /** Core to pin the process to (taskset -c); undefined: no pinning. */
  core: number | undefined
  /** Directory for --cpu-prof output, when profiling. */
  cpuProfileDir?: string | undefined
  /** Appends to the log file instead of replacing it (a restarted server keeps its predecessors' lines). */
  appendLog?: boolean
}

// The tests' helper: one definition of how a free loopback port is found.
export { freePort }

/**
 * V8 flags of a server pinned to one core: the setting docs/operations.md ("One core") gives for
 * a process confined to one core. V8's concurrent marking runs on helper threads, which on one
 * core take turns with the event loop: in stall-100k every major collection (about one a second,
 * from the Buffers of re-encoded list chunks) stretched the turns it overlapped from ~12 to 25-35
 * ms. With the collector on the main thread the longest /healthz wait fell from 31-38 to 14-28 ms
 * at the same CPU per answer (bench/README.md, "The stall check").
 */
export const ONE_CORE_NODE_FLAGS: readonly string[] = [ONE_CORE_FLAG]

/** How long a server may take to answer /healthz after it was started. */
const START_TIMEOUT_MS = 180_000

/**
 * Servers that may be starting at once. They share the one pinned core, and Fastify gives each
 * plugin 10 s to load: a --quick run starting its 30 servers together failed in CI with
 * "Plugin did not start in time". The rest wait their turn; the total time is the same.
 */
const MAX_STARTING = 3
let startingNow = 0
const waitingToStart: (() => void)[] = []

export async function startServer (options: StartOptions): Promise<ServerHandle> {
  while (startingNow >= MAX_STARTING) await new Promise<void>((resolve) => waitingToStart.push(resolve))
  startingNow++
  try {
    return await startOne(options)
  } finally {
    startingNow--
    waitingToStart.shift()?.()
  }
}

async function startOne (options: StartOptions): Promise<ServerHandle> {
  const port = await freePort()
  const nodeArgs = options.entry.endsWith('.ts') ? ['--import', 'tsx'] : []
  if (options.cpuProfileDir !== undefined) {
    mkdirSync(options.cpuProfileDir, { recursive: true })
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir)
  }
  if (options.core !== undefined) nodeArgs.unshift(...ONE_CORE_NODE_FLAGS)
  const logFile = join(options.logDir, `${options.name}.log`)
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env, PORT: String(port), HOST: '127.0.0.1' }
  // BENCH_LOOP_DELAY_DIR: each server also writes its longest event-loop delay and its collections
  // per 200 ms to DIR/<name>.jsonl (bench/lib/loop-delay.mjs), the server's own view of a stall.
  const loopDelayDir = process.env.BENCH_LOOP_DELAY_DIR
  if (loopDelayDir !== undefined && loopDelayDir !== '' && options.env.LOOP_DELAY_FILE === undefined) {
    mkdirSync(loopDelayDir, { recursive: true })
    env.LOOP_DELAY_FILE = join(loopDelayDir, `${options.name}.jsonl`)
    nodeArgs.unshift(`--import=${join(projectRoot, 'bench', 'lib', 'loop-delay.mjs')}`)
  }
  nodeArgs.push(options.entry)
  const log = openSync(logFile, options.appendLog === true ? 'a' : 'w')
  // taskset execs node, so the pid is the server's own.
  const child = options.core === undefined
    ? spawn(process.execPath, nodeArgs, { cwd: options.cwd, env, stdio: ['ignore', log, log] })
    : spawn('taskset', ['-c', String(options.core), process.execPath, ...nodeArgs], { cwd: options.cwd, env, stdio: ['ignore', log, log] })
  closeSync(log)
  const exited = once(child, 'exit')
  const baseUrl = `http://127.0.0.1:${port}`

  // Every server of a run starts at once, pinned to the one server core, while the later datasets
  // are still being filled: a --quick run with every configuration starts about 30 processes
  // there. 60 s was too short for that in CI (a healthy sqlite-100 was killed unanswered).
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${options.name} exited before it was ready; see ${logFile}`)
    try {
      const res = await fetch(`${baseUrl}/healthz`)
      if (res.ok) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${options.name} did not answer /healthz within ${START_TIMEOUT_MS / 1000} s; see ${logFile}`)
    }
    await sleep(100)
  }

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    await exited
    clearTimeout(killer)
  }
  return {
    name: options.name,
    pid: child.pid!,
    baseUrl,
    logFile,
    child,
    stop,
    restart: async () => {
      await stop()
      return await startServer({ ...options, appendLog: true })
    }
  }
}

/** Waits until a server has finished the work a run left queued (its CPU use falls off). */
export async function waitIdle (pid: number, maxMs = 30_000): Promise<void> {
  const deadline = Date.now() + maxMs
  let last = cpuSeconds(pid)
  while (Date.now() < deadline) {
    await sleep(200)
    const now = cpuSeconds(pid)
    if (now === undefined || last === undefined) return
    if (now - last < 0.02) return
    last = now
  }
}
