import { join } from 'node:path'
import type { Response as InjectResponse } from 'light-my-request'
import { buildTestApp, tempDir, type Teardown, type TestApp, type TestAppOptions } from '../helpers/app.js'
import { REDIS_URL, redisPrefix } from '../helpers/redis.js'

export { REDIS, REDIS_SKIP, REDIS_URL, redisAvailable, redisPrefix, redisUrlThrough } from '../helpers/redis.js'

export type StoreKind = 'memory' | 'redis'
export const storeKinds: readonly StoreKind[] = ['memory', 'redis']

/** A clock the test moves: rate-limit windows and bans follow it, nothing sleeps. */
export interface TestClock {
  now: () => number
  set (ms: number): void
  advance (ms: number): void
}

/** 2026-05-04 12:00:20 UTC: before getPetById's sunset, 40 s before a minute ends. */
export const START = Date.UTC(2026, 4, 4, 12, 0, 20)

export function testClock (start = START): TestClock {
  let current = start
  return { now: () => current, set: (ms) => { current = ms }, advance: (ms) => { current += ms } }
}

export const minuteEnd = (ms: number) => Math.floor(ms / 60_000) * 60_000 + 60_000
export const dayEnd = (ms: number) => Math.floor(ms / 86_400_000) * 86_400_000 + 86_400_000

/**
 * For tests on real processes, which count on the real clock: the minute windows are aligned to
 * it (src/rate-limit/windows.ts), so a run of counted requests that straddles :00 starts again
 * from a fresh count half-way. Waits for the next minute when fewer than `roomMs` are left in
 * this one; returns how long it waited.
 */
export async function roomInThisMinute (roomMs: number): Promise<number> {
  const now = Date.now()
  const left = minuteEnd(now) - now
  if (left >= roomMs) return 0
  await new Promise((resolve) => setTimeout(resolve, left + 20))
  return left + 20
}

export interface LimitedAppOptions extends TestAppOptions {
  clock: TestClock
  /** Redis key prefix to share between instances; a fresh one when absent. */
  prefix?: string
  /** A SQLite file to share between instances (so they know the same keys). */
  databaseFile?: string
}

/** A test app with the rate limits on the given store, on the test's clock. */
export async function limitedApp (t: Teardown, kind: StoreKind, options: LimitedAppOptions): Promise<TestApp> {
  const { clock, prefix, databaseFile, env, ...rest } = options
  // A generous command timeout: on a loaded test machine the event loop can stall past the
  // production bound, and a timed-out command is served unlimited (fail open), which would make
  // the exact counts flaky. The outage tests set their own short one.
  const storeEnv: Record<string, string> = kind === 'redis'
    ? { REDIS_URL, REDIS_KEY_PREFIX: prefix ?? redisPrefix(t), REDIS_COMMAND_TIMEOUT_MS: '5000' }
    : {}
  const databaseEnv: Record<string, string> = databaseFile === undefined ? {} : { DATABASE_URL: `sqlite:${databaseFile}` }
  return buildTestApp(t, { ...rest, database: 'sqlite', now: clock.now, env: { ...storeEnv, ...databaseEnv, ...env } })
}

/** A SQLite file in a throwaway directory, for instances that must share their keys. */
export const sharedDatabaseFile = (t: Teardown) => join(tempDir(t), 'shared.db')

export interface RateLimitHeaders {
  limit: number
  remaining: number
  /** Unix seconds. */
  reset: number
  /** Seconds; undefined when absent. */
  retryAfter: number | undefined
}

/** The rate-limit headers of a response, as numbers (NaN when one is missing). */
export function limitHeaders (res: InjectResponse): RateLimitHeaders {
  const header = (name: string) => res.headers[name] === undefined ? Number.NaN : Number(res.headers[name])
  return {
    limit: header('x-ratelimit-limit'),
    remaining: header('x-ratelimit-remaining'),
    reset: header('x-ratelimit-reset'),
    retryAfter: res.headers['retry-after'] === undefined ? undefined : Number(res.headers['retry-after'])
  }
}

export const seconds = (ms: number) => ms / 1000

/** GET /v1/inventory with these headers, through the contract-checking request(). */
export function listInventory (api: TestApp, headers: Record<string, string>, extra: { remoteAddress?: string } = {}): Promise<InjectResponse> {
  return api.request({ method: 'GET', url: '/v1/inventory', headers, ...extra })
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** Resolves after `ms` milliseconds (for waiting on a reconnection, never on a rate-limit window). */
export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
