import { connect } from 'node:net'
import { parseResponse, type RawResponse } from './raw-http.js'

/** What happened to every request the load wrote. */
export interface LoadReport {
  /** Requests written to a socket. */
  sent: number
  /** Requests answered in full. */
  answered: number
  /** Answers by status code. */
  statuses: Record<string, number>
  /** Answers that carried `Connection: close` (the client then opens a new connection). */
  closing: number
  /** Requests whose connection was reset (ECONNRESET, EPIPE) before their answer came. */
  resets: number
  /** Requests whose connection the server ended (FIN) before their answer came. */
  unanswered: number
  /** Responses no request was waiting for: a second answer to a request, or one after `Connection: close`. */
  unsolicited: number
  /** Connections refused: the server no longer listened. */
  refused: number
}

export interface LoadOptions {
  port: number
  host?: string
  /** How many keep-alive connections send at once (more may be added: Load.add). */
  connections: number
  /** The raw text of connection `connection`'s `n`-th request (n counts on across its reconnections). */
  request: (connection: number, n: number) => string
  /** Each answer, with the connection and request number it answers. */
  onAnswer?: (connection: number, n: number, response: RawResponse) => void
}

export interface Load {
  report: LoadReport
  /** Resolves once `count` answers have arrived in all. */
  answered (count: number): Promise<void>
  /** Opens `count` more connections, numbered on from the last; resolves once they have connected (or were refused). */
  add (count: number): Promise<void>
  /** Lets each connection finish the request it is waiting for, then close; resolves with the report. */
  stop (): Promise<LoadReport>
  /** Resolves when every connection has ended for good: stopped, or refused when it (re)connected. */
  done (): Promise<LoadReport>
}

/**
 * Keep-alive load over raw sockets, for tests of what a server does with the requests on its
 * connections while it stops. Each connection writes its next request as soon as the answer to
 * the previous one has arrived (no pipelining), and every request written is accounted for:
 * answered, reset, or left unanswered when the server ended the connection. After an answer with
 * `Connection: close` the client waits for the server to close, then connects again; a refused
 * connection ends that client.
 */
export function keepAliveLoad (options: LoadOptions): Load {
  const { port, host = '127.0.0.1' } = options
  const report: LoadReport = { sent: 0, answered: 0, statuses: {}, closing: 0, resets: 0, unanswered: 0, unsolicited: 0, refused: 0 }
  const counters: number[] = []
  let stopped = false
  const waiters: { count: number, resolve: () => void }[] = []

  const session = (index: number, onConnect?: () => void) => new Promise<'refused' | 'ended'>((resolve) => {
    const socket = connect(port, host)
    socket.setNoDelay(true)
    let connected = false
    let pending: number | undefined
    let closeAfterAnswer = false
    let error: string | undefined
    let data: Buffer = Buffer.alloc(0)
    const sendNext = () => {
      if (stopped) { socket.end(); return }
      pending = counters[index]!++
      report.sent++
      socket.write(options.request(index, pending))
    }
    socket.on('connect', () => { connected = true; onConnect?.(); sendNext() })
    socket.on('data', (chunk: Buffer) => {
      data = data.length === 0 ? chunk : Buffer.concat([data, chunk])
      for (let parsed = parseResponse(data); parsed !== undefined; parsed = parseResponse(data)) {
        data = data.subarray(parsed.length)
        if (pending === undefined) { report.unsolicited++; continue }
        const { response } = parsed
        const n = pending
        pending = undefined
        report.answered++
        report.statuses[response.status] = (report.statuses[response.status] ?? 0) + 1
        options.onAnswer?.(index, n, response)
        for (const waiter of waiters.filter((w) => report.answered >= w.count)) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve()
        }
        if (response.headers.connection?.toLowerCase() === 'close') {
          report.closing++
          closeAfterAnswer = true
        } else if (!closeAfterAnswer) {
          sendNext()
        }
      }
    })
    socket.on('error', (e: Error & { code?: string }) => { error = e.code ?? e.message })
    socket.on('close', () => {
      if (!connected) {
        if (error === 'ECONNREFUSED') report.refused++
        onConnect?.()
        return resolve('refused')
      }
      if (pending !== undefined) {
        if (error === undefined) report.unanswered++
        else report.resets++
      }
      resolve('ended')
    })
  })

  const clients: Promise<void>[] = []
  const client = async (index: number, onConnect?: () => void) => {
    for (let first = true; !stopped; first = false) {
      if (await session(index, first ? onConnect : undefined) === 'refused') return
    }
  }
  const add = (count: number) => {
    const connecting: Promise<void>[] = []
    for (let i = 0; i < count; i++) {
      const index = counters.push(0) - 1
      connecting.push(new Promise((resolve) => { clients.push(client(index, resolve)) }))
    }
    return Promise.all(connecting).then(() => undefined)
  }
  void add(options.connections)
  const done = async () => {
    for (let settled = 0; settled < clients.length;) {
      const now = clients.length
      await Promise.all(clients)
      settled = now
    }
    return report
  }
  return {
    report,
    answered: (count) => report.answered >= count ? Promise.resolve() : new Promise((resolve) => { waiters.push({ count, resolve }) }),
    add,
    stop: async () => {
      stopped = true
      return await done()
    },
    done
  }
}
