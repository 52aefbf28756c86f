import { sql } from 'kysely'
import { inventoryFields } from '../store/inventory-fields.js'
import { statement } from '../store/query.js'
import { toInventoryItem, type InventoryRow } from '../store/rows.js'
import type { InventoryFastPaths, InventoryItem, Store } from '../store/types.js'
import { all } from '../store/work.js'

/** Every field of InventoryItem from the field map (inventory-fields.ts), under its own name. */
const selection = Object.entries(inventoryFields).map(([name, field]) => sql<unknown>`${sql.raw(field('i'))}`.as(name))
const list = statement('inventory.list', (db) => db.selectFrom('inventory as i').select(selection).orderBy('i.pet_id'))

/**
 * The inventory: the list as JSON text and PATCH are each engine's own fast paths (Store.inventory:
 * lists kept entry by entry from the change triggers; the PATCHes of one event-loop turn in one
 * commit, or one round trip on PostgreSQL); `list` reads every entry as objects, afresh.
 */
export interface InventoryRepository extends InventoryFastPaths {
  /** Every entry, ordered by petId, read now (never from a cache). */
  list (): Promise<InventoryItem[]>
}

export function inventoryRepository (store: Store): InventoryRepository {
  const { listJson, update } = store.inventory
  return {
    listJson,
    update,
    // The columns are the field map's, each under its field's name.
    list: () => store.read(function * () { return (yield * all(list, {})).map((row) => toInventoryItem(row as unknown as InventoryRow)) })
  }
}
