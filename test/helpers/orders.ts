import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Response as InjectResponse } from 'light-my-request'
import pg from 'pg'
import { projectRoot } from '../../src/contract/paths.js'
import type { Teardown, TestApp } from './app.js'
import { adminQuery } from './postgres.js'

export interface Order { id: number, petId: number, quantity: number, shipDate: string, status: 'placed' | 'approved' | 'delivered', complete: boolean }
export interface Item { petId: number, quantity: number, status: 'available' | 'pending' | 'sold' }

/** An enterprise key with room to spare: these tests are about orders, not rate limits. */
export async function roomyHeaders (api: TestApp): Promise<{ authorization: string }> {
  return { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 100000, perDay: 1000000 })}` }
}

/** Sets a pet's stock through updateInventory, so a test starts from the state it states. */
export async function setStock (api: TestApp, headers: Record<string, string>, petId: number, quantity: number): Promise<Item> {
  const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: { quantity } })
  if (res.statusCode !== 200) throw new Error(`PATCH /v1/inventory/${petId} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

export function placeOrder (api: TestApp, headers: Record<string, string>, payload: unknown, extra: Record<string, string> = {}): Promise<InjectResponse> {
  return api.request({ method: 'POST', url: '/v1/store/orders', headers: { ...headers, ...extra }, payload: payload as object })
}

/** A pet's inventory entry as GET /v1/inventory lists it, with the list's entity tag. */
export async function inventoryEntry (api: TestApp, headers: Record<string, string>, petId: number): Promise<{ item: Item | undefined, etag: string }> {
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  if (res.statusCode !== 200) throw new Error(`GET /v1/inventory answered ${res.statusCode}: ${res.body}`)
  return { item: (res.json() as Item[]).find((i) => i.petId === petId), etag: String(res.headers.etag) }
}

/** Every order of a pet, through listOrders (one page of up to 100). */
export async function ordersOf (api: TestApp, headers: Record<string, string>, petId: number): Promise<Order[]> {
  const res = await api.request({ method: 'GET', url: `/v1/store/orders?petId=${petId}`, headers })
  if (res.statusCode !== 200) throw new Error(`GET /v1/store/orders?petId=${petId} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A pet's inventory row held against every writer, until `release()`. */
export interface HeldRow {
  /** The PostgreSQL backend holding it (undefined on SQLite, where a whole file is locked). */
  pid: number | undefined
  release (): Promise<void>
}

/**
 * Holds the inventory row of `petId` as another instance's open transaction would: on SQLite,
 * another process holding the file's write lock; on PostgreSQL, a row lock (FOR UPDATE) in a
 * transaction of another connection. Released in teardown at the latest.
 */
export async function holdInventoryRow (t: Teardown, databaseUrl: string, petId: number): Promise<HeldRow> {
  if (databaseUrl.startsWith('sqlite:')) {
    const child = spawn(process.execPath, [join(projectRoot, 'test', 'helpers', 'hold-write-lock.mjs'), databaseUrl.slice('sqlite:'.length), '600000'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = once(child, 'exit')
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => { if (line === 'locked') resolve() })
      void exited.then(([code]) => { reject(new Error(`the lock holder exited with ${String(code)}`)) })
    })
    // Killed, the holder's transaction rolls back and the lock is gone.
    return { pid: undefined, release: async () => { if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await exited } } }
  }
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'petstore-test-row-lock' })
  await client.connect()
  let open = true
  const release = async () => {
    if (!open) return
    open = false
    await client.query('COMMIT')
    await client.end()
  }
  t.teardown(release)
  await client.query('BEGIN')
  const { rowCount } = await client.query('SELECT 1 FROM inventory WHERE pet_id = $1 FOR UPDATE', [petId])
  if (rowCount !== 1) throw new Error(`no inventory row for pet ${petId} to hold`)
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  return { pid: rows[0]!.pid, release }
}

/** Waits (polling, at most 10 s) until a PostgreSQL backend is blocked by `pid`'s locks. */
export async function untilBlockedBy (pid: number): Promise<void> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const rows = await adminQuery<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])
    if (Number(rows[0]!.n) > 0) return
    if (Date.now() > deadline) throw new Error(`no backend blocked by ${pid} within 10 s`)
    await sleep(5)
  }
}
