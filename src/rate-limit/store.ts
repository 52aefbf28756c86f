/** A value, or a promise of one: the in-memory store answers at once, Redis after a round trip. */
export type MaybePromise<T> = T | Promise<T>

/**
 * Where the rate-limit counters and bans live: process memory (one instance) or Redis (shared by
 * every instance). Times are milliseconds since the epoch on the caller's clock, passed in so
 * tests can move time; the stores never read a clock of their own.
 */
export interface RateLimitStore {
  /**
   * Counts one request of `client` in the window of `lengthMs` that contains `now` and returns the
   * window's count. While the client is banned nothing is counted: the count is returned as it is.
   * Atomic: concurrent callers (on every instance) each get a distinct count.
   */
  hit (client: string, lengthMs: number, now: number): MaybePromise<number>
  /** The end of the client's ban, when it is banned at `now`. */
  bannedUntil (client: string, now: number): MaybePromise<number | undefined>
  /** Bans the client until `until`, unless it is banned already; returns the end of the ban in force. */
  ban (client: string, until: number, now: number): Promise<number>
  /** Resolves when the store answers (for /readyz). */
  ping (): Promise<void>
  close (): Promise<void>
}
