import type { RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

interface Counter { lengthMs: number, index: number, count: number }

/**
 * Counters and bans in process memory: exact for one instance, lost when it stops. It answers
 * synchronously (no promise per request); only ban, ping and close keep the async signature.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly counters = new Map<string, Counter>()
  private readonly bans = new Map<string, number>()
  private nextSweep = 0

  hit (client: string, lengthMs: number, now: number): number {
    this.sweep(now)
    const { index } = windowAt(now, lengthMs)
    const key = `${client} ${lengthMs}`
    let counter = this.counters.get(key)
    if (counter === undefined || counter.index !== index) {
      counter = { lengthMs, index, count: 0 }
      this.counters.set(key, counter)
    }
    if (!this.isBanned(client, now)) counter.count += 1
    return counter.count
  }

  bannedUntil (client: string, now: number): number | undefined {
    return this.isBanned(client, now) ? this.bans.get(client) : undefined
  }

  async ban (client: string, until: number, now: number): Promise<number> {
    const current = this.bans.get(client)
    if (current !== undefined && current > now) return current
    this.bans.set(client, until)
    return until
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    this.counters.clear()
    this.bans.clear()
  }

  private isBanned (client: string, now: number): boolean {
    const until = this.bans.get(client)
    return until !== undefined && until > now
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
