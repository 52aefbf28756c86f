import { sql } from 'kysely'
import { inventoryFields } from '../store/inventory-fields.js'
import { statement } from '../store/query.js'
import { toInventoryItem, type InventoryRow } from '../store/rows.js'
import type { InventoryEvents, InventoryFastPaths, InventoryItem, Store } from '../store/types.js'
import { recordEvent, subscribedTypes, type EventScopes } from './webhooks.js'
import { all } from '../store/work.js'

/** Every field of InventoryItem from the field map (inventory-fields.ts), under its own name. */
const selection = Object.entries(inventoryFields).map(([name, field]) => sql<unknown>`${sql.raw(field('i'))}`.as(name))
const list = statement('inventory.list', (db) => db.selectFrom('inventory as i').select(selection).orderBy('i.pet_id'))

/**
 * The inventory: the list as JSON text and PATCH are each engine's own fast paths (Store.inventory:
 * lists kept entry by entry from the change triggers; the PATCHes of one event-loop turn in one
 * commit, or one round trip on PostgreSQL); `list` reads every entry as objects, afresh.
 */
export interface InventoryRepository extends Pick<InventoryFastPaths, 'listJson'> {
  /** Sets the quantity; undefined when the pet has no inventory entry. */
  update (petId: number, quantity: number): Promise<InventoryItem | undefined>
  /** Every entry, ordered by petId, read now (never from a cache). */
  list (): Promise<InventoryItem[]>
}

/** `scopes`: the scope each webhook event needs (openapi.yaml's webhooks): a PATCH records inventory.updated. */
export function inventoryRepository (store: Store, scopes: EventScopes, now: () => number = Date.now): InventoryRepository {
  const { listJson, update } = store.inventory
  const scope = scopes['inventory.updated']
  const events: InventoryEvents = {
    scope,
    now,
    wanted: function * () { return (yield * subscribedTypes(scopes)).has('inventory.updated') },
    record: (item, previous) => recordEvent('inventory.updated', { ...item, previous }, scope, { now: now() })
  }
  return {
    listJson,
    update: (petId, quantity) => update(petId, quantity, events),
    // The columns are the field map's, each under its field's name.
    list: () => store.read(function * () { return (yield * all(list, {})).map((row) => toInventoryItem(row as unknown as InventoryRow)) })
  }
}
