/**
 * The event-loop stall check of issue 23: while a workload loads the server, another connection
 * asks `/healthz` every few milliseconds. A server whose event loop is blocked answers it late,
 * so the longest wait is the longest stall a client saw (plus this machine's scheduling noise).
 */
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

export interface HealthzStats {
  polls: number
  /** Polls not answered 200 (or not answered at all). */
  errors: number
  /** Milliseconds, from sending the request to the end of its answer. */
  p50: number
  p99: number
  max: number
}

/**
 * Starts asking `GET /healthz` of `baseUrl` on one keep-alive connection of its own, a request
 * every `everyMs` (or at once after an answer that took longer), until `stop` resolves with the
 * waits. It runs in this process's event loop, which the load generator (wrk, a process of its
 * own) leaves idle; with autocannon, which runs in this loop, the waits also include its work.
 */
export function startHealthzPoller (baseUrl: string, everyMs: number): { stop: () => Promise<HealthzStats> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const url = new URL('/healthz', baseUrl)
  const waits: number[] = []
  let errors = 0
  let stopped = false

  const poll = () => new Promise<void>((resolve) => {
    const started = performance.now()
    const req = request(url, { agent }, (res) => {
      res.resume()
      res.on('end', () => {
        if (res.statusCode === 200) waits.push(performance.now() - started)
        else errors++
        resolve()
      })
      res.on('error', () => { errors++; resolve() })
    })
    req.on('error', () => { errors++; resolve() })
    req.end()
  })

  const loop = (async () => {
    let next = performance.now()
    while (!stopped) {
      await poll()
      next += everyMs
      const wait = next - performance.now()
      if (wait > 0) await sleep(wait)
      else next = performance.now()
    }
  })()

  return {
    stop: async () => {
      stopped = true
      await loop
      agent.destroy()
      const sorted = Float64Array.from(waits).sort()
      const at = (q: number) => sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
      return { polls: waits.length + errors, errors, p50: at(0.5), p99: at(0.99), max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]! }
    }
  }
}
