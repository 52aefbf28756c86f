import { createHash } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { ensureDemoKey } from '../../src/startup.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { expectUnauthorized } from '../helpers/assertions.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { ALL_SCOPES } from '../helpers/contract.js'

const keyFormat = /^psk_[A-Za-z0-9_-]{43}$/
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

t.test('requests without a usable key get 401 with the Error body and a Bearer challenge', async (t) => {
  const api = await buildTestApp(t)
  const inventory = (headers: Record<string, string>) => api.request({ method: 'GET', url: '/v1/inventory', headers })

  const missing = await inventory({})
  expectUnauthorized(t, missing, 'no Authorization header')
  t.equal(missing.headers['www-authenticate'], 'Bearer realm="petstore"', 'no error attribute when no credentials were sent (RFC 6750 §3.1)')

  const key = await api.createKey()
  const basic = await inventory({ authorization: `Basic ${Buffer.from(`user:${key}`).toString('base64')}` })
  expectUnauthorized(t, basic, 'Basic scheme')
  t.match(basic.headers['www-authenticate'], /error="invalid_request"/)

  const keyAsBasic = await inventory({ authorization: `Token ${key}` })
  expectUnauthorized(t, keyAsBasic, 'a valid key under another scheme')

  const bare = await inventory({ authorization: key })
  expectUnauthorized(t, bare, 'a valid key without a scheme')

  const unknown = await inventory({ authorization: `Bearer psk_${'A'.repeat(43)}` })
  expectUnauthorized(t, unknown, 'unknown key')
  t.match(unknown.headers['www-authenticate'], /error="invalid_token"/)

  for (const header of ['Bearer ', 'Bearer', 'Bearer    ']) {
    expectUnauthorized(t, await inventory({ authorization: header }), `${JSON.stringify(header)} (empty token)`)
  }

  const hashAsKey = await inventory({ authorization: `Bearer ${sha256(key)}` })
  expectUnauthorized(t, hashAsKey, 'the stored hash is not a credential')

  const truncated = await inventory({ authorization: `Bearer ${key.slice(0, -1)}` })
  expectUnauthorized(t, truncated, 'a key missing its last character')

  const ok = await inventory({ authorization: `Bearer ${key}` })
  t.equal(ok.statusCode, 200, 'the same key as a Bearer token is accepted')
  t.equal(ok.headers['www-authenticate'], undefined, 'no challenge on success')

  // RFC 7235 §2.1 / RFC 5234 §2.3: the scheme name is case-insensitive.
  for (const scheme of ['bearer', 'BEARER']) {
    t.equal((await inventory({ authorization: `${scheme} ${key}` })).statusCode, 200, `scheme written ${scheme} is accepted`)
  }
  const lowerUnknown = await inventory({ authorization: `bearer psk_${'B'.repeat(43)}` })
  expectUnauthorized(t, lowerUnknown, 'unknown key, lower-case scheme')
  t.match(lowerUnknown.headers['www-authenticate'], /error="invalid_token"/, 'reported as an invalid token, not a wrong scheme')
})

t.test('every /v1 operation requires the key', async (t) => {
  const api = await buildTestApp(t)
  const calls = [
    { method: 'GET', url: '/v1/inventory' },
    { method: 'PATCH', url: '/v1/inventory/1', payload: { quantity: 1 } },
    { method: 'GET', url: '/v1/pets/1' },
    { method: 'GET', url: '/v1/store/orders' }
  ]
  for (const call of calls) {
    expectUnauthorized(t, await api.request(call), `${call.method} ${call.url}`)
  }
  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })
  t.equal(list.json().find((i: { petId: number }) => i.petId === 1).quantity, 4, 'the unauthenticated PATCH changed nothing')
})

t.test('authentication comes before routing, parsing and validation', async (t) => {
  const api = await buildTestApp(t, { env: { BODY_LIMIT: '1024' } })
  const json = { 'content-type': 'application/json' }
  const cases = [
    { name: 'invalid body', method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: '{"quantity":"lots","extra":1}' },
    { name: 'malformed JSON', method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: '{"quantity":' },
    { name: 'proto poisoning', method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: '{"__proto__":{"quantity":1}}' },
    { name: 'body over BODY_LIMIT', method: 'PATCH', url: '/v1/inventory/1', headers: json, payload: JSON.stringify({ quantity: 1, pad: 'x'.repeat(4096) }) },
    { name: 'unsupported media type', method: 'PATCH', url: '/v1/inventory/1', headers: { 'content-type': 'text/plain' }, payload: 'quantity=1' },
    { name: 'invalid path parameter', method: 'GET', url: '/v1/pets/abc' },
    { name: 'out-of-range path parameter', method: 'PATCH', url: '/v1/inventory/0', headers: json, payload: '{"quantity":1}' },
    { name: 'unknown pet', method: 'GET', url: '/v1/pets/999' },
    { name: 'unknown /v1 route', method: 'GET', url: '/v1/does-not-exist' },
    { name: 'unknown nested /v1 route', method: 'POST', url: '/v1/pets/1/photos' },
    { name: 'bare /v1', method: 'GET', url: '/v1' },
    { name: 'wrong method on a known path', method: 'DELETE', url: '/v1/inventory' }
  ]
  for (const { name, ...call } of cases) {
    expectUnauthorized(t, await api.request(call), `${name} without a key`)
    expectUnauthorized(t, await api.request({ ...call, headers: { ...call.headers, authorization: 'Bearer psk_nope' } }), `${name} with an unknown key`)
  }
})

t.test('a revoked key is refused on its very next request, on every instance', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'shared.db')}`
  const one = await buildTestApp(t, { env: { DATABASE_URL: databaseUrl } })
  const two = await buildTestApp(t, { env: { DATABASE_URL: databaseUrl } })
  const kept = await one.createKey('pro')
  const secret = await one.createKey('free')
  const headers = { authorization: `Bearer ${secret}` }

  t.equal((await one.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, 'works on instance one')
  t.equal((await two.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, 'works on instance two (same database)')

  const [record] = (await apiKeysRepository(one.store).list()).filter((k) => k.plan === 'free')
  const revoked = await apiKeysRepository(one.store).revoke(record!.id)
  t.type(revoked?.revokedAt, 'string', 'the key is marked revoked')

  expectUnauthorized(t, await one.request({ method: 'GET', url: '/v1/inventory', headers }), 'revoked key, instance one')
  expectUnauthorized(t, await two.request({ method: 'GET', url: '/v1/store/orders', headers }), 'revoked key, instance two')
  const patch = await two.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity: 0 } })
  expectUnauthorized(t, patch, 'revoked key cannot write')
  t.equal((await two.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${kept}` } })).statusCode, 200, 'other keys keep working')
})

t.test('keys are random psk_ secrets stored only as their SHA-256', async (t) => {
  const file = join(tempDir(t), 'keys.db')
  const config = loadConfig({ DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'silent' })
  const api = await buildTestApp(t, { env: { DATABASE_URL: `sqlite:${file}` } })

  // The demo key is created by the server's own code path, as at first start.
  const demo = await ensureDemoKey(api.store, config, ALL_SCOPES)
  t.match(demo, keyFormat, 'psk_ + base64url of 32 random bytes')
  t.equal(Buffer.from(demo!.slice(4), 'base64url').length, 32, '32 bytes of secret')
  t.equal(await ensureDemoKey(api.store, config, ALL_SCOPES), undefined, 'only one demo key, ever')
  const other = await api.createKey()
  t.not(other, demo, 'two keys differ')

  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${demo}` } })
  t.equal(res.statusCode, 200, 'the demo key works')

  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  const rows = db.prepare('SELECT * FROM api_keys').all() as Record<string, unknown>[]
  t.equal(rows.length, 2)
  t.ok(rows.some((r) => r.key_hash === sha256(demo!)), 'the stored hash is the SHA-256 (hex) of the key')
  // Look for the secret (or its base64url part) in every column of every table of the file.
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
  const leaks: string[] = []
  for (const { name } of tables) {
    for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
      for (const [column, value] of Object.entries(row)) {
        for (const secret of [demo!, other]) {
          if (String(value).includes(secret.slice(4))) leaks.push(`${name}.${column}`)
        }
      }
    }
  }
  t.same(leaks, [], 'no column of any table holds a plaintext key')
})
