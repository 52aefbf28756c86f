import { Redis } from 'ioredis'
import type { BanRule, HitResult, RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

// Both scripts run atomically in Redis, so instances sharing it count together exactly.
// Times come from the caller (ARGV) rather than Redis' clock, so a test clock works here too;
// key expiry only reclaims memory and never decides whether a window or a ban is over.

/**
 * KEYS: counter, ban. ARGV: now, counter expiry (ms), max, banAfter (-1: never), ban end, ban expiry (ms).
 * Returns {count, end of the ban in force or -1}. While banned nothing is counted; a count more than
 * banAfter past max starts a ban, in the same atomic step.
 */
const HIT = `
local ban = redis.call('GET', KEYS[2])
if ban and tonumber(ban) > tonumber(ARGV[1]) then
  return { tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(ban) }
end
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local banAfter = tonumber(ARGV[4])
if banAfter >= 0 and count - tonumber(ARGV[3]) > banAfter then
  redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
  return { count, tonumber(ARGV[5]) }
end
return { count, -1 }
`

interface RateLimitCommands {
  rateLimitHit (counterKey: string, banKey: string, now: number, expiryMs: number, max: number, banAfter: number, banUntil: number, banExpiryMs: number): Promise<[number, number]>
}

export interface RedisStoreOptions {
  url: string
  /** Prepended to every key, so several deployments (or tests) can share one Redis. */
  keyPrefix: string
  /** Longest a command may take before it fails (and the request is served unlimited). */
  commandTimeoutMs: number
  /** Errors of the connection itself (it reconnects on its own); logged by the caller. */
  onConnectionError?: (error: Error) => void
}

/** Grace kept after a window ends before Redis drops its counter. */
const EXPIRY_GRACE_MS = 60_000

/** Idle time after which TCP probes the connection, so a host gone without a reset is found even without traffic. */
const KEEPALIVE_DELAY_MS = 10_000

/** What the first connection came to: ready, not (yet) reached, or refused (the reason, naming REDIS_URL's part). */
export type FirstConnection = { state: 'ready' | 'unreachable' } | { state: 'refused', reason: string }

/** Counters and bans in Redis: shared by every instance, and kept when an instance restarts. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly redis: Redis & RateLimitCommands
  private readonly prefix: string
  /**
   * Set while the server refuses the database REDIS_URL names (its SELECT failed): ioredis would
   * still go on, in database 0, so nothing is counted until a connection selects it.
   */
  private refusal: Error | undefined

  constructor (options: RedisStoreOptions) {
    this.prefix = options.keyPrefix
    const redis = new Redis(options.url, {
      // Fail fast while Redis is away, so that a request is served (fail open) rather than queued:
      // no offline queue, no retry of a command, and a bound on every command.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // A counting command cut off mid-flight is not sent again: it may have counted already.
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.commandTimeoutMs,
      // A peer that goes silent without closing the connection (a host gone without a reset, a
      // firewall that forgot it): once a command has waited this long without a byte back, the
      // connection is destroyed and another one opened. Until one is ready, requests are served
      // at once (fail open) rather than each waiting out its command time-out.
      socketTimeout: Math.max(1000, options.commandTimeoutMs * 2),
      keepAlive: KEEPALIVE_DELAY_MS,
      connectTimeout: Math.max(1000, options.commandTimeoutMs * 5),
      // Keep reconnecting for as long as it takes, at most a second apart.
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000)
    })
    redis.on('connect', () => { this.refusal = undefined })
    redis.on('error', (error: Error & { command?: { name?: string } }) => {
      if (error.command?.name === 'select') {
        this.refusal = new Error(`Redis refused database ${redis.options.db ?? 0} (${error.message})`)
        // Tried again on a new connection (a server restarted with fewer databases may come back).
        redis.disconnect(true)
      }
      options.onConnectionError?.(error)
    })
    redis.defineCommand('rateLimitHit', { numberOfKeys: 2, lua: HIT })
    this.redis = redis as Redis & RateLimitCommands
  }

  /** Waits until the first connection is ready, for at most `timeoutMs`, and says how it went. */
  async connected (timeoutMs: number): Promise<FirstConnection> {
    const ready = this.redis.status === 'ready' || await new Promise<boolean>((resolve) => {
      const done = (answer: boolean) => {
        clearTimeout(timer)
        this.redis.off('ready', onReady)
        resolve(answer)
      }
      const onReady = () => done(true)
      const timer = setTimeout(() => done(false), timeoutMs)
      this.redis.on('ready', onReady)
    })
    // The database's SELECT is answered before 'ready', so its refusal is known here.
    if (this.refusal !== undefined) return { state: 'refused', reason: this.refusal.message }
    return { state: ready ? 'ready' : 'unreachable' }
  }

  async hit (client: string, lengthMs: number, now: number, rule: BanRule): Promise<HitResult> {
    if (this.refusal !== undefined) throw this.refusal
    const window = windowAt(now, lengthMs)
    const counterKey = `${this.prefix}${client}:${lengthMs}:${window.index}`
    // Lua numbers cannot hold Infinity: "never ban" travels as -1.
    const banAfter = Number.isFinite(rule.banAfter) ? rule.banAfter : -1
    const [count, bannedUntil] = await this.redis.rateLimitHit(counterKey, this.banKey(client), now, window.end - now + EXPIRY_GRACE_MS,
      rule.max, banAfter, now + rule.banMs, rule.banMs + EXPIRY_GRACE_MS)
    return { count, bannedUntil: bannedUntil < 0 ? undefined : bannedUntil }
  }

  async ping (): Promise<void> {
    if (this.refusal !== undefined) throw this.refusal
    await this.redis.ping()
  }

  async close (): Promise<void> {
    if (this.redis.status === 'ready') {
      await this.redis.quit().catch(() => this.redis.disconnect())
    } else {
      this.redis.disconnect()
    }
  }

  private banKey (client: string): string {
    return `${this.prefix}${client}:ban`
  }
}
