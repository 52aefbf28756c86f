/**
 * SQLite shared with other processes (docs/operations.md). Another process holding the write lock
 * (tests/helpers/hold-write-lock.mjs, as a second instance, the keys command or a backup can) must
 * not freeze the server: /healthz and reads keep answering, and a write waits on timers for at
 * most DATABASE_TIMEOUT_MS, then is answered 503 with Retry-After. Two server processes on one
 * file both write, lose nothing acknowledged, and each sees the other's writes on its next request.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t, { type Test } from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { keyInDatabase } from '../helpers/keys.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'

interface LockHolder {
  /** True until the holder has said it is about to commit. */
  readonly held: boolean
  readonly exited: Promise<unknown>
}

/** Starts the lock holder and resolves once it holds the lock (it updates `petId` inside it). */
async function holdWriteLock (t: Test, file: string, ms: number, petId: number, quantity: number): Promise<LockHolder> {
  const child: ChildProcess = spawn(process.execPath, [join(projectRoot, 'test', 'helpers', 'hold-write-lock.mjs'), file, String(ms), String(petId), String(quantity)], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const exited = once(child, 'exit')
  let held = false
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'locked') { held = true; resolve() }
      if (line === 'releasing') held = false
    })
    void exited.then(([code]) => reject(new Error(`the lock holder exited with ${String(code)}`)))
  })
  return { get held () { return held }, exited }
}

const json = { 'content-type': 'application/json' }
const patch = (server: ServerProcess, authorization: string, petId: number, quantity: number) =>
  fetch(`${server.baseUrl}/v1/inventory/${petId}`, { method: 'PATCH', headers: { authorization, ...json }, body: JSON.stringify({ quantity }) })
const quantityIn = async (server: ServerProcess, authorization: string, petId: number) => {
  const res = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization } })
  if (res.status !== 200) throw new Error(`GET /v1/inventory answered ${res.status}`)
  return (await res.json() as { petId: number, quantity: number }[]).find((item) => item.petId === petId)?.quantity
}

/** A seeded database (the demo catalogue) with an enterprise key. */
async function sharedFile (t: Test) {
  const file = join(tempDir(t), 'shared.db')
  const url = `sqlite:${file}`
  const authorization = `Bearer ${(await keyInDatabase(url, 'sharing test')).secret}`
  return { file, url, authorization }
}

t.test('a write lock held 3 s by another process: the server keeps answering, the PATCH waits and then commits', async (t) => {
  const { file, url, authorization } = await sharedFile(t)
  const server = await startServer(t, { DATABASE_URL: url, DATABASE_TIMEOUT_MS: '10000' })
  t.equal((await fetch(`${server.baseUrl}/v1/pets/2`, { headers: { authorization } })).status, 200, 'before the lock')

  // The holder sets pet 1 to 5 inside its transaction: the PATCH's 77 can only be the final value
  // if the PATCH committed after the holder did.
  const holder = await holdWriteLock(t, file, 3000, 1, 5)
  const patched = patch(server, authorization, 1, 77)

  const health = await fetch(`${server.baseUrl}/healthz`)
  t.equal(health.status, 200)
  t.ok(holder.held, '/healthz answered while the lock was held')
  const pet = await fetch(`${server.baseUrl}/v1/pets/2`, { headers: { authorization } })
  t.equal(pet.status, 200)
  t.ok(holder.held, 'a GET of another pet answered while the lock was held')
  const orders = await fetch(`${server.baseUrl}/v1/store/orders`, { headers: { authorization } })
  t.equal(orders.status, 200)
  t.ok(holder.held, 'and the list of orders')

  // Not asserted (timing is the machine's): how fast /healthz answered while the lock was held.
  const latencies: number[] = []
  while (holder.held && latencies.length < 2000) {
    const started = performance.now()
    await (await fetch(`${server.baseUrl}/healthz`)).arrayBuffer()
    latencies.push(performance.now() - started)
  }
  latencies.sort((a, b) => a - b)
  t.comment(`/healthz during the lock: ${latencies.length} requests, p50 ${latencies[Math.floor(latencies.length * 0.5)]?.toFixed(1)} ms, p99 ${latencies[Math.floor(latencies.length * 0.99)]?.toFixed(1)} ms, max ${latencies.at(-1)?.toFixed(1)} ms`)

  const res = await patched
  t.equal(res.status, 200, 'the PATCH succeeded once the lock was released')
  t.same(await res.json(), { petId: 1, quantity: 77, status: 'available' })
  t.notOk(holder.held, 'it was answered after the holder released the lock')
  await holder.exited
  t.equal(await quantityIn(server, authorization, 1), 77, 'committed after the holder\'s transaction, not before it')
})

t.test('a lock held longer than DATABASE_TIMEOUT_MS: the PATCH is 503 with Retry-After, and changes nothing', async (t) => {
  const { file, url, authorization } = await sharedFile(t)
  const server = await startServer(t, { DATABASE_URL: url, DATABASE_TIMEOUT_MS: '1000' })
  const holder = await holdWriteLock(t, file, 3000, 1, 5)
  const res = await patch(server, authorization, 1, 77)
  t.equal(res.status, 503)
  t.equal(res.headers.get('retry-after'), '1', 'Retry-After: 1')
  t.match(await res.json(), { code: 'service_unavailable', status: 503 })
  t.ok(holder.held, 'answered while the lock was still held')
  t.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200)

  await holder.exited
  t.equal(await quantityIn(server, authorization, 1), 5, 'the refused PATCH was not applied (the holder\'s value stands)')
  const again = await patch(server, authorization, 1, 78)
  t.equal(again.status, 200, 'writes work again once the lock is gone')
  t.equal(await quantityIn(server, authorization, 1), 78)
})

t.test('two server processes on one SQLite file, started at once: writes from both, none lost, each sees the other\'s', async (t) => {
  const file = join(tempDir(t), 'two.db')
  const url = `sqlite:${file}`
  // Both create and migrate the new file at the same time.
  const [a, b] = await Promise.all([startServer(t, { DATABASE_URL: url }), startServer(t, { DATABASE_URL: url })])
  const authorization = `Bearer ${(await keyInDatabase(url, 'two instances')).secret}`
  const servers = [a, b] as const

  const mismatches: string[] = []
  const last = new Map<number, number>()
  // Pets 1 to 10 of the demo catalogue, each written alternately through a and b, all at once.
  await Promise.all(Array.from({ length: 10 }, async (_, i) => {
    const petId = i + 1
    for (let round = 0; round < 16; round++) {
      const writer = servers[round % 2]!
      const reader = servers[(round + 1) % 2]!
      const quantity = petId * 100 + round
      const res = await patch(writer, authorization, petId, quantity)
      if (res.status !== 200) { mismatches.push(`pet ${petId} round ${round}: PATCH ${res.status}`); continue }
      await res.arrayBuffer()
      last.set(petId, quantity)
      const seen = await quantityIn(reader, authorization, petId)
      if (seen !== quantity) mismatches.push(`pet ${petId} round ${round}: wrote ${quantity}, the other instance lists ${String(seen)}`)
    }
  }))
  t.same(mismatches, [], '160 PATCHes, half through each instance, each seen by the other on its next request')
  for (const server of servers) {
    const res = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization } })
    const items = await res.json() as { petId: number, quantity: number }[]
    t.same(items.filter((item) => last.has(item.petId)).map((item) => [item.petId, item.quantity]), [...last].sort((x, y) => x[0] - y[0]), `${server.port}: every last acknowledged write is there`)
  }
  t.equal(await a.stop(), 0)
  t.equal(await b.stop(), 0)
})
