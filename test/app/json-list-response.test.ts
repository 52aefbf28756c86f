import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import t from 'tap'
import { loadDocument } from '../../src/contract/document.js'
import { ResponseValidationError } from '../../src/contract/errors.js'
import { JsonList, type JsonListVersion } from '../../src/contract/json-list.js'
import { JsonListStream, JsonText } from '../../src/contract/json-text.js'
import { SENDS_BEFORE_COPY, serializerCompiler } from '../../src/contract/validation.js'
import { buildTestApp } from '../helpers/app.js'
import { listTag } from '../helpers/entity-tag.js'

// A list handed to the response serializer as a JsonListVersion is checked in full once; each
// later version only by the elements changed since the last version that passed. Every changed
// element must still be checked, whatever else changed with it or after it.

const document = await loadDocument()
const spec = document.resolved as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>> }
const schema = spec.paths['/inventory']!.get!.responses['200']!.content['application/json']!.schema

const serializer = () => serializerCompiler({ schema, method: 'GET', url: '/v1/inventory', httpStatus: '200' } as never) as (data: unknown) => unknown
const entry = (petId: number, quantity: number | string) => `{"petId":${petId},"quantity":${quantity},"status":"available"}`
/** The serializer's result for a version: a stream of its parts the first SENDS_BEFORE_COPY times, one Buffer after. */
const serialized = (serialize: (data: unknown) => unknown, version: JsonListVersion) => serialize(new JsonText(version)) as Buffer | Readable
async function send (serialize: (data: unknown) => unknown, version: JsonListVersion): Promise<Buffer> {
  const body = serialized(serialize, version)
  if (Buffer.isBuffer(body)) return body
  const received: Buffer[] = []
  for await (const chunk of body) received.push(chunk as Buffer)
  return Buffer.concat(received)
}

t.test('every changed element is checked: an invalid one fails until it is replaced, among thousands', async (t) => {
  const serialize = serializer()
  const list = new JsonList()
  list.reset(Array.from({ length: 5000 }, (_, i) => [i + 1, entry(i + 1, 1)] as const))
  const first = list.version()
  const sends = Array.from({ length: SENDS_BEFORE_COPY }, () => serialized(serialize, first))
  t.ok(sends.every((body) => body instanceof Readable), `sent ${SENDS_BEFORE_COPY} times as a stream of the list's parts`)
  t.equal(serialized(serialize, first), first.bytes, 'then as the list\'s own bytes')

  list.set(2500, entry(2500, 4.5))
  t.throws(() => serialized(serialize, list.version()), ResponseValidationError, 'a non-integer quantity in one changed element')
  list.set(10, entry(10, 3))
  t.throws(() => serialized(serialize, list.version()), ResponseValidationError, 'still refused after another valid change (the check starts from the last version that passed)')
  list.set(2500, entry(2500, 6))
  const repaired = list.version()
  t.equal((await send(serialize, repaired)).toString(), repaired.bytes.toString(), 'passes once the element is valid again')
  t.equal(await send(serialize, first), first.bytes, 'an earlier version that passed still passes')

  list.set(5001, '{"petId":5001,"quantity":1}')
  t.throws(() => serialized(serialize, list.version()), /status/, 'an added element missing a property')
  list.delete(5001)
  t.equal((await send(serialize, list.version())).length, repaired.bytes.length, 'removed again: valid')
})

t.test('the changed elements are what is checked; without them the whole text is', async (t) => {
  const valid = Buffer.from(`[${entry(1, 1)}]`)
  const fake = (version: number, bytes: Buffer, changed: readonly string[] | undefined): JsonListVersion =>
    ({ list: owner, version, parts: [bytes], byteLength: bytes.length, digest: String(version), bytes, changedSince: () => changed })
  const owner = {}
  const serialize = serializer()
  await send(serialize, fake(1, valid, undefined))
  t.throws(() => serialized(serialize, fake(2, valid, [entry(1, -1)])), ResponseValidationError, 'a changed element is checked on its own')
  t.throws(() => serialized(serialize, fake(3, valid, ['{"petId":1,'])), /not JSON/, 'and must be JSON')
  t.throws(() => serialized(serialize, fake(4, Buffer.from(`[${entry(1, -1)}]`), undefined)), ResponseValidationError, 'a list that cannot tell what changed is checked in full')
  const bytes = Buffer.from(`[${entry(1, -1)}]`)
  const other = { list: {}, version: 1, parts: [bytes], byteLength: bytes.length, digest: '1', bytes, changedSince: () => [] }
  t.throws(() => serialized(serialize, other), ResponseValidationError, 'another list with the same version numbers is checked in full')
})

t.test('a schema with array constraints of its own is always checked in full', async (t) => {
  const bounded = { ...(schema as object), maxItems: 1 }
  const serialize = serializerCompiler({ schema: bounded, method: 'GET', url: '/v1/inventory', httpStatus: '200' } as never) as (data: unknown) => unknown
  const list = new JsonList()
  list.reset([[1, entry(1, 1)]])
  await send(serialize, list.version())
  list.set(2, entry(2, 1))
  t.throws(() => serialized(serialize, list.version()), /must NOT have more than 1 item/, 'two items where one is the most')
})

t.test('a list version sent as a stream, then as one Buffer: the same bytes, Content-Length and ETag (derived from the body)', async (t) => {
  const api = await buildTestApp(t, { logger: false })
  const headers = await api.authHeader('pro')
  const get = () => api.request({ method: 'GET', url: '/v1/inventory', headers })
  await get()
  const patched = await api.request({ method: 'PATCH', url: '/v1/inventory/3', headers: { ...headers, 'content-type': 'application/json' }, payload: { quantity: 41 } })
  t.equal(patched.statusCode, 200)
  const responses = []
  for (let i = 0; i <= SENDS_BEFORE_COPY; i++) responses.push(await get())
  const [streamed, buffered] = [responses[0]!, responses.at(-1)!]
  for (const [what, res] of [['streamed', streamed], ['buffered', buffered]] as const) {
    t.equal(res.statusCode, 200, what)
    t.equal(res.headers['content-length'], String(res.rawPayload.length), `${what}: Content-Length`)
    t.equal(res.headers.etag, listTag(res.rawPayload, (item: { petId: number }) => item.petId), `${what}: the tag of the body`)
  }
  t.equal(streamed.body, buffered.body)
  t.equal(streamed.headers.etag, buffered.headers.etag)
  t.match(streamed.json(), [{}, {}, { petId: 3, quantity: 41 }])
  const unchanged = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'if-none-match': String(buffered.headers.etag) } })
  t.equal(unchanged.statusCode, 304, 'its tag answers a conditional GET')
})

t.test('a streamed list is written to the response at once: its parts leave in one write, not one per turn', async (t) => {
  const list = new JsonList(4)
  list.reset(Array.from({ length: 200 }, (_, i) => [i + 1, entry(i + 1, i)] as const))
  const version = list.version()
  t.ok(version.parts.length > 20, `${version.parts.length} parts`)
  let writtenDuringPipe = -1
  const server = createServer((_request, response) => {
    response.setHeader('content-length', String(version.byteLength))
    let writes = 0
    const write = response.write.bind(response) as (chunk: Buffer) => boolean
    response.write = ((chunk: Buffer) => { writes++; return write(chunk) }) as typeof response.write
    const stream = new JsonListStream(version)
    stream.pipe(response)
    // Readable's own pipe writes nothing before the next tick, then one part per 'drain'.
    writtenDuringPipe = writes
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  t.equal(Buffer.from(await res.arrayBuffer()).toString(), version.bytes.toString(), 'the whole list arrives')
  t.equal(writtenDuringPipe, version.parts.length, 'every part was written before pipe() returned')
})
