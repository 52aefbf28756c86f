/** Above this many remembered changes, all of them are forgotten and in-flight reads keep nothing. */
const MAX_REMEMBERED = 50_000

/**
 * When a value read from the database may be kept in a cache, for one kind of entry (pets by id,
 * orders by id, keys by hash).
 *
 * Events are numbered: changes announced by other connections, this instance's own writes
 * starting and ending, and "everything changed". A read notes the number when it starts and may
 * keep what it read only if no event touched that entry since, and no write of this instance to
 * it is under way: otherwise its statement may have run before a change it would hide. Caching
 * is off (nothing is fresh) while the instance is not listening for changes.
 */
export class Invalidations<K> {
  private sequence = 0
  /** Reads that started before this number keep nothing. */
  private floor = 0
  private enabled = false
  private readsInFlight = 0
  /** The number of the last event of each entry, while a read that started before it may still be in flight. */
  private readonly touched = new Map<K, number>()
  /** This instance's writes under way per entry; contended when another write or a change overlapped one. */
  private readonly writes = new Map<K, { count: number, contended: boolean }>()

  get caching (): boolean {
    return this.enabled
  }

  /** Turns caching on or off; either way, nothing read before may be kept. */
  setCaching (on: boolean): void {
    this.enabled = on
    this.changedAll()
  }

  /** The number of the last event. */
  now (): number {
    return this.sequence
  }

  beginRead (): number {
    this.readsInFlight++
    return this.sequence
  }

  endRead (): void {
    // With no read in flight, no read can be older than a remembered event.
    if (--this.readsInFlight === 0) this.touched.clear()
  }

  /** Whether a value of `key` read by a statement begun at `since` (beginRead) may be kept. */
  fresh (key: K, since: number): boolean {
    return this.enabled && since >= this.floor && (this.touched.get(key) ?? 0) <= since && !this.writes.has(key)
  }

  /**
   * For a read of every entry begun at `since`: undefined when nothing it read may be kept, else
   * the entries to read again before they are used (changed since, or being written).
   */
  staleSince (since: number): K[] | undefined {
    if (!this.enabled || since < this.floor) return undefined
    const stale = new Set(this.writes.keys())
    for (const [key, event] of this.touched) if (event > since) stale.add(key)
    return [...stale]
  }

  /** Another connection changed these entries. */
  changed (keys: Iterable<K>): void {
    const event = ++this.sequence
    for (const key of keys) {
      this.touch(key, event)
      const write = this.writes.get(key)
      if (write !== undefined) write.contended = true
    }
  }

  /** Any entry may have changed. */
  changedAll (): void {
    this.floor = ++this.sequence
    this.touched.clear()
    for (const write of this.writes.values()) write.contended = true
  }

  beginWrite (key: K): void {
    this.touch(key, ++this.sequence)
    const write = this.writes.get(key)
    if (write === undefined) this.writes.set(key, { count: 1, contended: false })
    else {
      write.count++
      write.contended = true
    }
  }

  /**
   * Ends a write begun with beginWrite. True when what it wrote is the entry's current value as
   * far as this instance can tell: no other write or change overlapped it, and caching is on.
   */
  endWrite (key: K): boolean {
    this.touch(key, ++this.sequence)
    const write = this.writes.get(key)
    if (write === undefined) return false
    if (--write.count === 0) this.writes.delete(key)
    return this.enabled && !write.contended
  }

  private touch (key: K, event: number): void {
    if (this.readsInFlight === 0) return
    this.touched.set(key, event)
    if (this.touched.size > MAX_REMEMBERED) {
      this.touched.clear()
      this.floor = event
    }
  }
}
