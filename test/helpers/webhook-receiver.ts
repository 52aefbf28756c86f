import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Teardown } from './app.js'

export interface Received {
  headers: IncomingMessage['headers']
  body: string
  at: number
}

/** How the receiver answers one request: a status (default 200), after a delay, with a body. */
export type Answer = { status?: number, delayMs?: number, body?: string | Buffer, headers?: Record<string, string>, hang?: boolean }

/**
 * A webhook receiver on loopback, as a partner runs one: it keeps every request it gets, and
 * answers as `answer` says (by default 200 at once). `port`: a given one (a receiver back where it was).
 */
export async function startReceiver (t: Teardown, answer: (request: Received, index: number) => Answer = () => ({}), port = 0) {
  const received: Received[] = []
  const waiters: { count: number, resolve: () => void }[] = []
  let respond = answer
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const entry = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      const index = received.push(entry) - 1
      for (const waiter of [...waiters]) {
        if (received.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve()
        }
      }
      const { status = 200, delayMs = 0, body = '', headers = {}, hang = false } = respond(entry, index)
      if (hang) return
      setTimeout(() => { response.writeHead(status, headers).end(body) }, delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  const address = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}/events`,
    port: address.port,
    received,
    /** Changes how the next requests are answered. */
    answer (next: typeof answer) { respond = next },
    /** Resolves once `count` requests have arrived, or rejects after `ms`. */
    async until (count: number, ms = 15_000): Promise<Received[]> {
      if (received.length < count) {
        await new Promise<void>((resolve, reject) => {
          const waiter = { count, resolve: () => { clearTimeout(timer); resolve() } }
          const timer = setTimeout(() => {
            waiters.splice(waiters.indexOf(waiter), 1)
            reject(new Error(`${received.length} of ${count} webhook requests arrived within ${ms} ms`))
          }, ms)
          waiters.push(waiter)
        })
      }
      return received
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/**
 * Verifies a Standard Webhooks signature with node:crypto, apart from the library the service
 * signs with: HMAC-SHA256 over "id.timestamp.body", keyed with the bytes after whsec_ (base64),
 * against each `v1,` signature of the header. The secrets whose signature is there.
 */
export function verifiedBy (received: Received, secrets: readonly string[]): string[] {
  const id = String(received.headers['webhook-id'])
  const timestamp = String(received.headers['webhook-timestamp'])
  const signatures = String(received.headers['webhook-signature']).split(' ')
    .filter((entry) => entry.startsWith('v1,')).map((entry) => Buffer.from(entry.slice(3), 'base64'))
  return secrets.filter((secret) => {
    const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${timestamp}.${received.body}`).digest()
    return signatures.some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected))
  })
}
