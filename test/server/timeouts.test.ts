/**
 * Time-outs with a real process and raw sockets: a request that does not arrive in time is
 * answered 408 with the Error body and its connection closed; SIGTERM exits 0 within
 * SHUTDOWN_TIMEOUT_MS even while a client stalls.
 */
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

/** A raw connection whose every received byte is kept; `closed` resolves when the server ends it. */
async function rawConnection (port: number): Promise<{ socket: Socket, received: () => string, closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
  socket.on('error', () => { /* a reset is an end too */ })
  const closed = once(socket, 'close').then(() => undefined)
  return { socket, received: () => text, closed }
}

/** Status line and JSON body of the one response in `text`. */
function parseResponse (text: string): { statusLine: string, headers: string, body: unknown } {
  const end = text.indexOf('\r\n\r\n')
  const head = text.slice(0, end)
  return { statusLine: head.split('\r\n')[0] ?? '', headers: head, body: JSON.parse(text.slice(end + 4)) as unknown }
}

const timeoutBody = { code: 'request_timeout', message: 'the request did not arrive in time: send its headers and body without pausing', status: 408 }

t.test('REQUEST_TIMEOUT_MS: unfinished headers or body are answered 408 request_timeout and the connection closed', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'timeout.db')}`, REQUEST_TIMEOUT_MS: '500' })
  const auth = `Bearer ${server.demoKey}`

  const headers = await rawConnection(server.port)
  headers.socket.write('GET /v1/inventory HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  await headers.closed
  const late = parseResponse(headers.received())
  t.equal(late.statusLine, 'HTTP/1.1 408 Request Timeout', 'headers that never end')
  t.match(late.headers, /\r\nconnection: close/i, 'and the connection closes')
  t.same(late.body, timeoutBody, 'the Error body')

  const body = await rawConnection(server.port)
  body.socket.write(`PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"quan`)
  await body.closed
  const partial = parseResponse(body.received())
  t.equal(partial.statusLine, 'HTTP/1.1 408 Request Timeout', 'a body that never ends')
  t.same(partial.body, timeoutBody, 'the Error body')

  const item = await (await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: auth } })).json() as { petId: number, quantity: number }[]
  t.not(item.find((i) => i.petId === 1)?.quantity, undefined, 'the server still answers')
  t.equal(await server.stop(), 0)
})

t.test('SHUTDOWN_TIMEOUT_MS: SIGTERM with a stalled client closes its connection and exits 0', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'shutdown.db')}`, SHUTDOWN_TIMEOUT_MS: '2000' })
  const auth = `Bearer ${server.demoKey}`

  // An idle keep-alive connection: one answered request, then nothing.
  const idle = await rawConnection(server.port)
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  while (!idle.received().includes('\r\n\r\n')) await once(idle.socket, 'data')
  t.match(idle.received(), /^HTTP\/1\.1 200 /, 'the idle connection had one answer')

  // A client that sends part of a write's body and stalls.
  const stalled = await rawConnection(server.port)
  stalled.socket.write(`PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"quan`)
  while (!server.logs.some((l) => l.msg === 'incoming request' && (l.req as { method?: string } | undefined)?.method === 'PATCH')) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }

  const order: string[] = []
  void idle.closed.then(() => order.push('idle'))
  void stalled.closed.then(() => order.push('stalled'))
  const code = server.stop('SIGTERM')
  await Promise.all([idle.closed, stalled.closed])
  t.same(order, ['idle', 'stalled'], 'the idle connection is closed first, the stalled one when the drain time is up')
  t.equal(stalled.received(), '', 'the stalled write got no answer: it was never acknowledged')
  // close-with-grace exits 1 when SHUTDOWN_TIMEOUT_MS runs out: 0 means the drain ended in time.
  t.equal(await code, 0, 'exit 0 within SHUTDOWN_TIMEOUT_MS')
  t.ok(server.logs.some((l) => String(l.msg).startsWith('closing the connections still open')), 'the forced close is logged')
})
