import type { MaybePromise } from '../maybe-promise.js'

/** Why a presented key was refused without its lookup. */
export type KeyRefusal =
  /** The store said a moment ago that it has no such active key. */
  | 'unknown'
  /** Its address is limited or banned, and has used its trickle of lookups. */
  | 'not-checked'
  /** Too many keys this instance does not know are waiting to be looked up, or this one waited too long. */
  | 'busy'

type Admission = KeyRefusal | 'known' | 'new'

export interface KeyGuardOptions {
  /** Milliseconds since the epoch. */
  now: () => number
  /** How long a key the store did not know is refused without asking it again. */
  unknownKeyMs?: number
  /** At most one lookup of a key this instance does not know, per limited address, this often. */
  trickleMs?: number
  /** Lookups of keys this instance does not know that may run at once; the others wait their turn. */
  maxNewKeyLookups?: number
  /** How many may wait; beyond that they are refused as 'busy'. */
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
  maxWaitingLookups: 1000,
  maxWaitMs: 1000,
  maxUnknownKeys: 10_000,
  maxKnownKeys: 10_000,
  maxLimitedAddresses: 100_000
} as const

/** How often a known key in use moves to the newest place among the known keys. */
const KNOWN_KEY_RENEWAL_MS = 1000

/**
 * Keeps guessed keys away from the store (issue 13, item 2). The store remains the one authority
 * on which keys are valid and which are revoked: this only decides which lookups are worth making.
 *
 * - A key the store did not know (unknown or revoked) is refused without a lookup for
 *   `unknownKeyMs`: repeats of one bad key cost nothing. A key created in that time works once
 *   it has passed.
 * - A client address that the limiter answered "rate limited" or "banned" is remembered until
 *   that ends. Its requests with keys this instance has not verified are looked up at most once
 *   per `trickleMs` (so a valid key behind a shared, limited address still gets in); the others
 *   are refused unchecked, and the limiter answers them for the address as always.
 * - Keys this instance has not verified are looked up at most `maxNewKeyLookups` at a time, in
 *   turn, each deciding again when its turn comes (its address may have been limited meanwhile):
 *   guesses can hold that many of the store's connections, never all of them. One that cannot
 *   have its turn within `maxWaitMs` is refused as 'busy'.
 * - Keys this instance has verified are looked up at once, every time, from any address: they
 *   are counted per key, and a revocation takes effect on the very next request.
 *
 * Every map is bounded; the policy sweeps them a batch at a time.
 */
export class KeyGuard {
  private readonly now: () => number
  private readonly settings: Required<Omit<KeyGuardOptions, 'now'>>
  /** Key hashes the store did not know, until they may be asked about again. */
  private readonly unknownKeys: ExpiringMap<string, true>
  /**
   * Key hashes the store confirmed, with when each last took its place as the newest: when full,
   * the key verified longest ago goes first.
   */
  private readonly knownKeys: ExpiringMap<string, number>
  /** Limited or banned addresses (until that ends), with the time of their next allowed lookup. */
  private readonly limitedAddresses: ExpiringMap<string, { nextLookupAt: number }>
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor (options: KeyGuardOptions) {
    this.now = options.now
    this.settings = { ...KEY_GUARD_DEFAULTS, ...options }
    this.unknownKeys = new ExpiringMap(this.settings.maxUnknownKeys)
    this.knownKeys = new ExpiringMap(this.settings.maxKnownKeys)
    this.limitedAddresses = new ExpiringMap(this.settings.maxLimitedAddresses)
  }

  /**
   * The active key with this hash, found by `find` when the lookup is worth making, or why it was
   * refused without one. `address` (the client address) is asked for only when needed.
   */
  check<R extends object> (keyHash: string, address: () => string, find: () => MaybePromise<R | undefined>): MaybePromise<R | undefined | KeyRefusal> {
    let client: string | undefined
    const clientAddress = () => (client ??= address())
    const first = this.admit(keyHash, clientAddress, false)
    // Every request with a valid key comes this way: answered in the same call when `find` is
    // (the store had the key at hand), else by a promise chain rather than an async function,
    // whose suspended frame and extra promises each such request paid for (bench/README.md,
    // "Promises and bytes per request").
    if (first === 'known') {
      const found = find()
      return found instanceof Promise ? found.then((record) => this.settle(keyHash, record)) : this.settle(keyHash, found)
    }
    if (first !== 'new') return first
    return this.lookUpNew(keyHash, clientAddress, find)
  }

  /** A key this instance does not know: looked up in turn, admitted again when its turn comes. */
  private async lookUpNew<R extends object> (keyHash: string, clientAddress: () => string, find: () => MaybePromise<R | undefined>): Promise<R | undefined | KeyRefusal> {
    if (!await this.turn()) return 'busy'
    try {
      const admitted = this.admit(keyHash, clientAddress, true)
      return admitted === 'known' || admitted === 'new' ? this.settle(keyHash, await find()) : admitted
    } finally {
      this.done()
    }
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

  /** How many entries each map holds, and how many lookups wait (for the measurements and the tests). */
  sizes (): { unknownKeys: number, knownKeys: number, limitedAddresses: number, waitingLookups: number } {
    return { unknownKeys: this.unknownKeys.size, knownKeys: this.knownKeys.size, limitedAddresses: this.limitedAddresses.size, waitingLookups: this.waiting.length }
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
  private settle<R> (keyHash: string, record: R | undefined): R | undefined {
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

  /** Resolves true when it is this lookup's turn; false when too many wait already, or it waited too long. */
  private turn (): Promise<boolean> | boolean {
    if (this.running < this.settings.maxNewKeyLookups) {
      this.running++
      return true
    }
    if (this.waiting.length >= this.settings.maxWaitingLookups) return false
    return new Promise<boolean>((resolve) => {
      const grant = () => {
        clearTimeout(timer)
        resolve(true)
      }
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(grant), 1)
        resolve(false)
      }, this.settings.maxWaitMs)
      this.waiting.push(grant)
    })
  }

  /** Hands the finished lookup's turn to the next one waiting. */
  private done (): void {
    const next = this.waiting.shift()
    if (next === undefined) this.running--
    else next()
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
