/** The server of one measurement: a process of its own, pinned to one core, stopped afterwards. */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { cpuSeconds } from './proc.js'

export interface ServerSpec {
  /** node's arguments after its own flags: `--import tsx` where needed, then the entry file. */
  args: string[]
  env: Record<string, string>
  cwd: string
}

export interface Server {
  pid: number
  baseUrl: string
  stop (): Promise<void>
}

/**
 * V8's collector on the main thread, as docs/operations.md ("One core") advises for a process
 * confined to one core: its marking threads would otherwise take turns with the event loop.
 */
const ONE_CORE_FLAGS = ['--single-threaded-gc']
const START_TIMEOUT_MS = 60_000

export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

const logTail = (file: string) => readFileSync(file, 'utf8').trim().split('\n').slice(-8).join('\n  ')

/** Starts a server with PORT and HOST set, pinned to `core`; resolves once it answers /healthz. */
export async function startServer (spec: ServerSpec, core: number | undefined, logFile: string): Promise<Server> {
  const port = await freePort()
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...spec.env, PORT: String(port), HOST: '127.0.0.1' }
  const nodeArgs = [...(core === undefined ? [] : ONE_CORE_FLAGS), ...spec.args]
  const log = openSync(logFile, 'w')
  // taskset execs node, so the child's pid is the server's own.
  const child = core === undefined
    ? spawn(process.execPath, nodeArgs, { cwd: spec.cwd, env, stdio: ['ignore', log, log] })
    : spawn('taskset', ['-c', String(core), process.execPath, ...nodeArgs], { cwd: spec.cwd, env, stdio: ['ignore', log, log] })
  closeSync(log)
  const exited = once(child, 'exit')
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${spec.args.at(-1)} exited before it answered:\n  ${logTail(logFile)}`)
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${spec.args.at(-1)} did not answer /healthz within ${START_TIMEOUT_MS / 1000} s:\n  ${logTail(logFile)}`)
    }
    await sleep(50)
  }
  return {
    pid: child.pid!,
    baseUrl,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(killer)
    }
  }
}

/** Waits (5 s at most) until a server has finished the work the warm-up left queued. */
export async function waitIdle (pid: number): Promise<void> {
  const deadline = Date.now() + 5000
  let last = cpuSeconds(pid)
  while (Date.now() < deadline) {
    await sleep(200)
    const now = cpuSeconds(pid)
    if (now === undefined || last === undefined || now - last < 0.02) return
    last = now
  }
}
