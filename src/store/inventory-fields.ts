import { statusExpression } from './sql.js'
import type { InventoryItem } from './types.js'

/** The SQL of one field's value, over the inventory row named `row` (a table name or an alias). */
export type FieldSql = (row: string) => string

/**
 * Every field of InventoryItem as SQL over an inventory row, in the order of the JSON text both
 * engines send. The type covers every key of the generated type, so a field added to the schema
 * in openapi.yaml (then `npm run generate`) fails to compile here until it has its SQL; every
 * statement that lists inventory, as rows or as JSON text built by the database, is made from
 * this map and so produces every field. The one item built without it, SQLite's answer to a
 * PATCH (from the stock written and the status rule), is typed Required<InventoryItem>, so a new
 * field fails to compile there too.
 */
export const inventoryFields: { readonly [K in keyof Required<InventoryItem>]: FieldSql } = {
  petId: (row) => `${row}.pet_id`,
  quantity: (row) => `${row}.quantity`,
  status: (row) => statusExpression(`${row}.pet_id`, `${row}.quantity`)
}

const fields: readonly [string, FieldSql][] = Object.entries(inventoryFields)

/**
 * Each field under its own name (`… AS "petId", …`): a row of these columns is an InventoryRow
 * (rows.ts). Quoted aliases keep their case on both engines.
 */
export function inventorySelectList (row: string): string {
  return fields.map(([name, sql]) => `${sql(row)} AS "${name}"`).join(', ')
}

/**
 * PostgreSQL: the JSON object of a row `f` whose columns are the fields (inventorySelectList), as
 * compact text: the bytes JSON.stringify gives the item, and SQLite's json_object. to_json
 * writes numbers as digits and escapes strings as JSON does.
 */
export function postgresInventoryJson (f: string): string {
  return `'{' || ${fields.map(([name], i) => `'${i === 0 ? '' : ','}${JSON.stringify(name)}:' || to_json(${f}."${name}")::text`).join(' || ')} || '}'`
}

/** SQLite: the same JSON object, straight from an inventory row `row`. */
export function sqliteInventoryJson (row: string): string {
  return `json_object(${fields.map(([name, sql]) => `'${name}', ${sql(row)}`).join(', ')})`
}
