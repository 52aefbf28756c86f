import { CatalogueError } from './catalogue.js'
import type { Catalogue, Store } from './types.js'
import { petsRepository } from '../repositories/pets.js'

/** Pets per import: each batch is one transaction, and only one batch is in memory at a time. */
export const SYNTHETIC_BATCH_SIZE = 10_000

/**
 * Ids for `count` synthetic pets after the highest existing one. Refuses to pass 2^53 − 1, the
 * largest id openapi.yaml allows (beyond it the ids could not even be counted exactly).
 */
export function syntheticIdRange (highestId: number, count: number): { first: number, last: number } {
  const first = highestId + 1
  const last = highestId + count
  if (!Number.isSafeInteger(last)) {
    throw new CatalogueError(`cannot add ${count} synthetic pets after pet ${highestId}: ids would pass ${Number.MAX_SAFE_INTEGER}`)
  }
  return { first, last }
}

function batch (first: number, size: number): Catalogue {
  const pets = new Array<{ id: number, name: string, photoUrls: string[] }>(size)
  const inventory = new Array<{ petId: number, quantity: number }>(size)
  for (let i = 0; i < size; i++) {
    const id = first + i
    pets[i] = { id, name: `Pet ${id}`, photoUrls: [] }
    inventory[i] = { petId: id, quantity: id % 50 }
  }
  return { pets, inventory }
}

/**
 * Adds `count` pets named "Pet <id>" after the highest existing pet id, each with an inventory
 * entry of quantity id % 50 (`db seed --synthetic N`, benchmarks). On an empty database that is
 * exactly `count` entries, ids 1 to `count`.
 *
 * Imported in batches of SYNTHETIC_BATCH_SIZE, each its own transaction: if one fails, the batches before
 * it stay, and the error says how many pets were added. Meant for a database nobody else is adding
 * pets to at the same time (a pet imported concurrently under one of the new ids would be
 * overwritten).
 */
export async function addSyntheticPets (store: Store, count: number): Promise<void> {
  if (!Number.isSafeInteger(count) || count < 0) throw new CatalogueError(`the number of synthetic pets must be a whole number, got ${count}`)
  const { first } = syntheticIdRange(await petsRepository(store).highestId(), count)
  for (let added = 0; added < count; added += SYNTHETIC_BATCH_SIZE) {
    try {
      await store.importCatalogue(batch(first + added, Math.min(SYNTHETIC_BATCH_SIZE, count - added)))
    } catch (error) {
      if (added === 0) throw error
      throw new Error(`added ${added} of ${count} synthetic pets (ids ${first} to ${first + added - 1}), then: ${(error as Error).message}`, { cause: error })
    }
  }
}
