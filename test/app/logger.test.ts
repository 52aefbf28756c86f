/**
 * Logs: JSON lines, pretty-printed (pino-pretty) only for a terminal outside production.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { loggerOptions } from '../../src/logger.js'
import { tempDir } from '../helpers/app.js'
import { typescriptArgs } from '../helpers/node-args.js'

t.test('the decision: pino-pretty for a terminal outside production, JSON lines otherwise', async (t) => {
  for (const [nodeEnv, tty, pretty] of [
    ['development', true, true],
    ['test', true, true],
    ['staging', true, true],
    ['production', true, false],
    ['development', false, false],
    ['production', false, false]
  ] as const) {
    const options = loggerOptions({ logLevel: 'debug', nodeEnv }, tty)
    t.equal(options.level, 'debug', `${nodeEnv}, ${tty ? 'a terminal' : 'not a terminal'}: the level is kept`)
    // The pretty-printer is the logger's stream; JSON lines go to pino's own standard output.
    if (!pretty) t.equal(options.stream, undefined, `${nodeEnv}, ${tty ? 'a terminal' : 'not a terminal'}: JSON lines`)
    else t.type(options.stream?.write, 'function', `${nodeEnv}, a terminal: pretty-printed`)
  }
  t.equal(loggerOptions({ logLevel: 'info', nodeEnv: 'development' }, false).stream, undefined,
    'the default reads process.stdout, which is not a terminal under tap')
})

const SCRIPT = '/usr/bin/script'
const noScript = existsSync(SCRIPT) ? false : `${SCRIPT} (util-linux) is missing: the terminal check did not run`

t.test('the server in a terminal (script gives it a pseudo-terminal) prints readable lines', { skip: noScript }, async (t) => {
  // exec: the server is script's own child, which script ends when it is sent SIGTERM.
  const command = ['exec', process.execPath, ...typescriptArgs, join(projectRoot, 'src', 'server.ts')].map((word, i) => i === 0 ? word : JSON.stringify(word)).join(' ')
  const child = spawn(SCRIPT, ['-q', '-f', '-e', '-c', command, '/dev/null'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', DATABASE_URL: `sqlite:${join(tempDir(t), 'tty.db')}` },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  // Not SIGKILL: script would die without ending the server, which runs in a session of its own.
  const exited = once(child, 'exit')
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    await exited
  })
  let output = ''
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "ready" line within 30 s:\n${output}`)), 30_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('Pet Store API ready')) { clearTimeout(timer); resolve() }
    })
    child.on('exit', () => { clearTimeout(timer); reject(new Error(`exited before it was ready:\n${output}`)) })
  })
  await ready
  // eslint-disable-next-line no-control-regex
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '')
  const line = plain.split(/\r?\n/).find((l) => l.includes('Pet Store API ready'))!
  t.match(line, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: Pet Store API ready/, 'time, level and message, not a JSON object')
  t.notMatch(plain, /^\{"level"/m, 'no JSON line')
  t.not(output, plain, 'coloured')
})
