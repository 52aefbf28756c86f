import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

type IncrCallback = Parameters<FastifyRateLimitStore['incr']>[1]

/**
 * Presents a RateLimitStore as a `@fastify/rate-limit` store: `incr` counts the request in the
 * clock-aligned window of the limiter's `timeWindow` and reports the count and the time left in
 * that window. Every limiter made from it (one per window) shares the same counters and bans.
 */
export function pluginStore (store: RateLimitStore, now: () => number): FastifyRateLimitStoreCtor {
  return class PluginStore implements FastifyRateLimitStore {
    incr (key: string, callback: IncrCallback, timeWindow: number): void {
      const at = now()
      const ttl = windowAt(at, timeWindow).end - at
      let count: number | Promise<number>
      try {
        count = store.hit(key, timeWindow, at)
      } catch (error) {
        callback(error as Error)
        return
      }
      // A synchronous store answers in this same call: no promise per request.
      if (typeof count === 'number') callback(null, { current: count, ttl })
      else count.then((current) => callback(null, { current, ttl }), (error: Error) => callback(error))
    }

    // The counters are keyed by window length already, so a child needs no namespace of its own.
    child (): FastifyRateLimitStore {
      return this
    }
  }
}
