import { spawnSync } from 'node:child_process'
import { connect, createServer, type Server, type Socket } from 'node:net'
import type { Teardown } from './app.js'

export interface TcpProxy {
  port: number
  /** Connections accepted so far (a client that opens a new one has noticed something). */
  readonly connections: number
  /** Simulates an outage: drops every open connection and refuses new ones. */
  cut (): void
  /**
   * Simulates a host that dies without a reset, or a firewall that forgot its connections: every
   * open connection stays open but passes no byte again, either way, and never closes by itself;
   * new connections are accepted and go silent the same way.
   */
  blackhole (): void
  /**
   * The next bytes a client sends that contain `marker` reach the server, and from then on nothing
   * comes back on that connection: the network fails just after a request was sent.
   */
  silenceAnswersAfter (marker: string): void
  /** Ends the outage for connections opened from now on (those black-holed stay silent). */
  restore (): void
}

/**
 * A loopback TCP proxy in front of a real server (PostgreSQL, Redis), so a test can make the
 * dependency unreachable without stopping the machine's shared service.
 */
export async function startTcpProxy (t: Teardown, targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  const links = new Set<[Socket, Socket]>()
  let state: 'up' | 'cut' | 'blackhole' = 'up'
  let connections = 0
  let answersSilencedAfter: string | undefined

  // Reads and drops everything; an end from the other side is left unanswered, as by a dead host.
  const silence = (socket: Socket) => {
    socket.removeAllListeners('data').removeAllListeners('end')
    socket.on('data', () => {}).on('error', () => {}).resume()
    sockets.add(socket)
  }

  // allowHalfOpen: a client's FIN to a black-holed connection must not be answered by Node.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    connections++
    if (state === 'cut') { client.destroy(); return }
    if (state === 'blackhole') { silence(client); return }
    const upstream = connect({ port: targetPort, host: targetHost, allowHalfOpen: true })
    const link: [Socket, Socket] = [client, upstream]
    links.add(link)
    sockets.add(client).add(upstream)
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); links.delete(link) }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
    client.pipe(upstream, { end: false })
    upstream.pipe(client, { end: false })
    client.on('data', (chunk: Buffer) => {
      if (answersSilencedAfter === undefined || !chunk.includes(answersSilencedAfter)) return
      answersSilencedAfter = undefined
      upstream.unpipe(client)
      upstream.removeAllListeners('close').removeAllListeners('error').removeAllListeners('end')
      silence(upstream)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('proxy has no port')
  return {
    port: address.port,
    get connections () { return connections },
    cut: () => { state = 'cut'; for (const s of sockets) s.destroy(); sockets.clear(); links.clear() },
    blackhole: () => {
      state = 'blackhole'
      for (const [client, upstream] of links) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        for (const socket of [client, upstream]) socket.removeAllListeners('close').removeAllListeners('error')
        silence(client)
        silence(upstream)
      }
      links.clear()
    },
    silenceAnswersAfter: (marker) => { answersSilencedAfter = marker },
    restore: () => { state = 'up'; answersSilencedAfter = undefined }
  }
}

/**
 * Seconds until the next TCP keep-alive probe of each connection made to the proxy (`ss -o`),
 * Infinity for a connection without keep-alive; undefined when `ss` cannot tell (not installed).
 */
export function keepAliveTimers (proxyPort: number): number[] | undefined {
  const listed = spawnSync('ss', ['-tnoH', 'state', 'established', `( dport = :${proxyPort} )`], { encoding: 'utf8' })
  if (listed.status !== 0) return undefined
  return listed.stdout.split('\n').filter((line) => line.trim() !== '').map((line) => {
    const timer = /timer:\(keepalive,([^,)]+)/.exec(line)?.[1]
    if (timer === undefined) return Number.POSITIVE_INFINITY
    // 1min29sec, 44sec, 840ms; iproute2 6.1 writes 1 to 10 s as 9.828ms.
    return [...timer.matchAll(/([\d.]+)(min|sec|ms|s)/g)].reduce((seconds, [, value = '0', unit]) => seconds +
      Number(value) * (unit === 'min' ? 60 : unit === 'ms' && !value.includes('.') ? 0.001 : 1), 0)
  })
}
