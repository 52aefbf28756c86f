import { JsonList, type JsonListVersion } from '../../contract/json-list.js'

/** Where a list's element texts come from, in one read transaction. */
export interface ListSource {
  /** Every element as [key, JSON text], in ascending key order (a full build). */
  all (): Iterable<readonly [number, string]>
  /** The keys logged in list_changes after `seq`, each with its current text (null: it is gone). */
  changedAfter (seq: number): Iterable<readonly [number, string | null]>
}

/**
 * A list kept in memory and brought up to date from the list_changes log (migration 002): when the
 * database has changed, only the keys logged after the last row applied are read again. It is
 * built in full the first time, when rows it has not applied were already deleted from the log,
 * and when so many changes are pending that reading them one by one would cost more.
 */
export class LoggedList {
  readonly list = new JsonList()
  /** The last log row applied; undefined before the first build. */
  private applied: number | undefined

  constructor (private readonly source: ListSource) {}

  /** `oldest` and `newest` are the log's first and last seq in the same read transaction (null: empty). */
  sync (oldest: number | null, newest: number | null): JsonListVersion {
    const last = newest ?? 0
    const applied = this.applied
    if (applied === undefined || last < applied || (oldest !== null && oldest > applied + 1) ||
        last - applied > Math.max(1000, this.list.size / 4)) {
      this.list.reset(this.source.all())
    } else if (last > applied) {
      for (const [key, text] of this.source.changedAfter(applied)) {
        if (text === null) this.list.delete(key)
        else this.list.set(key, text)
      }
    }
    this.applied = last
    return this.list.version()
  }
}
