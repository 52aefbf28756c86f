import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { projectRoot } from '../../src/contract/paths.js'
import type { Teardown } from './app.js'
import { typescriptArgs } from './node-args.js'

export interface ServerProcess {
  child: ChildProcess
  baseUrl: string
  port: number
  /** The demo key printed at first start, when one was. */
  demoKey: string | undefined
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[]
  /** Sends a signal and waits for the exit; resolves with the exit code (or signal). */
  stop (signal?: NodeJS.Signals): Promise<number | string | null>
  /** Waits for the exit without sending anything (after a signal sent with child.kill). */
  exited (): Promise<number | string | null>
}

export interface StartHow {
  /** Flags on node's command line, before the entry (V8 flags that NODE_OPTIONS refuses). */
  nodeFlags?: readonly string[]
  /** The one core the process may use (taskset -c). */
  core?: number
}

/**
 * Starts src/server.ts as a real process (its TypeScript run as the tests run, node-args.ts) on a free port and waits until it listens.
 * `how` may add flags to node's command line or pin the process to one core.
 * The process is killed in teardown if the test has not stopped it.
 */
export async function startServer (t: Teardown, env: Record<string, string>, timeoutMs = 30_000, entry = join(projectRoot, 'src', 'server.ts'), how: StartHow = {}): Promise<ServerProcess> {
  // `entry` may be the compiled dist/src/server.js, which is what `npm start` runs.
  const args = [...(how.nodeFlags ?? []), ...(entry.endsWith('.ts') ? [...typescriptArgs, entry] : [entry])]
  // taskset execs node, so the child's pid is the server's own.
  const [command, commandArgs] = how.core === undefined ? [process.execPath, args] : ['taskset', ['-c', String(how.core), process.execPath, ...args]]
  const child = spawn(command, commandArgs, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const logs: Record<string, unknown>[] = []
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = once(child, 'exit')
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })

  const ready = new Promise<{ port: number, demoKey: string | undefined }>((resolve, reject) => {
    let port: number | undefined
    const timer = setTimeout(() => reject(new Error(`server did not start within ${timeoutMs} ms\n${stderr}`)), timeoutMs)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>
      try { entry = JSON.parse(line) as Record<string, unknown> } catch { return }
      logs.push(entry)
      const address = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(String(entry.msg))
      if (address) port = Number(address[1])
      if (port !== undefined && String(entry.msg).startsWith('Pet Store API ready')) {
        clearTimeout(timer)
        resolve({ port, demoKey: entry.demoApiKey as string | undefined })
      }
    })
    void exited.then(([code]) => { clearTimeout(timer); reject(new Error(`server exited with ${String(code)} before it was ready\n${stderr}`)) })
  })
  const { port, demoKey } = await ready
  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    demoKey,
    logs,
    exited: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode
      const [code, sig] = await exited as [number | null, NodeJS.Signals | null]
      return code ?? sig
    },
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode
      child.kill(signal)
      const [code, sig] = await exited as [number | null, NodeJS.Signals | null]
      return code ?? sig
    }
  }
}
