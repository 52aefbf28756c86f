/** The webhook workloads' receiver, in the runner's process (on wrk's core): it answers 204 at once and counts. */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { ask, type Answer } from './floor-check.js'

export interface Receiver {
  url: string
  /** Requests received, and the distinct webhook-ids among them. */
  requests: number
  ids: Set<string>
  /** When the last new webhook-id arrived (ms since the epoch). */
  lastNewAt: number
  close (): Promise<void>
}

export async function startReceiver (): Promise<Receiver> {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      receiver.requests++
      const id = String(request.headers['webhook-id'])
      if (!receiver.ids.has(id)) {
        receiver.ids.add(id)
        receiver.lastNewAt = Date.now()
      }
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    requests: 0,
    ids: new Set(),
    lastNewAt: 0,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  }
  return receiver
}

/** Subscribes an endpoint of the benchmark's key to inventory.updated, delivered to `receiver`. */
export async function subscribe (baseUrl: string, headers: Record<string, string>, receiver: Receiver): Promise<void> {
  const answer = await ask(baseUrl, { method: 'POST', path: '/v1/webhooks', body: JSON.stringify({ url: receiver.url, events: ['inventory.updated'] }) }, headers)
  if (answer.status !== 201) throw new Error(`POST /v1/webhooks answered ${answer.status}: ${answer.body.slice(0, 200)}`)
}

/**
 * Waits until no new request has arrived for `quietMs` (the server has delivered what was due),
 * or `limitMs` have passed; whether it went quiet.
 */
export async function quiet (receiver: Receiver, quietMs = 1000, limitMs = 120_000): Promise<boolean> {
  const deadline = Date.now() + limitMs
  let seen = -1
  while (Date.now() < deadline) {
    if (receiver.requests === seen) return true
    seen = receiver.requests
    await sleep(quietMs)
  }
  return false
}

/** Sends `count` PATCHes, `connections` at a time, each to a quantity its pet never had (so each records an event). */
export async function changes (baseUrl: string, headers: Record<string, string>, count: number, connections: number): Promise<{ failed: number }> {
  let next = 0
  let failed = 0
  const send = async () => {
    while (next < count) {
      const i = next++
      const answer: Answer = await ask(baseUrl, { method: 'PATCH', path: `/v1/inventory/${(i % 100) + 1}`, body: JSON.stringify({ quantity: 1000 + i }) }, headers)
        .catch(() => ({ status: 0, headers: {}, body: '' }))
      if (answer.status !== 200) failed++
    }
  }
  await Promise.all(Array.from({ length: connections }, send))
  return { failed }
}

/** Waits until `count` distinct events have arrived, or `limitMs` have passed. */
export async function allArrived (receiver: Receiver, count: number, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs
  while (receiver.ids.size < count && Date.now() < deadline) await sleep(20)
}
