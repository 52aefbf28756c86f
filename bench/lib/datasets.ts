/**
 * Fresh databases for the benchmark, filled through the service's own store module:
 * N synthetic pets with an inventory entry each (addSyntheticPets), an open order on every tenth
 * pet (so all three statuses occur), and one enterprise key with limits that never bind. Also the
 * Redis the rate limiter can count in, and its clean-up.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import { issueApiKey } from '../../src/store/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import type { Order } from '../../src/store/types.js'

/** High enough that no run reaches them; both fit a 32-bit integer column. */
export const BENCH_LIMITS = { perMinute: 2_000_000_000, perDay: 2_000_000_000 }

function ordersFor (size: number): Order[] {
  const orders: Order[] = []
  for (let petId = 10; petId <= size; petId += 10) {
    orders.push({ id: petId / 10, petId, quantity: 30, shipDate: '2026-01-15T10:00:00.000Z', status: 'placed', complete: false })
  }
  return orders
}

/** Fills a fresh database; returns the secret of its enterprise key. */
export async function seedDatabase (databaseUrl: string, size: number): Promise<string> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
    if (await store.countPets() !== 0) throw new Error(`${databaseUrl} is not empty`)
    await addSyntheticPets(store, size)
    await store.importCatalogue({ orders: ordersFor(size) })
    return (await issueApiKey(store, { name: 'benchmark', plan: 'enterprise', ...BENCH_LIMITS })).secret
  } finally {
    await store.close()
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
