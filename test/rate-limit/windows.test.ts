import t from 'tap'
import { ALL_SCOPES, document } from '../helpers/contract.js'
import { limitsFor } from '../../src/plugins/app/rate-limit-policy.js'
import { bindingWindow, DAY_MS, MINUTE_MS, secondsUntil, unixSeconds, windowAt } from '../../src/rate-limit/windows.js'
import type { ApiKeyRecord } from '../../src/store/types.js'

const at = Date.UTC(2026, 4, 4, 23, 59, 59, 250)

t.test('windows are aligned to the UTC minute and day', async (t) => {
  t.same(windowAt(at, MINUTE_MS), { index: Math.floor(at / MINUTE_MS), start: Date.UTC(2026, 4, 4, 23, 59), end: Date.UTC(2026, 4, 5) })
  t.same(windowAt(at, DAY_MS), { index: Math.floor(at / DAY_MS), start: Date.UTC(2026, 4, 4), end: Date.UTC(2026, 4, 5) })
  t.equal(windowAt(Date.UTC(2026, 4, 5), DAY_MS).start, Date.UTC(2026, 4, 5), 'midnight opens the next day')
})

t.test('the binding window has the fewest left; on a tie, the later reset', async (t) => {
  const minute = { name: 'minute', limit: 60, remaining: 10, resetAt: 1_000 }
  const day = { name: 'day', limit: 1000, remaining: 12, resetAt: 9_000 }
  t.equal(bindingWindow([minute, day]).name, 'minute')
  t.equal(bindingWindow([minute, { ...day, remaining: 3 }]).name, 'day')
  t.equal(bindingWindow([{ ...minute, remaining: 0 }, { ...day, remaining: 0 }]).name, 'day', 'both exhausted: the client must wait for the day')
  t.equal(bindingWindow([{ ...day, remaining: 0 }, { ...minute, remaining: 0 }]).name, 'day', 'whatever the order')
  t.throws(() => bindingWindow([]))
})

t.test('seconds are rounded up; Retry-After is at least 1', async (t) => {
  t.equal(secondsUntil(0, 40_000), 40)
  t.equal(secondsUntil(0, 40_001), 41)
  t.equal(secondsUntil(0, 1), 1)
  t.equal(secondsUntil(5_000, 5_000), 1)
  t.equal(unixSeconds(1_700_000_000_000), 1_700_000_000)
  t.equal(unixSeconds(1_700_000_000_001), 1_700_000_001)
})

t.test('limits: an enterprise key\'s own, else its plan\'s from openapi.yaml, else the Free plan\'s', async (t) => {
  const key = (plan: string, perMinute: number | null = null, perDay: number | null = null): ApiKeyRecord =>
    ({ id: 'k', name: 'k', plan, perMinute, perDay, createdAt: '', revokedAt: null, scopes: ALL_SCOPES })
  // The plans as the app loads them from openapi.yaml; the numbers they must give are the product's.
  const { plans } = document
  t.same(limitsFor(key('enterprise', 5, 7), plans), { perMinute: 5, perDay: 7 })
  t.same(limitsFor(key('free'), plans), { perMinute: 60, perDay: 1_000 }, 'free')
  t.same(limitsFor(key('pro'), plans), { perMinute: 300, perDay: 10_000 }, 'pro')
  t.same(limitsFor(key('business'), plans), { perMinute: 1_000, perDay: 100_000 }, 'business')
  t.same(limitsFor(null, plans), { perMinute: 60, perDay: 1_000 }, 'no valid key: the Free plan\'s numbers')
  t.throws(() => limitsFor(key('enterprise'), plans), /no limits/, 'an enterprise key without its own numbers is a data error')
  t.throws(() => limitsFor(null, {}), /no free plan/)
})
