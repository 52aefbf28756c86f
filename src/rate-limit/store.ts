import type { MaybePromise } from '../maybe-promise.js'

/** When a client is banned: more than `banAfter` requests past `max` in one window ban it for `banMs`. */
export interface BanRule {
  max: number
  banAfter: number
  banMs: number
}

export interface HitResult {
  /** The window's count after this request (unchanged while the client is banned). */
  count: number
  /** The end of the client's ban, when it is banned now (this request may have started the ban). */
  bannedUntil: number | undefined
}

/**
 * Where the rate-limit counters and bans live: process memory (one instance) or Redis (shared by
 * every instance). Times are milliseconds since the epoch on the caller's clock, passed in so
 * tests can move time; the stores never read a clock of their own.
 */
export interface RateLimitStore {
  /**
   * One atomic step for one request of `client` in the window of `lengthMs` that contains `now`:
   * while the client is banned nothing is counted; otherwise the request is counted, and a count
   * past `rule.max + rule.banAfter` bans the client until `now + rule.banMs`.
   * Concurrent callers (on every instance) each get a distinct count.
   */
  hit (client: string, lengthMs: number, now: number, rule: BanRule): MaybePromise<HitResult>
  /** Resolves when the store answers (for /readyz). */
  ping (): Promise<void>
  close (): Promise<void>
}
