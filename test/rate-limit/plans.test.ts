/**
 * Each plan's numbers (openapi.yaml (rate limits)), written here as the product states them and exercised to
 * the request: a key gets exactly its plan's allowance in a minute and in a day, and the next
 * request is 429 rate_limited with the headers of the window that refused it. Every counted
 * request is a real request through app.inject; the test's clock moves a minute at a time, so
 * a day of 100,000 requests takes seconds, not a day.
 */
import { setImmediate } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { expectError } from '../helpers/assertions.js'
import type { TestApp } from '../helpers/app.js'
import {
  bearer, dayEnd, limitedApp, limitHeaders, listInventory, minuteEnd, REDIS_SKIP, redisAvailable, seconds,
  START, type StoreKind, storeKinds, testClock, type TestClock
} from './helpers.js'

const plans = [
  { plan: 'free', perMinute: 60, perDay: 1_000 },
  { plan: 'pro', perMinute: 300, perDay: 10_000 },
  { plan: 'business', perMinute: 1_000, perDay: 100_000 }
] as const

type Plan = typeof plans[number]

const redisUp = await redisAvailable()
const MINUTE = 60_000

let bulkSent = 0
/**
 * GET /v1/inventory without the contract check, for the bulk of a day; boundaries go through
 * request(). Every 100th request first lets the event loop turn. A loop of injects alone runs on
 * promises only, while light-my-request's stand-in socket completes each response's write with
 * setImmediate: those callbacks would wait for the loop's end, each holding its request and
 * response (1.4 GB of heap after 100,000 requests, and much of this file's time in the garbage
 * collector).
 */
const bulk = async (api: TestApp, headers: Record<string, string>) => {
  if (++bulkSent % 100 === 0) await setImmediate()
  return api.app.inject({ method: 'GET', url: '/v1/inventory', headers })
}

/**
 * A day used up a minute at a time: `perMinute` requests in each minute (each minute's allowance
 * exactly, never more) until `perDay` have been sent. Every response is checked against the rule
 * of openapi.yaml: 200, and the headers of the window with the fewest requests left (on a tie,
 * the one that resets later). With whole minutes used, the minute binds until the last minute
 * of the day's allowance begins; from its first request the day has no more left than the minute.
 */
async function useUpTheDay (t: Test, api: TestApp, clock: TestClock, auth: Record<string, string>, { perMinute, perDay }: Plan) {
  const wrong: string[] = []
  const dayFrom = (Math.ceil(perDay / perMinute) - 1) * perMinute + 1
  for (let sent = 0; sent < perDay;) {
    const minute = Math.floor(sent / perMinute)
    clock.set(START + minute * MINUTE)
    const inThisMinute = Math.min(perMinute, perDay - sent)
    for (let k = 1; k <= inThisMinute; k++) {
      sent++
      const res = await bulk(api, auth)
      const minuteLeft = perMinute - k
      const dayLeft = perDay - sent
      const expected = dayLeft <= minuteLeft
        ? { limit: perDay, remaining: dayLeft, reset: seconds(dayEnd(START)), retryAfter: undefined }
        : { limit: perMinute, remaining: minuteLeft, reset: seconds(minuteEnd(clock.now())), retryAfter: undefined }
      const headers = limitHeaders(res)
      if (res.statusCode !== 200 || JSON.stringify(headers) !== JSON.stringify(expected)) {
        wrong.push(`request ${sent}: ${res.statusCode} ${JSON.stringify(headers)}, expected 200 ${JSON.stringify(expected)}`)
      }
    }
  }
  t.same(wrong.slice(0, 5), [], `all ${perDay} requests served, ${perMinute} a minute, each with the headers of the binding window: ` +
    `the minute's until request ${dayFrom - 1}, the day's (Limit ${perDay}, Reset 00:00 UTC) from request ${dayFrom} to Remaining 0`)
}

for (const kind of storeKinds) {
  t.test(`${kind} store`, { skip: kind === 'redis' && !redisUp ? REDIS_SKIP : false }, async (t) => {
    for (const plan of plans) {
      t.test(`${plan.plan}: ${plan.perMinute} requests a minute, then rate_limited until the minute ends`, async (t) => {
        const clock = testClock()
        const api = await limitedApp(t, kind, { clock })
        const auth = bearer(await api.createKey(plan.plan))
        const reset = seconds(minuteEnd(START))
        t.same(limitHeaders(await listInventory(api, auth)), { limit: plan.perMinute, remaining: plan.perMinute - 1, reset, retryAfter: undefined }, 'request 1')
        for (let i = 2; i < plan.perMinute; i++) await bulk(api, auth)
        const last = await listInventory(api, auth)
        t.equal(last.statusCode, 200, `request ${plan.perMinute} is served`)
        t.same(limitHeaders(last), { limit: plan.perMinute, remaining: 0, reset, retryAfter: undefined }, `request ${plan.perMinute}: Remaining 0`)
        const over = await listInventory(api, auth)
        expectError(t, over, 429, 'rate_limited', `request ${plan.perMinute + 1}`)
        t.same(limitHeaders(over), { limit: plan.perMinute, remaining: 0, reset, retryAfter: 40 }, 'the minute binds: Retry-After is the 40 s left in it')
        t.match(over.json().message, `${plan.perMinute} requests per minute`, 'the message names the limit')
      })

      // 100,000 requests through Redis take minutes on this machine. The store counts whatever
      // limit it is given, so its day is exercised by Free's 1,000 and Pro's 10,000.
      const skip = kind === 'redis' && plan.perDay > 10_000 ? `${plan.perDay} requests through Redis are too slow for the suite; the Redis day is exercised by the smaller plans` : false
      t.test(`${plan.plan}: ${plan.perDay} requests a day, then rate_limited until 00:00 UTC`, { skip }, async (t) => {
        await dayOfPlan(t, kind, plan)
      })
    }
  })
}

async function dayOfPlan (t: Test, kind: StoreKind, plan: Plan) {
  const { perMinute, perDay } = plan
  const clock = testClock()
  const api = await limitedApp(t, kind, { clock })
  const auth = bearer(await api.createKey(plan.plan))
  const midnight = dayEnd(START)
  const started = performance.now()
  const cpu = process.cpuUsage()
  await useUpTheDay(t, api, clock, auth, plan)
  const { user, system } = process.cpuUsage(cpu)
  t.comment(`${kind} store, ${plan.plan}: ${perDay} requests in ${Math.round(performance.now() - started)} ms (${Math.round((user + system) / 1000)} ms of CPU)`)

  // The next request, in a minute of its own so that only the day can refuse it.
  clock.set(START + Math.ceil(perDay / perMinute) * MINUTE)
  const over = await listInventory(api, auth)
  expectError(t, over, 429, 'rate_limited', `request ${perDay + 1}, in a fresh minute`)
  t.same(limitHeaders(over), { limit: perDay, remaining: 0, reset: seconds(midnight), retryAfter: seconds(midnight - clock.now()) }, 'the day binds: Retry-After until 00:00 UTC')
  t.match(over.json().message, `${perDay} requests per day`, 'the message names the limit')

  clock.set(midnight)
  const nextDay = await listInventory(api, auth)
  t.equal(nextDay.statusCode, 200, 'served again at 00:00 UTC')
  t.same(limitHeaders(nextDay), { limit: perMinute, remaining: perMinute - 1, reset: seconds(minuteEnd(midnight)), retryAfter: undefined }, 'a fresh day and minute')
}
