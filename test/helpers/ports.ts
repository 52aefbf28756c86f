import { once } from 'node:events'
import { createServer } from 'node:net'

/**
 * A loopback port free right now, for a process that must be told its port (or its public
 * address) before it starts. Another process could take it first; on a test machine it does not.
 */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  await once(server, 'close')
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}
