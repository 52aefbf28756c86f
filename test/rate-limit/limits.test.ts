/**
 * openapi.yaml (rate limits) on both counter stores (process memory and the real Redis), through the public
 * surface: app.inject via request(), which also checks every response against openapi.yaml.
 * Time is the test's clock, moved forward instead of slept through. The numbers are the
 * product's: Free 60 a minute, a ban after 10 requests past the limit, for 900 s. Every plan's
 * minute and day, to the request, are in plans.test.ts.
 */
import t from 'tap'
import { expectError } from '../helpers/assertions.js'
import { document } from '../helpers/contract.js'
import { sunsetOf } from '../helpers/spec-file.js'
import {
  bearer, dayEnd, limitedApp, limitHeaders, listInventory, minuteEnd, REDIS_SKIP, redisAvailable, seconds, START,
  storeKinds, testClock
} from './helpers.js'

const redisUp = await redisAvailable()

for (const kind of storeKinds) {
  t.test(`${kind} store`, { skip: kind === 'redis' && !redisUp ? REDIS_SKIP : false }, async (t) => {
    t.test('a Free key: exactly its per-minute limit, then rate_limited, then a ban to its end; other keys unaffected', async (t) => {
      const clock = testClock()
      const api = await limitedApp(t, kind, { clock })
      const key = await api.createKey('free')
      const reset = seconds(minuteEnd(START))

      for (let i = 1; i <= 60; i++) {
        const res = await listInventory(api, bearer(key))
        t.equal(res.statusCode, 200, `request ${i} succeeds`)
        t.same(limitHeaders(res), { limit: 60, remaining: 60 - i, reset, retryAfter: undefined }, `request ${i}: Remaining ${60 - i}`)
      }

      let res = await listInventory(api, bearer(key))
      expectError(t, res, 429, 'rate_limited', 'first request over the limit')
      t.same(limitHeaders(res), { limit: 60, remaining: 0, reset, retryAfter: 40 }, 'Retry-After: the 40 s left in the minute')
      t.match(res.json().message, /per minute/)

      clock.advance(10_500)
      res = await listInventory(api, bearer(key))
      expectError(t, res, 429, 'rate_limited')
      t.equal(limitHeaders(res).retryAfter, 30, '29.5 s left: Retry-After rounds up to 30')

      // The first 429 was request 1 past the limit; 10 of them are tolerated.
      for (let past = 3; past <= 10; past++) {
        expectError(t, await listInventory(api, bearer(key)), 429, 'rate_limited', `request ${past} past the limit`)
      }
      const bannedAt = clock.now()
      const banEnd = bannedAt + 900_000
      res = await listInventory(api, bearer(key))
      expectError(t, res, 429, 'api_key_banned', 'request 11 past the limit (the 71st in the minute)')
      t.same(limitHeaders(res), { limit: 60, remaining: 0, reset: Math.ceil(seconds(banEnd)), retryAfter: 900 }, 'Retry-After and Reset: the end of the ban, 900 s on')
      t.match(res.json().message, /API key is banned until/)

      const other = await listInventory(api, bearer(await api.createKey('free')))
      t.equal(other.statusCode, 200, 'another key is unaffected')
      t.equal(limitHeaders(other).remaining, 59, 'and counted on its own')

      clock.set(minuteEnd(bannedAt) + 1000)
      res = await listInventory(api, bearer(key))
      expectError(t, res, 429, 'api_key_banned', 'still banned in the next minute')
      t.equal(limitHeaders(res).retryAfter, Math.ceil(seconds(banEnd - clock.now())), 'Retry-After counts down to the end of the ban')

      clock.set(banEnd - 500)
      res = await listInventory(api, bearer(key))
      expectError(t, res, 429, 'api_key_banned', 'half a second before the end')
      t.equal(limitHeaders(res).retryAfter, 1, 'Retry-After is never 0')

      clock.set(banEnd)
      res = await listInventory(api, bearer(key))
      t.equal(res.statusCode, 200, 'served again once the ban has ended')
      t.equal(limitHeaders(res).remaining, 59, 'in a fresh minute window')
      t.equal(limitHeaders(res).reset, seconds(minuteEnd(banEnd)))
    })

    t.test('every /v1 response carries the headers of the binding window, and each one counts', async (t) => {
      const clock = testClock()
      const api = await limitedApp(t, kind, { clock, env: { BODY_LIMIT: '1024' } })
      const limits = { perMinute: 11, perDay: 1000 }
      const auth = bearer(await api.createKey('enterprise', limits))
      const json = { ...auth, 'content-type': 'application/json' }
      const calls: [number, { method: string, url: string, headers: Record<string, string>, payload?: string | object }][] = [
        [200, { method: 'GET', url: '/v1/inventory', headers: auth }],
        [200, { method: 'PATCH', url: '/v1/inventory/1', headers: auth, payload: { quantity: 3 } }],
        [200, { method: 'GET', url: '/v1/pets/1', headers: auth }],
        [200, { method: 'GET', url: '/v1/store/orders', headers: auth }],
        [400, { method: 'PATCH', url: '/v1/inventory/1', headers: auth, payload: { quantity: 'three' } }],
        [400, { method: 'GET', url: '/v1/pets/abc', headers: auth }],
        [404, { method: 'PATCH', url: '/v1/inventory/999', headers: auth, payload: { quantity: 1 } }],
        [404, { method: 'GET', url: '/v1/no-such-thing', headers: auth }],
        [405, { method: 'DELETE', url: '/v1/inventory', headers: auth }],
        [413, { method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: JSON.stringify({ quantity: 1, pad: 'x'.repeat(2000) }) }],
        [415, { method: 'PATCH', url: '/v1/inventory/1', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'quantity=1' }]
      ]
      for (const [i, [status, call]] of calls.entries()) {
        const res = await api.request(call)
        t.equal(res.statusCode, status, `${call.method} ${call.url}`)
        t.same(limitHeaders(res), { limit: 11, remaining: 10 - i, reset: seconds(minuteEnd(START)), retryAfter: undefined }, `${status}: counted, headers present`)
      }
      const over = await api.request(calls[0]![1])
      expectError(t, over, 429, 'rate_limited')
      t.same(limitHeaders(over), { limit: 11, remaining: 0, reset: seconds(minuteEnd(START)), retryAfter: 40 }, '429: headers and Retry-After')

      const unauthenticated = await api.request({ method: 'GET', url: '/v1/inventory' })
      t.equal(unauthenticated.statusCode, 401)
      t.same(limitHeaders(unauthenticated), { limit: 60, remaining: 59, reset: seconds(minuteEnd(START)), retryAfter: undefined }, '401: counted for the address, with the Free numbers')

      clock.set(sunsetOf('getPetById') + 30_000)
      const gone = await api.request({ method: 'GET', url: '/v1/pets/1', headers: auth })
      expectError(t, gone, 410, 'gone')
      t.same(limitHeaders(gone), { limit: 11, remaining: 10, reset: seconds(minuteEnd(clock.now())), retryAfter: undefined }, '410: headers present')
    })

    t.test('the per-day window binds when it has fewer requests left, and Reset says so', async (t) => {
      const clock = testClock()
      const api = await limitedApp(t, kind, { clock })
      const auth = bearer(await api.createKey('enterprise', { perMinute: 100, perDay: 5 }))
      const midnight = dayEnd(START)

      for (let i = 1; i <= 5; i++) {
        const res = await listInventory(api, auth)
        t.equal(res.statusCode, 200)
        t.same(limitHeaders(res), { limit: 5, remaining: 5 - i, reset: seconds(midnight), retryAfter: undefined }, `request ${i}: the day binds`)
      }
      let res = await listInventory(api, auth)
      expectError(t, res, 429, 'rate_limited')
      t.same(limitHeaders(res), { limit: 5, remaining: 0, reset: seconds(midnight), retryAfter: seconds(midnight - START) }, 'Retry-After: until midnight UTC')
      t.match(res.json().message, /5 requests per day/)

      clock.advance(60_000)
      res = await listInventory(api, auth)
      expectError(t, res, 429, 'rate_limited', 'a new minute does not help')

      clock.set(midnight)
      res = await listInventory(api, auth)
      t.equal(res.statusCode, 200, 'a new day does')
      t.same(limitHeaders(res), { limit: 5, remaining: 4, reset: seconds(midnight + 86_400_000), retryAfter: undefined })
    })

    t.test('a request refused by one window counts in the other; one refused during a ban counts nowhere', async (t) => {
      const clock = testClock()
      const api = await limitedApp(t, kind, { clock, env: { RATE_LIMIT_BAN_AFTER: '2', RATE_LIMIT_BAN_SECONDS: '60' } })

      await t.test('429 rate_limited counts in the day', async (t) => {
        const auth = bearer(await api.createKey('enterprise', { perMinute: 3, perDay: 5 }))
        for (let i = 0; i < 3; i++) t.equal((await listInventory(api, auth)).statusCode, 200)
        const refused = await listInventory(api, auth)
        expectError(t, refused, 429, 'rate_limited')
        t.equal(limitHeaders(refused).limit, 3, 'refused by the minute window')
        clock.advance(60_000)
        const res = await listInventory(api, auth)
        t.equal(res.statusCode, 200)
        t.same(limitHeaders(res), { limit: 5, remaining: 0, reset: seconds(dayEnd(START)), retryAfter: undefined }, 'the day counted the 429: 5 of 5 used')
        clock.set(START)
      })

      await t.test('api_key_banned counts nowhere', async (t) => {
        const auth = bearer(await api.createKey('enterprise', { perMinute: 2, perDay: 7 }))
        for (let i = 0; i < 2; i++) t.equal((await listInventory(api, auth)).statusCode, 200)
        for (let i = 0; i < 2; i++) expectError(t, await listInventory(api, auth), 429, 'rate_limited')
        const banned = await listInventory(api, auth)
        expectError(t, banned, 429, 'api_key_banned', 'the third request past the limit, with RATE_LIMIT_BAN_AFTER=2')
        t.equal(limitHeaders(banned).retryAfter, 60, 'RATE_LIMIT_BAN_SECONDS=60')
        for (let i = 0; i < 20; i++) expectError(t, await listInventory(api, auth), 429, 'api_key_banned')
        clock.advance(60_000)
        const res = await listInventory(api, auth)
        t.equal(res.statusCode, 200, 'served after the ban: the 20 refused requests were not counted')
        t.same(limitHeaders(res), { limit: 7, remaining: 1, reset: seconds(dayEnd(START)), retryAfter: undefined }, 'day: 5 before the ban, and this one')
      })
    })

    t.test('requests without a valid key are counted per client address, with the Free numbers', async (t) => {
      const clock = testClock()
      const api = await limitedApp(t, kind, { clock })
      const from = (remoteAddress: string, headers: Record<string, string> = {}) => listInventory(api, headers, { remoteAddress })
      const attempts = [{}, { authorization: `Bearer psk_${'A'.repeat(43)}` }, { authorization: 'Basic dXNlcjpwYXNz' }]

      for (let i = 1; i <= 60; i++) {
        const res = await from('203.0.113.7', attempts[i % attempts.length])
        t.equal(res.statusCode, 401)
        t.same(limitHeaders(res), { limit: 60, remaining: 60 - i, reset: seconds(minuteEnd(START)), retryAfter: undefined }, `401 number ${i}`)
      }
      const limited = await from('203.0.113.7', attempts[1])
      expectError(t, limited, 429, 'rate_limited', 'a key guesser is limited like a Free client')
      t.equal(limitHeaders(limited).retryAfter, 40)

      const elsewhere = await from('203.0.113.8')
      t.equal(elsewhere.statusCode, 401, 'another address is unaffected')
      t.equal(limitHeaders(elsewhere).remaining, 59)

      const proKey = bearer(await api.createKey('pro'))
      // A limited address gets one lookup of a key this instance has not seen per second (issue 13).
      clock.advance(1000)
      const withKey = await from('203.0.113.7', proKey)
      t.equal(withKey.statusCode, 200, 'a valid key from the same address is counted for the key')
      t.same(limitHeaders(withKey), { limit: 300, remaining: 299, reset: seconds(minuteEnd(START)), retryAfter: undefined }, 'with its plan\'s numbers (Pro: 300 a minute)')

      const v6 = await from('2001:db8:1:2::1')
      const sameSlash64 = await from('2001:db8:1:2:ffff::9')
      t.equal(limitHeaders(sameSlash64).remaining, limitHeaders(v6).remaining - 1, 'IPv6 addresses are counted per /64')

      for (let past = 2; past <= 10; past++) {
        expectError(t, await from('203.0.113.7'), 429, 'rate_limited')
      }
      const banned = await from('203.0.113.7')
      expectError(t, banned, 429, 'api_key_banned', 'the address is banned like a key')
      t.match(banned.json().message, /client address is banned/)
      t.equal(limitHeaders(banned).retryAfter, 900)
      t.equal((await from('203.0.113.7', proKey)).statusCode, 200, 'the key is not banned with the address')
    })

    t.test('the numbers come from openapi.yaml: a document with other numbers gives other limits', async (t) => {
      const clock = testClock()
      const edited = { ...document, plans: { ...document.plans, free: { perMinute: 2, perDay: 3 } } }
      const other = await limitedApp(t, kind, { clock, document: edited })
      const auth = bearer(await other.createKey('free'))
      for (let i = 0; i < 2; i++) t.equal((await listInventory(other, auth)).statusCode, 200)
      expectError(t, await listInventory(other, auth), 429, 'rate_limited', 'the third request in the minute: Free is 2 a minute in this document')
    })
  })
}
