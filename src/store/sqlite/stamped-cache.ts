/**
 * A bounded map whose entries are valid only under one stamp (for the SQLite store: the database's
 * change counter and this connection's own write count). A lookup under another stamp empties it
 * first, so nothing is ever served that a fresh query under the current stamp would not return.
 */
export class StampedCache<K, V> {
  private readonly entries = new Map<K, V>()
  private stampA = NaN
  private stampB = NaN

  constructor (private readonly maxEntries: number) {}

  /** The cached value of `key` under this stamp, or what `load` returns (which is then kept). */
  get (stampA: number, stampB: number, key: K, load: () => V): V {
    if (stampA !== this.stampA || stampB !== this.stampB) {
      this.entries.clear()
      this.stampA = stampA
      this.stampB = stampB
    }
    const cached = this.entries.get(key)
    if (cached !== undefined) return cached
    const value = load()
    if (value === undefined) return value
    if (this.entries.size >= this.maxEntries) this.entries.clear()
    this.entries.set(key, value)
    return value
  }
}
