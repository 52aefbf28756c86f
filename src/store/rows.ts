import type { PetsTable } from './schema.js'
import type { InventoryItem, Order, Pet, PetRecord, PetStatus } from './types.js'

/**
 * How records are laid out in the tables of both engines, and turned back into API objects.
 * Text columns hold exactly what was written: photo URLs and tags as JSON text, timestamps as ISO
 * strings.
 */

/** A pet as stored (schema.ts), with its status computed by the query (statusExpression of sql.ts). */
export type PetRow = PetsTable & { status: string }

export function toPet (row: PetRow): Pet {
  // The columns hold the JSON text petColumns wrote from a validated pet.
  const photoUrls: Pet['photoUrls'] = JSON.parse(row.photo_urls)
  const pet: Pet = { id: row.id, name: row.name, photoUrls, status: toPetStatus(row.status) }
  if (row.category_id !== null && row.category_name !== null) pet.category = { id: row.category_id, name: row.category_name }
  if (row.tags !== null) {
    const tags: NonNullable<Pet['tags']> = JSON.parse(row.tags)
    pet.tags = tags
  }
  return pet
}

/** A word the database returned, checked against an enum of the schema rather than assumed. */
function enumOf<T extends string> (name: string, values: Record<T, T>): (text: string) => T {
  const byText = new Map<string, T>(Object.entries<T>(values))
  return (text) => {
    const value = byText.get(text)
    if (value === undefined) throw new TypeError(`unknown ${name} ${JSON.stringify(text)}`)
    return value
  }
}

/**
 * The status rule of openapi.yaml (PetStatus) in JavaScript, for what the database does not
 * compute itself (the inventory.updated events of an order's change): sold at 0, pending when
 * open orders reserve at least the stock, available otherwise. The same rule as statusExpression
 * (sql.ts); test/repositories/repository-suite.ts checks that the two agree, on both engines.
 */
export function statusOf (quantity: number, reserved: number): PetStatus {
  return quantity === 0 ? 'sold' : reserved >= quantity ? 'pending' : 'available'
}

/** The status words a query computes (statusExpression); typed over every PetStatus of the schema. */
export const toPetStatus = enumOf<PetStatus>('pet status', { available: 'available', pending: 'pending', sold: 'sold' })

/** An inventory row as selected with inventorySelectList (inventory-fields.ts): the fields under their names. */
export interface InventoryRow {
  petId: number
  quantity: number
  status: string
}

export function toInventoryItem (row: InventoryRow): InventoryItem {
  return { petId: row.petId, quantity: row.quantity, status: toPetStatus(row.status) }
}

/** The column values of one imported pet, in the order of the pets table. */
export interface PetColumns {
  id: number
  name: string
  categoryId: number | null
  categoryName: string | null
  photoUrls: string
  tags: string | null
}

export function petColumns (pet: PetRecord): PetColumns {
  return {
    id: pet.id,
    name: pet.name,
    categoryId: pet.category?.id ?? null,
    categoryName: pet.category?.name ?? null,
    photoUrls: JSON.stringify(pet.photoUrls),
    // Absent tags stay absent (NULL), which getPet tells apart from an empty list.
    tags: pet.tags === undefined ? null : JSON.stringify(pet.tags)
  }
}

/**
 * The orders column of every field of Order, typed over every key of the generated type: a field
 * added to the schema fails to compile here until it has its column, and orderColumns selects it.
 */
export const orderFields: { readonly [K in keyof Required<Order>]: string } = {
  id: 'id',
  petId: 'pet_id',
  quantity: 'quantity',
  shipDate: 'ship_date',
  status: 'status',
  complete: 'complete'
}

/** The orders columns under the names of Order, in its order. */
export const orderColumns = Object.entries(orderFields).map(([name, column]) => `${column} AS "${name}"`).join(', ')

/** An order as selected with orderColumns. */
export interface OrderRow {
  id: number
  petId: number
  quantity: number
  shipDate: string
  status: string
  /** A BOOLEAN on PostgreSQL, 0 or 1 on SQLite, which has no boolean type. */
  complete: boolean | number
}

const toOrderStatus = enumOf<Order['status']>('order status', { placed: 'placed', approved: 'approved', delivered: 'delivered' })

export function toOrder (row: OrderRow): Order {
  return {
    id: row.id,
    petId: row.petId,
    quantity: row.quantity,
    shipDate: row.shipDate,
    status: toOrderStatus(row.status),
    complete: row.complete === true || row.complete === 1
  }
}
