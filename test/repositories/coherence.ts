import { fork } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import type { Test } from 'tap'
import { idempotencyRepository } from '../../src/repositories/idempotency.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import type { InventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders, ordersRepository, type OrdersRepository, type OrderStatus } from '../../src/repositories/orders.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { apiKeysRepository, generateApiKey, type ApiKeysRepository } from '../../src/repositories/api-keys.js'
import type { ListJson, Order, Pet, Store } from '../../src/store/types.js'
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir } from '../helpers/app.js'
import { typescriptArgs } from '../helpers/node-args.js'
import { createTestSchema } from '../helpers/postgres.js'
import { seededRandom } from '../helpers/random.js'
import { EVENT_SCOPES, ALL_SCOPES } from '../helpers/contract.js'

/**
 * Caches are infrastructure: whichever repository method writes, through whichever of two
 * processes sharing the database, every cache of both must then answer what a fresh read gives.
 * Random operations through every repository method (and the keys and import paths of the
 * store); after each, both instances' cached reads are compared with a store opened afresh.
 * coherence.test.ts runs it; a new repository's writes join it from a test file of their own
 * (`coherenceSuite(t, [operation])`), with no change here.
 */

/** The pets of the catalogue every run starts from, each with 3 units in stock. */
export const PETS = [1, 2, 3, 4, 5]
const STEPS = 120

const text = (list: ListJson) => typeof list === 'string' ? list : list.bytes.toString()

/** What the run asks of an instance's store beside its repositories: imports, and the reads that go through its caches. */
interface StoreCalls {
  importCatalogue: Store['importCatalogue']
  listJson (): Promise<ListJson>
  orders (): Promise<Order[]>
  pet (petId: number): Promise<Pet | undefined>
}
const storeCalls = (store: Store): StoreCalls => ({
  importCatalogue: (catalogue) => store.importCatalogue(catalogue),
  listJson: () => store.inventory.listJson(),
  orders: () => allOrders(store),
  pet: (petId) => petsRepository(store).get(petId)
})
type KeyCalls = Pick<ApiKeysRepository, 'create' | 'revoke' | 'findActive'>

/** What the run's own operations and snapshots use of an instance: in this process, or in another one. */
interface RunInstance {
  store: StoreCalls
  keys: KeyCalls
  orders: Pick<OrdersRepository, 'place' | 'setStatus' | 'cancel'>
  inventory: Pick<InventoryRepository, 'update'>
  /** The instance itself when it is in this process (extra operations write through it). */
  local?: Instance
}

/** An instance in this process: its store and the repositories made over it. */
export interface Instance {
  store: Store
  orders: ReturnType<typeof ordersRepository>
  inventory: ReturnType<typeof inventoryRepository>
  pets: ReturnType<typeof petsRepository>
  keys: ApiKeysRepository
}

const instance = (store: Store): RunInstance => {
  const idempotency = idempotencyRepository(store)
  const local: Instance = { store, orders: ordersRepository(store, idempotency, Date.now, EVENT_SCOPES), inventory: inventoryRepository(store, EVENT_SCOPES), pets: petsRepository(store), keys: apiKeysRepository(store) }
  return { ...local, store: storeCalls(store), local }
}

/** An instance in a process of its own (coherence-process.ts), on the same SQLite file. */
async function otherProcess (t: Test, file: string): Promise<RunInstance> {
  const child = fork(join(import.meta.dirname, 'coherence-process.ts'), [file], { execArgv: typescriptArgs })
  t.teardown(async () => { if (child.connected) { child.disconnect(); await once(child, 'exit') } })
  await once(child, 'message')
  let next = 0
  const waiting = new Map<number, { resolve: (value: unknown) => void, reject: (error: Error) => void }>()
  child.on('message', (message: { id: number, value?: unknown, error?: string }) => {
    const call = waiting.get(message.id)
    waiting.delete(message.id)
    if (message.error !== undefined) call?.reject(new Error(message.error))
    else call?.resolve(message.value === null ? undefined : message.value)
  })
  // Each method sends its name and arguments; the answer is whatever the other process's call returned.
  const remote = <F extends (...args: never[]) => unknown>(name: string) => ((...args: Parameters<F>) => new Promise((resolve, reject) => {
    const id = next++
    waiting.set(id, { resolve, reject })
    child.send({ id, call: name, args })
  })) as unknown as F
  return {
    store: {
      importCatalogue: remote('store.importCatalogue'),
      listJson: remote('store.listJson'),
      orders: remote('store.orders'),
      pet: remote('store.pet')
    },
    keys: { create: remote('keys.create'), revoke: remote('keys.revoke'), findActive: remote('keys.findActive') },
    orders: { place: remote('orders.place'), setStatus: remote('orders.setStatus'), cancel: remote('orders.cancel') },
    inventory: { update: remote('inventory.update') }
  }
}

/** What every cache of `store` must agree with: read by a store that has cached nothing yet. */
async function snapshot ({ store, keys }: { store: StoreCalls, keys: KeyCalls }, keyHashes: readonly string[]) {
  const inventory = text(await store.listJson())
  const orders = JSON.stringify(await store.orders())
  const pets = await Promise.all(PETS.map((id) => store.pet(id)))
  const active = await Promise.all(keyHashes.map(async (hash) => (await keys.findActive(hash))?.id ?? null))
  return { inventory, orders, pets, keys: active }
}

/**
 * One more random operation: it writes through `i` (the store, or a repository made over it) and
 * says what it did. It runs on an instance of this process; the other process (SQLite) must then
 * see what it wrote.
 */
export type Operation = (i: Instance, random: (n: number) => number) => Promise<string>

async function coherence (t: Test, open: () => Store, settle: () => Promise<void>, extra: readonly Operation[], second?: RunInstance) {
  const first = open()
  t.teardown(() => first.close())
  await first.migrate()
  await first.importCatalogue({
    pets: PETS.map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })),
    inventory: PETS.map((petId) => ({ petId, quantity: 3 }))
  })
  let other = second
  if (other === undefined) {
    const store = open()
    t.teardown(() => store.close())
    other = instance(store)
  }
  const instances = [instance(first), other]
  const locals = instances.flatMap((i) => i.local === undefined ? [] : [i.local])
  const random = seededRandom(20261125)
  const keys: { id: string, hash: string }[] = []
  const orderIds: number[] = []
  const done: string[] = []

  const operations: ((i: RunInstance) => Promise<string>)[] = [
    async (i) => {
      const petId = PETS[random(PETS.length)]!
      const result = await i.orders.place({ petId, quantity: 1 + random(2), shipDate: '2026-12-01T10:00:00.000Z' })
      if (result.kind === 'done' && result.outcome.kind === 'placed') orderIds.push(result.outcome.order.id)
      return `place ${petId}`
    },
    async (i) => {
      const id = orderIds[random(orderIds.length + 1)] ?? 999
      const status: Exclude<OrderStatus, 'placed'> = random(2) === 0 ? 'approved' : 'delivered'
      return `setStatus ${id} ${status}: ${(await i.orders.setStatus(id, status)).kind}`
    },
    async (i) => {
      const id = orderIds[random(orderIds.length + 1)] ?? 999
      return `cancel ${id}: ${(await i.orders.cancel(id)).kind}`
    },
    async (i) => {
      const petId = PETS[random(PETS.length)]!
      await i.inventory.update(petId, random(5))
      return `update ${petId}`
    },
    async (i) => {
      const petId = PETS[random(PETS.length)]!
      await i.store.importCatalogue({ pets: [{ id: petId, name: `Renamed ${random(100)}`, photoUrls: [] }], inventory: [{ petId, quantity: random(4) }] })
      return `import ${petId}`
    },
    async (i) => {
      const { id, hash } = generateApiKey()
      await i.keys.create({ id, name: 'coherence', plan: 'free', keyHash: hash, perMinute: null, perDay: null, scopes: ALL_SCOPES })
      keys.push({ id, hash })
      return 'createApiKey'
    },
    async (i) => {
      const key = keys[random(keys.length)]
      if (key !== undefined) await i.keys.revoke(key.id)
      return 'revokeApiKey'
    },
    // Reads between writes fill the caches that a later write must then invalidate.
    async (i) => {
      await snapshot(i, keys.map((k) => k.hash))
      return 'read'
    }
  ]

  /** After a step: whether every cache of both instances agrees with a fresh read (a failure is reported). */
  const agreed = async (step: number) => {
    await settle()
    const fresh = open()
    const expected = await snapshot({ store: storeCalls(fresh), keys: apiKeysRepository(fresh) }, keys.map((k) => k.hash))
    await fresh.close()
    for (const [n, i] of instances.entries()) {
      const seen = await snapshot(i, keys.map((k) => k.hash))
      if (JSON.stringify(seen) !== JSON.stringify(expected)) {
        t.same(seen, expected, `instance ${n + 1} after step ${step}: ${done.slice(-4).join(' → ')}`)
        return false
      }
    }
    return true
  }

  // Extra operations come from a random stream of their own, after about one step in eight, so
  // the run of the operations above stays as it is.
  const extraRandom = seededRandom(20261126)
  let extraSteps = 0
  for (let step = 0; step < STEPS; step++) {
    const writer = instances[random(2)]!
    done.push(await operations[random(operations.length)]!(writer))
    if (!await agreed(step)) return
    if (extra.length > 0 && extraRandom(8) === 0) {
      done.push(await extra[extraRandom(extra.length)]!(locals[extraRandom(locals.length)]!, extraRandom))
      extraSteps++
      if (!await agreed(step)) return
    }
  }
  t.pass(`${STEPS} random steps${extra.length > 0 ? ` and ${extraSteps} extra` : ''}: both instances' caches agreed with a fresh read after each`)
  t.ok(orderIds.length > 5, 'orders were placed')
}

/** The random run on SQLite with a second process writing to the file, then on two PostgreSQL instances on one schema. */
export function coherenceSuite (t: Test, extra: readonly Operation[] = []): void {
  t.test('SQLite: this process and another one writing to one file', async (t) => {
    const file = join(tempDir(t), 'coherence.db')
    const creator = createSqliteStore(file)
    await creator.migrate()
    await creator.close()
    await coherence(t, () => createSqliteStore(file), async () => {}, extra, await otherProcess(t, file))
  })

  t.test('PostgreSQL: two instances on one schema', async (t) => {
    const { url } = await createTestSchema(t)
    const stores: PostgresStore[] = []
    const open = () => {
      const store = createPostgresStore(url(), { poolMax: 2 })
      stores.push(store)
      return store
    }
    // Another instance learns of a change through its notification: wait until it has arrived.
    await coherence(t, open, async () => { await Promise.all(stores.slice(0, 2).map((store) => store.syncChanges())) }, extra)
  })
}
