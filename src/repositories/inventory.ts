import type { InventoryItem, ListJson, Store } from '../store/types.js'

/**
 * The inventory: the list and PATCH are the engines' own fast paths (lists kept entry by entry
 * from the change triggers; PATCHes of one event-loop turn in one commit, or one round trip on
 * PostgreSQL), behind the same kind of repository as the rest.
 */
export interface InventoryRepository {
  /** Every entry as JSON text, ordered by petId; the engine may hand out text it built before. */
  listJson (): Promise<ListJson>
  /** Sets the quantity; undefined when the pet has no inventory entry. */
  update (petId: number, quantity: number): Promise<InventoryItem | undefined>
}

export function inventoryRepository (store: Store): InventoryRepository {
  return {
    listJson: () => store.listInventoryJson(),
    update: (petId, quantity) => store.updateInventory(petId, quantity)
  }
}
