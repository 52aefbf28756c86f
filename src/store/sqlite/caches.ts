import type { JsonListVersion } from '../../contract/json-list.js'
import type { ApiKeyRecord, Pet } from '../types.js'
import { StampedCache } from './stamped-cache.js'

/** Cached values are shared by every request that reads them: none may change one. */
function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/**
 * The current version of the inventory list, active keys by hash and pets by id, as
 * last read: one in-memory lookup instead of a query per request. Only what exists is kept, and
 * each map is bounded. (A list whose stamp has changed is brought up to date by its LoggedList,
 * which re-reads only what changed.)
 *
 * Change detection: the database's change counter (PRAGMA data_version) changes whenever another
 * connection commits (the keys CLI, db seed, another server process on the same file), but not
 * for this connection's own commits, which are counted here instead. A value is used only while
 * both are as they were when it was read; the counter is read before the value, so a value is
 * never older than its stamp (a newer one is only read again).
 */
export class ReadCaches {
  private inventoryWrites = 0
  private keyWrites = 0
  private readonly lists = new StampedCache<'inventory', JsonListVersion>(1)
  private readonly activeKeys = new StampedCache<string, ApiKeyRecord | undefined>(10_000)
  private readonly pets = new StampedCache<number, Pet | undefined>(10_000)

  constructor (private readonly changeCounter: () => number) {}

  /** Counts a write of this connection; also one that failed (a needless re-read is harmless). */
  wrote (what: 'inventory' | 'keys' | 'all'): void {
    if (what !== 'keys') this.inventoryWrites++
    if (what !== 'inventory') this.keyWrites++
  }

  list (name: 'inventory', sync: () => JsonListVersion): JsonListVersion {
    return this.lists.get(this.changeCounter(), this.inventoryWrites, name, sync)
  }

  pet (petId: number, load: () => Pet | undefined): Pet | undefined {
    return this.pets.get(this.changeCounter(), this.inventoryWrites, petId, () => deepFreeze(load()))
  }

  activeKey (keyHash: string, load: () => ApiKeyRecord | undefined): ApiKeyRecord | undefined {
    return this.activeKeys.get(this.changeCounter(), this.keyWrites, keyHash, () => deepFreeze(load()))
  }
}
