/**
 * Read your writes (docs/operations.md): a request received after a write, in the same process, sees
 * that write. The hard case is HTTP pipelining: a GET sent right behind a PATCH on one connection,
 * in the same TCP segment, is handled while the PATCH's commit is still queued (group commit). Raw
 * sockets against a listening app, since app.inject has no connections.
 */
import { connect } from 'node:net'
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'

interface Response { status: number, body: string }

/** Splits what the server sent on one connection into its responses (Content-Length or chunked). */
function parseResponses (data: Buffer): Response[] {
  const responses: Response[] = []
  let at = 0
  while (at < data.length) {
    const headEnd = data.indexOf('\r\n\r\n', at)
    if (headEnd < 0) throw new Error(`an incomplete response: ${data.subarray(at).toString()}`)
    const head = data.subarray(at, headEnd).toString()
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])
    at = headEnd + 4
    const length = /\r\ncontent-length: (\d+)/i.exec(head)?.[1]
    if (length !== undefined) {
      responses.push({ status, body: data.subarray(at, at + Number(length)).toString() })
      at += Number(length)
    } else if (/\r\ntransfer-encoding: chunked/i.test(head)) {
      const body: Buffer[] = []
      for (;;) {
        const lineEnd = data.indexOf('\r\n', at)
        const size = parseInt(data.subarray(at, lineEnd).toString(), 16)
        at = lineEnd + 2
        if (size === 0) break
        body.push(data.subarray(at, at + size))
        at += size + 2
      }
      at += 2
      responses.push({ status, body: Buffer.concat(body).toString() })
    } else {
      throw new Error(`neither Content-Length nor chunked: ${head}`)
    }
  }
  return responses
}

/** Writes each chunk in turn (letting the server's event loop run between them), reads until the server closes. */
function exchange (port: number, chunks: string[]): Promise<Response[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', reject)
    socket.on('end', () => {
      try { resolve(parseResponses(Buffer.concat(received))) } catch (error) { reject(error) }
    })
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        socket.write(chunk)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })
  })
}

async function listening (t: Parameters<typeof buildTestApp>[0]) {
  const api = await buildTestApp(t, { logger: false })
  const key = await api.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })
  await api.app.listen({ port: 0, host: '127.0.0.1' })
  const port = (api.app.server.address() as { port: number }).port
  const request = (method: string, path: string, body?: string, last = false) =>
    `${method} ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n` +
    (body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`) +
    (last ? 'Connection: close\r\n' : '') + '\r\n' + (body ?? '')
  return { api, port, request }
}

// Pet 1 of the demo catalogue has no open orders: 0 is sold, anything above is available.
const statusOf = (quantity: number) => quantity === 0 ? 'sold' : 'available'

t.test('a GET pipelined right behind a PATCH on one connection sees the PATCH', async (t) => {
  const { port, request } = await listening(t)
  const stale: string[] = []
  for (let round = 0; round < 20; round++) {
    const quantity = round % 2 === 0 ? 0 : 1000 + round
    const [patched, pet, list] = await exchange(port, [
      request('PATCH', '/v1/inventory/1', JSON.stringify({ quantity })) +
      request('GET', '/v1/pets/1') +
      request('GET', '/v1/inventory', undefined, true)
    ])
    if (patched?.status !== 200) { stale.push(`round ${round}: PATCH ${patched?.status}`); continue }
    if ((JSON.parse(pet!.body) as { status: string }).status !== statusOf(quantity)) stale.push(`round ${round}: GET pet says ${pet!.body}`)
    const entry = (JSON.parse(list!.body) as { petId: number, quantity: number }[]).find((i) => i.petId === 1)
    if (entry?.quantity !== quantity) stale.push(`round ${round}: GET inventory lists ${JSON.stringify(entry)}`)
  }
  t.same(stale, [], '20 rounds of PATCH + GET pet + GET inventory in one segment: every GET shows its PATCH')
})

t.test('the same when the PATCH body arrives in a second segment, together with the GETs', async (t) => {
  const { port, request } = await listening(t)
  const stale: string[] = []
  for (let round = 0; round < 10; round++) {
    const quantity = round % 2 === 0 ? 0 : 2000 + round
    const patch = request('PATCH', '/v1/inventory/1', JSON.stringify({ quantity }))
    const split = patch.length - 5
    const [patched, pet, list] = await exchange(port, [
      patch.slice(0, split),
      patch.slice(split) + request('GET', '/v1/pets/1') + request('GET', '/v1/inventory', undefined, true)
    ])
    if (patched?.status !== 200) { stale.push(`round ${round}: PATCH ${patched?.status}`); continue }
    if ((JSON.parse(pet!.body) as { status: string }).status !== statusOf(quantity)) stale.push(`round ${round}: GET pet says ${pet!.body}`)
    if ((JSON.parse(list!.body) as { petId: number, quantity: number }[]).find((i) => i.petId === 1)?.quantity !== quantity) stale.push(`round ${round}: GET inventory is stale`)
  }
  t.same(stale, [], 'every GET shows its PATCH')
})

t.test('a GET on another connection, sent once the PATCH is answered, sees it', async (t) => {
  const { port, request } = await listening(t)
  for (const quantity of [0, 7]) {
    const [patched] = await exchange(port, [request('PATCH', '/v1/inventory/2', JSON.stringify({ quantity }), true)])
    t.equal(patched?.status, 200)
    const [pet, list] = await exchange(port, [request('GET', '/v1/pets/2') + request('GET', '/v1/inventory', undefined, true)])
    t.equal((JSON.parse(pet!.body) as { status: string }).status, quantity === 0 ? 'sold' : 'available')
    t.equal((JSON.parse(list!.body) as { petId: number, quantity: number }[]).find((i) => i.petId === 2)?.quantity, quantity)
  }
})
