import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml'
import { loadDocument } from '../../src/contract/document.js'
import type { HandlerMap } from '../../src/contract/operation-types.js'
import { openapiPath } from '../../src/contract/paths.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { operations, sampleRequest } from '../helpers/surface.js'

// Least-privilege keys: every operation of openapi.yaml needs the one scope its security
// requirement names. The scopes and each operation's are read from the document, never listed here.

type Json = Record<string, unknown>

const scopesOf = (secret: string) => ({ authorization: `Bearer ${secret}` })
const limits = { perMinute: 100_000, perDay: 10_000_000 }

t.test('every operation: a key without its scope gets 403 insufficient_scope with the RFC 6750 challenge; a key with only that scope gets through', async (t) => {
  const api = await buildTestApp(t)
  const { scopes } = api.app.apiDocument
  t.ok(scopes.length >= 2, `the document declares scopes: ${scopes.join(', ')}`)
  for (const op of operations) {
    t.ok(op.scope !== undefined && scopes.includes(op.scope), `${op.operationId} names a declared scope (${op.scope})`)
    const others = scopes.filter((scope) => scope !== op.scope)
    const without = await api.createKey('enterprise', limits, others)
    const only = await api.createKey('enterprise', limits, [op.scope!])
    const request = sampleRequest(op)

    const refused = await api.request({ ...request, headers: { ...request.headers, ...scopesOf(without) } })
    t.equal(refused.statusCode, 403, `${op.operationId} with every other scope: 403`)
    t.same(refused.json(), { code: 'insufficient_scope', message: `the API key lacks the scope ${op.scope}, which ${op.operationId} needs`, status: 403 })
    t.equal(refused.headers['www-authenticate'], `Bearer realm="petstore", error="insufficient_scope", scope="${op.scope}"`, `${op.operationId}: the challenge names the scope`)
    t.ok(refused.headers['x-ratelimit-remaining'] !== undefined, `${op.operationId}: with the rate-limit headers`)

    const allowed = await api.request({ ...request, headers: { ...request.headers, ...scopesOf(only) } })
    t.not(allowed.statusCode, 403, `${op.operationId} with its scope alone: not refused (${allowed.statusCode})`)
    t.not(allowed.statusCode, 401, `${op.operationId} with its scope alone: the key is valid`)
  }
})

t.test('a missing scope is decided before the body is read, and counted against the key', async (t) => {
  const api = await buildTestApp(t)
  const writes = operations.filter((op) => op.definition.requestBody !== undefined)
  t.ok(writes.length > 0, 'operations that take a body')
  for (const op of writes) {
    const key = await api.createKey('free', undefined, api.app.apiDocument.scopes.filter((scope) => scope !== op.scope))
    const { url, method } = sampleRequest(op)
    const first = await api.request({ method, url, headers: { ...scopesOf(key), 'content-type': 'application/json' }, payload: '{"not json' })
    t.equal(first.statusCode, 403, `${op.operationId}: a malformed body behind a missing scope is 403, not 400`)
    const second = await api.request({ method, url, headers: { ...scopesOf(key), 'content-type': 'text/plain' }, payload: 'x' })
    t.equal(second.statusCode, 403, `${op.operationId}: an unsupported media type behind a missing scope is 403, not 415`)
    // Free plan: 60 a minute (x-rate-limit-plans); two requests counted.
    t.equal(second.headers['x-ratelimit-remaining'], '58', `${op.operationId}: both refusals were counted against the key`)
  }
})

t.test('401 stays for a missing, unknown or revoked key, whatever its scopes', async (t) => {
  const api = await buildTestApp(t)
  const op = operations[0]!
  const request = sampleRequest(op)
  t.equal((await api.request({ ...request })).statusCode, 401, 'no key')
  t.equal((await api.request({ ...request, headers: { ...request.headers, authorization: `Bearer psk_${'Q'.repeat(43)}` } })).statusCode, 401, 'an unknown key')
})

t.test('a key over its limit is answered 429 before its missing scope', async (t) => {
  const api = await buildTestApp(t)
  const op = operations.find((candidate) => candidate.method === 'GET')!
  const key = await api.createKey('enterprise', { perMinute: 2, perDay: 100 }, api.app.apiDocument.scopes.filter((scope) => scope !== op.scope))
  const request = sampleRequest(op)
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await api.request({ ...request, headers: { ...request.headers, ...scopesOf(key) } })).statusCode)
  t.same(statuses, [403, 403, 429], 'each refusal counted; the third is over the limit of 2')
})

t.test('an operation added to the document with a scope of its own is enforced with no code change', async (t) => {
  const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as Json & { paths: Json, components: { securitySchemes: { bearerAuth: Json & { 'x-scopes': Record<string, string> } } } }
  spec.components.securitySchemes.bearerAuth['x-scopes']['zz-fixture:read'] = 'Read the fixture things'
  spec.paths['/zz-fixture/things'] = {
    get: {
      operationId: 'fixtureListThings',
      security: [{ bearerAuth: ['zz-fixture:read'] }],
      description: 'Every thing. `HEAD` answers as this does.',
      responses: { 200: { description: 'The things', content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } } }
    }
  }
  const file = join(tempDir(t), 'openapi.yaml')
  writeFileSync(file, stringifyYaml(spec))
  const document = await loadDocument(file)
  t.ok(document.scopes.includes('zz-fixture:read'), 'the new scope is read from x-scopes')
  const api = await buildTestApp(t, { document, handlers: { fixtureListThings: async () => ['a thing'] } as unknown as Partial<HandlerMap> })
  const holder = await api.createKey('free', undefined, ['zz-fixture:read'])
  const others = await api.createKey('free') // every scope of the repository's openapi.yaml, which has no such scope
  const things = (key: string) => api.app.inject({ method: 'GET', url: '/v1/zz-fixture/things', headers: { authorization: `Bearer ${key}` } })
  const allowed = await things(holder)
  t.equal(allowed.statusCode, 200, 'a key holding the new scope gets through')
  t.same(allowed.json(), ['a thing'])
  const refused = await things(others)
  t.equal(refused.statusCode, 403, 'a key without it is refused')
  t.equal(refused.headers['www-authenticate'], 'Bearer realm="petstore", error="insufficient_scope", scope="zz-fixture:read"')
  t.equal((await api.app.inject({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${holder}` } })).statusCode, 403,
    'and the key holding only the new scope reaches nothing else')
})
