import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { runCli } from '../helpers/cli.js'
import { createTestSchema } from '../helpers/postgres.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'
import { keyInDatabase } from '../helpers/keys.js'
import { REDIS_SKIP, REDIS_URL, redisAvailable, redisPrefix } from '../rate-limit/helpers.js'

interface Item { petId: number, quantity: number, status: string }

const redisUp = await redisAvailable()

const call = (server: ServerProcess, key: string, path: string, init: RequestInit = {}) =>
  fetch(`${server.baseUrl}/v1${path}`, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } })

const patch = (server: ServerProcess, key: string, petId: number, quantity: number) =>
  call(server, key, `/inventory/${petId}`, { method: 'PATCH', body: JSON.stringify({ quantity }) })

const inventory = async (server: ServerProcess, key: string) => await (await call(server, key, '/inventory')).json() as Item[]

/**
 * Each instance caches and learns of the other's writes by a notification from PostgreSQL, so a
 * write elsewhere is read once it has arrived: polls `read` until `check` holds, for at most 5 s,
 * and returns the last value read.
 */
async function eventually<T> (read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000
  let value = await read()
  while (!check(value) && Date.now() < deadline) {
    await sleep(10)
    value = await read()
  }
  return value
}

t.test('two server processes on one PostgreSQL schema (and one Redis), one of them restarted', async (t) => {
  const schema = await createTestSchema(t)
  const databaseUrl = schema.url()
  const env: Record<string, string> = { DATABASE_URL: databaseUrl, DATABASE_POOL_MAX: '4' }
  if (redisUp) Object.assign(env, { REDIS_URL, REDIS_KEY_PREFIX: redisPrefix(t) })
  const a = await startServer(t, env)
  const b = await startServer(t, env)
  // docs/operations.md: never a demo key on PostgreSQL, even on a fresh database outside production.
  t.equal(a.demoKey, undefined, 'no demo key on PostgreSQL (first instance)')
  t.equal(b.demoKey, undefined, 'no demo key on PostgreSQL (second instance)')

  // Room to spare for the storage part: the rate limits are tested on their own below.
  const { secret: key } = await keyInDatabase(databaseUrl, 'multi-instance', 'enterprise', { perMinute: 100000, perDay: 1000000 })

  await t.test('shared inventory: a write on one instance is read on the other (once notified) and on itself at once', async (t) => {
    await Promise.all([inventory(a, key), inventory(b, key)])
    t.equal((await patch(a, key, 2, 42)).status, 200)
    t.equal((await inventory(a, key)).find((i) => i.petId === 2)?.quantity, 42, 'the writer at once')
    const onB = await eventually(() => inventory(b, key), (list) => list.find((i) => i.petId === 2)?.quantity === 42)
    t.same(onB.find((i) => i.petId === 2), { petId: 2, quantity: 42, status: 'available' }, 'the other instance')
    t.equal((await patch(b, key, 2, 43)).status, 200)
    const onA = await eventually(() => inventory(a, key), (list) => list.find((i) => i.petId === 2)?.quantity === 43)
    t.equal(onA.find((i) => i.petId === 2)?.quantity, 43)
  })

  await t.test('200 concurrent PATCHes of one pet across both processes', async (t) => {
    const values = Array.from({ length: 200 }, (_, i) => 1000 + i)
    const statuses = await Promise.all(values.map(async (quantity, i) => (await patch(i % 2 === 0 ? a : b, key, 4, quantity)).status))
    t.equal(statuses.filter((s) => s === 200).length, 200, 'all succeeded')
    const both = () => Promise.all([inventory(a, key), inventory(b, key)]).then((lists) => lists.map((list) => list.find((i) => i.petId === 4)!))
    const [onA, onB] = await eventually(both, ([x, y]) => x!.quantity === y!.quantity)
    t.same(onB, onA, 'the same on both')
    t.ok(values.includes(onA!.quantity), `final ${onA!.quantity} is one of the sent values`)
  })

  await t.test('a key revoked with the keys CLI is refused by both instances once notified', async (t) => {
    const free = await keyInDatabase(databaseUrl, 'test free', 'free')
    t.equal((await call(a, free.secret, '/inventory')).status, 200)
    t.equal((await call(b, free.secret, '/inventory')).status, 200, 'and now cached by both')
    const revoked = await runCli('keys', ['revoke', free.id], { DATABASE_URL: databaseUrl })
    t.equal(revoked.code, 0, revoked.stderr)
    for (const server of [a, b]) {
      const res = await eventually(() => call(server, free.secret, '/inventory'), (r) => r.status === 401)
      t.equal(res.status, 401, 'refused')
      t.equal((await res.json() as { code: string }).code, 'unauthorized')
    }
  })

  await t.test('a scope removed with keys update is refused by both instances within a second', async (t) => {
    const key = await keyInDatabase(databaseUrl, 'scoped', 'free')
    t.equal((await call(a, key.secret, '/store/orders')).status, 200)
    t.equal((await call(b, key.secret, '/store/orders')).status, 200, 'and now cached by both')
    const updated = await runCli('keys', ['update', key.id, '--scopes', 'inventory:read'], { DATABASE_URL: databaseUrl })
    t.equal(updated.code, 0, updated.stderr)
    const changedAt = performance.now()
    for (const server of [a, b]) {
      const res = await eventually(() => call(server, key.secret, '/store/orders'), (r) => r.status === 403)
      const after = performance.now() - changedAt
      t.equal(res.status, 403, `refused with 403 (${Math.round(after)} ms after keys update exited)`)
      t.ok(after < 1000, 'within one second of the change')
      t.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="orders:read"')
      t.equal((await call(server, key.secret, '/inventory')).status, 200, 'the scope it kept still works')
    }
  })

  await t.test('shared rate limits through Redis', { skip: redisUp ? false : REDIS_SKIP }, async (t) => {
    // The minute window is a fixed one: if the run straddles its end, start again with a new key.
    let statuses: number[] = []
    let remaining: string[] = []
    for (let attempt = 1; attempt <= 2; attempt++) {
      const free = await keyInDatabase(databaseUrl, 'test free', 'free')
      statuses = []
      remaining = []
      const resets = new Set<string>()
      for (let i = 0; i < 70; i++) {
        const res = await call(i < 35 ? a : b, free.secret, '/inventory')
        statuses.push(res.status)
        remaining.push(res.headers.get('x-ratelimit-remaining') ?? '')
        if (res.status === 200) resets.add(res.headers.get('x-ratelimit-reset') ?? '')
      }
      if (resets.size === 1) break
      t.comment('the minute window ended during the run: once more')
    }
    t.equal(statuses.filter((s) => s === 200).length, 60, 'the free plan allows 60 a minute across both instances together')
    t.same(statuses.slice(60), Array(10).fill(429), 'the rest are refused')
    t.equal(remaining[34], '25', 'after 35 requests on A, 25 are left')
    t.equal(remaining[35], '24', 'and B counts on from there')
  })

  await t.test('a rolling restart of one instance under a stream of PATCHes loses no acknowledged write', async (t) => {
    // A naive load balancer: round robin over the instances in the list, no retries.
    const servers = [a, b]
    const pets = [6, 7, 8, 9]
    const acked = new Map<number, number>()
    const attempted = new Map<number, number>()
    const outcomes = { acknowledged: 0, refused: 0, other: 0 }
    let turn = 0
    let running = true
    const workers = pets.map(async (petId) => {
      for (let quantity = 1; running; quantity++) {
        attempted.set(petId, quantity)
        try {
          const res = await patch(servers[turn++ % servers.length]!, key, petId, quantity)
          if (res.status === 200) {
            acked.set(petId, quantity)
            outcomes.acknowledged++
          } else {
            outcomes.other++
          }
        } catch {
          outcomes.refused++ // connection refused or reset: not acknowledged
          await sleep(5)
        }
      }
    })

    await sleep(300)
    t.equal(await a.stop('SIGTERM'), 0, 'A drains and exits 0 while requests keep coming')
    servers[0] = await startServer(t, env)
    await sleep(300)
    running = false
    await Promise.all(workers)
    t.comment(`outcomes during the restart: ${JSON.stringify(outcomes)}`)
    t.ok(outcomes.acknowledged > 0, 'writes were acknowledged throughout')
    t.equal(outcomes.other, 0, 'no answer other than 200 (refused connections are not answers)')

    const kept = (list: Item[]) => pets.every((petId) => {
      const value = list.find((i) => i.petId === petId)!.quantity
      return value >= acked.get(petId)! && value <= attempted.get(petId)!
    })
    const stored = new Map((await eventually(() => inventory(b, key), kept)).map((i) => [i.petId, i.quantity]))
    for (const petId of pets) {
      const value = stored.get(petId)!
      t.ok(value >= acked.get(petId)! && value <= attempted.get(petId)!,
        `pet ${petId}: stored ${value}, last acknowledged ${acked.get(petId)}, last attempted ${attempted.get(petId)}`)
    }
    t.equal(await servers[0]!.stop(), 0, 'the new A stops cleanly')
  })

  t.equal(await b.stop(), 0, 'B stops cleanly')
})
