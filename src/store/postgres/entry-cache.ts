import type { Invalidations } from './invalidations.js'

/** Cached values are shared by every request that reads them: none may change one. */
export function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/**
 * Values by key (pets by id, active keys by hash), as last read, bounded in number; a value is
 * kept only when `changes` says nothing may have changed it since its statement began. Absent
 * values are not kept: a key that does not exist costs a lookup each time.
 */
export class EntryCache<K, V> {
  private readonly entries = new Map<K, V>()

  constructor (private readonly changes: Invalidations<K>, private readonly maxEntries: number) {}

  /** The cached value, if any: no lookup, no promise. */
  peek (key: K): V | undefined {
    return this.entries.get(key)
  }

  async get (key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.entries.get(key)
    if (cached !== undefined) return cached
    const since = this.changes.beginRead()
    try {
      const value = await load()
      if (value !== undefined && this.changes.fresh(key, since)) {
        if (this.entries.size >= this.maxEntries) this.entries.clear()
        this.entries.set(key, deepFreeze(value))
      }
      return value
    } finally {
      this.changes.endRead()
    }
  }

  /** The values of several keys: those cached, and the others read by one `load`. */
  async getMany (keys: readonly K[], load: (missing: K[]) => Promise<ReadonlyMap<K, V>>): Promise<Map<K, V>> {
    const found = new Map<K, V>()
    const missing: K[] = []
    for (const key of keys) {
      const cached = this.entries.get(key)
      if (cached !== undefined) found.set(key, cached)
      else missing.push(key)
    }
    if (missing.length === 0) return found
    const since = this.changes.beginRead()
    try {
      for (const [key, value] of await load(missing)) {
        found.set(key, value)
        if (this.changes.fresh(key, since)) {
          if (this.entries.size >= this.maxEntries) this.entries.clear()
          this.entries.set(key, deepFreeze(value))
        }
      }
      return found
    } finally {
      this.changes.endRead()
    }
  }

  /** Replaces a cached value (this instance wrote the change, as the last writer). */
  update (key: K, change: (value: V) => V): void {
    const cached = this.entries.get(key)
    if (cached !== undefined) this.entries.set(key, deepFreeze(change(cached)))
  }

  changed (keys: Iterable<K>): void {
    for (const key of keys) this.entries.delete(key)
  }

  changedAll (): void {
    this.entries.clear()
  }
}
