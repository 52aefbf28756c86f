interface Entry<V> { value: V, expiresAt: number }

/**
 * A Map whose entries expire, holding at most `maxEntries`: when full, the entry written longest
 * ago is dropped, so what clients send can never grow it further. Expired entries are dropped when
 * read, and by `sweep`, which inspects at most `sweepBatch` entries per call and resumes where the
 * last call stopped, so no call holds the event loop for long however many entries there are.
 */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, Entry<V>>()
  // A Map iterator stays valid while the map changes: the sweep walks it across calls.
  private sweepCursor: Iterator<[K, Entry<V>]> | undefined

  constructor (readonly maxEntries: number, readonly sweepBatch = 1000) {
    if (!(maxEntries >= 1)) throw new RangeError('an ExpiringMap holds at least one entry')
  }

  get size (): number {
    return this.entries.size
  }

  /** The value, unless it has expired at `now` (it is then dropped). */
  get (key: K, now: number): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  /** Writes the entry as the newest one. */
  set (key: K, value: V, expiresAt: number): void {
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt })
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
  }

  delete (key: K): void {
    this.entries.delete(key)
  }

  /** Drops expired entries among the next `sweepBatch`; returns how many it dropped. */
  sweep (now: number): number {
    let dropped = 0
    for (let inspected = 0; inspected < this.sweepBatch; inspected++) {
      this.sweepCursor ??= this.entries.entries()
      const next = this.sweepCursor.next()
      if (next.done === true) {
        this.sweepCursor = undefined
        break
      }
      const [key, entry] = next.value
      if (entry.expiresAt <= now) {
        this.entries.delete(key)
        dropped++
      }
    }
    return dropped
  }

  clear (): void {
    this.entries.clear()
    this.sweepCursor = undefined
  }
}
