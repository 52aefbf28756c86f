/**
 * The headers of an answer reach Node's writeHead in an object V8 keeps fast
 * (src/plugins/external/reply-headers.ts): an answer under /v1 can carry 20 headers or more (a
 * pet: 22; a list of 1 KiB or more: 20), past the point where V8 turns an object filled one name
 * at a time into a hash table. Without the workaround the pet's answer fails here. The check uses
 * V8's own %HasFastProperties, allowed for this process only.
 */
import { ServerResponse } from 'node:http'
import { setFlagsFromString } from 'node:v8'
import t from 'tap'
import { SENDS_BEFORE_COPY } from '../../src/contract/validation.js'
import { buildTestApp } from '../helpers/app.js'
import { replyHeadersStarter } from '../../src/plugins/external/reply-headers.js'

setFlagsFromString('--allow-natives-syntax')
// Compiled after the flag is set; the V8 intrinsic is not JavaScript, hence the Function.
const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean

/** The header objects Fastify passes to writeHead while `run` runs. */
async function headerObjects (run: () => Promise<unknown>): Promise<object[]> {
  const seen: object[] = []
  const writeHead = ServerResponse.prototype.writeHead
  ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const headers = args.find((arg): arg is object => typeof arg === 'object' && arg !== null && !Array.isArray(arg))
    if (headers !== undefined) seen.push(headers)
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as typeof writeHead
  try {
    await run()
  } finally {
    ServerResponse.prototype.writeHead = writeHead
  }
  return seen
}

t.test('the control: an object filled one header name at a time ends in dictionary mode', async (t) => {
  // Without this, the checks below could not fail: V8 would keep every header object fast anyway.
  // GET /v1/pets/{petId} carries the most headers (its deprecation headers on top of the rest).
  const api = await buildTestApp(t)
  const res = await api.request({ method: 'GET', url: '/v1/pets/1', headers: await api.authHeader() })
  const filled: Record<string, unknown> = {}
  const set = (name: string, value: unknown) => { filled[name] = value }
  const addedByNode = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])
  for (const [name, value] of Object.entries(res.headers)) if (!addedByNode.has(name)) set(name, value)
  t.ok(Object.keys(filled).length >= 20, `the answer has ${Object.keys(filled).length} headers of its own`)
  t.notOk(hasFastProperties(filled), 'the same names, added one at a time to {}, make a dictionary-mode object')
})

t.test('answers under /v1 and elsewhere reach writeHead with fast headers', async (t) => {
  const api = await buildTestApp(t)
  const auth = await api.authHeader()
  const cases: [string, string, Record<string, string>, number][] = [
    ['GET', '/v1/inventory', auth, 200],
    ['GET', '/v1/pets/1', auth, 200],
    ['PATCH', '/v1/inventory/1', { ...auth, 'content-type': 'application/json' }, 200],
    ['GET', '/v1/inventory', {}, 401],
    ['GET', '/healthz', {}, 200]
  ]
  for (const [method, url, headers, status] of cases) {
    // A list version's first SENDS_BEFORE_COPY answers stream its parts, their headers set on the
    // response one by one; the answers after them send one Buffer, with one header object for
    // writeHead: the case checked here, as the benchmark's list-100 sends it.
    for (let i = 0; i < SENDS_BEFORE_COPY; i++) await api.request({ method, url, headers, ...(method === 'PATCH' ? { payload: '{"quantity":3}' } : {}) })
    let statusCode = 0
    const objects = await headerObjects(async () => {
      const res = await api.request({ method, url, headers, ...(method === 'PATCH' ? { payload: '{"quantity":3}' } : {}) })
      statusCode = res.statusCode
    })
    t.equal(statusCode, status, `${method} ${url}: ${status}`)
    t.equal(objects.length, 1, `${method} ${url}: one writeHead with a header object`)
    const names = Object.keys(objects[0] ?? {}).length
    t.ok(hasFastProperties(objects[0]!), `${method} ${url}: its ${names} headers are in a fast object`)
  }
})

t.test('where the header object cannot be replaced, the headers are set the ordinary way', async (t) => {
  // Stand-ins for a Fastify reply: the starter only reads the symbol and calls reply.headers().
  const fixed = { 'x-one': '1', 'x-two': '2' }
  const fakeReply = (own: Record<symbol, unknown>) => {
    const set: Record<string, string> = {}
    const reply: Record<symbol, unknown> & { headers: (h: Record<string, string>) => unknown } =
      { ...own, headers (h: Record<string, string>) { Object.assign(set, h); return reply } }
    return { reply, set }
  }
  const kHeaders = Symbol('fastify.reply.headers')

  const withoutSymbol = replyHeadersStarter(fixed)
  for (let i = 0; i < 2; i++) {
    const { reply, set } = fakeReply({})
    withoutSymbol(reply as never)
    t.same(set, fixed, `no such symbol (reply ${i + 1}): reply.headers() got the headers`)
  }

  const start = replyHeadersStarter(fixed)
  const filled = fakeReply({ [kHeaders]: { 'x-earlier': 'e' } })
  start(filled.reply as never)
  t.same(filled.set, fixed, 'an object that already holds a header: reply.headers() got the headers')
  t.same(filled.reply[kHeaders], { 'x-earlier': 'e' }, 'and the object was kept')

  const empty = fakeReply({ [kHeaders]: {} })
  start(empty.reply as never)
  t.same(empty.set, {}, 'an empty object: reply.headers() is not called')
  t.same({ ...(empty.reply[kHeaders] as object) }, fixed, 'it is replaced by one holding the headers')
})
