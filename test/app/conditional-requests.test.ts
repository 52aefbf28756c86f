import { join } from 'node:path'
import t from 'tap'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { bytesTag, listTag } from '../helpers/entity-tag.js'

// Every GET operation of openapi.yaml (test/app/surface.test.ts holds the document to this list).
const GET_OPERATIONS = ['/v1/inventory', '/v1/pets/1', '/v1/store/orders', '/v1/store/orders/1']
/**
 * The tag each one's body must have, worked out from the body (the inventory is kept as a JsonList
 * on SQLite; a page of orders is read afresh, so its tag is its bytes').
 */
const EXPECTED_TAG: Record<string, (body: Buffer) => string> = {
  '/v1/inventory': (body) => listTag(body, (item: { petId: number }) => item.petId),
  '/v1/pets/1': bytesTag,
  '/v1/store/orders': bytesTag,
  '/v1/store/orders/1': bytesTag
}
const STRONG_TAG = /^"[A-Za-z0-9_-]{43}"$/

t.test('every 200 of a GET operation carries a strong ETag derived from the body, equal on every instance', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'shared.db')}`
  const one = await buildTestApp(t, { env: { DATABASE_URL: databaseUrl } })
  const two = await buildTestApp(t, { env: { DATABASE_URL: databaseUrl } })
  const secret = await one.createKey('pro')
  const headers = { authorization: `Bearer ${secret}` }
  for (const url of GET_OPERATIONS) {
    const res = await one.request({ method: 'GET', url, headers })
    t.equal(res.statusCode, 200, url)
    const tag = String(res.headers.etag)
    t.match(tag, STRONG_TAG, `${url}: a strong tag (no W/)`)
    t.equal(tag, EXPECTED_TAG[url]!(res.rawPayload), `${url}: the tag worked out from the bytes sent`)
    t.equal((await one.request({ method: 'GET', url, headers })).headers.etag, tag, `${url}: the same again`)
    t.equal((await two.request({ method: 'GET', url, headers })).headers.etag, tag, `${url}: the same on another instance`)
  }
  const before = (await one.request({ method: 'GET', url: '/v1/inventory', headers })).headers.etag
  const patch = await one.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, 'content-type': 'application/json' }, payload: { quantity: 77 } })
  t.equal(patch.headers.etag, undefined, 'a PATCH answer has no tag')
  const after = (await two.request({ method: 'GET', url: '/v1/inventory', headers })).headers.etag
  t.not(after, before, 'a write changes the tag')
  t.equal((await one.request({ method: 'GET', url: '/v1/inventory', headers })).headers.etag, after, 'on both instances')
})

t.test('If-None-Match with the current tag: 304 with ETag and the rate-limit headers, no body, counted', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader('free')
  for (const url of GET_OPERATIONS) {
    const first = await api.request({ method: 'GET', url, headers })
    const tag = String(first.headers.etag)
    const remaining = Number(first.headers['x-ratelimit-remaining'])
    const res = await api.request({ method: 'GET', url, headers: { ...headers, 'if-none-match': tag } })
    t.equal(res.statusCode, 304, `${url}: 304`)
    t.equal(res.rawPayload.length, 0, `${url}: no body`)
    t.equal(res.headers.etag, tag, `${url}: the tag`)
    t.equal(res.headers['content-type'], undefined, `${url}: no Content-Type`)
    t.equal(res.headers['content-length'], undefined, `${url}: no Content-Length`)
    t.equal(res.headers['x-ratelimit-limit'], '60', `${url}: X-RateLimit-Limit`)
    t.equal(Number(res.headers['x-ratelimit-remaining']), remaining - 1, `${url}: counted like any request`)
    t.type(res.headers['x-ratelimit-reset'], 'string', `${url}: X-RateLimit-Reset`)
  }
  const pet = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  const notModified = await api.request({ method: 'GET', url: '/v1/pets/1', headers: { ...headers, 'if-none-match': String(pet.headers.etag) } })
  t.equal(notModified.headers.deprecation, pet.headers.deprecation, 'the deprecated operation still says so on a 304')
})

t.test('If-None-Match is read as RFC 9110 says: lists, W/ prefixes and * match; other tags do not', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader('pro')
  const tag = String((await api.request({ method: 'GET', url: '/v1/inventory', headers })).headers.etag)
  const status = async (ifNoneMatch: string) =>
    (await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'if-none-match': ifNoneMatch } })).statusCode
  t.equal(await status(`W/${tag}`), 304, 'a weak form of the tag (weak comparison)')
  t.equal(await status(`"older", ${tag}`), 304, 'the tag in a list')
  t.equal(await status(`"older",W/${tag}`), 304, 'a weak tag in a list without spaces')
  t.equal(await status('*'), 304, '*: the list exists')
  t.equal(await status('"older"'), 200, 'another tag')
  t.equal(await status(tag.slice(1, -1)), 200, 'the tag without its quotes is no entity tag')
  t.equal(await status(''), 200, 'an empty header')
  t.equal(await status(`"${'x'.repeat(4000)}"`), 200, 'a long tag')
  const tooLong = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'if-none-match': `${tag}, "${'x'.repeat(4096)}"` } })
  t.equal(tooLong.statusCode, 400, 'a header over the 4096 characters openapi.yaml allows is refused')
  t.equal(tooLong.json().message, 'headers/if-none-match must NOT have more than 4096 characters', 'naming the header')

  const patch = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, 'content-type': 'application/json', 'if-none-match': '*' }, payload: { quantity: 3 } })
  t.equal(patch.statusCode, 200, 'If-None-Match does not stop a PATCH')
  t.equal(await status(tag), 200, 'after the write the old tag is stale')
})

t.test('a compressed body has a tag of its own, and a 304 answers the tag of the coding the request would get', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  await addSyntheticPets(api.store, 100)
  const headers = await api.authHeader('pro')
  const get = (extra: Record<string, string> = {}) => api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, ...extra } })
  const identity = String((await get()).headers.etag)
  const gzip = String((await get({ 'accept-encoding': 'gzip' })).headers.etag)
  const br = String((await get({ 'accept-encoding': 'br' })).headers.etag)
  t.equal(gzip, `${identity.slice(0, -1)}-gzip"`, 'gzip: the hash of the JSON, then -gzip')
  t.equal(br, `${identity.slice(0, -1)}-br"`, 'br: the hash of the JSON, then -br')

  const cached = await get({ 'accept-encoding': 'gzip', 'if-none-match': gzip })
  t.equal(cached.statusCode, 304, 'the gzip tag with gzip accepted: 304')
  t.equal(cached.headers.etag, gzip)
  t.equal(cached.headers['content-encoding'], undefined, 'a 304 has no Content-Encoding')
  t.match(String(cached.headers.vary), /Accept-Encoding/, 'and still varies')
  t.equal((await get({ 'if-none-match': gzip })).statusCode, 200, 'the gzip tag for an uncompressed answer: 200')
  t.equal((await get({ 'accept-encoding': 'br', 'if-none-match': `${identity}, ${br}` })).statusCode, 304, 'a cache holding both: 304')
})

t.test('HEAD works on every GET operation: the GET\'s headers, no body; conditional too', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader('pro')
  for (const url of GET_OPERATIONS) {
    const get = await api.request({ method: 'GET', url, headers })
    const head = await api.request({ method: 'HEAD', url, headers })
    t.equal(head.statusCode, 200, `HEAD ${url}: 200`)
    t.equal(head.rawPayload.length, 0, `HEAD ${url}: no body`)
    for (const name of ['content-type', 'content-length', 'etag']) t.equal(head.headers[name], get.headers[name], `HEAD ${url}: ${name} as for GET`)
    t.type(head.headers['x-ratelimit-remaining'], 'string', `HEAD ${url}: rate-limit headers`)
    const conditional = await api.request({ method: 'HEAD', url, headers: { ...headers, 'if-none-match': String(get.headers.etag) } })
    t.equal(conditional.statusCode, 304, `HEAD ${url} with the current tag: 304`)
    t.equal(conditional.rawPayload.length, 0, `HEAD ${url} 304: no body`)
    t.equal(conditional.headers['content-length'], get.headers['content-length'], `HEAD ${url} 304: Content-Length, when sent, is the 200's (RFC 9110 §8.6)`)
  }
  const unknown = await api.request({ method: 'HEAD', url: '/v1/pets/424242', headers })
  t.equal(unknown.statusCode, 404, 'HEAD of a missing pet: 404')
  t.equal(unknown.rawPayload.length, 0, 'without a body')
})
