import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { handlers } from '../../handlers/index.js'
import { isNotImplemented, notImplemented } from '../../src/contract/not-implemented.js'
import { projectRoot } from '../../src/contract/paths.js'
import { isStub, operations } from '../helpers/surface.js'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

t.test('a stub made by notImplemented answers 501 not_implemented naming its operation', async (t) => {
  const api = await buildTestApp(t, { handlers: { listOrders: notImplemented('listOrders') } })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  const body = expectError(t, res, 501, 'not_implemented')
  t.match(body.message, /\blistOrders\b/, 'the message names the operation')
  t.ok(res.headers['x-ratelimit-remaining'], 'counted and answered like any /v1 request')
})

t.test('isNotImplemented tells the stubs from written handlers', async (t) => {
  t.equal(isNotImplemented(notImplemented('listOrders')), true, 'a stub')
  // A written handler is not one; a generated stub (npm run generate's file, while the operation waits) is.
  for (const [id, handler] of Object.entries(handlers)) {
    const generated = readFileSync(join(projectRoot, 'handlers', `${id}.ts`), 'utf8').includes(`export const ${id} = notImplemented('${id}')`)
    t.equal(isNotImplemented(handler), generated, `${id} is ${generated ? 'the generated stub' : 'implemented'}`)
  }
  t.equal(isNotImplemented(async () => { throw new Error('not implemented') }), false, 'a function that merely throws is not a stub')
  t.equal(isNotImplemented(undefined), false, 'nor is a missing handler')
})

t.test('at start, one warning names every operation that is still a stub', async (t) => {
  const lines: { level: number, msg: string, operations?: string[] }[] = []
  const stream = { write: (line: string) => { lines.push(JSON.parse(line)) } }
  await buildTestApp(t, {
    handlers: { listOrders: notImplemented('listOrders'), getPetById: notImplemented('getPetById') },
    logger: { level: 'warn', stream }
  })
  const warnings = lines.filter((line) => line.level === 40 && /not implemented yet/.test(line.msg))
  t.equal(warnings.length, 1, 'one warning')
  // With the stubs handlers/ may hold itself while an operation waits for its handler.
  const named = operations.filter((op) => ['getPetById', 'listOrders'].includes(op.operationId) || isStub(op.operationId)).map((op) => op.operationId)
  t.same(warnings[0]?.operations, named, 'naming both stubs, in the document\'s order')
  t.match(warnings[0]?.msg, named.join(', '))

  lines.length = 0
  await buildTestApp(t, { logger: { level: 'warn', stream } })
  const stubs = operations.filter((op) => isStub(op.operationId)).map((op) => op.operationId)
  const warned = lines.filter((line) => /not implemented yet/.test(line.msg))
  if (stubs.length === 0) t.same(warned, [], 'no warning when every operation is implemented')
  else t.same(warned.map((line) => line.operations), [stubs], 'with the handlers of handlers/: one warning naming their stubs')
})
