import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { PlanLimits } from '../../contract/document.js'
import { ApiError } from '../../contract/errors.js'
import { clientAddress } from '../../rate-limit/client-address.js'
import { bindingWindow, DAY_MS, MINUTE_MS, secondsUntil, unixSeconds, windowAt, type WindowState } from '../../rate-limit/windows.js'
import type { ApiKeyRecord } from '../../store/types.js'

export interface RateLimitPolicyOptions {
  /** info.x-rate-limit-plans of openapi.yaml. */
  plans: Readonly<Record<string, PlanLimits>>
  /** More requests than this past the limit in one window ban the client. */
  banAfter: number
  /** Milliseconds since the epoch. */
  now: () => number
}

type Limiter = ReturnType<FastifyInstance['createRateLimit']>

/** Who a request is counted for, and with which limits. */
export interface RateLimitClient {
  /** `key:<id>` for a valid API key, `ip:<address>` otherwise (see clientAddress). */
  readonly key: string
  readonly limits: PlanLimits
  /** The client address, when the request is counted under it. */
  readonly address: string | null
}

/** The plan whose numbers apply to requests without a valid key (x-rate-limit-plans in openapi.yaml). */
export const ANONYMOUS_PLAN = 'free'

/**
 * The limits of a caller: an enterprise key's own numbers, else its plan's numbers from
 * openapi.yaml, else (no valid key) the anonymous plan's.
 */
export function limitsFor (apiKey: ApiKeyRecord | null, plans: Readonly<Record<string, PlanLimits>>): PlanLimits {
  if (apiKey !== null) {
    if (apiKey.perMinute !== null && apiKey.perDay !== null) return { perMinute: apiKey.perMinute, perDay: apiKey.perDay }
    const plan = plans[apiKey.plan]
    if (plan !== undefined) return plan
    throw new Error(`API key ${apiKey.id} is on plan ${apiKey.plan}, which has no limits in openapi.yaml and none of its own`)
  }
  const anonymous = plans[ANONYMOUS_PLAN]
  if (anonymous === undefined) throw new Error(`openapi.yaml info.x-rate-limit-plans has no ${ANONYMOUS_PLAN} plan`)
  return anonymous
}

// The day is counted before the minute, so the request whose minute count starts a ban has
// already been counted in the day (the store counts nothing once a ban is in force).
const windows = [
  { name: 'day', lengthMs: DAY_MS, limitOf: (limits: PlanLimits) => limits.perDay },
  { name: 'minute', lengthMs: MINUTE_MS, limitOf: (limits: PlanLimits) => limits.perMinute }
] as const

function setHeaders (reply: FastifyReply, limit: number, remaining: number, resetAt: number): void {
  reply.header('x-ratelimit-limit', limit)
  reply.header('x-ratelimit-remaining', remaining)
  reply.header('x-ratelimit-reset', unixSeconds(resetAt))
}

/**
 * The plan limits of openapi.yaml (x-rate-limit-plans). The authentication hook calls `app.rateLimits.count` once per
 * request under /v1, with the key it identified (or none): every such request counts once in both
 * windows, whatever its answer, except while its client is banned. `@fastify/rate-limit` does the
 * counting, limiters per window (one for each limit) over the shared store (src/plugins/external/rate-limit.ts); its
 * `ban` threshold marks a ban, which the store keeps for RATE_LIMIT_BAN_SECONDS.
 * What the limiter answers for an address also tells the key guard (src/authentication/key-guard.ts)
 * which addresses are limited, so that their guessed keys stop reaching the store.
 */
async function rateLimitPolicy (app: FastifyInstance, options: RateLimitPolicyOptions) {
  const { now, plans } = options
  const metrics = app.metrics
  const anonymousLimits = limitsFor(null, plans) // the anonymous plan must exist: fail at boot, not per request
  app.decorateRequest('rateLimitClient', null)

  const { keyGuard } = app

  // Every limiter counts a request under the key `count` chose for it: its API key's, or its client address's.
  const keyGenerator = (request: FastifyRequest) => {
    if (request.rateLimitClient === null) throw new Error('the request has no rate-limit client')
    return request.rateLimitClient.key
  }
  // One limiter per window and limit: with `max` a number, @fastify/rate-limit uses it as it is;
  // given a function it awaits the function's answer, a promise job more per window and request.
  // A limiter is made for each distinct limit on its first request and kept (an options object and
  // a closure): one per plan, and one per distinct number enterprise keys carry. All of a window's
  // limiters count in the same counters (the store keys them by window length, not by limiter).
  const limiters = windows.map((window) => {
    const byLimit = new Map<number, Limiter>()
    return {
      name: window.name,
      check (request: FastifyRequest, limits: PlanLimits) {
        const max = window.limitOf(limits)
        let check = byLimit.get(max)
        if (check === undefined) {
          check = app.createRateLimit({ timeWindow: window.lengthMs, max, ban: options.banAfter, keyGenerator })
          byLimit.set(max, check)
        }
        return check(request)
      }
    }
  })

  // Its outages are logged once each and counted (src/plugins/app/dependencies.ts); the memory store never fails.
  const counterStore = app.rateLimitStore.engine === 'redis' ? app.dependencies.of('rate-limit-store') : undefined

  // One client per key record, made on its first request: the stores look the same string up
  // request after request (its hash computed once). A changed key comes as a new record.
  const keyClients = new WeakMap<ApiKeyRecord, RateLimitClient>()
  const clientFor = (request: FastifyRequest, apiKey: ApiKeyRecord | null): RateLimitClient => {
    if (apiKey !== null) {
      let client = keyClients.get(apiKey)
      if (client === undefined) {
        client = { key: `key:${apiKey.id}`, limits: limitsFor(apiKey, plans), address: null }
        keyClients.set(apiKey, client)
      }
      return client
    }
    const address = clientAddress(request)
    return { key: `ip:${address}`, limits: anonymousLimits, address }
  }

  /** Headers for a request that is not counted: the whole per-minute allowance. */
  const uncounted = (reply: FastifyReply, limits: PlanLimits, at: number) => {
    setHeaders(reply, limits.perMinute, limits.perMinute, windowAt(at, MINUTE_MS).end)
  }

  type Counted = Awaited<ReturnType<Limiter>>
  type State = WindowState & { name: string, exceeded: boolean, banned: boolean }

  /** The store failed: the request is served uncounted (fail open), and the log says so once. */
  const failOpen = (reply: FastifyReply, client: RateLimitClient, at: number, error: unknown) => {
    counterStore?.failed(error)
    metrics?.rateLimitDecision('failed_open')
    uncounted(reply, client.limits, at)
  }

  /** What the limiters answered for a request: its headers, and its refusal when a window refuses it. */
  const judge = (reply: FastifyReply, apiKey: ApiKeyRecord | null, client: RateLimitClient, at: number, results: Counted[]) => {
    let states: State[]
    try {
      states = results.map((result, i) => {
        if (result.isAllowed) throw new Error('no client is exempt from the rate limits')
        return { name: limiters[i]!.name, limit: result.max, remaining: result.remaining, resetAt: at + result.ttl, exceeded: result.isExceeded, banned: result.isBanned }
      })
    } catch (error) {
      failOpen(reply, client, at, error)
      return
    }
    if (counterStore?.down === true) counterStore.answered()

    const banned = states.filter((state) => state.banned)
    const exceeded = states.filter((state) => state.exceeded)
    if (client.address !== null) {
      const limiting = [...banned, ...exceeded]
      keyGuard.addressLimited(client.address, limiting.length === 0 ? undefined : Math.max(...limiting.map((state) => state.resetAt)))
    }
    if (banned.length > 0) {
      // Every banned window reports the ban's end; the headers name the tighter of their limits.
      const until = banned[0]!.resetAt
      setHeaders(reply, Math.min(...banned.map((state) => state.limit)), 0, until)
      const who = apiKey === null ? 'this client address' : 'this API key'
      metrics?.rateLimitDecision('banned')
      throw new ApiError('api_key_banned',
        `${who} is banned until ${new Date(until).toISOString()} for continuing to send requests after its rate limit was reached`,
        { 'retry-after': String(secondsUntil(at, until)) })
    }
    const binding = bindingWindow(states)
    setHeaders(reply, binding.limit, binding.remaining, binding.resetAt)
    if (exceeded.length > 0) {
      const retryAfter = secondsUntil(at, binding.resetAt)
      metrics?.rateLimitDecision('limited')
      throw new ApiError('rate_limited',
        `rate limit of ${binding.limit} requests per ${binding.name} exceeded; retry in ${retryAfter} s`,
        { 'retry-after': String(retryAfter) })
    }
    metrics?.rateLimitDecision('allowed')
  }

  app.decorate('rateLimits', {
    // A callback, not a promise: every /v1 request is counted, and each promise a request makes
    // costs an allocation and a job (bench/README.md, "Promises and bytes per request"). The two
    // windows' answers are gathered here, not with Promise.all, for the same reason.
    count (request: FastifyRequest, reply: FastifyReply, apiKey: ApiKeyRecord | null, done: (error?: Error) => void): void {
      let client: RateLimitClient
      let at: number
      try {
        at = now()
        client = clientFor(request, apiKey)
        request.rateLimitClient = client
      } catch (error) {
        done(error as Error)
        return
      }
      const results: Counted[] = new Array(limiters.length)
      let waiting = limiters.length
      let failed = false
      // The first failure of a limiter serves the request uncounted; the other limiter's answer,
      // whenever it comes, is then dropped.
      const fail = (error: unknown) => {
        if (failed) return
        failed = true
        failOpen(reply, client, at, error)
        done()
      }
      // These handlers never throw (a throw would be an unhandled rejection): judge's refusal is passed on.
      const answered = (i: number, result: Counted) => {
        results[i] = result
        if (--waiting > 0 || failed) return
        let refusal: Error | undefined
        try {
          judge(reply, apiKey, client, at, results)
        } catch (error) {
          refusal = error as Error
        }
        done(refusal)
      }
      for (let i = 0; i < limiters.length; i++) {
        let counted: ReturnType<Limiter>
        try {
          counted = limiters[i]!.check(request, client.limits)
        } catch (error) {
          fail(error)
          return
        }
        counted.then((result) => { answered(i, result) }, fail)
      }
    },

    /** A request whose caller could not be identified (storage down): answered uncounted, per key or address. */
    skip (request: FastifyRequest, reply: FastifyReply): void {
      uncounted(reply, clientFor(request, null).limits, now())
    }
  })
}

declare module 'fastify' {
  interface FastifyRequest {
    rateLimitClient: RateLimitClient | null
  }
  interface FastifyInstance {
    rateLimits: {
      /**
       * Counts the request in both windows and sets its rate-limit headers, then calls `done`: with
       * the refusal (429, or 403 while banned) when a window refuses it, with the error when the
       * request's client could not be made, and with nothing when it is allowed or the counter
       * store failed (served uncounted). `done` is called once.
       */
      count: (request: FastifyRequest, reply: FastifyReply, apiKey: ApiKeyRecord | null, done: (error?: Error) => void) => void
      skip: (request: FastifyRequest, reply: FastifyReply) => void
    }
  }
}

export default fp(rateLimitPolicy, { name: 'rate-limit-policy', dependencies: ['rate-limit', 'key-guard', 'dependencies'] })
