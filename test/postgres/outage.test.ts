import { connect, createServer, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { buildTestApp, type Teardown, type TestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { logCapture } from '../helpers/log-capture.js'
import { createTestSchema, POSTGRES } from '../helpers/postgres.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders } from '../../src/repositories/orders.js'
import type { PostgresStore } from '../../src/store/postgres/index.js'
import { keepAliveTimers, startTcpProxy } from '../helpers/tcp-proxy.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

/**
 * PostgreSQL outages, simulated in front of the real server (which is never stopped): requests
 * that need the database answer 503 service_unavailable in bounded time, /readyz 503, /healthz 200,
 * and the same instance recovers by itself. Durations are printed as comments, never asserted.
 */

interface Item { petId: number, quantity: number, status: string }

async function enterpriseHeaders (api: TestApp) {
  return { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 1000000, perDay: 10000000 })}` }
}

async function timed<T> (work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const result = await work()
  return [result, Math.round(performance.now() - start)]
}

/** Polls /readyz until it answers 200; resolves with the time that took. */
async function timeToReady (api: TestApp, limitMs = 30_000): Promise<number> {
  const start = performance.now()
  while (performance.now() - start < limitMs) {
    const res = await api.request({ method: 'GET', url: '/readyz' })
    if (res.statusCode === 200) return Math.round(performance.now() - start)
    await sleep(10)
  }
  throw new Error(`not ready ${limitMs} ms after the database came back`)
}

async function assertUnavailable (t: Test, api: TestApp, headers: Record<string, string>, label: string) {
  const checks = [
    { method: 'PATCH', url: '/v1/inventory/1', payload: { quantity: 33 } },
    { method: 'GET', url: '/v1/inventory' },
    { method: 'GET', url: '/v1/pets/1' }
  ]
  for (const check of checks) {
    const [res, ms] = await timed(() => api.request({ ...check, headers }))
    t.equal(res.statusCode, 503, `${label}: ${check.method} ${check.url} answers 503`)
    t.same(res.json(), { code: 'service_unavailable', message: 'storage is unavailable, retry later', status: 503 })
    t.comment(`${label}: ${check.method} ${check.url} answered 503 in ${ms} ms`)
  }
  const ready = await api.request({ method: 'GET', url: '/readyz' })
  t.equal(ready.statusCode, 503, `${label}: /readyz answers 503`)
  t.equal(ready.json().code, 'service_unavailable')
  t.equal((await api.request({ method: 'GET', url: '/healthz' })).statusCode, 200, `${label}: /healthz stays 200`)
  const unauthenticated = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: 'Bearer psk_unknown' } })
  t.equal(unauthenticated.statusCode, 503, `${label}: a key that cannot be looked up is 503, not 401`)
}

t.test('PostgreSQL unreachable (connections refused): 503 at once, then the same instance recovers', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startTcpProxy(t, POSTGRES.port, POSTGRES.host)
  const api = await buildTestApp(t, { env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '4', DATABASE_TIMEOUT_MS: '1000' } })
  const headers = await enterpriseHeaders(api)
  const patch = (petId: number, quantity: number) => api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: { quantity } })
  t.equal((await patch(1, 11)).statusCode, 200)
  t.equal((await patch(2, 22)).statusCode, 200)

  proxy.cut()
  await assertUnavailable(t, api, headers, 'refused')

  proxy.restore()
  const recoveryMs = await timeToReady(api)
  t.comment(`recovery: /readyz answered 200 ${recoveryMs} ms after the database came back`)
  const list = (await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as Item[]
  t.same(list.slice(0, 2).map((i) => i.quantity), [11, 22], 'the writes acknowledged before the outage are there; the refused one is not')
  t.same((await patch(1, 44)).json(), { petId: 1, quantity: 44, status: 'available' }, 'writes work again')
})

t.test('an outage is logged once when storage goes down and once when it is back, and each failure counted: no stack per 503', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startTcpProxy(t, POSTGRES.port, POSTGRES.host)
  const capture = logCapture()
  const api = await buildTestApp(t, {
    database: 'postgres',
    env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '4', DATABASE_TIMEOUT_MS: '1000', METRICS_PORT: '0' },
    logger: { level: 'info', stream: capture.stream }
  })
  const headers = await enterpriseHeaders(api)
  const failures = async () => {
    const metric = await api.app.metrics!.registry.getSingleMetric('dependency_failures_total')?.get()
    return metric?.values.find((value) => value.labels.dependency === 'storage')?.value ?? 0
  }
  t.equal((await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity: 5 } })).statusCode, 200)

  proxy.cut()
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api.request({ method: 'PATCH', url: `/v1/inventory/${1 + (i % 5)}`, headers, payload: { quantity: i } })))
  t.ok(answers.every((res) => res.statusCode === 503), '20 writes during the outage: 503')
  t.equal(await failures(), 20, 'dependency_failures_total{dependency="storage"} counts each')
  proxy.restore()
  const back = (line: Record<string, unknown>) => /^storage available again/.test(String(line.msg))
  for (let waited = 0; waited < 5000 && !capture.lines.some(back); waited += 50) await sleep(50)

  const about = capture.lines.filter((line) => /storage/.test(String(line.msg)))
  t.same(about.map((line) => String(line.msg).split(':')[0]), ['storage unavailable', 'storage available again'], 'one line down, one line back up')
  t.equal(about[0]!.level, 50, 'down is an error')
  t.equal(capture.texts.filter((text) => text.includes('"stack"')).length, 0, 'no stack logged for the 503s')
  t.ok(capture.lines.filter((line) => line.msg === 'request completed' && (line.res as { statusCode?: number } | undefined)?.statusCode === 503).length === 20, 'each 503 still has its request line')
})

t.test('writes streaming through an outage: every acknowledged write is kept', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startTcpProxy(t, POSTGRES.port, POSTGRES.host)
  const api = await buildTestApp(t, { env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '4', DATABASE_TIMEOUT_MS: '1000' } })
  const headers = await enterpriseHeaders(api)

  const pets = [1, 2, 4, 6]
  const acked = new Map<number, number>()
  const attempted = new Map<number, number>()
  const statuses = new Map<number, number>()
  let running = true
  const workers = pets.map(async (petId) => {
    for (let quantity = 1; running; quantity++) {
      attempted.set(petId, quantity)
      const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: { quantity } })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode === 200) acked.set(petId, quantity)
      else await sleep(5)
    }
  })
  await sleep(300)
  proxy.cut()
  await sleep(500)
  proxy.restore()
  await sleep(400)
  running = false
  await Promise.all(workers)

  // While the key cannot be looked up the request is not counted, so an outage never turns into 429s.
  t.ok([...statuses.keys()].every((status) => status === 200 || status === 503), 'every answer was 200 or 503')
  t.ok(statuses.get(503)! > 0 && statuses.get(200)! > 0, 'the outage was felt, and writes went through before and after it')
  t.comment(`answers: ${JSON.stringify(Object.fromEntries(statuses))}`)
  const final = new Map((await inventoryRepository(api.store, EVENT_SCOPES).list()).map((i) => [i.petId, i.quantity]))
  for (const petId of pets) {
    const value = final.get(petId)!
    t.ok(value >= acked.get(petId)! && value <= attempted.get(petId)!,
      `pet ${petId}: stored ${value}, last acknowledged ${acked.get(petId)}, last attempted ${attempted.get(petId)}`)
  }
})

/**
 * A TCP proxy that can go silent, as in a network partition: freeze() stops every byte on open
 * connections and leaves new connections hanging; thaw() resets what lived through it.
 */
async function startFreezableProxy (t: Teardown, targetPort: number) {
  let frozen = false
  const links = new Set<[Socket, Socket]>()
  const held = new Set<Socket>()
  const server = createServer((client) => {
    client.on('error', () => {})
    if (frozen) {
      held.add(client)
      client.on('close', () => held.delete(client))
      return
    }
    const upstream = connect(targetPort, POSTGRES.host)
    const link: [Socket, Socket] = [client, upstream]
    links.add(link)
    const drop = () => { client.destroy(); upstream.destroy(); links.delete(link) }
    client.on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const resetAll = () => {
    for (const [client, upstream] of links) { client.destroy(); upstream.destroy() }
    for (const socket of held) socket.destroy()
  }
  t.teardown(() => new Promise<void>((resolve) => { resetAll(); server.close(() => resolve()) }))
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => {
      frozen = true
      for (const [client, upstream] of links) { client.unpipe(upstream); upstream.unpipe(client); client.pause(); upstream.pause() }
    },
    thaw: () => { frozen = false; resetAll() }
  }
}

t.test('PostgreSQL silent (partition): queries and connections time out into 503, then recovery', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startFreezableProxy(t, POSTGRES.port)
  const api = await buildTestApp(t, { env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '2', DATABASE_TIMEOUT_MS: '500' } })
  const headers = await enterpriseHeaders(api)
  t.equal((await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity: 12 } })).statusCode, 200)

  proxy.freeze()
  await assertUnavailable(t, api, headers, 'silent')

  proxy.thaw()
  const recoveryMs = await timeToReady(api)
  t.comment(`recovery after a partition: /readyz answered 200 ${recoveryMs} ms after it ended`)
  const list = (await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as Item[]
  t.equal(list[0]!.quantity, 12, 'the acknowledged write is there')
})

t.test('PostgreSQL black-holed (gone without a reset): the pool and the listening connection notice, and recover within 10 s of its return', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startTcpProxy(t, POSTGRES.port, POSTGRES.host)
  const api = await buildTestApp(t, { database: 'postgres', env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '4', DATABASE_TIMEOUT_MS: '1000' } })
  const store = api.store as PostgresStore
  const headers = await enterpriseHeaders(api)
  const patch = (quantity: number) => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity } })
  // Every connection of the pool in use once, so that all of them are black-holed.
  const first = await Promise.all([11, 12, 13, 14].map(patch))
  t.same(first.map((res) => res.statusCode), [200, 200, 200, 200])
  await store.syncChanges()
  t.ok(store.listening, 'listening for changes before the outage')
  const timers = keepAliveTimers(proxy.port)
  t.ok(timers !== undefined && timers.length > 0 && timers.every((s) => s <= 10), `TCP keep-alive probes within 10 s of silence (${timers?.join(', ')} s)`,
    { skip: timers === undefined && 'ss (iproute2) is missing: the keep-alive timers cannot be read' })

  proxy.blackhole()
  const lost = performance.now()
  const [during, ms] = await timed(() => patch(20))
  t.equal(during.statusCode, 503, 'a write during the outage: 503')
  t.comment(`a PATCH answered 503 ${ms} ms into the outage`)
  while (store.listening && performance.now() - lost < 10_000) await sleep(50)
  t.notOk(store.listening, 'the listening connection noticed the silence (nothing is cached meanwhile)')
  t.comment(`the listening connection noticed the silence after ${Math.round(performance.now() - lost)} ms`)

  proxy.restore()
  const back = performance.now()
  const [firstAfter, firstMs] = await timed(() => patch(30))
  t.equal(firstAfter.statusCode, 200, 'the first write after the return is served: no connection from before the outage is used again')
  t.comment(`the first PATCH after the return answered ${firstAfter.statusCode} in ${firstMs} ms`)
  let ready = await api.request({ method: 'GET', url: '/readyz' })
  while (ready.statusCode !== 200 && performance.now() - back < 10_000) {
    await sleep(50)
    ready = await api.request({ method: 'GET', url: '/readyz' })
  }
  t.equal(ready.statusCode, 200, '/readyz is ready again within 10 s of the return')
  t.comment(`/readyz ready ${Math.round(performance.now() - back)} ms after PostgreSQL returned`)
  while (!store.listening && performance.now() - back < 10_000) await sleep(50)
  t.ok(store.listening, 'listening again within 10 s of the return')
  t.comment(`listening again ${Math.round(performance.now() - back)} ms after PostgreSQL returned`)
  const list = (await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as Item[]
  t.equal(list[0]!.quantity, 30, 'the write after the return is there')
})

t.test('a placeOrder answered 503 after its commit reached the server: the retry with its Idempotency-Key gets the order, placed once', async (t) => {
  const schema = await createTestSchema(t)
  const proxy = await startTcpProxy(t, POSTGRES.port, POSTGRES.host)
  const api = await buildTestApp(t, { database: 'postgres', env: { DATABASE_URL: schema.url(proxy.port), DATABASE_POOL_MAX: '4', DATABASE_TIMEOUT_MS: '500' } })
  const headers = { ...await enterpriseHeaders(api), 'idempotency-key': 'order-answer-lost' }
  const place = () => api.request({ method: 'POST', url: '/v1/store/orders', headers, payload: { petId: 1, quantity: 1 } })
  const orders = async () => (await allOrders(api.store)).length
  const before = await orders()

  proxy.silenceAnswersAfter('COMMIT')
  const lost = await place()
  expectError(t, lost, 503, 'service_unavailable', 'the answer to the COMMIT never came')
  proxy.restore()
  t.equal(await orders(), before + 1, 'yet the order was placed: a 503 is not "not done"')

  const retry = await place()
  t.equal(retry.statusCode, 201, 'the retry with the same Idempotency-Key gets the 201')
  t.equal(retry.headers['idempotent-replayed'], 'true')
  t.equal(await orders(), before + 1, 'and places nothing more')
})

t.test('a statement kept waiting (a lock held elsewhere) is cancelled at DATABASE_TIMEOUT_MS: 503', async (t) => {
  const schema = await createTestSchema(t)
  const api = await buildTestApp(t, { env: { DATABASE_URL: schema.url(), DATABASE_POOL_MAX: '2', DATABASE_TIMEOUT_MS: '300' } })
  const headers = await enterpriseHeaders(api)
  const locker = new pg.Client({ ...POSTGRES, options: `-c search_path=${schema.schema}` })
  await locker.connect()
  t.teardown(() => locker.end())
  await locker.query('BEGIN')
  await locker.query('SELECT * FROM inventory WHERE pet_id = 1 FOR UPDATE')

  const [res, ms] = await timed(() => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity: 5 } }))
  t.equal(res.statusCode, 503, 'the PATCH waiting on the lock is cancelled')
  t.equal(res.json().code, 'service_unavailable')
  t.comment(`a PATCH blocked by a row lock answered 503 after ${ms} ms (DATABASE_TIMEOUT_MS=300)`)
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, 'reads are not blocked by the row lock')

  await locker.query('ROLLBACK')
  const after = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity: 5 } })
  t.same(after.json(), { petId: 1, quantity: 5, status: 'available' }, 'the write goes through once the lock is gone')
})
