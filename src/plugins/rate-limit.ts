import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError, StoreUnavailableError } from '../errors.js'
import type { PlanLimits } from '../openapi/document.js'
import type { ApiKeyRecord } from '../store/types.js'
import { MemoryRateLimitStore } from '../rate-limit/memory-store.js'
import { pluginStore } from '../rate-limit/plugin-store.js'
import { RedisRateLimitStore } from '../rate-limit/redis-store.js'
import type { RateLimitStore } from '../rate-limit/store.js'
import { bindingWindow, DAY_MS, limitsFor, MINUTE_MS, secondsUntil, unixSeconds, windowAt, type WindowState } from '../rate-limit/windows.js'

export interface RateLimitOptions {
  /** info.x-rate-limit-plans of openapi.yaml. */
  plans: Readonly<Record<string, PlanLimits>>
  /** More requests than this past the limit in one window ban the client. */
  banAfter: number
  banSeconds: number
  /** Counters and bans in Redis; in process memory when absent. */
  redis?: { url: string, keyPrefix: string, commandTimeoutMs: number } | undefined
  /** Milliseconds since the epoch. */
  now: () => number
}

/** Who a request is counted for, and with which limits; set by the limiter's onRequest hook. */
export interface RateLimitClient {
  /** `key:<id>` for a valid API key, `ip:<address>` otherwise (IPv6 by /64). */
  key: string
  limits: PlanLimits
}

const windows = [
  { name: 'minute', lengthMs: MINUTE_MS, limitOf: (limits: PlanLimits) => limits.perMinute },
  { name: 'day', lengthMs: DAY_MS, limitOf: (limits: PlanLimits) => limits.perDay }
] as const

function setHeaders (reply: FastifyReply, limit: number, remaining: number, resetAt: number): void {
  reply.header('x-ratelimit-limit', limit)
  reply.header('x-ratelimit-remaining', remaining)
  reply.header('x-ratelimit-reset', unixSeconds(resetAt))
}

/**
 * The plan limits of PRODUCT.md §5, as an onRequest hook of the /v1 scope. It must be registered
 * after the authentication plugin (whose hook identifies the key) and before the hook that answers
 * 401, so that failed authentications are counted, per client address, and carry the headers.
 *
 * What counts: every request under /v1 that reaches this hook counts once in both windows,
 * whatever its answer (2xx, 4xx, and 429 rate_limited too), except while its client is banned.
 * `@fastify/rate-limit` does the counting, with one limiter per window over a shared store; this
 * hook runs both on every request, so a request refused by one window is still counted by the
 * other, and answers for the binding window. Its own `ban` flag (more than `banAfter` requests past
 * the limit in a window) starts a ban of `banSeconds`, kept in the same store.
 */
async function rateLimit (app: FastifyInstance, options: RateLimitOptions) {
  limitsFor(null, options.plans) // the anonymous plan must exist: fail at boot, not per request
  const { now } = options
  const banMs = options.banSeconds * 1000

  let storeDown = false
  const storeFailed = (error: unknown) => {
    if (storeDown) return
    storeDown = true
    app.log.warn({ err: error }, 'rate-limit store unreachable: serving requests without rate limits (fail open) until it answers again')
  }
  const storeAnswered = () => {
    if (!storeDown) return
    storeDown = false
    app.log.info('rate-limit store reachable again: rate limits are enforced')
  }

  let store: RateLimitStore
  if (options.redis) {
    const redisStore = new RedisRateLimitStore({
      ...options.redis,
      onConnectionError: (error) => app.log.debug({ err: error }, 'rate-limit store connection error')
    })
    store = redisStore
    app.addReadinessCheck('rate-limit-store', () => redisStore.ping())
    if (!await redisStore.connected(Math.max(1000, options.redis.commandTimeoutMs * 5))) {
      storeFailed(new Error(`cannot connect to Redis at ${new URL(options.redis.url).host}`))
    }
  } else {
    store = new MemoryRateLimitStore()
  }
  app.addHook('onClose', async () => { await store.close() })

  app.decorateRequest('rateLimitClient', null)
  const clientOf = (request: FastifyRequest): RateLimitClient => {
    if (request.rateLimitClient === null) throw new Error('the rate-limit hook has not run for this request')
    return request.rateLimitClient
  }

  await app.register(fastifyRateLimit, {
    global: false,
    store: pluginStore(store, now),
    keyGenerator: (request) => clientOf(request).key,
    skipOnError: false
  })
  const limiters = windows.map((window) => ({
    ...window,
    check: app.createRateLimit({
      timeWindow: window.lengthMs,
      max: (request) => window.limitOf(clientOf(request).limits),
      ban: options.banAfter
    })
  }))

  // Who a key's requests are counted for, made once per key record: the SQLite store hands out
  // the same record object for as long as the key is unchanged.
  const anonymousLimits = limitsFor(null, options.plans)
  const keyClients = new WeakMap<ApiKeyRecord, RateLimitClient>()
  const clientFor = (request: FastifyRequest): RateLimitClient => {
    const apiKey = request.apiKey
    if (apiKey === null) return { key: `ip:${normalizeIP(request.ip)}`, limits: anonymousLimits }
    let client = keyClients.get(apiKey)
    if (client === undefined) {
      client = { key: `key:${apiKey.id}`, limits: limitsFor(apiKey, options.plans) }
      keyClients.set(apiKey, client)
    }
    return client
  }

  app.addHook('onRequest', async (request, reply) => {
    const at = now()
    const client = clientFor(request)
    request.rateLimitClient = client
    if (request.authError instanceof StoreUnavailableError) {
      // The key could not be looked up: the caller is unknown, not anonymous. Counting it per
      // address would turn a storage outage into 429s for every client behind that address; it
      // is answered 503 next, uncounted, with the whole allowance in the headers.
      setHeaders(reply, client.limits.perMinute, client.limits.perMinute, windowAt(at, MINUTE_MS).end)
      return
    }

    let banUntil: number | undefined
    let states: (WindowState & { name: string, exceeded: boolean })[]
    try {
      const checks = Promise.all(limiters.map((limiter) => limiter.check(request)))
      // The in-memory store answers at once; a Redis answer is awaited together with the counts.
      const banned = store.bannedUntil(client.key, at)
      const [results, bannedUntil] = typeof banned === 'object' ? await Promise.all([checks, banned]) : [await checks, banned]
      let banNow = false
      states = results.map((result, i) => {
        if (result.isAllowed) throw new Error('no client is exempt from the rate limits')
        banNow ||= result.isBanned
        return { name: limiters[i]!.name, limit: result.max, remaining: result.remaining, resetAt: at + result.ttl, exceeded: result.isExceeded }
      })
      banUntil = bannedUntil ?? (banNow ? await store.ban(client.key, at + banMs, at) : undefined)
    } catch (error) {
      storeFailed(error)
      // Not counted: the headers show the whole per-minute allowance.
      setHeaders(reply, client.limits.perMinute, client.limits.perMinute, windowAt(at, MINUTE_MS).end)
      return
    }
    storeAnswered()

    const binding = bindingWindow(states)
    if (banUntil !== undefined) {
      setHeaders(reply, binding.limit, 0, banUntil)
      const who = request.apiKey === null ? 'this client address' : 'this API key'
      throw new ApiError('api_key_banned',
        `${who} is banned until ${new Date(banUntil).toISOString()} for continuing to send requests after its rate limit was reached`,
        { 'retry-after': String(secondsUntil(at, banUntil)) })
    }
    setHeaders(reply, binding.limit, binding.remaining, binding.resetAt)
    if (states.some((state) => state.exceeded)) {
      const retryAfter = secondsUntil(at, binding.resetAt)
      throw new ApiError('rate_limited',
        `rate limit of ${binding.limit} requests per ${binding.name} exceeded; retry in ${retryAfter} s`,
        { 'retry-after': String(retryAfter) })
    }
  })
}

declare module 'fastify' {
  interface FastifyRequest {
    rateLimitClient: RateLimitClient | null
  }
}

export default fp(rateLimit, { name: 'rate-limit', dependencies: ['authentication', 'health'] })
