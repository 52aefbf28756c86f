import type { Order, Pet, PetRecord, PetStatus } from './types.js'

/**
 * How records are laid out in the tables of both engines, and turned back into API objects.
 * Text columns hold exactly what was written: photo URLs and tags as JSON text, timestamps as ISO
 * strings.
 */

/** A pet as stored, with its status computed by the query (statusExpression of sql.ts). */
export interface PetRow {
  id: number
  name: string
  category_id: number | null
  category_name: string | null
  photo_urls: string
  tags: string | null
  status: PetStatus
}

export function toPet (row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, photoUrls: JSON.parse(row.photo_urls) as string[], status: row.status }
  if (row.category_id !== null && row.category_name !== null) pet.category = { id: row.category_id, name: row.category_name }
  if (row.tags !== null) pet.tags = JSON.parse(row.tags) as NonNullable<Pet['tags']>
  return pet
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
 * The api_keys columns under the names of ApiKeyRecord, so that a row is the record. Quoted
 * aliases keep their case on both engines (PostgreSQL folds unquoted names to lower case).
 */
export const keyColumns = 'id, name, plan, per_minute AS "perMinute", per_day AS "perDay", created_at AS "createdAt", revoked_at AS "revokedAt"'

/** The orders columns under the names of Order. */
export const orderColumns = 'id, pet_id AS "petId", quantity, ship_date AS "shipDate", status, complete'

/** `complete` is a BOOLEAN on PostgreSQL and 0 or 1 on SQLite, which has no boolean type. */
export type OrderRow = Omit<Order, 'complete'> & { complete: boolean | number }

export const toOrder = (row: OrderRow): Order => ({ ...row, complete: row.complete === true || row.complete === 1 })
