import type { BanRule, HitResult, RateLimitStore } from './store.js'

interface Counter { index: number, count: number }

/** One step of a sweep over the counters: the map holding a counter, its client and the counter. */
type CounterEntry = [counters: Map<string, Counter>, lengthMs: number, client: string, counter: Counter]

/** One sweep step inspects at most this many entries: a few milliseconds at most. */
const SWEEP_BATCH = 1000
/** While a pass is under way, a step at most this often (of the caller's clock). */
const SWEEP_STEP_MS = 20
/** A pass over every counter and ban starts at most this often. */
const SWEEP_PASS_MS = 60_000

/**
 * Counters and bans in process memory: exact for one instance, lost when it stops. It answers
 * synchronously (no promise per request); only ping and close keep the async signature.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  // The counters of each window length, by client: a lookup hashes the client string the caller
  // keeps (rate-limit-policy.ts keeps one per API key), not a key built per request.
  private readonly windows = new Map<number, Map<string, Counter>>()
  private readonly bans = new Map<string, number>()
  private nextSweep = 0
  private passStartedAt = 0
  // Map iterators stay valid while their maps change: a pass resumes where the last step stopped.
  private counterCursor: Iterator<CounterEntry> | undefined
  private banCursor: Iterator<[string, number]> | undefined

  hit (client: string, lengthMs: number, now: number, rule: BanRule): HitResult {
    this.sweep(now)
    const index = Math.floor(now / lengthMs) // windowAt's index, without its object
    let counters = this.windows.get(lengthMs)
    if (counters === undefined) {
      counters = new Map()
      this.windows.set(lengthMs, counters)
    }
    let counter = counters.get(client)
    if (counter === undefined || counter.index !== index) {
      counter = { index, count: 0 }
      counters.set(client, counter)
    }
    const bannedUntil = this.bans.get(client)
    if (bannedUntil !== undefined && bannedUntil > now) return { count: counter.count, bannedUntil }
    counter.count += 1
    if (counter.count - rule.max <= rule.banAfter) return { count: counter.count, bannedUntil: undefined }
    const until = now + rule.banMs
    this.bans.set(client, until)
    return { count: counter.count, bannedUntil: until }
  }

  /** How many counters and bans are held (for the memory measurement and the tests). */
  sizes (): { counters: number, bans: number } {
    let counters = 0
    for (const window of this.windows.values()) counters += window.size
    return { counters, bans: this.bans.size }
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    this.windows.clear()
    this.bans.clear()
    this.counterCursor = undefined
    this.banCursor = undefined
  }

  /**
   * Drops ended windows and bans: a pass over all of them at most once a minute of the caller's
   * clock, made in steps of SWEEP_BATCH entries so that no request waits behind the whole map.
   */
  private sweep (now: number): void {
    if (now < this.nextSweep) return
    if (this.counterCursor === undefined && this.banCursor === undefined) {
      this.counterCursor = this.allCounters()
      this.passStartedAt = now
    }
    let budget = SWEEP_BATCH
    while (budget > 0 && this.counterCursor !== undefined) {
      const next = this.counterCursor.next()
      if (next.done === true) {
        this.counterCursor = undefined
        this.banCursor = this.bans.entries()
        break
      }
      budget--
      const [counters, lengthMs, client, counter] = next.value
      if (Math.floor(now / lengthMs) !== counter.index) counters.delete(client)
    }
    while (budget > 0 && this.banCursor !== undefined) {
      const next = this.banCursor.next()
      if (next.done === true) {
        this.banCursor = undefined
        break
      }
      budget--
      const [client, until] = next.value
      if (until <= now) this.bans.delete(client)
    }
    const passOver = this.counterCursor === undefined && this.banCursor === undefined
    this.nextSweep = passOver ? Math.max(now, this.passStartedAt + SWEEP_PASS_MS) : now + SWEEP_STEP_MS
  }

  private * allCounters (): Generator<CounterEntry> {
    for (const [lengthMs, counters] of this.windows) {
      for (const [client, counter] of counters) yield [counters, lengthMs, client, counter]
    }
  }
}
