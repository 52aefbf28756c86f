import type { BanRule, HitResult, RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

interface Counter { lengthMs: number, index: number, count: number }

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
  private readonly counters = new Map<string, Counter>()
  private readonly bans = new Map<string, number>()
  private nextSweep = 0
  private passStartedAt = 0
  // Map iterators stay valid while their maps change: a pass resumes where the last step stopped.
  private counterCursor: Iterator<[string, Counter]> | undefined
  private banCursor: Iterator<[string, number]> | undefined

  hit (client: string, lengthMs: number, now: number, rule: BanRule): HitResult {
    this.sweep(now)
    const { index } = windowAt(now, lengthMs)
    const key = `${client} ${lengthMs}`
    let counter = this.counters.get(key)
    if (counter === undefined || counter.index !== index) {
      counter = { lengthMs, index, count: 0 }
      this.counters.set(key, counter)
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
    return { counters: this.counters.size, bans: this.bans.size }
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    this.counters.clear()
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
      this.counterCursor = this.counters.entries()
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
      const [key, counter] = next.value
      // The window's index without windowAt's object: a sweep step allocates nothing.
      if (Math.floor(now / counter.lengthMs) !== counter.index) this.counters.delete(key)
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
}
