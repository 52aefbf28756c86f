/**
 * A second process on the coherence test's SQLite file (coherence.test.ts): it opens its own
 * store and repositories and runs what the test sends over IPC, answering each call's result.
 */
import { idempotencyRepository } from '../../src/repositories/idempotency.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders, ordersRepository } from '../../src/repositories/orders.js'
import { EVENT_SCOPES } from '../helpers/contract.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import type { ListJson } from '../../src/store/types.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { petsRepository } from '../../src/repositories/pets.js'

const file = process.argv[2]
if (file === undefined || process.send === undefined) throw new Error('usage: fork coherence-process.ts FILE (with IPC)')
const store = createSqliteStore(file)
const orders = ordersRepository(store, idempotencyRepository(store), Date.now, EVENT_SCOPES)
const inventory = inventoryRepository(store, EVENT_SCOPES)
const keys = apiKeysRepository(store)
const text = (list: ListJson) => typeof list === 'string' ? list : list.bytes.toString()

// Every call the test's operations and snapshots make, by name; lists travel as their text.
const calls: Record<string, (...args: never[]) => Promise<unknown>> = {
  'orders.place': (order: Parameters<typeof orders.place>[0]) => orders.place(order),
  'orders.setStatus': (id: number, status: 'approved' | 'delivered') => orders.setStatus(id, status),
  'orders.cancel': (id: number) => orders.cancel(id),
  'inventory.update': (petId: number, quantity: number) => inventory.update(petId, quantity),
  'store.importCatalogue': (catalogue: Parameters<typeof store.importCatalogue>[0]) => store.importCatalogue(catalogue),
  'keys.create': (key: Parameters<typeof keys.create>[0]) => keys.create(key),
  'keys.revoke': (id: string) => keys.revoke(id),
  'store.listJson': async () => text(await store.inventory.listJson()),
  'store.orders': () => allOrders(store),
  'store.pet': (petId: number) => petsRepository(store).get(petId),
  'keys.findActive': async (hash: string) => await keys.findActive(hash)
}

process.on('message', (message: { id: number, call: string, args: never[] }) => {
  const call = calls[message.call]
  const answer = (reply: { value?: unknown, error?: string }) => process.send!({ id: message.id, ...reply })
  if (call === undefined) return answer({ error: `unknown call ${message.call}` })
  call(...message.args).then((value) => answer({ value: value ?? null }), (error: unknown) => answer({ error: String(error) }))
})
process.on('disconnect', () => { void store.close().then(() => process.exit(0)) })
process.send({ ready: true })
