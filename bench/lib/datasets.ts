/**
 * Fresh databases for the benchmark, filled through the service's own store module:
 * N synthetic pets with an inventory entry each (addSyntheticPets), an open order on every tenth
 * pet (so all three statuses occur), and one enterprise key with limits that never bind; the
 * order workloads' datasets add stock and placed orders (OrderStock). Also the Redis the rate
 * limiter can count in, and its clean-up.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import { issueApiKey } from '../../src/repositories/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import type { Order, Store } from '../../src/store/types.js'

/** High enough that no run reaches them; both fit a 32-bit integer column. */
export const BENCH_LIMITS = { perMinute: 2_000_000_000, perDay: 2_000_000_000 }

/** The plain dataset's orders: ids 1 to this, one on every tenth pet. */
export const plainOrderCount = (size: number) => Math.floor(size / 10)

/**
 * What an order workload's dataset has besides the plain one: pets 1…`pets` with `units` in stock
 * each, and `placedOrders` open orders of one unit, on those pets in turn, with the ids that follow
 * the plain orders' (placedOrderIds).
 */
export interface OrderStock {
  pets: number
  units: number
  placedOrders?: number
}

/** The ids of an OrderStock's placed orders. */
export const placedOrderIds = (size: number, stock: OrderStock) =>
  ({ first: plainOrderCount(size) + 1, last: plainOrderCount(size) + (stock.placedOrders ?? 0) })

/** Orders per import: each batch is one transaction, and only one batch is in memory at a time. */
const ORDER_BATCH = 50_000

function ordersFor (size: number): Order[] {
  const orders: Order[] = []
  for (let petId = 10; petId <= size; petId += 10) {
    orders.push({ id: petId / 10, petId, quantity: 30, shipDate: '2026-01-15T10:00:00.000Z', status: 'placed', complete: false })
  }
  return orders
}

/** Fills a fresh database; returns the secret of its enterprise key. */
export async function seedDatabase (databaseUrl: string, size: number, stock?: OrderStock): Promise<string> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
    if (await store.countPets() !== 0) throw new Error(`${databaseUrl} is not empty`)
    await addSyntheticPets(store, size)
    await store.importCatalogue({ orders: ordersFor(size) })
    if (stock !== undefined) await addOrderStock(store, size, stock)
    return (await issueApiKey(store, { name: 'benchmark', plan: 'enterprise', ...BENCH_LIMITS })).secret
  } finally {
    await store.close()
  }
}

async function addOrderStock (store: Store, size: number, stock: OrderStock): Promise<void> {
  if (stock.pets > size) throw new Error(`cannot stock ${stock.pets} pets in a dataset of ${size}`)
  await store.importCatalogue({ inventory: Array.from({ length: stock.pets }, (_, i) => ({ petId: i + 1, quantity: stock.units })) })
  const { first, last } = placedOrderIds(size, stock)
  for (let from = first; from <= last; from += ORDER_BATCH) {
    const orders: Order[] = []
    for (let id = from; id <= Math.min(last, from + ORDER_BATCH - 1); id++) {
      orders.push({ id, petId: (id % stock.pets) + 1, quantity: 1, shipDate: '2026-01-15T10:00:00.000Z', status: 'placed', complete: false })
    }
    await store.importCatalogue({ orders })
  }
}

/** Why PostgreSQL cannot be benchmarked here, or undefined when it can. */
export async function postgresUnavailable (adminUrl: string): Promise<string | undefined> {
  try {
    const probe = await createStore(adminUrl)
    await probe.close()
  } catch (error) {
    return `createStore refuses postgres:// (${(error as Error).message})`
  }
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
  } catch (error) {
    return `PostgreSQL at ${redact(adminUrl)} is unreachable (${(error as Error).message})`
  } finally {
    await client.end().catch(() => {})
  }
  return undefined
}

export const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')

/**
 * The processes of PostgreSQL serving the connections to one database (the service's pool): their
 * CPU time is the database's share of a request, which the service process's own leaves out.
 */
export async function postgresBackends (adminUrl: string, database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
    return rows.map((r) => r.pid)
  } finally {
    await client.end()
  }
}

/**
 * How many more connections PostgreSQL accepts now: `max_connections`, less the slots kept for
 * superusers and those already open (other programs on the machine count too).
 */
export async function postgresConnectionRoom (adminUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ room: number }>(`SELECT current_setting('max_connections')::int
      - current_setting('superuser_reserved_connections')::int
      - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS room`)
    // This client's own connection closes when the query is answered.
    return rows[0]!.room + 1
  } finally {
    await client.end()
  }
}

/** Creates a database of its own for one dataset; returns its URL. */
export async function createPostgresDatabase (adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export async function dropPostgresDatabase (adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await client.end()
  }
}

const redisClient = (url: string) => {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  return client
}

/** Why Redis cannot be benchmarked here, or undefined when it answers. */
export async function redisUnavailable (url: string): Promise<string | undefined> {
  const client = redisClient(url)
  try {
    await client.connect()
    await client.ping()
    return undefined
  } catch (error) {
    return `Redis at ${redact(url)} does not answer (${(error as Error).message})`
  } finally {
    client.disconnect()
  }
}

/** Deletes the rate-limit counters a run left under its own key prefix. */
export async function deleteRedisKeys (url: string, prefix: string): Promise<void> {
  const client = redisClient(url)
  try {
    await client.connect()
    let cursor = '0'
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await client.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    client.disconnect()
  }
}
