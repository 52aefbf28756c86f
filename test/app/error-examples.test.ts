import { once } from 'node:events'
import { connect } from 'node:net'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Response as InjectResponse } from 'light-my-request'
import t, { type Test } from 'tap'
import { loadDocument } from '../../src/contract/document.js'
import { errorStatus } from '../../src/contract/errors.js'
import { notImplemented } from '../../src/contract/not-implemented.js'
import { statement, type Arg } from '../../src/store/query.js'
import { lockRow, run } from '../../src/store/work.js'
import { buildTestApp } from '../helpers/app.js'
import { holdInventoryRow, untilBlockedBy } from '../helpers/orders.js'
import { isStub, operations } from '../helpers/surface.js'
import type { Provocation } from './error-examples/provocation.js'

const restockBy = statement('test.restockBy', (db, arg: Arg<{ petId: number, units: number }>) => db
  .updateTable('inventory').set((eb) => ({ quantity: eb('quantity', '+', arg('units')) })).where('pet_id', '=', arg('petId')))
const insertPet = statement('test.insertPet', (db, arg: Arg<{ id: number }>) => db
  .insertInto('pets').values({ id: arg('id'), name: 'a second pet 1', photo_urls: '[]' }))
const insertOrder = statement('test.insertOrder', (db, arg: Arg<{ petId: number }>) => db
  .insertInto('orders').values({ pet_id: arg('petId'), quantity: 1, ship_date: '2026-05-04T12:00:30Z', status: 'placed', complete: false }))

const provocationsDir = join(dirname(fileURLToPath(import.meta.url)), 'error-examples')

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Every example of an Error body in openapi.yaml: the responses of components and operations. */
function errorExamples (spec: Json): { where: string, code: string, message: string }[] {
  const follow = (node: unknown): unknown => {
    let at = node
    while (isObject(at) && typeof at.$ref === 'string') {
      at = at.$ref.slice(2).split('/').reduce<unknown>((n, key) => (n as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec)
    }
    return at
  }
  const found: { where: string, code: string, message: string }[] = []
  const fromResponse = (response: unknown, where: string) => {
    if (!isObject(response) || typeof response.$ref === 'string') return
    const media = (response.content as Json | undefined)?.['application/json'] as Json | undefined
    if ((media?.schema as Json | undefined)?.$ref !== '#/components/schemas/Error') return
    const values = [['example', media!.example], ...Object.entries((media!.examples ?? {}) as Json).map(([name, e]) => [`examples.${name}`, (follow(e) as Json).value])] as [string, unknown][]
    for (const [name, value] of values) {
      if (isObject(value)) found.push({ where: `${where} ${name}`, code: String(value.code), message: String(value.message) })
    }
  }
  const components = spec.components as Json
  for (const [name, response] of Object.entries(components.responses as Json)) fromResponse(response, `components/responses/${name}`)
  for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries(((op as Json).responses ?? {}) as Json)) fromResponse(response, `${method.toUpperCase()} ${path} ${status}`)
    }
  }
  return found
}

/**
 * Provokes every error the service can send, the way a client meets it, and keeps the bodies.
 * The clock (`now`) and PUBLIC_BASE_URL are fixed, so the messages that hold a time (seconds to
 * wait, the end of a ban, the sunset) or the docs address come out the same on every run:
 * nothing is normalised before they are compared.
 */
async function provokeErrors (t: Test): Promise<{ how: string, body: { code: string, message: string, status: number } }[]> {
  const sent: { how: string, body: { code: string, message: string, status: number } }[] = []
  const keep = (how: string, res: InjectResponse) => {
    t.ok(res.statusCode >= 400, `${how}: answered ${res.statusCode}`)
    sent.push({ how, body: res.json() })
  }
  const clock = Date.parse('2026-05-04T12:00:30Z')
  const env = { PUBLIC_BASE_URL: 'https://api.petstore.example.com', BODY_LIMIT: '100' }

  const api = await buildTestApp(t, { env, now: () => clock })
  const auth = await api.authHeader()
  const json = { ...auth, 'content-type': 'application/json' }
  keep('a body with a string for an integer', await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: { quantity: '5' } }))
  keep('no Authorization header', await api.request({ method: 'GET', url: '/v1/pets/1' }))
  keep('Basic instead of Bearer', await api.request({ method: 'GET', url: '/v1/pets/1', headers: { authorization: 'Basic dXNlcjpwYXNz' } }))
  keep('an unknown key', await api.request({ method: 'GET', url: '/v1/pets/1', headers: { authorization: `Bearer psk_${'A'.repeat(43)}` } }))
  keep('DELETE on a GET-only path', await api.request({ method: 'DELETE', url: '/v1/inventory', headers: auth }))
  keep('a body over BODY_LIMIT', await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: `{"quantity":1}${' '.repeat(100)}` }))
  keep('a text/plain body', await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...auth, 'content-type': 'text/plain' }, payload: '{"quantity":1}' }))
  const readOnly = { authorization: `Bearer ${await api.createKey('free', undefined, ['inventory:read', 'orders:read'])}` }
  keep('placeOrder with a key without orders:write', await api.request({ method: 'POST', url: '/v1/store/orders', headers: { ...readOnly, 'content-type': 'application/json' }, payload: { petId: 1, quantity: 1 } }))
  const writeOnly = { authorization: `Bearer ${await api.createKey('free', undefined, ['inventory:write'])}` }
  keep('getPetById with a key without inventory:read', await api.request({ method: 'GET', url: '/v1/pets/1', headers: writeOnly }))

  // Handlers replaced on an app of their own, so that the provocations below meet the real ones.
  // placeOrder's stands for a write whose statement breaks one of the database's rules (its pet,
  // from the body, chooses which): no handler of today's can, each checks first.
  const replaced = await buildTestApp(t, {
    env,
    handlers: {
      listOrders: notImplemented('listOrders'),
      listInventory: async () => { throw new Error('a bug') },
      placeOrder: async (request) => {
        const { petId } = request.body as { petId: number }
        if (petId === 1) await request.server.inventoryRepository.update(1, 2147483647)
        return await request.server.store.write(function * () {
          yield * lockRow('inventory', petId)
          if (petId === 1) yield * run(restockBy, { petId, units: 1 })
          else if (petId === 2) yield * run(insertPet, { id: 1 })
          else yield * run(insertOrder, { petId })
          throw new Error('unreachable: the statement above breaks a constraint')
        })
      }
    },
    logger: false
  })
  const replacedAuth = await replaced.authHeader()
  keep('a handler throwing an Error', await replaced.request({ method: 'GET', url: '/v1/inventory', headers: replacedAuth }))
  keep('a generated stub', await replaced.request({ method: 'GET', url: '/v1/store/orders', headers: replacedAuth }))
  const breaking = { ...replacedAuth, 'content-type': 'application/json' }
  keep('a write past a stored number\'s bound', await replaced.request({ method: 'POST', url: '/v1/store/orders', headers: breaking, payload: { petId: 1, quantity: 1 } }))
  keep('a write of a taken unique value', await replaced.request({ method: 'POST', url: '/v1/store/orders', headers: breaking, payload: { petId: 2, quantity: 1 } }))
  keep('a write naming a pet that does not exist', await replaced.request({ method: 'POST', url: '/v1/store/orders', headers: breaking, payload: { petId: 9999, quantity: 1 } }))

  const modules = readdirSync(provocationsDir).filter((file) => file.endsWith('.ts') && file !== 'provocation.ts').sort()
  t.ok(modules.length > 0, `provocations of the handlers' own errors: ${modules.join(', ')}`)
  for (const file of modules) {
    const { provoke } = await import(pathToFileURL(join(provocationsDir, file)).href) as { provoke: Provocation }
    for (const [how, res] of await provoke(api)) keep(`${how} (${file})`, res)
  }

  // A Free key: 60 requests a minute, then rate_limited, and banned after 10 more past the limit.
  const free = await api.authHeader('free')
  const sendUntil = async (stop: (res: InjectResponse) => boolean) => {
    for (let i = 0; i < 100; i++) {
      const res = await api.request({ method: 'GET', url: '/v1/pets/1', headers: free })
      if (stop(res)) return res
    }
    throw new Error('100 requests and still no change')
  }
  keep('the 61st request of a minute on the Free plan', await sendUntil((res) => res.statusCode !== 200))
  keep('going on past the limit', await sendUntil((res) => res.json().code !== 'rate_limited'))

  const retired = await buildTestApp(t, { env, now: () => Date.parse('2027-07-01T00:00:00Z') })
  keep('a deprecated operation after its sunset', await retired.request({ method: 'GET', url: '/v1/pets/1', headers: await retired.authHeader() }))

  const down = await buildTestApp(t, { env })
  const downAuth = await down.authHeader()
  await down.store.close()
  keep('the storage closed', await down.request({ method: 'GET', url: '/v1/inventory', headers: downAuth }))

  // Node's HTTP server answers a late request before Fastify sees it: only a real connection meets it.
  const slow = await buildTestApp(t, { env: { ...env, REQUEST_TIMEOUT_MS: '100' } })
  await slow.app.listen({ host: '127.0.0.1', port: 0 })
  const socket = connect((slow.app.server.address() as { port: number }).port, '127.0.0.1')
  socket.write('GET /v1/inventory HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  let raw = ''
  socket.on('data', (chunk: Buffer) => { raw += chunk.toString() })
  await once(socket, 'close')
  t.match(raw, /^HTTP\/1\.1 408 /, 'headers that never end: answered 408')
  sent.push({ how: 'headers that never end', body: JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { code: string, message: string, status: number } })
  // A request still in progress needs its transaction left open while the repeat arrives: on
  // PostgreSQL the first placeOrder waits for a row another connection holds. (SQLite runs each
  // transaction to its end before it looks at the next request: nothing is ever in progress.)
  const postgres = await buildTestApp(t, { env, now: () => clock, database: 'postgres' })
  const slowOrder = { ...await postgres.authHeader('pro'), 'content-type': 'application/json', 'idempotency-key': 'slow-order-1' }
  const held = await holdInventoryRow(t, postgres.config.databaseUrl, 8)
  const first = postgres.request({ method: 'POST', url: '/v1/store/orders', headers: slowOrder, payload: { petId: 8, quantity: 1 } })
  await untilBlockedBy(held.pid!)
  keep('the same Idempotency-Key while the first request waits for a row (PostgreSQL)', await postgres.request({ method: 'POST', url: '/v1/store/orders', headers: slowOrder, payload: { petId: 8, quantity: 1 } }))
  await held.release()
  t.equal((await first).statusCode, 201, 'the first request then completes')
  return sent
}

t.test('every error code has an example in openapi.yaml whose message is the one the service sends', async (t) => {
  const examples = errorExamples((await loadDocument()).spec)
  const sent = await provokeErrors(t)

  // A code that only operations still answering 501 (generated stubs) can send is not sent yet:
  // its checks are todo, named in the output, until a handler is written and a provocation added.
  const waiting = (code: string): { todo: string } | object => {
    const by = operations.filter((op) => Object.values(op.definition.responses as Record<string, Json>).some((response) =>
      JSON.stringify(response.content ?? {}).includes(`"code":"${code}"`)))
    return by.length > 0 && by.every((op) => isStub(op.operationId)) ? { todo: `${code}: only stubs answer it yet (${by.map((op) => op.operationId).join(', ')})` } : {}
  }
  for (const code of Object.keys(errorStatus)) {
    t.ok(examples.some((e) => e.code === code), `openapi.yaml has an example of ${code}`)
    t.ok(sent.some((s) => s.body.code === code), `the test provokes ${code} (an operation's own error: in a module of test/app/error-examples/ exporting provoke)`, waiting(code))
  }
  for (const example of examples) {
    const real = sent.filter((s) => s.body.code === example.code)
    t.ok(real.some((s) => s.body.message === example.message),
      `${example.where}: "${example.message}" is sent as it is (a new example: provoke it in a module of test/app/error-examples/ exporting provoke)`,
      { sent: real.map((s) => `${s.how}: ${s.body.message}`), ...waiting(example.code) })
    for (const s of real) t.equal(s.body.status, errorStatus[example.code as keyof typeof errorStatus], `${s.how}: status of ${example.code}`)
  }
})
