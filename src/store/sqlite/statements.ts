import type Database from 'better-sqlite3'
import { sqliteInventoryJson } from '../inventory-fields.js'
import type { OrderRow, PetColumns } from '../rows.js'
import { statusExpression } from '../sql.js'

/**
 * Rows of list_changes kept: a server whose list is further behind than that builds it in full.
 * (A full build costs about as much as applying a quarter of the list's entries one by one.)
 */
const CHANGES_KEPT = 50_000

// Every field of InventoryItem (inventory-fields.ts), as rows or as the JSON text of an entry.
const inventoryText = sqliteInventoryJson('i')

/** A list entry as [key, its JSON text]; a changed entry's text is NULL when it is gone. */
type EntryText = [number, string]
type ChangedEntry = [number, string | null]
type OrderColumns = Omit<OrderRow, 'complete'> & { complete: 0 | 1 }

/**
 * The statements only SQLite has (the rest are written once, in shared-queries.ts and the
 * repositories): the list entries as JSON text built by SQLite, the change log, the PATCH of the
 * group commit and the imports' upserts; prepared once (after migrate() has created the tables).
 * Each is typed with what it binds and the row it returns (better-sqlite3's Statement generics),
 * so the store reads typed rows without casts; the row types come from rows.ts and the generated
 * types, and inventory rows are selected from the field map that covers every InventoryItem key.
 */
export function prepareStatements (db: Database.Database) {
  return {
    // Each entry as [petId, its JSON text], built by SQLite (no JavaScript object per row): the
    // whole list, and the entries logged in list_changes after a seq (NULL text: no entry any more).
    inventoryTexts: db.prepare<[], EntryText>(`SELECT i.pet_id, ${inventoryText} FROM inventory i ORDER BY i.pet_id`).raw(),
    inventoryChanges: db.prepare<[number], ChangedEntry>(`SELECT c.pet_id, (SELECT ${inventoryText} FROM inventory i WHERE i.pet_id = c.pet_id)
      FROM (SELECT DISTINCT pet_id FROM list_changes WHERE seq > ? AND pet_id IS NOT NULL) c`).raw(),
    // Two subqueries: MIN and MAX in one SELECT would scan the table instead of reading both ends.
    changeLogBounds: db.prepare<[], [number | null, number | null]>('SELECT (SELECT MIN(seq) FROM list_changes), (SELECT MAX(seq) FROM list_changes)').raw(),
    // Deletes at most ~1,000 of the oldest rows per call, and keeps the newest CHANGES_KEPT.
    pruneChangeLog: db.prepare(`DELETE FROM list_changes WHERE seq <= (SELECT MIN(seq) FROM list_changes) + 1000
      AND seq < (SELECT MAX(seq) FROM list_changes) - ${CHANGES_KEPT}`),
    // A PATCH is two statements in the group commit's transaction: the stock written, then the
    // entry's status by the rule of sql.ts for that stock. Together they cost a fifth less than
    // one UPDATE … RETURNING every field (bench/README.md, "A PATCH without RETURNING").
    updateInventory: db.prepare<[number, number]>('UPDATE inventory SET quantity = ? WHERE pet_id = ?'),
    inventoryStatus: db.prepare<[{ petId: number, quantity: number }], string>(`SELECT ${statusExpression('@petId', '@quantity')}`).pluck(),
    // An entry's stock and status before a PATCH whose inventory.updated event is wanted.
    inventoryEntry: db.prepare<[number], { quantity: number, status: string }>(`SELECT i.quantity, ${statusExpression('i.pet_id', 'i.quantity')} AS status FROM inventory i WHERE i.pet_id = ?`),
    upsertPet: db.prepare<PetColumns>(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
      VALUES (@id, @name, @categoryId, @categoryName, @photoUrls, @tags)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
        category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`),
    ensureInventory: db.prepare<[number]>('INSERT INTO inventory (pet_id, quantity) VALUES (?, 0) ON CONFLICT (pet_id) DO NOTHING'),
    upsertInventory: db.prepare<[number, number]>(`INSERT INTO inventory (pet_id, quantity) VALUES (?, ?)
      ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity`),
    upsertOrder: db.prepare<OrderColumns>(`INSERT INTO orders (id, pet_id, quantity, ship_date, status, complete)
      VALUES (@id, @petId, @quantity, @shipDate, @status, @complete)
      ON CONFLICT (id) DO UPDATE SET pet_id = excluded.pet_id, quantity = excluded.quantity,
        ship_date = excluded.ship_date, status = excluded.status, complete = excluded.complete`)
  }
}

export type Statements = ReturnType<typeof prepareStatements>
