import { ExpiringMap } from './expiring-map.js'

/** What to do with a presented key before it is looked up in the store. */
export type KeyDecision =
  /** Look it up: the store says whether it is valid (and whether it is still active). */
  | 'look-up'
  /** Refuse it as unknown: the store said so a moment ago. */
  | 'unknown'
  /** Refuse it unchecked: its address is limited and has used its trickle of lookups. */
  | 'not-checked'

export interface KeyGuardOptions {
  /** Milliseconds since the epoch. */
  now: () => number
  /** How long a key the store did not know is refused without asking it again. */
  unknownKeyMs?: number
  /** At most one lookup of a key this instance does not know, per limited address, this often. */
  trickleMs?: number
  maxUnknownKeys?: number
  maxKnownKeys?: number
  maxLimitedAddresses?: number
}

export const KEY_GUARD_DEFAULTS = {
  unknownKeyMs: 5000,
  trickleMs: 1000,
  maxUnknownKeys: 10_000,
  maxKnownKeys: 10_000,
  maxLimitedAddresses: 100_000
} as const

/**
 * Keeps guessed keys away from the store (issue 13, item 2). The store remains the one authority
 * on which keys are valid and which are revoked: this only decides which lookups are worth making.
 *
 * - A key the store did not know (unknown or revoked) is refused without a lookup for
 *   `unknownKeyMs`: repeats of one bad key cost nothing. A key created in that time works once
 *   it has passed.
 * - A client address that the limiter answered "rate limited" or "banned" is remembered until
 *   that ends. Its requests with keys this instance has not verified before are looked up at most
 *   once per `trickleMs` (so a valid key behind a shared, limited address still gets in); the
 *   others are refused unchecked, and the limiter answers them for the address as always.
 * - Keys this instance has verified are always looked up, from any address: they are counted
 *   per key, and a revocation takes effect on the very next request.
 *
 * Every map is bounded; the policy sweeps them a batch at a time.
 */
export class KeyGuard {
  private readonly now: () => number
  private readonly unknownKeyMs: number
  private readonly trickleMs: number
  /** Key hashes the store did not know, until they may be asked about again. */
  private readonly unknownKeys: ExpiringMap<string, true>
  /** Key hashes the store confirmed; the newest verifications are kept. */
  private readonly knownKeys: ExpiringMap<string, true>
  /** Limited or banned addresses (until that ends), with the time of their next allowed lookup. */
  private readonly limitedAddresses: ExpiringMap<string, { nextLookupAt: number }>

  constructor (options: KeyGuardOptions) {
    const settings = { ...KEY_GUARD_DEFAULTS, ...options }
    this.now = options.now
    this.unknownKeyMs = settings.unknownKeyMs
    this.trickleMs = settings.trickleMs
    this.unknownKeys = new ExpiringMap(settings.maxUnknownKeys)
    this.knownKeys = new ExpiringMap(settings.maxKnownKeys)
    this.limitedAddresses = new ExpiringMap(settings.maxLimitedAddresses)
  }

  /** `address` is asked for only when the key is neither known nor refused already. */
  decide (keyHash: string, address: () => string): KeyDecision {
    const now = this.now()
    if (this.unknownKeys.get(keyHash, now) !== undefined) return 'unknown'
    if (this.knownKeys.get(keyHash, now) !== undefined) return 'look-up'
    const limited = this.limitedAddresses.get(address(), now)
    if (limited === undefined) return 'look-up'
    if (limited.nextLookupAt > now) return 'not-checked'
    limited.nextLookupAt = now + this.trickleMs
    return 'look-up'
  }

  /** The store's answer for a key that was looked up. */
  found (keyHash: string, valid: boolean): void {
    if (valid) {
      this.knownKeys.set(keyHash, true, Number.POSITIVE_INFINITY)
    } else {
      this.knownKeys.delete(keyHash)
      this.unknownKeys.set(keyHash, true, this.now() + this.unknownKeyMs)
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
    this.limitedAddresses.set(address, current ?? { nextLookupAt: now + this.trickleMs }, until)
  }

  /** Drops a batch of expired entries from each map. */
  sweep (): void {
    const now = this.now()
    this.unknownKeys.sweep(now)
    this.limitedAddresses.sweep(now)
  }

  /** How many entries each map holds (for the memory measurement and the tests). */
  sizes (): { unknownKeys: number, knownKeys: number, limitedAddresses: number } {
    return { unknownKeys: this.unknownKeys.size, knownKeys: this.knownKeys.size, limitedAddresses: this.limitedAddresses.size }
  }

  clear (): void {
    this.unknownKeys.clear()
    this.knownKeys.clear()
    this.limitedAddresses.clear()
  }
}
