import type { Invalidations } from './invalidations.js'
import { SortedEntries } from './sorted-entries.js'

export interface ListSource<V, T> {
  /** Every entry, ascending by id. */
  all (): Promise<{ ids: number[], values: V[] }>
  /** The entries of these ids that exist. */
  some (ids: number[]): Promise<Map<number, V>>
  /** The whole list read at once, for when nothing may be cached. */
  uncached (): Promise<T>
}

export interface ListRendering<V, R, T> {
  /** A chunk of consecutive entries. */
  chunk (values: readonly V[]): R
  /** The list from its chunks' renderings (none of them empty). */
  whole (chunks: readonly R[]): T
}

/**
 * A list ordered by id, kept in memory and brought up to date entry by entry: a change announced
 * by another connection marks its entries stale, and the next read of the list reads only those
 * again; a write of this instance puts what it wrote in place. The rendering (the JSON text of
 * the inventory, the array of orders) is made from per-chunk renderings, so it is as if the whole
 * list had been read again, without reading or rendering the rest.
 *
 * A read returns a list that holds every write this instance finished and every change it was
 * told of before the read began: it joins a refresh already under way only when nothing happened
 * since that refresh started, and otherwise waits for the next one.
 */
export class CachedList<V, R, T> {
  private entries: SortedEntries<V, R> | undefined
  private rendered: T | undefined
  private readonly stale = new Set<number>()
  private refreshing: { since: number, result: Promise<T> } | undefined

  constructor (
    private readonly changes: Invalidations<number>,
    private readonly source: ListSource<V, T>,
    private readonly rendering: ListRendering<V, R, T>
  ) {}

  async get (): Promise<T> {
    if (!this.changes.caching) return this.source.uncached()
    const arrived = this.changes.now()
    for (;;) {
      const refreshing = this.refreshing
      if (refreshing === undefined) {
        if (this.entries !== undefined && this.stale.size === 0) return this.render(this.entries)
        return this.refresh()
      }
      if (refreshing.since >= arrived) return refreshing.result
      await refreshing.result.catch(() => {})
    }
  }

  /** Other connections changed these entries: read them again before the list is next used. */
  changed (ids: Iterable<number>): void {
    if (this.entries === undefined) return
    for (const id of ids) this.stale.add(id)
  }

  changedAll (): void {
    this.entries = undefined
    this.rendered = undefined
    this.stale.clear()
  }

  /** This instance wrote the entry, as the last writer (undefined: the entry does not exist). */
  wrote (id: number, value: V | undefined): void {
    if (this.entries === undefined) return
    if (value === undefined) this.entries.delete(id)
    else this.entries.set(id, value)
    this.rendered = undefined
  }

  /** The rendering of the list, kept until it changes; of entries no longer kept, made once. */
  private render (entries: SortedEntries<V, R>): T {
    if (entries !== this.entries) return this.rendering.whole(entries.renderings())
    return (this.rendered ??= this.rendering.whole(entries.renderings()))
  }

  private refresh (): Promise<T> {
    const since = this.changes.beginRead()
    const result = this.entries === undefined ? this.loadAll(since) : this.loadStale(this.entries, since)
    const refreshing = { since, result }
    this.refreshing = refreshing
    const done = () => {
      this.changes.endRead()
      if (this.refreshing === refreshing) this.refreshing = undefined
    }
    result.then(done, done)
    return result
  }

  private async loadAll (since: number): Promise<T> {
    const { ids, values } = await this.source.all()
    const entries = new SortedEntries(ids, values, this.rendering.chunk)
    const stale = this.changes.staleSince(since)
    // Everything changed meanwhile, or caching stopped: the text is still newer than the request.
    if (stale === undefined) return this.rendering.whole(entries.renderings())
    this.entries = entries
    this.rendered = undefined
    this.stale.clear()
    for (const id of stale) this.stale.add(id)
    return this.render(entries)
  }

  private async loadStale (entries: SortedEntries<V, R>, since: number): Promise<T> {
    const ids = [...this.stale]
    this.stale.clear()
    let found: Map<number, V>
    try {
      found = await this.source.some(ids)
    } catch (error) {
      if (entries === this.entries) for (const id of ids) this.stale.add(id)
      throw error
    }
    const kept = entries === this.entries
    for (const id of ids) {
      // A value read while the entry changed again is still newer than the request, but is read
      // once more before the next use.
      if (kept && !this.changes.fresh(id, since)) this.stale.add(id)
      const value = found.get(id)
      if (value === undefined) entries.delete(id)
      else entries.set(id, value)
    }
    if (kept) this.rendered = undefined
    return this.render(entries)
  }
}
