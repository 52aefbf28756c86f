import zlib, { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t, { type Test } from 'tap'
import type { Response as InjectResponse } from 'light-my-request'
import { COMPRESSION_THRESHOLD } from '../../src/plugins/external/compress.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import { buildTestApp } from '../helpers/app.js'

/** An app whose list is large enough to be compressed: 200 synthetic pets, about 9 KB of JSON. */
async function appWithList (t: Test) {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  await addSyntheticPets(api.store, 200)
  return { api, headers: await api.authHeader('pro') }
}

function decoded (res: InjectResponse): string {
  const coding = res.headers['content-encoding']
  if (coding === 'br') return brotliDecompressSync(res.rawPayload).toString()
  if (coding === 'gzip') return gunzipSync(res.rawPayload).toString()
  return res.body
}

t.test('a JSON body of 1 KiB or more is sent in br or gzip as Accept-Encoding allows, with Vary', async (t) => {
  const { api, headers } = await appWithList(t)
  const identity = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.equal(identity.statusCode, 200)
  t.equal(identity.headers['content-encoding'], undefined, 'no Accept-Encoding: sent as it is')
  t.ok(identity.rawPayload.length >= COMPRESSION_THRESHOLD, `the list is ${identity.rawPayload.length} bytes`)
  t.match(String(identity.headers.vary), /Accept-Encoding/, 'Vary: Accept-Encoding on the uncompressed answer too')
  const list = identity.json() as unknown[]
  t.equal(list.length, 200)

  const cases: [string, string | undefined][] = [
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['*', 'gzip'],
    ['identity', undefined],
    ['deflate', undefined],
    ['gzip;q=0, br;q=0', undefined]
  ]
  for (const [accept, coding] of cases) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'accept-encoding': accept } })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-encoding'], coding, `Accept-Encoding: ${accept} → ${coding ?? 'identity'}`)
    t.match(String(res.headers.vary), /Accept-Encoding/, `${accept}: Vary: Accept-Encoding`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${accept}: still JSON`)
    t.equal(Number(res.headers['content-length']), res.rawPayload.length, `${accept}: Content-Length is the length sent`)
    t.same(JSON.parse(decoded(res)), list, `${accept}: the body decodes to the same list`)
    if (coding === undefined) t.equal(res.rawPayload.length, identity.rawPayload.length, `${accept}: sent at its full size`)
    else t.ok(res.rawPayload.length < identity.rawPayload.length / 3, `${coding}: ${res.rawPayload.length} bytes instead of ${identity.rawPayload.length}`)
  }
  const noCompression = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'accept-encoding': 'gzip', 'x-no-compression': '1' } })
  t.equal(noCompression.headers['content-encoding'], undefined, 'x-no-compression is honoured, as @fastify/compress honours it')
})

t.test('bodies under 1 KiB are not compressed and do not vary', async (t) => {
  const { api, headers } = await appWithList(t)
  const pet = await api.request({ method: 'GET', url: '/v1/pets/1', headers: { ...headers, 'accept-encoding': 'gzip, br' } })
  t.equal(pet.statusCode, 200)
  t.ok(pet.rawPayload.length < COMPRESSION_THRESHOLD, `the pet is ${pet.rawPayload.length} bytes`)
  t.equal(pet.headers['content-encoding'], undefined, 'sent as it is')
  t.notMatch(String(pet.headers.vary ?? ''), /Accept-Encoding/, 'no Vary: Accept-Encoding')
  const error = await api.request({ method: 'GET', url: '/v1/pets/999999', headers: { ...headers, 'accept-encoding': 'gzip' } })
  t.equal(error.statusCode, 404)
  t.equal(error.headers['content-encoding'], undefined, 'a small error body neither')
})

t.test('an unchanged list is compressed once per coding; a write makes the next request compress the new list', async (t) => {
  const { api, headers } = await appWithList(t)
  const gzip = t.capture(zlib, 'gzip', zlib.gzip)
  const br = t.capture(zlib, 'brotliCompress', zlib.brotliCompress)
  const get = (accept: string) => api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'accept-encoding': accept } })

  const first = await get('gzip')
  t.equal(first.headers['content-encoding'], 'gzip')
  t.equal(gzip().length, 1, 'the first gzip request compresses the list')
  const again = await Promise.all([get('gzip'), get('gzip'), get('gzip')])
  t.ok(again.every((res) => res.rawPayload.equals(first.rawPayload)), 'the same bytes again')
  t.equal(gzip().length, 0, 'three more gzip requests compress nothing')
  await get('br')
  await get('br')
  t.equal(br().length, 1, 'br is compressed once too')
  await get('identity')
  t.equal(gzip().length + br().length, 0, 'an uncompressed request compresses nothing')

  const patch = await api.request({ method: 'PATCH', url: '/v1/inventory/7', headers: { ...headers, 'content-type': 'application/json' }, payload: { quantity: 4321 } })
  t.equal(patch.statusCode, 200)
  const [afterA, afterB] = await Promise.all([get('gzip'), get('gzip')])
  t.equal(gzip().length, 1, 'after a write, the new list is compressed once for two concurrent requests')
  t.match(JSON.parse(decoded(afterA!)), [{}, {}, {}, {}, {}, {}, { petId: 7, quantity: 4321 }], 'and it is the new list')
  t.ok(afterA!.rawPayload.equals(afterB!.rawPayload))
})

t.test('HEAD of a compressed list: the headers of the GET, no body', async (t) => {
  const { api, headers } = await appWithList(t)
  const withGzip = { ...headers, 'accept-encoding': 'gzip' }
  const get = await api.request({ method: 'GET', url: '/v1/inventory', headers: withGzip })
  const head = await api.request({ method: 'HEAD', url: '/v1/inventory', headers: withGzip })
  t.equal(head.statusCode, 200)
  t.equal(head.rawPayload.length, 0, 'no body')
  for (const name of ['content-type', 'content-encoding', 'content-length', 'etag', 'vary']) {
    t.equal(head.headers[name], get.headers[name], `${name} as for GET`)
  }
})

t.test('outside the API: the document is compressed by @fastify/compress', async (t) => {
  const { api } = await appWithList(t)
  for (const url of ['/openapi.json', '/openapi.yaml']) {
    const plain = await api.request({ method: 'GET', url })
    const res = await api.request({ method: 'GET', url, headers: { 'accept-encoding': 'br' } })
    t.equal(res.headers['content-encoding'], 'br', `${url} in br`)
    t.equal(decoded(res), plain.body, `${url} decodes to the document`)
  }
})
