import type { Pet, Store } from '../store/types.js'

/** Pets, with the status their stock and open orders give (cached by each engine). */
export interface PetsRepository {
  get (petId: number): Promise<Pet | undefined>
}

export function petsRepository (store: Store): PetsRepository {
  return {
    get: (petId) => store.getPet(petId)
  }
}
