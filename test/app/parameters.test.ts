import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'
import t from 'tap'
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml'
import { loadDocument } from '../../src/contract/document.js'
import type { HandlerMap } from '../../src/contract/operation-types.js'
import { openapiPath } from '../../src/contract/paths.js'
import { buildTestApp, type Teardown, tempDir } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

// Path, query and header parameters of every type a document may declare, on operations added
// to a copy of openapi.yaml: text is parsed as the declared type, then validated; a value that
// does not parse or validate, and a query parameter nobody declared, is 400 invalid_request.

type Json = Record<string, unknown>

const errorResponses = {
  400: { $ref: '#/components/responses/BadRequest' },
  401: { $ref: '#/components/responses/Unauthorized' },
  500: { $ref: '#/components/responses/InternalError' }
}
const echoed = { description: 'What the handler received', content: { 'application/json': { schema: { type: 'object' } } } }

const probePaths = {
  '/probe/search': {
    get: {
      operationId: 'probeSearch',
      parameters: [
        { name: 'dryRun', in: 'query', schema: { type: 'boolean' } },
        { name: 'price', in: 'query', schema: { type: 'number', minimum: 0 } },
        { name: 'count', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
        { name: 'status', in: 'query', schema: { type: 'array', items: { $ref: '#/components/schemas/PetStatus' }, maxItems: 3 } },
        { name: 'ids', in: 'query', schema: { type: 'array', items: { type: 'integer', format: 'int64' } } },
        { name: 'name', in: 'query', schema: { type: 'string', minLength: 2, maxLength: 5, pattern: '^[a-z]+$' } },
        { name: 'since', in: 'query', schema: { type: 'string', format: 'date' } },
        { name: 'X-Trace-Count', in: 'header', schema: { type: 'integer', minimum: 0 } },
        { name: 'X-Labels', in: 'header', schema: { type: 'array', items: { type: 'string' } } }
      ],
      responses: { 200: echoed, ...errorResponses }
    }
  },
  '/probe/orders': {
    post: {
      operationId: 'probeCreate',
      parameters: [{ name: 'dryRun', in: 'query', required: true, schema: { type: 'boolean' } }],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', required: ['quantity'], additionalProperties: false, properties: { quantity: { type: 'integer' } } } } }
      },
      responses: { 201: echoed, ...errorResponses }
    }
  },
  '/probe/orders/{orderId}': {
    delete: {
      operationId: 'probeDelete',
      parameters: [
        { name: 'orderId', in: 'path', required: true, schema: { type: 'integer', format: 'int64', minimum: 1 } },
        { name: 'If-Match', in: 'header', required: true, schema: { type: 'string', pattern: '^"[0-9a-f]+"$' } }
      ],
      responses: { 204: { description: 'Deleted' }, ...errorResponses }
    }
  },
  '/probe/things/{kind}/{ratio}/{flag}': {
    get: {
      operationId: 'probePath',
      parameters: [
        { name: 'kind', in: 'path', required: true, schema: { type: 'string', enum: ['cat', 'dog'] } },
        { name: 'ratio', in: 'path', required: true, schema: { type: 'number', maximum: 1 } },
        { name: 'flag', in: 'path', required: true, schema: { type: 'boolean' } }
      ],
      responses: { 200: echoed, ...errorResponses }
    }
  }
}

function probeDocument (t: Teardown) {
  const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as Json & { paths: Json }
  spec.paths = { ...spec.paths, ...probePaths }
  const file = join(tempDir(t), 'openapi.yaml')
  writeFileSync(file, stringifyYaml(spec))
  return loadDocument(file)
}

const picked = (headers: FastifyRequest['headers'], names: string[]) =>
  Object.fromEntries(names.filter((name) => name in headers).map((name) => [name, headers[name]]))

// Echo handlers: what reaches them, with its JSON types, is what the response shows.
const probeHandlers = {
  probeSearch: async (request: FastifyRequest) => ({ query: request.query, headers: picked(request.headers, ['x-trace-count', 'x-labels']) }),
  probeCreate: async (request: FastifyRequest) => ({ query: request.query, body: request.body }),
  probeDelete: async (request: FastifyRequest, reply: FastifyReply) => {
    if (typeof (request.params as Json).orderId !== 'number') throw new Error('orderId was not parsed')
    return reply.code(204).send()
  },
  probePath: async (request: FastifyRequest) => ({ params: request.params })
} as unknown as Partial<HandlerMap>

async function setup (t: Teardown) {
  const api = await buildTestApp(t, { document: await probeDocument(t), handlers: probeHandlers })
  const authorization = (await api.authHeader()).authorization
  const inject = (method: string, url: string, headers: Record<string, string> = {}, payload?: unknown) =>
    api.app.inject({ method, url, headers: { authorization, ...headers }, ...(payload === undefined ? {} : { payload: payload as Json }) })
  return { api, authorization, inject }
}

t.test('query parameters reach the handler parsed as their declared types', async (t) => {
  const { inject } = await setup(t)
  const cases: [string, Json][] = [
    ['', {}],
    ['?dryRun=true', { dryRun: true }],
    ['?dryRun=false', { dryRun: false }],
    ['?price=4.5&count=7', { price: 4.5, count: 7 }],
    ['?price=0&count=100', { price: 0, count: 100 }],
    ['?price=-0.0e0', { price: 0 }],
    ['?price=2E3', { price: 2000 }],
    ['?status=sold', { status: ['sold'] }],
    ['?status=available&status=sold', { status: ['available', 'sold'] }],
    ['?ids=9007199254740991&ids=1', { ids: [9007199254740991, 1] }],
    ['?name=ab&since=2026-02-28', { name: 'ab', since: '2026-02-28' }],
    ['?name=%61%62c', { name: 'abc' }]
  ]
  for (const [query, expected] of cases) {
    const res = await inject('GET', `/v1/probe/search${query}`)
    t.equal(res.statusCode, 200, `${query || '(none)'}: 200`)
    t.strictSame(res.json().query, expected, `${query || '(none)'}: parsed`)
  }
})

t.test('a query value that does not parse or validate is 400 invalid_request naming it', async (t) => {
  const { inject } = await setup(t)
  const cases: [string, RegExp][] = [
    ['?dryRun=yes', /^querystring\/dryRun must be boolean$/],
    ['?dryRun=TRUE', /^querystring\/dryRun must be boolean$/],
    ['?dryRun=1', /^querystring\/dryRun must be boolean$/],
    ['?dryRun=', /^querystring\/dryRun must be boolean$/],
    ['?dryRun', /^querystring\/dryRun must be boolean$/],
    ['?dryRun=true&dryRun=false', /^querystring\/dryRun must be given once$/],
    ['?price=abc', /^querystring\/price must be a number written in decimal$/],
    ['?price=.5', /^querystring\/price must be a number written in decimal$/],
    ['?price=%2B1', /^querystring\/price must be a number written in decimal$/],
    ['?price=Infinity', /^querystring\/price must be a number written in decimal$/],
    ['?price=1e999', /^querystring\/price must be a number written in decimal$/],
    ['?price=0x10', /^querystring\/price must be a number written in decimal$/],
    ['?price=-1', /^querystring\/price must be >= 0$/],
    ['?count=1.5', /^querystring\/count must be an integer written in plain decimal$/],
    ['?count=007', /^querystring\/count must be an integer written in plain decimal$/],
    ['?count=0', /^querystring\/count must be >= 1$/],
    ['?count=101', /^querystring\/count must be <= 100$/],
    ['?ids=1&ids=9007199254740993', /^querystring\/ids\/1 must be an integer from -9007199254740991 to 9007199254740991$/],
    ['?ids=1&ids=x', /^querystring\/ids\/1 must be an integer written in plain decimal$/],
    ['?status=lost', /^querystring\/status\/0 must be equal to one of the allowed values$/],
    ['?status=sold&status=Sold', /^querystring\/status\/1 must be equal to one of the allowed values$/],
    ['?status=sold&status=sold&status=sold&status=sold', /^querystring\/status must NOT have more than 3 items$/],
    ['?name=a', /^querystring\/name must NOT have fewer than 2 characters$/],
    ['?name=abcdef', /^querystring\/name must NOT have more than 5 characters$/],
    ['?name=AB', /^querystring\/name must match pattern/],
    ['?since=2026-02-30', /^querystring\/since must match format "date"$/]
  ]
  for (const [query, message] of cases) {
    const body = expectError(t, await inject('GET', `/v1/probe/search${query}`), 400, 'invalid_request', query)
    t.match(body.message, message, `${query}: ${body.message}`)
  }
})

t.test('a query parameter the operation does not declare is 400 naming it', async (t) => {
  const { inject } = await setup(t)
  for (const query of ['?limit=10', '?dryRun=true&limit=10', '?DryRun=true', '?__proto__=1', '?constructor=1']) {
    const name = new URLSearchParams(query).keys().next().value === 'dryRun' ? 'limit' : new URLSearchParams(query).keys().next().value
    const body = expectError(t, await inject('GET', `/v1/probe/search${query}`), 400, 'invalid_request', query)
    t.equal(body.message, `querystring must NOT have additional properties ('${name}')`, `${query}: names ${name}`)
  }
})

t.test('the operations of openapi.yaml refuse unknown query parameters too', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  const body = expectError(t, await api.request({ method: 'GET', url: '/v1/inventory?limit=10', headers }), 400, 'invalid_request', 'GET /v1/inventory?limit=10')
  t.equal(body.message, "querystring must NOT have additional properties ('limit')")
  const head = await api.request({ method: 'HEAD', url: '/v1/inventory?limit=10', headers })
  t.equal(head.statusCode, 400, 'HEAD as well')
  for (const url of ['/v1/store/orders?page=2', '/v1/pets/1?expand=tags']) {
    const res = expectError(t, await api.request({ method: 'GET', url, headers }), 400, 'invalid_request', url)
    t.match(res.message, /^querystring must NOT have additional properties \('(page|expand)'\)$/, `${url}: names the parameter`)
    const head = await api.request({ method: 'HEAD', url, headers })
    t.equal(head.statusCode, 400, `HEAD ${url} as well`)
  }
  // Fastify validates the path parameters before the query string, for these operations too.
  const both = expectError(t, await api.request({ method: 'GET', url: '/v1/pets/abc?expand=tags', headers }), 400, 'invalid_request', 'a bad path parameter and an unknown query parameter')
  t.match(both.message, /^params\/petId /, 'the path parameter is named first')
  const bodyFirst = expectError(t, await api.request({ method: 'PATCH', url: '/v1/inventory/1?quantity=5', headers: { ...headers, 'content-type': 'application/json' }, payload: '{"quantity":-1}' }),
    400, 'invalid_request', 'a body outside its schema and an unknown query parameter')
  t.match(bodyFirst.message, /^body\/quantity /, 'the body is named before the query string')
  const missingFirst = expectError(t, await api.request({ method: 'PATCH', url: '/v1/inventory/abc?quantity=5', headers }),
    400, 'invalid_request', 'no body, a bad path parameter and an unknown query parameter')
  t.match(missingFirst.message, /body/i, `a missing body is named first (${missingFirst.message})`)
  const before = await inventoryRepository(api.store, EVENT_SCOPES).list()
  const patch = await api.request({ method: 'PATCH', url: '/v1/inventory/1?quantity=5', headers: { ...headers, 'content-type': 'application/json' }, payload: '{"quantity":3}' })
  expectError(t, patch, 400, 'invalid_request', 'PATCH with a query parameter')
  t.strictSame(await inventoryRepository(api.store, EVENT_SCOPES).list(), before, 'and changes nothing')
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, 'without it, 200')
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory?', headers })).statusCode, 200, 'an empty query string is no parameter')
})

t.test('header parameters: names are case-insensitive, values parsed; other headers are allowed', async (t) => {
  const { inject } = await setup(t)
  let res = await inject('GET', '/v1/probe/search', { 'X-Trace-Count': '3', 'x-labels': 'a, b,c', 'x-anything': 'else' })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json().headers, { 'x-trace-count': 3, 'x-labels': ['a', 'b', 'c'] }, 'integer and list (simple style) parsed')
  res = await inject('GET', '/v1/probe/search', { 'x-trace-count': '-1' })
  t.equal(expectError(t, res, 400, 'invalid_request', 'negative').message, 'headers/x-trace-count must be >= 0')
  res = await inject('GET', '/v1/probe/search', { 'x-trace-count': '3.0' })
  t.equal(expectError(t, res, 400, 'invalid_request', 'not plain decimal').message, 'headers/x-trace-count must be an integer written in plain decimal')

  res = await inject('DELETE', '/v1/probe/orders/7', { 'if-match': '"abc123"' })
  t.equal(res.statusCode, 204, 'the required header present: the handler answers 204')
  t.equal(res.body, '', 'without a body')
  res = await inject('DELETE', '/v1/probe/orders/7')
  t.equal(expectError(t, res, 400, 'invalid_request', 'required header missing').message, "headers must have required property 'if-match'")
  res = await inject('DELETE', '/v1/probe/orders/7', { 'If-Match': 'abc' })
  t.match(expectError(t, res, 400, 'invalid_request', 'malformed header').message, /^headers\/if-match must match pattern/)
  res = await inject('DELETE', '/v1/probe/orders/x7', { 'if-match': '"a"' })
  t.equal(expectError(t, res, 400, 'invalid_request', 'malformed path').message, 'params/orderId must be an integer written in plain decimal')
})

t.test('path parameters of type string, number and boolean', async (t) => {
  const { inject } = await setup(t)
  let res = await inject('GET', '/v1/probe/things/cat/0.25/true')
  t.equal(res.statusCode, 200)
  t.strictSame(res.json().params, { kind: 'cat', ratio: 0.25, flag: true })
  for (const [path, message] of [
    ['bird/0.25/true', 'params/kind must be equal to one of the allowed values'],
    ['cat/1.5/true', 'params/ratio must be <= 1'],
    ['cat/1%2F2/true', 'params/ratio must be a number written in decimal'],
    ['cat/0.5/yes', 'params/flag must be boolean']
  ] as const) {
    res = await inject('GET', `/v1/probe/things/${path}`)
    t.equal(expectError(t, res, 400, 'invalid_request', path).message, message)
  }
})

t.test('a 201 operation: its returned body is sent as 201; its boolean query parameter is parsed; the body is never coerced', async (t) => {
  const { inject } = await setup(t)
  let res = await inject('POST', '/v1/probe/orders?dryRun=true', { 'content-type': 'application/json' }, { quantity: 2 })
  t.equal(res.statusCode, 201)
  t.strictSame(res.json(), { query: { dryRun: true }, body: { quantity: 2 } })
  res = await inject('POST', '/v1/probe/orders', { 'content-type': 'application/json' }, { quantity: 2 })
  t.equal(expectError(t, res, 400, 'invalid_request', 'required query parameter').message, "querystring must have required property 'dryRun'")
  res = await inject('POST', '/v1/probe/orders?dryRun=false', { 'content-type': 'application/json' }, { quantity: '2' })
  t.equal(expectError(t, res, 400, 'invalid_request', 'body text').message, 'body/quantity must be integer')
})

t.test('a parameter type that cannot be sent as text stops the start, naming it', async (t) => {
  const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as Json & { paths: Json }
  spec.paths = {
    ...spec.paths,
    '/probe/nested': {
      get: {
        operationId: 'probeNested',
        parameters: [{ name: 'grid', in: 'query', schema: { type: 'array', items: { type: 'array', items: { type: 'integer' } } } }],
        responses: { 200: echoed, ...errorResponses }
      }
    }
  }
  const file = join(tempDir(t), 'openapi.yaml')
  writeFileSync(file, stringifyYaml(spec))
  await t.rejects(buildTestApp(t, { document: await loadDocument(file), handlers: { probeNested: async () => ({}) } as unknown as Partial<HandlerMap> }),
    /querystring\/grid: an array of arrays cannot be sent as text/)
})
