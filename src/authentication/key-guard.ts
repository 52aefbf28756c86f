import type { MaybePromise } from '../maybe-promise.js'

/** Why a presented key was refused without its lookup. */
export type KeyRefusal =
  /** The store said a moment ago that it has no such active key. */
  | 'unknown'
  /** Its address is limited or banned, and has used its trickle of lookups. */
  | 'not-checked'
  /**
   * Too many keys this instance does not know are waiting to be looked up, or this one waited too
   * long: the service's own waiting, never counted against the client.
   */
  | 'busy'

type Admission = KeyRefusal | 'known' | 'new'

/** How the guard asks the store about keys: the API keys repository (src/repositories/api-keys.ts). */
export interface KeyLookups<R> {
  /** One key this instance has verified before: answered in the same call when the store has it at hand. */
  findActive (keyHash: string): MaybePromise<R | undefined>
  /** Keys this instance has not verified yet, in one lookup: the active ones found, by hash. */
  findActiveMany (keyHashes: readonly string[]): MaybePromise<ReadonlyMap<string, R>>
}

export interface KeyGuardOptions<R> {
  /** Milliseconds since the epoch. */
  now: () => number
  lookups: KeyLookups<R>
  /** How long a key the store did not know is refused without asking it again. */
  unknownKeyMs?: number
  /** At most one lookup of a key this instance does not know, per limited address, this often. */
  trickleMs?: number
  /** Lookups of keys this instance does not know that may run at once; the others wait their turn. */
  maxNewKeyLookups?: number
  /** Most keys one of those lookups asks about. */
  lookupBatch?: number
  /** How many keys may wait; beyond that they are refused as 'busy'. */
  maxWaitingLookups?: number
  /** How long one may wait (real time: while the store hangs, waiting longer helps no one); then 'busy'. */
  maxWaitMs?: number
  maxUnknownKeys?: number
  maxKnownKeys?: number
  maxLimitedAddresses?: number
}

export const KEY_GUARD_DEFAULTS = {
  unknownKeyMs: 5000,
  trickleMs: 1000,
  maxNewKeyLookups: 2,
  lookupBatch: 32,
  maxWaitingLookups: 1000,
  maxWaitMs: 1000,
  maxUnknownKeys: 10_000,
  maxKnownKeys: 10_000,
  maxLimitedAddresses: 100_000
} as const

/** How often a known key in use moves to the newest place among the known keys. */
const KNOWN_KEY_RENEWAL_MS = 1000

/** A key this instance does not know, waiting for a lookup; every request that presents it meanwhile shares it. */
interface WaitingKey<R> {
  keyHash: string
  address: () => string
  answer: Promise<R | undefined | KeyRefusal>
  settle: (answer: R | undefined | KeyRefusal) => void
  fail: (error: unknown) => void
  timer: NodeJS.Timeout | undefined
}

/**
 * Keeps guessed keys away from the store. The store remains the one authority on which keys are
 * valid and which are revoked: this only decides which lookups are worth making.
 *
 * - A key the store did not know (unknown or revoked) is refused without a lookup for
 *   `unknownKeyMs`: repeats of one bad key cost nothing. A key created in that time works once
 *   it has passed.
 * - A client address that the limiter answered "rate limited" or "banned" is remembered until
 *   that ends. Its requests with keys this instance has not verified are looked up at most once
 *   per `trickleMs` (so a valid key behind a shared, limited address still gets in); the others
 *   are refused unchecked, and the limiter answers them for the address as always.
 * - Keys this instance has not verified are looked up in batches of up to `lookupBatch` keys, at
 *   most `maxNewKeyLookups` batches at a time: guesses can hold that many of the store's
 *   connections, never all of them, and a burst of valid keys (a partner's gateway, an instance
 *   just started) costs a few statements, not one each. Requests presenting the same key share its
 *   lookup. Each key decides again when its batch is formed (its address may have been limited
 *   meanwhile). One that cannot join a batch within `maxWaitMs` is refused as 'busy': the
 *   service's own waiting, which the caller must not count against the client.
 * - Keys this instance has verified are looked up at once, every time, from any address, never
 *   behind the others: they are counted per key, and a revocation takes effect on the very next
 *   request.
 *
 * Every map is bounded; the policy sweeps them a batch at a time.
 */
export class KeyGuard<R extends object> {
  private readonly now: () => number
  private readonly lookups: KeyLookups<R>
  private readonly settings: Required<Omit<KeyGuardOptions<R>, 'now' | 'lookups'>>
  /** Key hashes the store did not know, until they may be asked about again. */
  private readonly unknownKeys: ExpiringMap<string, true>
  /**
   * Key hashes the store confirmed, with when each last took its place as the newest: when full,
   * the key verified longest ago goes first.
   */
  private readonly knownKeys: ExpiringMap<string, number>
  /** Limited or banned addresses (until that ends), with the time of their next allowed lookup. */
  private readonly limitedAddresses: ExpiringMap<string, { nextLookupAt: number }>
  /** Keys waiting for a batch, in arrival order, and every key waiting or being looked up, by hash. */
  private queue: WaitingKey<R>[] = []
  private readonly pending = new Map<string, WaitingKey<R>>()
  private running = 0

  constructor (options: KeyGuardOptions<R>) {
    const { now, lookups, ...settings } = options
    this.now = now
    this.lookups = lookups
    this.settings = { ...KEY_GUARD_DEFAULTS, ...settings }
    this.unknownKeys = new ExpiringMap(this.settings.maxUnknownKeys)
    this.knownKeys = new ExpiringMap(this.settings.maxKnownKeys)
    this.limitedAddresses = new ExpiringMap(this.settings.maxLimitedAddresses)
  }

  /**
   * The active key with this hash, when the lookup is worth making, or why it was refused without
   * one. `address` (the client address) is asked for only when needed.
   */
  check (keyHash: string, address: () => string): MaybePromise<R | undefined | KeyRefusal> {
    let client: string | undefined
    const clientAddress = () => (client ??= address())
    const first = this.admit(keyHash, clientAddress, false)
    // Every request with a valid key comes this way: answered in the same call when the store
    // has the key at hand, else by a promise chain rather than an async function, whose suspended
    // frame and extra promises each such request paid for.
    if (first === 'known') {
      const found = this.lookups.findActive(keyHash)
      return found instanceof Promise ? found.then((record) => this.settle(keyHash, record)) : this.settle(keyHash, found)
    }
    if (first !== 'new') return first
    return this.waitForLookup(keyHash, clientAddress)
  }

  /** A key this instance does not know: joins the next batch, or the lookup of the same key under way. */
  private waitForLookup (keyHash: string, address: () => string): Promise<R | undefined | KeyRefusal> | KeyRefusal {
    const shared = this.pending.get(keyHash)
    if (shared !== undefined) return shared.answer
    if (this.queue.length >= this.settings.maxWaitingLookups) return 'busy'
    let settle!: WaitingKey<R>['settle']
    let fail!: WaitingKey<R>['fail']
    const answer = new Promise<R | undefined | KeyRefusal>((resolve, reject) => { settle = resolve; fail = reject })
    const waiting: WaitingKey<R> = { keyHash, address, answer, settle, fail, timer: undefined }
    waiting.timer = setTimeout(() => {
      waiting.timer = undefined
      this.queue = this.queue.filter((other) => other !== waiting)
      this.finish(waiting, 'busy')
    }, this.settings.maxWaitMs)
    this.pending.set(keyHash, waiting)
    this.queue.push(waiting)
    this.lookUpWaiting()
    return answer
  }

  /** Starts batches of the waiting keys while fewer than maxNewKeyLookups run. */
  private lookUpWaiting (): void {
    while (this.running < this.settings.maxNewKeyLookups && this.queue.length > 0) {
      const batch: WaitingKey<R>[] = []
      while (batch.length < this.settings.lookupBatch && this.queue.length > 0) {
        const waiting = this.queue.shift()!
        clearTimeout(waiting.timer)
        waiting.timer = undefined
        const admitted = this.admit(waiting.keyHash, waiting.address, true)
        if (admitted === 'new' || admitted === 'known') batch.push(waiting)
        else this.finish(waiting, admitted)
      }
      if (batch.length > 0) this.lookUp(batch)
    }
  }

  private lookUp (batch: WaitingKey<R>[]): void {
    this.running++
    // The next batch is formed a turn later: by then the limiter has counted the requests this
    // one answered, so a guesser's address it has limited meanwhile gets no more lookups.
    const done = () => {
      this.running--
      if (this.queue.length > 0) setImmediate(() => { this.lookUpWaiting() })
    }
    const answered = (found: ReadonlyMap<string, R>) => {
      for (const waiting of batch) this.finish(waiting, this.settle(waiting.keyHash, found.get(waiting.keyHash)))
      done()
    }
    const failed = (error: unknown) => {
      for (const waiting of batch) {
        this.pending.delete(waiting.keyHash)
        waiting.fail(error)
      }
      done()
    }
    // Answered in a later job even when the store answers at once: the batch holds its turn until
    // then, so the keys that arrive meanwhile wait and share the next batch.
    new Promise<ReadonlyMap<string, R>>((resolve) => { resolve(this.lookups.findActiveMany(batch.map((waiting) => waiting.keyHash))) })
      .then(answered, failed)
  }

  private finish (waiting: WaitingKey<R>, answer: R | undefined | KeyRefusal): void {
    this.pending.delete(waiting.keyHash)
    waiting.settle(answer)
  }

  /**
   * The limiter's answer for requests counted under an address: limited or banned until `until`,
   * or not limited (undefined). The request just counted may have cost a lookup: the next one is
   * allowed a trickle period later.
   */
  addressLimited (address: string, until: number | undefined): void {
    const now = this.now()
    if (until === undefined || until <= now) {
      this.limitedAddresses.delete(address)
      return
    }
    const current = this.limitedAddresses.get(address, now)
    this.limitedAddresses.set(address, current ?? { nextLookupAt: now + this.settings.trickleMs }, until)
  }

  /** Drops a batch of expired entries from each map. */
  sweep (): void {
    const now = this.now()
    this.unknownKeys.sweep(now)
    this.limitedAddresses.sweep(now)
  }

  /** How many entries each map holds, and how many keys wait for a lookup (for the measurements and the tests). */
  sizes (): { unknownKeys: number, knownKeys: number, limitedAddresses: number, waitingLookups: number } {
    return { unknownKeys: this.unknownKeys.size, knownKeys: this.knownKeys.size, limitedAddresses: this.limitedAddresses.size, waitingLookups: this.queue.length }
  }

  clear (): void {
    this.unknownKeys.clear()
    this.knownKeys.clear()
    this.limitedAddresses.clear()
  }

  /** Whether the key may be looked up; `spend` uses the limited address's trickle when it admits it. */
  private admit (keyHash: string, address: () => string, spend: boolean): Admission {
    const now = this.now()
    if (this.unknownKeys.get(keyHash, now) !== undefined) return 'unknown'
    if (this.knownKeys.get(keyHash, now) !== undefined) return 'known'
    const limited = this.limitedAddresses.get(address(), now)
    if (limited === undefined) return 'new'
    if (limited.nextLookupAt > now) return 'not-checked'
    if (spend) limited.nextLookupAt = now + this.settings.trickleMs
    return 'new'
  }

  /** The store's answer, remembered. */
  private settle (keyHash: string, record: R | undefined): R | undefined {
    if (record !== undefined) {
      // A key in use is verified on every request: moving it to the newest place each time (a
      // Map delete, an insert and an entry object) cost 2 % of a GET /v1/inventory's CPU. Its place
      // is renewed at most once per KNOWN_KEY_RENEWAL_MS, which keeps the order of the bound.
      const now = this.now()
      const placedAt = this.knownKeys.get(keyHash, now)
      if (placedAt === undefined || now - placedAt >= KNOWN_KEY_RENEWAL_MS) this.knownKeys.set(keyHash, now, Number.POSITIVE_INFINITY)
    } else {
      this.knownKeys.delete(keyHash)
      this.unknownKeys.set(keyHash, true, this.now() + this.settings.unknownKeyMs)
    }
    return record
  }
}

interface Entry<V> { value: V, expiresAt: number }

/**
 * The key guard's memory: a Map whose entries expire, holding at most `maxEntries`: when full, the
 * entry written longest ago is dropped, so what clients send can never grow it further. Expired
 * entries are dropped when read, and by `sweep`, which inspects at most `sweepBatch` entries per
 * call and resumes where the last call stopped, so no call holds the event loop for long however
 * many entries there are.
 */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, Entry<V>>()
  // A Map iterator stays valid while the map changes: the sweep walks it across calls.
  private sweepCursor: Iterator<[K, Entry<V>]> | undefined

  constructor (readonly maxEntries: number, readonly sweepBatch = 1000) {
    if (!(maxEntries >= 1)) throw new RangeError('an ExpiringMap holds at least one entry')
  }

  get size (): number {
    return this.entries.size
  }

  /** The value, unless it has expired at `now` (it is then dropped). */
  get (key: K, now: number): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  /** Writes the entry as the newest one. */
  set (key: K, value: V, expiresAt: number): void {
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt })
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
  }

  delete (key: K): void {
    this.entries.delete(key)
  }

  /** Drops expired entries among the next `sweepBatch`; returns how many it dropped. */
  sweep (now: number): number {
    let dropped = 0
    for (let inspected = 0; inspected < this.sweepBatch; inspected++) {
      this.sweepCursor ??= this.entries.entries()
      const next = this.sweepCursor.next()
      if (next.done === true) {
        this.sweepCursor = undefined
        break
      }
      const [key, entry] = next.value
      if (entry.expiresAt <= now) {
        this.entries.delete(key)
        dropped++
      }
    }
    return dropped
  }

  clear (): void {
    this.entries.clear()
    this.sweepCursor = undefined
  }
}
