import type { BanRule, HitResult, RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

interface Counter { lengthMs: number, index: number, count: number }

/**
 * Counters and bans in process memory: exact for one instance, lost when it stops. It answers
 * synchronously (no promise per request); only ping and close keep the async signature.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly counters = new Map<string, Counter>()
  private readonly bans = new Map<string, number>()
  private nextSweep = 0

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

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    this.counters.clear()
    this.bans.clear()
  }

  /** Drops ended windows and bans, at most once a minute of the caller's clock. */
  private sweep (now: number): void {
    if (now < this.nextSweep) return
    this.nextSweep = now + 60_000
    for (const [key, counter] of this.counters) {
      if (windowAt(now, counter.lengthMs).index !== counter.index) this.counters.delete(key)
    }
    for (const [client, until] of this.bans) {
      if (until <= now) this.bans.delete(client)
    }
  }
}
