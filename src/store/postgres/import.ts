import { petColumns } from '../rows.js'
import type { Catalogue, ImportCounts } from '../types.js'
import type { Run } from './pool.js'
import { importSql } from './statements.js'

/** The last entry per key wins, as when the rows are upserted one after the other. */
function lastPerKey<T> (items: readonly T[], key: (item: T) => number): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()]
}

/** Upserts a catalogue with one statement per table, inside the caller's transaction. */
export async function importCatalogue (run: Run, catalogue: Catalogue): Promise<ImportCounts> {
  const pets = lastPerKey(catalogue.pets ?? [], (p) => p.id).map(petColumns)
  const inventory = lastPerKey(catalogue.inventory ?? [], (i) => i.petId)
  if (pets.length > 0) {
    await run(importSql.upsertPets, [
      pets.map((p) => p.id),
      pets.map((p) => p.name),
      pets.map((p) => p.categoryId),
      pets.map((p) => p.categoryName),
      pets.map((p) => p.photoUrls),
      pets.map((p) => p.tags)
    ])
    // A pet without an inventory entry gets one at 0; the pets the catalogue gives stock for get
    // theirs from the upsert below.
    const stocked = new Set(inventory.map((i) => i.petId))
    const unstocked = pets.filter((p) => !stocked.has(p.id)).map((p) => p.id)
    if (unstocked.length > 0) await run(importSql.ensureInventory, [unstocked])
  }
  if (inventory.length > 0) {
    await run(importSql.upsertInventory, [inventory.map((i) => i.petId), inventory.map((i) => i.quantity)])
  }
  const orders = lastPerKey(catalogue.orders ?? [], (o) => o.id)
  if (orders.length > 0) {
    await run(importSql.upsertOrders, [
      orders.map((o) => o.id),
      orders.map((o) => o.petId),
      orders.map((o) => o.quantity),
      orders.map((o) => o.shipDate),
      orders.map((o) => o.status),
      orders.map((o) => o.complete)
    ])
    // Orders placed later get ids past every imported one (the sequence never goes back: an id of
    // a cancelled order is never given again).
    await run(importSql.advanceOrderIds)
  }
  return { pets: catalogue.pets?.length ?? 0, inventory: catalogue.inventory?.length ?? 0, orders: catalogue.orders?.length ?? 0 }
}
