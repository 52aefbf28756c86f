/**
 * Window math for the rate limits. Windows are fixed and aligned to the UTC clock: a minute
 * window runs from :00 to :00, a day window from 00:00 UTC to 00:00 UTC. Every instance
 * therefore agrees on where a window starts without asking anyone, and the Reset a client
 * sees is the same whichever instance answers.
 */

export const MINUTE_MS = 60_000
export const DAY_MS = 86_400_000

export interface WindowBounds {
  /** Sequence number of the window since the epoch; part of the counter's key. */
  index: number
  start: number
  end: number
}

export function windowAt (now: number, lengthMs: number): WindowBounds {
  const index = Math.floor(now / lengthMs)
  return { index, start: index * lengthMs, end: (index + 1) * lengthMs }
}

/** One window's state after a request was counted. */
export interface WindowState {
  limit: number
  remaining: number
  /** Milliseconds since the epoch at which the window ends. */
  resetAt: number
}

/**
 * The window that binds: the one with the fewest requests left. On a tie the later reset wins,
 * because a client that has nothing left in both must wait for both.
 */
export function bindingWindow<T extends WindowState> (states: readonly T[]): T {
  let binding = states[0]
  if (binding === undefined) throw new Error('bindingWindow needs at least one window')
  for (const state of states) {
    if (state.remaining < binding.remaining || (state.remaining === binding.remaining && state.resetAt > binding.resetAt)) binding = state
  }
  return binding
}

/** Whole seconds from `now` until `at`, rounded up, and at least 1 (Retry-After). */
export function secondsUntil (now: number, at: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000))
}

/** A Unix timestamp in seconds for a moment in milliseconds, rounded up (X-RateLimit-Reset). */
export function unixSeconds (ms: number): number {
  return Math.ceil(ms / 1000)
}
