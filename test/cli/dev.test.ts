import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { freePort } from '../helpers/ports.js'
import { copyProject } from '../helpers/project-copy.js'
import { isStub, operations } from '../helpers/surface.js'

// npm run dev on a copy of the project: an operation added to openapi.yaml is generated and
// served as a 501 stub by the restarted server, and one report lists the stub and the type check.
// Slow: the type check runs once over the copy (20 to 35 s on a busy 2-core machine).
t.setTimeout(300_000)

const copy = copyProject(t, ['openapi.yaml', 'package.json', 'tsconfig.json', 'src', 'handlers', 'scripts'])

/** The lines of the dev process's output, and a wait for the first one (from `from` on) that matches. */
function watchOutput (input: NodeJS.ReadableStream) {
  const lines: string[] = []
  const waiters: { from: number, test: (line: string) => boolean, resolve: (line: string) => void }[] = []
  createInterface({ input }).on('line', (line) => {
    lines.push(line)
    for (const waiter of [...waiters]) {
      if (waiter.test(line)) { waiters.splice(waiters.indexOf(waiter), 1); waiter.resolve(line) }
    }
  })
  const waitFor = (test: (line: string) => boolean, from = 0) => {
    const seen = lines.slice(from).find(test)
    return seen !== undefined ? Promise.resolve(seen) : new Promise<string>((resolve) => waiters.push({ from, test, resolve }))
  }
  return { lines, waitFor }
}

t.test('npm run dev: an operation added to openapi.yaml answers 501 over HTTP after the automatic generate and restart', async (t) => {
  const port = await freePort()
  const child = spawn('npm', ['run', '-s', 'dev'], {
    cwd: copy,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${join(copy, 'dev.db')}` },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true
  })
  const exited = once(child, 'exit')
  // The whole group: npm, the dev script, the server and tsc.
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* the group has ended */ } })
  const out = watchOutput(child.stdout)
  const ready = (from: number) => out.waitFor((line) => line.includes('Pet Store API ready'), from)

  const demoKey = (JSON.parse(await ready(0)) as { demoApiKey?: string }).demoApiKey
  t.type(demoKey, 'string', 'the first start prints the demo key')
  const get = () => fetch(`http://127.0.0.1:${port}/v1/zz-fixture/widgets`, { headers: { authorization: `Bearer ${demoKey}` } })
  t.equal((await get()).status, 404, 'before the edit the path is unknown')

  const from = out.lines.length
  const spec = parseYaml(readFileSync(join(copy, 'openapi.yaml'), 'utf8')) as { paths: Record<string, unknown> }
  spec.paths['/zz-fixture/widgets'] = {
    get: {
      operationId: 'fixtureListWidgets',
      summary: 'List widgets',
      responses: { 200: { description: 'Every widget', content: { 'application/json': { schema: { type: 'array', items: { type: 'integer' } } } } } }
    }
  }
  writeFileSync(join(copy, 'openapi.yaml'), toYaml(spec))

  await out.waitFor((line) => line.startsWith('dev: openapi.yaml changed: generated'), from)
  await ready(from)
  const res = await get()
  t.equal(res.status, 501, 'the new operation is live, answering 501')
  t.same(await res.json(), { code: 'not_implemented', message: 'operation fixtureListWidgets is not implemented yet', status: 501 }, 'the Error body of a stub')

  const report = out.lines.slice(from).join('\n')
  t.match(report, '  created handlers/fixtureListWidgets.ts (a stub answering 501 not_implemented)', 'the report names the new stub')
  const stubs = [...operations.filter((op) => isStub(op.operationId)).map((op) => op.operationId), 'fixtureListWidgets'].sort()
  t.match(report, `\n  not implemented yet (the handler is the generated stub, answering 501): ${stubs.join(', ')}\n`, 'and lists the stubs (the repository\'s own too, if any)')

  // A type error in a handler is reported, and the server restarts with the edit. (The edit
  // cancels the type check of the stub still running: one compiler run, not two. That stubs
  // compile, test/spec-evolution.test.ts shows.)
  const before = out.lines.length
  writeFileSync(join(copy, 'handlers', 'fixtureListWidgets.ts'), `import type { OperationHandler } from '../src/contract/operation-types.js'

export const fixtureListWidgets: OperationHandler<'fixtureListWidgets'> = async () => ['not a number']
`)
  await ready(before)
  const errors = await out.waitFor((line) => /^dev: (no )?type errors.*after a change of handlers\/fixtureListWidgets\.ts$/.test(line), before)
  t.match(errors, /^dev: type errors \(npm run typecheck\), [1-9]/, 'the type error is reported, with the change that brought it')
  t.match(out.lines.slice(before).join('\n'), /handlers\/fixtureListWidgets\.ts\(\d+,\d+\): error TS/, 'naming the file')

  // Ctrl-C in a terminal signals the whole group; npm itself then ends by the signal.
  process.kill(-child.pid!, 'SIGINT')
  await exited
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'Ctrl-C stops the server with it')
})
