import { connect, createServer, type Server, type Socket } from 'node:net'
import type { Teardown } from './app.js'

export interface TcpProxy {
  port: number
  /** Simulates an outage: drops every open connection and refuses new ones. */
  cut (): void
  /** Ends the outage. */
  restore (): void
}

/**
 * A loopback TCP proxy in front of a real server (PostgreSQL, Redis), so a test can make the
 * dependency unreachable without stopping the machine's shared service.
 */
export async function startTcpProxy (t: Teardown, targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let down = false
  const server: Server = createServer((client) => {
    if (down) { client.destroy(); return }
    const upstream = connect(targetPort, targetHost)
    sockets.add(client).add(upstream)
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream).pipe(client)
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
    cut: () => { down = true; for (const s of sockets) s.destroy(); sockets.clear() },
    restore: () => { down = false }
  }
}
