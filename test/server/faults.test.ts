/**
 * Fatal faults and a lost terminal, with real processes and signals: a native fault ends the
 * process at once with a non-zero status, and a terminal that goes away neither makes it spin nor
 * keeps it from shutting down.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { typescriptArgs } from '../helpers/node-args.js'
import { startServer } from '../helpers/server-process.js'

/** Resolves with the exit code or signal, or with 'still running' if the process outlives the deadline. */
async function exitWithin (child: ChildProcess, ms: number): Promise<number | string | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<string>((resolve) => { timer = setTimeout(() => resolve('still running'), ms) })
  const exited = once(child, 'exit').then(([code, signal]) => (code as number | null) ?? (signal as string | null))
  try {
    return await Promise.race([exited, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** CPU time (user + system, in clock ticks) the process has used so far, from /proc. */
function cpuTicks (pid: number): number {
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/** Clock ticks the process uses while the test waits one second: about 0 when idle, tens when spinning. */
async function ticksOverOneSecond (pid: number): Promise<number> {
  const before = cpuTicks(pid)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  return cpuTicks(pid) - before
}

for (const signal of ['SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE'] as const) {
  t.test(`${signal} (a native fault) ends the process at once, killed by the signal`, async (t) => {
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'fault.db')}` })
    server.child.kill(signal)
    // A process that catches the signal in JavaScript never ends: it faults again on return.
    t.equal(await exitWithin(server.child, 10_000), signal, 'the signal\'s default action: a non-zero end a supervisor restarts')
  })
}

t.test('a closed standard output (the reader went away): requests are served, no spinning, SIGTERM exits 0', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'pipe.db')}` })
  server.child.stdout!.destroy()
  for (let i = 0; i < 5; i++) {
    // Each request logs two lines, which now fail with EPIPE.
    t.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200, `request ${i + 1} is answered`)
  }
  const ticks = await ticksOverOneSecond(server.child.pid!)
  t.ok(ticks < 20, `idle after the lost output: ${ticks} clock ticks of CPU in one second`)
  t.equal(await server.stop('SIGTERM'), 0, 'SIGTERM closes cleanly with exit code 0')
})

const python = spawnSync('python3', ['--version']).status === 0
const noPty = python ? false : 'python3 is missing: it gives the server a pseudo-terminal (pty.fork), so the hang-up case did not run'

t.test('a terminal hang-up (SIGHUP, then EIO on every write) drains and exits 0 without spinning', { skip: noPty }, async (t) => {
  const dir = tempDir(t)
  const helper = spawn('python3', [join(projectRoot, 'test', 'helpers', 'pty-hangup.py'), process.execPath, ...typescriptArgs, join(projectRoot, 'src', 'server.ts')], {
    cwd: projectRoot,
    // Outside production and on a terminal: the pretty-printed log, the case that used to spin.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'tty.db')}` },
    stdio: ['pipe', 'pipe', 'inherit']
  })
  t.teardown(() => { if (helper.exitCode === null) helper.kill('SIGKILL') })
  let pid: number | undefined
  let port: number | undefined
  let end: string | undefined
  let output = ''
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "ready" line within 30 s:\n${output}`)), 30_000)
    createInterface({ input: helper.stdout }).on('line', (raw) => {
      // eslint-disable-next-line no-control-regex
      const line = raw.replace(/\x1b\[[0-9;]*m/g, '')
      output += line + '\n'
      pid ??= Number(/^pid (\d+)$/.exec(line)?.[1]) || undefined
      end ??= /^(exit|signal) \d+$/.exec(line)?.[0]
      const docs = /Pet Store API ready\. Docs: http:\/\/127\.0\.0\.1:(\d+)\/docs/.exec(line)
      if (docs) { port = Number(docs[1]); clearTimeout(timer); resolve() }
    })
    helper.on('exit', () => { clearTimeout(timer); reject(new Error(`ended before it was ready:\n${output}`)) })
  })
  await ready
  t.teardown(() => { try { process.kill(pid!, 'SIGKILL') } catch { /* already gone */ } })
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'the server answers on its terminal')

  helper.stdin.write('hangup\n')
  t.equal(await exitWithin(helper, 15_000), 0, 'the helper saw the server end')
  t.equal(end, 'exit 0', 'the server drained and exited 0 (not killed by a fault, not spinning)')
})
