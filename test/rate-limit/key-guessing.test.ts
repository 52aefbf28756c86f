/**
 * Guessing costs the guesser, not the database (issue 13, item 2), through app.inject on the
 * test's clock: the store is wrapped to count key lookups, the only cost a guessed key has.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { ExpiringMap, KEY_GUARD_DEFAULTS, KeyGuard } from '../../src/authentication/key-guard.js'
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js'
import { apiKeysRepository, hashApiKey } from '../../src/repositories/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import { KEY_HASH_SLOTS } from '../../src/repositories/api-keys.js'
import type { Store } from '../../src/store/types.js'
import { tempDir, type Teardown } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'
import { ALL_SCOPES, document } from '../helpers/contract.js'
import { bearer, limitedApp, limitHeaders, listInventory, START, testClock } from './helpers.js'

const free = document.plans.free!
const guess = () => `psk_${randomBytes(32).toString('base64url')}`

/** A SQLite store whose key lookups are counted (each key asked about counts once). */
async function countingStore (t: Teardown): Promise<{ store: Store, lookups: () => number, statements: () => number }> {
  const inner = await createStore(`sqlite:${join(tempDir(t), 'counted.db')}`)
  let lookups = 0
  let statements = 0
  // The cache of active keys is where every key lookup goes (src/repositories/api-keys.ts).
  const { activeKeys } = inner.caches
  const store = Object.create(inner, {
    caches: {
      configurable: true,
      value: {
        activeKeys: {
          get: (keyHash: string, read: Parameters<typeof activeKeys.get>[1]) => {
            lookups++
            statements++
            return activeKeys.get(keyHash, read)
          },
          getMany: (keyHashes: readonly string[], read: Parameters<typeof activeKeys.getMany>[1]) => {
            lookups += keyHashes.length
            statements += Math.ceil(keyHashes.length / KEY_HASH_SLOTS)
            return activeKeys.getMany(keyHashes, read)
          }
        }
      }
    }
  }) as Store
  return { store, lookups: () => lookups, statements: () => statements }
}

type Found = { id: string | number } | undefined

/**
 * The store as the guard sees it, answering from `answer`; records which keys each lookup asked
 * about. `hold` makes batch lookups wait until released.
 */
function fakeLookups (answer: (keyHash: string) => Found = () => undefined, options: { sync?: boolean } = {}) {
  const calls = { find: [] as string[], findMany: [] as string[][] }
  let gate: Promise<void> | undefined
  let open = () => {}
  const lookups = {
    findActive: (keyHash: string) => {
      calls.find.push(keyHash)
      return options.sync === true ? answer(keyHash) : Promise.resolve(answer(keyHash))
    },
    findActiveMany: async (keyHashes: readonly string[]) => {
      calls.findMany.push([...keyHashes])
      if (gate !== undefined) await gate
      const found = new Map<string, { id: string | number }>()
      for (const keyHash of keyHashes) {
        const record = answer(keyHash)
        if (record !== undefined) found.set(keyHash, record)
      }
      return found
    }
  }
  return {
    lookups,
    calls,
    hold: () => { gate = new Promise((resolve) => { open = resolve }) },
    release: () => { gate = undefined; open() }
  }
}

async function guardedApp (t: Teardown) {
  const clock = testClock()
  const { store, lookups, statements } = await countingStore(t)
  // METRICS_PORT: the registry exists (read in-process here), though nothing listens on it.
  const api = await limitedApp(t, 'memory', { clock, store, env: { METRICS_PORT: '0' } })
  const from = (remoteAddress: string, key: string) => listInventory(api, bearer(key), { remoteAddress })
  return { api, clock, store, lookups, statements, from }
}

t.test('a limited address: guessed keys cost at most one lookup a second; valid keys still get in', async (t) => {
  const { api, clock, lookups, from } = await guardedApp(t)
  const guesser = '203.0.113.7'

  for (let i = 1; i <= free.perMinute; i++) expectUnauthorized(t, await from(guesser, guess()), `guess ${i}`)
  t.equal(lookups(), free.perMinute, 'within its limit every guess is looked up')
  expectError(t, await from(guesser, guess()), 429, 'rate_limited', 'the first guess over the limit')
  t.equal(lookups(), free.perMinute + 1, 'is looked up too: only its answer says the address is limited')

  for (let i = 0; i < 200; i++) {
    const res = await from(guesser, guess())
    t.equal(res.statusCode, 429, `guess ${i + 1} from the limited (then banned) address: 429`)
  }
  t.equal(lookups(), free.perMinute + 1, '200 more guesses in the same second: no lookup')
  const failures = await api.app.metrics!.registry.getSingleMetric('auth_failures_total')!.get()
  const byReason = Object.fromEntries(failures.values.map((v) => [v.labels.reason, v.value]))
  t.same(byReason, { invalid_key: free.perMinute + 1, key_not_checked: 200 }, 'auth_failures_total tells the guesses looked up from those kept from the store')
  expectError(t, await from(guesser, guess()), 429, 'api_key_banned', 'the address is banned by now, as before')

  clock.advance(1000)
  for (let i = 0; i < 20; i++) t.equal((await from(guesser, guess())).statusCode, 429)
  t.equal(lookups(), free.perMinute + 2, 'a second later: one lookup (the trickle), however many guesses')

  const valid = await api.createKey('pro')
  expectError(t, await from(guesser, valid), 429, 'api_key_banned', 'a valid key this instance has not seen, after the trickle was spent: refused unchecked')
  t.equal(lookups(), free.perMinute + 2, 'and not looked up')
  clock.advance(1000)
  const inside = await from(guesser, valid)
  t.equal(inside.statusCode, 200, 'a second later the valid key gets in')
  t.same(limitHeaders(inside).remaining, document.plans.pro!.perMinute - 1, 'counted for the key, with its plan\'s numbers')

  const before = lookups()
  for (let i = 2; i <= 5; i++) {
    const res = await from(guesser, valid)
    t.equal(res.statusCode, 200, `known key, request ${i} from the banned address: 200`)
    t.equal(limitHeaders(res).remaining, document.plans.pro!.perMinute - i, 'counted per key as always')
  }
  t.equal(lookups(), before + 4, 'a known key is looked up every time: the store stays the authority')

  const elsewhere = await api.createKey('free')
  t.equal((await from('198.51.100.1', elsewhere)).statusCode, 200, 'a key first verified from another address…')
  t.equal((await from(guesser, elsewhere)).statusCode, 200, '…is known, and gets in from the banned address at once')

  expectUnauthorized(t, await from('198.51.100.2', guess()), 'another address: its guesses are looked up and refused as usual')
  t.equal(lookups(), before + 4 + 3, 'as lookups')
})

t.test('a revoked key is refused at once, then its repeats cost nothing', async (t) => {
  const { api, clock, lookups, from } = await guardedApp(t)
  const secret = await api.createKey('free')
  t.equal((await from('198.51.100.1', secret)).statusCode, 200)
  const [record] = await apiKeysRepository(api.store).list()
  await apiKeysRepository(api.store).revoke(record!.id)

  expectUnauthorized(t, await from('198.51.100.1', secret), 'the very next request after the revocation')
  const after = lookups()
  for (let i = 0; i < 10; i++) expectUnauthorized(t, await from(`198.51.100.${10 + i}`, secret), `repeat ${i + 1}, from anywhere`)
  t.equal(lookups(), after, 'no lookup for the repeats')
  clock.advance(KEY_GUARD_DEFAULTS.unknownKeyMs)
  expectUnauthorized(t, await from('198.51.100.1', secret), 'once the negative cache entry has expired…')
  t.equal(lookups(), after + 1, '…the store is asked again')
})

t.test(`an unknown key is remembered for ${KEY_GUARD_DEFAULTS.unknownKeyMs} ms: a key created meanwhile works once that has passed`, async (t) => {
  const { api, clock, store, lookups, from } = await guardedApp(t)
  const secret = guess()
  expectUnauthorized(t, await from('198.51.100.1', secret), 'unknown')
  t.equal(lookups(), 1)
  for (let i = 0; i < 5; i++) expectUnauthorized(t, await from('198.51.100.2', secret), `repeat ${i + 1}`)
  t.equal(lookups(), 1, 'repeats are not looked up')

  // An operator creates a key with exactly this secret (as `keys create` would, had it drawn it).
  await apiKeysRepository(store).create({ id: 'key_created_late', name: 'late', plan: 'free', keyHash: hashApiKey(secret), perMinute: null, perDay: null, scopes: ALL_SCOPES })
  clock.advance(KEY_GUARD_DEFAULTS.unknownKeyMs - 1)
  expectUnauthorized(t, await from('198.51.100.1', secret), 'still refused just before the entry expires')
  t.equal(lookups(), 1)
  clock.advance(1)
  const res = await from('198.51.100.1', secret)
  t.equal(res.statusCode, 200, 'accepted once the entry has expired')
  t.equal(lookups(), 2)
  t.equal(api.app.keyGuard.sizes().knownKeys, 1, 'and now known')
})

t.test('the caches are bounded, and a sweep does bounded work', async (t) => {
  const map = new ExpiringMap<string, number>(3, 2)
  for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) map.set(key, i, 100)
  t.equal(map.size, 3, 'never more than maxEntries')
  t.equal(map.get('a', 0), undefined, 'the entry written longest ago went first')
  map.set('b', 10, 100)
  map.set('e', 4, 100)
  t.equal(map.get('c', 0), undefined, 'writing an entry again makes it the newest')
  t.equal(map.get('b', 0), 10)
  t.equal(map.get('b', 100), undefined, 'an entry has expired at its expiry time')

  const many = new ExpiringMap<number, true>(300_000, 2000)
  for (let i = 0; i < 250_000; i++) many.set(i, true, i % 2 === 0 ? 50 : 200)
  t.equal(many.sweep(100), 1000, 'one sweep inspects 2,000 entries, of which half have expired')
  t.equal(many.size, 249_000)
  let sweeps = 1
  while (many.size > 125_000) {
    many.sweep(100)
    sweeps++
  }
  t.equal(sweeps, 125, 'successive sweeps go on where the last stopped, until all the expired are gone')

  const clock = testClock()
  const store = fakeLookups((keyHash) => keyHash.startsWith('known') ? { id: keyHash } : undefined)
  const guard = new KeyGuard({ now: clock.now, lookups: store.lookups, maxUnknownKeys: 5, maxLimitedAddresses: 5, maxKnownKeys: 5 })
  for (let i = 0; i < 50; i++) {
    await guard.check(`unknown ${i}`, () => '198.51.100.1')
    await guard.check(`known ${i}`, () => '198.51.100.1')
    guard.addressLimited(`192.0.2.${i}`, clock.now() + 60_000)
  }
  t.same(guard.sizes(), { unknownKeys: 5, knownKeys: 5, limitedAddresses: 5, waitingLookups: 0 }, 'each of the guard\'s maps holds at most its bound')
  const asked = () => store.calls.findMany.flat().filter((keyHash) => keyHash === 'a fresh key').length
  t.equal(await guard.check('a fresh key', () => '192.0.2.49'), 'not-checked', 'the newest limited address is still known')
  t.equal(asked(), 0)
  t.equal(await guard.check('a fresh key', () => '192.0.2.0'), undefined, 'an evicted one is looked up again (until the limiter names it again)')
  t.equal(asked(), 1)
})

t.test('known keys: when the bound is reached, the key verified longest ago goes; a key in use renews its place at most once a second', async (t) => {
  const clock = testClock()
  const guard = new KeyGuard({ now: clock.now, lookups: fakeLookups(() => ({ id: 'found' })).lookups, maxKnownKeys: 3 })
  // From an address limited a moment ago, a known key is looked up, one the guard does not know
  // is not (the address's trickle allows its next lookup a second later).
  let limited = 0
  const probe = async (keys: string[]) => {
    const address = `192.0.2.${++limited}`
    guard.addressLimited(address, clock.now() + 60_000)
    const known: boolean[] = []
    for (const key of keys) known.push((await guard.check(key, () => address)) !== 'not-checked')
    return known
  }

  for (const key of ['a', 'b', 'c']) await guard.check(key, () => '198.51.100.1')
  await guard.check('a', () => '198.51.100.1') // within the same second: its place is kept
  await guard.check('d', () => '198.51.100.1')
  t.same(await probe(['a', 'b', 'c', 'd']), [false, true, true, true], 'a was verified first, and again within the second: it went first')

  clock.advance(1000)
  await guard.check('b', () => '198.51.100.1') // a second later: b becomes the newest
  await guard.check('e', () => '198.51.100.1')
  t.same(await probe(['b', 'c', 'd', 'e']), [true, false, true, true], 'b renewed its place a second later, so c (the oldest) went')
})

t.test('keys this instance does not know are looked up in batches, two batches at a time; known keys never wait', async (t) => {
  const clock = testClock()
  const store = fakeLookups((keyHash) => keyHash === 'verified' || keyHash.startsWith('valid') ? { id: keyHash } : undefined)
  const guard = new KeyGuard({ now: clock.now, lookups: store.lookups, maxNewKeyLookups: 2, lookupBatch: 2, maxWaitingLookups: 6 })
  t.same(await guard.check('verified', () => '198.51.100.1'), { id: 'verified' })

  store.hold()
  // The first two keys start a batch each at once; the next wait, and form batches of up to two.
  const names = ['n1', 'n2', 'n3', 'n4', 'n5', 'valid6', 'n7', 'valid8']
  const pending = names.map((name) => guard.check(name, () => name === 'valid8' ? '192.0.2.2' : '192.0.2.1'))
  t.equal(await guard.check('n9', () => '192.0.2.3'), 'busy', 'with two lookups running and six keys waiting (the most), the next is refused as busy')
  t.same(store.calls.findMany.slice(1), [['n1'], ['n2']], 'two lookups run')
  t.equal(guard.sizes().waitingLookups, 6, 'six keys wait for a batch')
  const again = guard.check('n3', () => '192.0.2.4')
  t.ok(again instanceof Promise, 'a key already waiting shares that wait…')
  t.equal(guard.sizes().waitingLookups, 6, '…without taking a place of its own')

  t.same(await guard.check('verified', () => '192.0.2.1'), { id: 'verified' }, 'a known key is looked up at once, past the waiting ones')
  clock.advance(1)
  store.release()
  t.same(await Promise.all(pending.slice(0, 2)), [undefined, undefined], 'the first two are answered')
  store.hold()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(store.calls.findMany.slice(3), [['n3', 'n4'], ['n5', 'valid6']], 'then, a turn later, batches of two')
  guard.addressLimited('192.0.2.1', clock.now() + 60_000)
  store.release()
  t.same(await Promise.all(pending.slice(2)), [undefined, undefined, undefined, { id: 'valid6' }, 'not-checked', { id: 'valid8' }],
    'each key decides again when its batch is formed: n7, of the address limited meanwhile, is not looked up')
  t.equal(await again, undefined, 'the shared wait answers both requests')
  t.same(store.calls.findMany.slice(5), [['valid8']])
  t.equal(guard.sizes().waitingLookups, 0)
  t.equal(await guard.check('n10', () => '192.0.2.3'), undefined, 'and the turns are all given back')
})

t.test('a known key is answered in the same call when the store answers so; otherwise by a promise', async (t) => {
  const clock = testClock()
  let record: Found = { id: 'key_sync' }
  const store = fakeLookups(() => record, { sync: true })
  const guard = new KeyGuard({ now: clock.now, lookups: store.lookups })
  const first = guard.check('k', () => '198.51.100.1')
  t.ok(first instanceof Promise, 'a key this instance has not verified waits for its batch: a promise')
  t.same(await first, record)
  t.equal(guard.check('k', () => '198.51.100.1'), record, 'then, verified and found at once: the record itself, no promise')
  const later = new KeyGuard({ now: clock.now, lookups: fakeLookups(() => record).lookups })
  await later.check('k', () => '198.51.100.1')
  const answer = later.check('k', () => '198.51.100.1')
  t.ok(answer instanceof Promise, 'a store that answers later: a promise')
  t.same(await answer, record)
  record = undefined
  t.equal(guard.check('k', () => '198.51.100.1'), undefined, 'revoked, found at once: undefined')
  t.equal(guard.check('k', () => '198.51.100.1'), 'unknown', 'and refused without a lookup from then on')
})

t.test('a key that cannot join a batch within maxWaitMs is refused as busy (a hanging store does not pile them up)', async (t) => {
  const store = fakeLookups()
  const guard = new KeyGuard({ now: testClock().now, lookups: store.lookups, maxNewKeyLookups: 1, maxWaitMs: 50 })
  store.hold()
  const hanging = guard.check('first', () => '192.0.2.1')
  const started = performance.now()
  t.equal(await guard.check('second', () => '192.0.2.2'), 'busy')
  t.ok(performance.now() - started >= 45, 'after waiting its 50 ms')
  t.equal(guard.sizes().waitingLookups, 0, 'and no longer waiting')
  store.release()
  t.equal(await hanging, undefined)
  t.equal(await guard.check('third', () => '192.0.2.3'), undefined, 'the turn was given back')
})

t.test('a lookup that fails fails each of its keys\' requests, and frees its turn', async (t) => {
  const failing = {
    findActive: () => undefined,
    findActiveMany: () => Promise.reject(new Error('storage is down'))
  }
  const guard = new KeyGuard<{ id: string }>({ now: testClock().now, lookups: failing, maxNewKeyLookups: 1 })
  const results = await Promise.allSettled([guard.check('a', () => '192.0.2.1'), guard.check('a', () => '192.0.2.2'), guard.check('b', () => '192.0.2.1')])
  t.same(results.map((result) => result.status), ['rejected', 'rejected', 'rejected'])
  t.equal(guard.sizes().waitingLookups, 0)
  t.same(guard.sizes().unknownKeys, 0, 'a failed lookup says nothing about the keys')
})

t.test('the memory store sweeps ended windows a bounded batch at a time', async (t) => {
  const store = new MemoryRateLimitStore()
  const rule = { max: 60, banAfter: 10, banMs: 900_000 }
  const clients = 100_000
  for (let i = 0; i < clients; i++) {
    const client = `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
    store.hit(client, 86_400_000, START, rule)
    store.hit(client, 60_000, START, rule)
  }
  t.same(store.sizes(), { counters: 2 * clients, bans: 0 })

  let now = START + 61_000 // every minute window has ended; the day windows have not
  store.hit('ip:192.0.2.1', 60_000, now, rule)
  const afterOne = store.sizes().counters
  t.ok(afterOne >= 2 * clients - 1000, `one request sweeps at most 1,000 entries (${2 * clients - afterOne + 1} dropped)`)
  let steps = 1
  while (store.sizes().counters > clients + 1 && steps < 2000) {
    now += 20
    store.hit('ip:192.0.2.1', 60_000, now, rule)
    steps++
  }
  t.equal(store.sizes().counters, clients + 1, `the ended windows are all gone after ${steps} steps, the day windows kept`)
  t.ok(steps >= 200, 'in steps, not in one go')
})

t.test('a burst of concurrent guesses from one address costs about its allowance in lookups, in a few statements', async (t) => {
  const { lookups, statements, from } = await guardedApp(t)
  const answers = await Promise.all(Array.from({ length: 500 }, () => from('203.0.113.50', guess())))
  const statuses = answers.map((res) => res.statusCode)
  t.equal(statuses.filter((s) => s === 401).length, free.perMinute, `${free.perMinute} refused as unknown`)
  t.equal(statuses.filter((s) => s === 429).length, 500 - free.perMinute, 'the rest limited, then banned')
  t.comment(`${lookups()} keys looked up in ${statements()} statements for 500 concurrent guesses`)
  // Before the limiter's answer for the address arrives, the batches under way (two at most, of
  // up to lookupBatch keys each) were admitted: that is the whole of the excess.
  t.ok(lookups() <= free.perMinute + 2 * KEY_GUARD_DEFAULTS.lookupBatch, `${lookups()} keys looked up: the allowance, and the batches admitted before the address was limited`)
  t.ok(statements() <= Math.ceil(free.perMinute / KEY_GUARD_DEFAULTS.lookupBatch) + 6, `${statements()} statements`)
})
