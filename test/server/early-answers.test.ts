/**
 * One answer per request, with a real process and raw sockets: a request answered before its
 * body has arrived (a refusal decided from its headers, or from the first part of its body) gets
 * that answer and no other. The rest of its body is read and discarded, so a client that sends it
 * keeps its keep-alive connection; a client that never sends it loses the connection when
 * REQUEST_TIMEOUT_MS runs out, without a 408 after the answer it already has.
 */
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { keyInDatabase } from '../helpers/keys.js'
import { parseResponses, rawConnection } from '../helpers/raw-http.js'
import { startServer } from '../helpers/server-process.js'

const requestTimeoutMs = 500

interface EarlyAnswer {
  name: string
  status: number
  code: string
  /** The request's head, up to and including the blank line. */
  head: string
  /** Its body: the part sent before the answer, and the rest. */
  sent: string
  rest: string
  /** Fastify's body parser answers its own refusals with `Connection: close`: the rest is never read. */
  closes?: true
}

t.test('an answer sent before the body has arrived is the only one: the rest is read, or the connection closed at REQUEST_TIMEOUT_MS', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'early.db')}`
  const valid = await keyInDatabase(databaseUrl, 'valid')
  const limited = await keyInDatabase(databaseUrl, 'limited', 'enterprise', { perMinute: 1, perDay: 1000 })
  const server = await startServer(t, { DATABASE_URL: databaseUrl, REQUEST_TIMEOUT_MS: String(requestTimeoutMs) })
  const spent = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${limited.secret}` } })
  t.equal(spent.status, 200, 'the limited key has used its one request of the minute')
  await spent.arrayBuffer()

  const json = '{"quantity": 5}'
  const head = (requestLine: string, headers: string) => `${requestLine} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`
  const withLength = (length: number) => `Content-Type: application/json\r\nContent-Length: ${length}\r\n`
  const large = 'x'.repeat(17_000)
  const cases: EarlyAnswer[] = [
    { name: 'no key', status: 401, code: 'unauthorized', head: head('PATCH /v1/inventory/1', withLength(json.length)), sent: json.slice(0, 4), rest: json.slice(4) },
    { name: 'a key past its limit', status: 429, code: 'rate_limited', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${limited.secret}\r\n${withLength(json.length)}`), sent: json.slice(0, 4), rest: json.slice(4) },
    { name: 'two Authorization headers', status: 400, code: 'invalid_request', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${valid.secret}\r\nAuthorization: Bearer ${valid.secret}\r\n${withLength(json.length)}`), sent: json.slice(0, 4), rest: json.slice(4) },
    { name: 'a Content-Length over BODY_LIMIT', status: 413, code: 'payload_too_large', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${valid.secret}\r\n${withLength(large.length)}`), sent: large.slice(0, 100), rest: large.slice(100), closes: true },
    { name: 'a chunked body that grows over BODY_LIMIT', status: 413, code: 'payload_too_large', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${valid.secret}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n`), sent: `${large.length.toString(16)}\r\n${large}\r\n`, rest: '0\r\n\r\n', closes: true },
    { name: 'a body that is not JSON', status: 415, code: 'unsupported_media_type', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${valid.secret}\r\nContent-Type: text/plain\r\nContent-Length: ${json.length}\r\n`), sent: json.slice(0, 4), rest: json.slice(4) },
    { name: 'a coded body', status: 415, code: 'unsupported_media_type', head: head('PATCH /v1/inventory/1', `Authorization: Bearer ${valid.secret}\r\nContent-Encoding: gzip\r\n${withLength(json.length)}`), sent: json.slice(0, 4), rest: json.slice(4) },
    { name: 'a malformed URL (answered before routing)', status: 400, code: 'invalid_request', head: head('PATCH /v1/inventory/%zz', `Authorization: Bearer ${valid.secret}\r\n${withLength(json.length)}`), sent: json.slice(0, 4), rest: json.slice(4) }
  ]

  t.jobs = cases.length
  await Promise.all(cases.map((c) => t.test(`${c.name}: ${c.status}`, async (t) => {
    // The client never sends the rest.
    const stalled = await rawConnection(server.port)
    stalled.socket.write(c.head + c.sent)
    const [answer] = await stalled.responses(1)
    t.equal(answer!.status, c.status, `answered ${c.status} before the body arrived`)
    const body = JSON.parse(answer!.body.toString()) as Record<string, unknown>
    t.match(body, { code: c.code, message: String, status: c.status }, 'with the Error body')
    t.same(Object.keys(body).sort(), ['code', 'message', 'status'])
    t.equal(answer!.headers.connection, c.closes === true ? 'close' : 'keep-alive', c.closes === true ? 'saying the connection closes' : 'keeping the connection')
    const answeredAt = performance.now()
    await stalled.closed
    const closedAfter = performance.now() - answeredAt
    t.ok(closedAfter < requestTimeoutMs + 1000, `the connection is closed, ${c.closes === true ? 'at once' : 'once REQUEST_TIMEOUT_MS has run out'} (${Math.round(closedAfter)} ms)`)
    const { responses, rest } = parseResponses(stalled.received())
    t.equal(responses.length, 1, 'one answer, no 408 after it')
    t.equal(rest.length, 0, 'and nothing else')
    if (c.closes === true) return

    // The client sends the rest, then another request on the same connection.
    const keptAlive = await rawConnection(server.port)
    keptAlive.socket.write(c.head + c.sent)
    t.equal((await keptAlive.responses(1))[0]!.status, c.status, 'the same early answer')
    keptAlive.socket.write(`${c.rest}GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
    const [, next] = await keptAlive.responses(2)
    t.equal(next!.status, 200, 'the rest of the body was read and discarded: the next request on the connection gets its own answer')
    t.same(JSON.parse(next!.body.toString()), { status: 'ok' })
    await new Promise((resolve) => setTimeout(resolve, requestTimeoutMs + 300))
    t.equal(parseResponses(keptAlive.received()).responses.length, 2, 'and nothing arrives after it, REQUEST_TIMEOUT_MS later')
    t.notOk(keptAlive.socket.closed, 'the connection is still open')
    keptAlive.socket.end()
  })))
  t.equal(await server.stop(), 0)
})
