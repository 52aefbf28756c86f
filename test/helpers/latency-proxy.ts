import { connect, createServer, type Socket } from 'node:net'
import type { Teardown } from './app.js'

/**
 * A loopback TCP proxy that holds every chunk for `delayMs` in each direction, in order: a
 * database `delayMs` away per hop (a request and its answer: two delays per round trip).
 */
export async function startLatencyProxy (t: Teardown, targetPort: number, delayMs: number, targetHost = '127.0.0.1'): Promise<{ port: number }> {
  const sockets = new Set<Socket>()
  const relay = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => { setTimeout(() => { if (!to.destroyed) to.write(chunk) }, delayMs) })
    from.on('end', () => { setTimeout(() => to.end(), delayMs) })
  }
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost)
    sockets.add(client).add(upstream)
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    relay(client, upstream)
    relay(upstream, client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy()
    server.close(() => resolve())
  }))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port')
  return { port: address.port }
}
