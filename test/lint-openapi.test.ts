import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { openapiPath, projectRoot } from '../src/contract/paths.js'
import { tempDir } from './helpers/app.js'
import { run } from './helpers/cli.js'
import { typescriptArgs } from './helpers/node-args.js'
import { operations } from './helpers/surface.js'

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- free edits of a parsed document

const lint = (file?: string) => run(process.execPath, [...typescriptArgs, join(projectRoot, 'scripts', 'lint-openapi.ts'), ...(file === undefined ? [] : [file])], {})

// The operations the tests below break on purpose. The copies keep only these, so that the
// problems reported are the same whatever operations openapi.yaml gains.
const SUBJECTS = new Set(['listInventory', 'updateInventory', 'getPetById', 'listOrders'])

/** A copy of openapi.yaml with only the operations of SUBJECTS, edited, in a temporary directory. */
function copyWith (t: Test, edit: (spec: Json) => void): string {
  const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as Json
  for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) if (typeof op?.operationId === 'string' && !SUBJECTS.has(op.operationId)) delete item[method]
    if (!Object.values(item).some((op) => typeof op?.operationId === 'string')) delete spec.paths[path]
  }
  t.equal(Object.values(spec.paths as Record<string, Json>).flatMap((item) => Object.values(item)).filter((op) => typeof op?.operationId === 'string').length, SUBJECTS.size, 'the copy has the operations the test edits')
  edit(spec)
  const file = join(tempDir(t), 'openapi.yaml')
  writeFileSync(file, toYaml(spec))
  return file
}

/** The problems reported, without the file name each line starts with. */
const problems = (stderr: string, file: string) => stderr.trim().split('\n').map((line) => line.replace(`${file}: `, '')).sort()

t.test('the repository\'s openapi.yaml passes', async (t) => {
  const res = await lint()
  t.equal(res.code, 0, `lint passes: ${res.stderr}`)
  t.match(res.stdout, new RegExp(`^openapi\\.yaml is valid OpenAPI 3\\.1\\.\\d+; ${operations.length} operations follow the project's rules; \\d+ examples match their schemas$`, 'm'))
})

t.test('an operation without the responses every operation can give fails, naming it and what is missing', async (t) => {
  const file = copyWith(t, (spec) => {
    delete spec.paths['/inventory'].get.responses['429']
    delete spec.paths['/inventory/{petId}'].patch.responses['400']
    delete spec.paths['/pets/{petId}'].get.responses['503']
    spec.paths['/store/orders'].get.responses['500'] = { description: 'Oops', content: { 'application/json': { schema: { type: 'string' } } } }
    delete spec.paths['/store/orders'].get.responses['200'].headers['X-RateLimit-Reset']
    delete spec.components.responses.TooManyRequests.headers['Retry-After']
    delete spec.components.responses.NotFound.headers['X-RateLimit-Limit']
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  // getPetById's 404 and 429 are its Deprecated… variants, untouched here.
  t.same(problems(res.stderr, file), [
    'getPetById (GET /pets/{petId}): no 503 response (the storage unavailable); every /v1 operation can answer it',
    'listInventory (GET /inventory): no 429 response (over the rate limit, or banned); every /v1 operation can answer it',
    'listOrders (GET /store/orders): response 200 does not declare the header X-RateLimit-Reset',
    'listOrders (GET /store/orders): response 429 does not declare the header Retry-After',
    'listOrders (GET /store/orders): response 500 does not declare the headers X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id',
    'listOrders (GET /store/orders): response 500 is not the Error body (content application/json, schema #/components/schemas/Error)',
    'listOrders (GET /store/orders) response 500 application/json: no example; Swagger UI would make one up at the schema\'s bounds (2147483647 for a stock count): add example: … beside its schema, or examples: [ … ] to the schema',
    'updateInventory (PATCH /inventory/{petId}): no 400 response (invalid input: a malformed parameter or body, or an unknown query parameter); every /v1 operation can answer it',
    'updateInventory (PATCH /inventory/{petId}): response 404 does not declare the header X-RateLimit-Limit',
    'updateInventory (PATCH /inventory/{petId}): response 429 does not declare the header Retry-After'
  ].sort(), 'exactly these problems, each naming its operation')
})

t.test('what the service does beyond each operation\'s own results must be declared: X-Request-Id, 405 with Allow, deprecation headers, HEAD', async (t) => {
  const file = copyWith(t, (spec) => {
    delete spec.components.responses.InternalError.headers['X-Request-Id']
    delete spec.components.responses.MethodNotAllowed.headers.Allow
    delete spec.paths['/inventory/{petId}'].patch.responses['405']
    const getPetById = spec.paths['/pets/{petId}'].get
    getPetById.responses['404'] = { $ref: '#/components/responses/NotFound' }
    getPetById.responses['500'] = structuredClone(spec.components.responses.InternalError)
    const listOrders = spec.paths['/store/orders'].get
    delete listOrders.parameters
    listOrders.description = 'Every order.'
    spec.paths['/inventory'].get.parameters = [{ name: 'x-request-id', in: 'header', schema: { type: 'string', maxLength: 64 } }]
    spec.paths['/inventory'].head = { ...structuredClone(spec.paths['/inventory'].get), operationId: 'headInventory' }
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  const every405 = ['getPetById (GET /pets/{petId})', 'headInventory (HEAD /inventory)', 'listInventory (GET /inventory)', 'listOrders (GET /store/orders)']
    .map((op) => `${op}: response 405 does not declare the header Allow`)
  t.same(problems(res.stderr, file), [
    ...every405,
    'getPetById (GET /pets/{petId}): response 404 does not declare the headers Deprecation, Sunset, Link (a deprecated operation sends Deprecation, Sunset and Link on every response: use #/components/responses/DeprecatedNotFound)',
    'getPetById (GET /pets/{petId}): response 500 does not declare the headers X-Request-Id, Deprecation, Sunset, Link (a deprecated operation sends Deprecation, Sunset and Link on every response)',
    'headInventory (HEAD /inventory): a head operation beside GET /inventory; Fastify already answers HEAD on every GET route, and a second HEAD route stops the service from starting: remove it and say so in the GET operation\'s description',
    'headInventory (HEAD /inventory): response 500 does not declare the header X-Request-Id',
    'headInventory (HEAD /inventory): the X-Request-Id parameter must accept any value (not required, schema { type: string } alone, or with a maxLength of at least 16384, Node\'s whole request head): an id the service does not keep is replaced, never refused',
    'listInventory (GET /inventory): no If-None-Match header parameter; the service reads it on every GET and answers 304 when it holds the current ETag: add - $ref: \'#/components/parameters/IfNoneMatch\'',
    'listInventory (GET /inventory): response 500 does not declare the header X-Request-Id',
    'listInventory (GET /inventory): the X-Request-Id parameter must accept any value (not required, schema { type: string } alone, or with a maxLength of at least 16384, Node\'s whole request head): an id the service does not keep is replaced, never refused',
    'listOrders (GET /store/orders): no If-None-Match header parameter; the service reads it on every GET and answers 304 when it holds the current ETag: add - $ref: \'#/components/parameters/IfNoneMatch\'',
    'listOrders (GET /store/orders): no X-Request-Id header parameter (every operation takes one: - $ref: \'#/components/parameters/RequestId\')',
    'listOrders (GET /store/orders): response 500 does not declare the header X-Request-Id',
    'listOrders (GET /store/orders): the description does not mention HEAD; Fastify answers HEAD on every GET route (same status and headers, no body): say so',
    'updateInventory (PATCH /inventory/{petId}): no 405 response (a method its path does not have, with Allow); every /v1 operation can answer it',
    'updateInventory (PATCH /inventory/{petId}): response 500 does not declare the header X-Request-Id'
  ].sort(), 'exactly these problems, each naming its operation and what is missing')
})

t.test('a GET without ETag on its 200, a 304 or If-None-Match fails, saying what to add', async (t) => {
  const file = copyWith(t, (spec) => {
    const listInventory = spec.paths['/inventory'].get
    delete listInventory.responses['200'].headers.ETag
    delete listInventory.responses['304']
    listInventory.parameters = listInventory.parameters.filter((p: Json) => p.$ref !== '#/components/parameters/IfNoneMatch')
    delete spec.paths['/pets/{petId}'].get.responses['304']
    delete spec.components.responses.NotModified.headers.ETag
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  t.same(problems(res.stderr, file), [
    'getPetById (GET /pets/{petId}): no 304 response; the service answers 304 without a body when If-None-Match holds the current ETag: add \'304\': { $ref: \'#/components/responses/DeprecatedNotModified\' }',
    'listInventory (GET /inventory): no 304 response; the service answers 304 without a body when If-None-Match holds the current ETag: add \'304\': { $ref: \'#/components/responses/NotModified\' }',
    'listInventory (GET /inventory): no If-None-Match header parameter; the service reads it on every GET and answers 304 when it holds the current ETag: add - $ref: \'#/components/parameters/IfNoneMatch\'',
    'listInventory (GET /inventory): response 200 does not declare the header ETag; the service tags every 200 of a GET with its body\'s entity tag: add ETag: { $ref: \'#/components/headers/ETag\' } to its headers',
    'listOrders (GET /store/orders): response 304 does not declare the header ETag'
  ].sort(), 'exactly these problems, each with the line to add')
})

t.test('an example that does not validate against its schema fails, wherever it is', async (t) => {
  const file = copyWith(t, (spec) => {
    spec.components.schemas.Pet.properties.name.examples = [''] // schema example: minLength 1
    spec.components.schemas.InventoryUpdate.examples = [{ quantity: 7 }, { quantity: 12, extra: true }] // object example: additionalProperties
    spec.components.responses.BadRequest.content['application/json'].example.status = 'four hundred' // media type example
    spec.components.responses.Unauthorized.content['application/json'].examples.scheme.value.code = 'denied' // named example
    spec.components.parameters.PetId.example = 0 // parameter example: minimum 1
    spec.components.headers.Sunset.schema.examples = [1782777600] // header schema example: a string
    spec.components.schemas.Category.example = { id: 1, name: 'Dogs' } // OpenAPI 3.0's keyword in a 2020-12 schema
    // int64 as the service reads it (a number JavaScript holds exactly: 2^53 is one past), not any 64-bit integer.
    spec.paths['/inventory'].get.parameters.push({ name: 'after', in: 'query', schema: { type: 'integer', format: 'int64' }, example: 2 ** 53 })
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  t.same(problems(res.stderr, file), [
    'components/headers/Sunset schema examples[0]: does not match its schema: example must be string',
    'components/parameters/PetId example: does not match its schema: example must be >= 1',
    'components/responses/BadRequest application/json example: does not match its schema: example/status must be integer',
    'components/responses/Unauthorized application/json examples.scheme: does not match its schema: example/code must be equal to one of the allowed values',
    // The Deprecated… responses share those examples (YAML aliases): one change breaks both.
    'components/responses/DeprecatedBadRequest application/json example: does not match its schema: example/status must be integer',
    'components/responses/DeprecatedUnauthorized application/json examples.scheme: does not match its schema: example/code must be equal to one of the allowed values',
    'components/schemas/Category: a schema\'s `example` is OpenAPI 3.0\'s; write examples: [{"id":1,"name":"Dogs"}] (JSON Schema 2020-12)',
    'components/schemas/InventoryUpdate examples[1]: does not match its schema: example must NOT have additional properties',
    'components/schemas/Pet.name examples[0]: does not match its schema: example must NOT have fewer than 1 characters',
    'listInventory (GET /inventory) parameter after example: does not match its schema: example must match format "int64"'
  ].sort(), 'exactly these problems, each with its place and the reason')
})

t.test('an example that shows a limit of its schema fails, at any depth, saying what to change; lower bounds and fixed lengths pass', async (t) => {
  const change = 'an example shows a realistic value, not a limit of its schema: change it'
  const file = copyWith(t, (spec) => {
    spec.components.schemas.InventoryUpdate.examples = [{ quantity: 7 }, { quantity: 2147483647 }] // schema examples
    spec.components.schemas.Order.examples[0].petId = 9007199254740991 // a property, through the $ref of Order
    spec.components.parameters.PetId.example = 9007199254740991 // parameter example
    spec.components.headers['X-Request-Id'].schema.examples = ['a'.repeat(128)] // header schema: maxLength 128
    // Items of an array in a media type example: InventoryItem reached through items.$ref.
    spec.paths['/inventory'].get.responses['200'].content['application/json'].example = [
      { petId: 12, quantity: 0, status: 'sold' }, // quantity 0 and petId 1 are lower bounds: allowed
      { petId: 1, quantity: 2147483647, status: 'available' }
    ]
    spec.paths['/inventory'].get.parameters.push({ name: 'top', in: 'query', schema: { type: 'integer', exclusiveMaximum: 100 }, example: 99 })
    spec.paths['/inventory'].get.parameters.push({ name: 'code', in: 'query', schema: { type: 'string', minLength: 4, maxLength: 4 }, example: 'ABCD' }) // fixed length: allowed
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  t.same(problems(res.stderr, file), [
    `components/headers/X-Request-Id schema examples[0]: example is 128 characters long, its schema's maxLength; ${change}`,
    `components/parameters/PetId example: example is 9007199254740991, its schema's maximum; ${change}`,
    `components/schemas/InventoryUpdate examples[1]: example.quantity is 2147483647, its schema's maximum; ${change}`,
    `components/schemas/Order examples[0]: example.petId is 9007199254740991, its schema's maximum; ${change}`,
    `listInventory (GET /inventory) parameter top example: example is 99, the last integer under its schema's exclusiveMaximum; ${change}`,
    `listInventory (GET /inventory) response 200 application/json example: example[1].quantity is 2147483647, its schema's maximum; ${change}`
  ].sort(), 'exactly these problems, each with the place in the example and the limit')
})

t.test('a webhook\'s body is held to the same example rules as an operation\'s', async (t) => {
  const file = copyWith(t, (spec) => {
    const media = spec.webhooks['inventory.updated'].post.requestBody.content['application/json']
    media.examples = {
      atLimit: { value: { id: 'evt_3kT9Xq2mW8pL1vB6nR0yZa', type: 'inventory.updated', createdAt: '2026-11-28T09:05:00.000Z', data: { petId: 12, quantity: 2147483647, status: 'available', previous: { quantity: 7, status: 'available' } } } },
      wrong: { value: { id: 'evt_3kT9Xq2mW8pL1vB6nR0yZa', type: 'order.placed', createdAt: '2026-11-28T09:05:00.000Z', data: { petId: 12, quantity: 5, status: 'available', previous: { quantity: 7, status: 'available' } } } }
    }
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  t.same(problems(res.stderr, file), [
    'onInventoryUpdated (POST inventory.updated) request body application/json examples.atLimit: example.data.quantity is 2147483647, its schema\'s maximum; an example shows a realistic value, not a limit of its schema: change it',
    'onInventoryUpdated (POST inventory.updated) request body application/json examples.wrong: does not match its schema: example/type must be equal to constant'
  ], 'each example of the webhook, with its place and the reason')
})

t.test('a body without an example of the document\'s own fails: Swagger UI would make one up from the schema', async (t) => {
  const file = copyWith(t, (spec) => {
    delete spec.components.schemas.Pet.examples // getPetById's 200 has none of its own either
    delete spec.paths['/store/orders'].get.responses['200'].content['application/json'].example // its items (Order) have examples: enough
    delete spec.components.schemas.InventoryUpdate.examples // updateInventory's request body
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  const add = 'no example; Swagger UI would make one up at the schema\'s bounds (2147483647 for a stock count): add example: … beside its schema, or examples: [ … ] to the schema'
  t.same(problems(res.stderr, file), [
    `getPetById (GET /pets/{petId}) response 200 application/json: ${add}`,
    `updateInventory (PATCH /inventory/{petId}) request body application/json: ${add}`
  ].sort(), 'exactly the bodies without an example, each saying what to add')
})

t.test('every operation names exactly one declared scope, and declares its 403', async (t) => {
  const file = copyWith(t, (spec) => {
    delete spec.paths['/inventory'].get.security
    spec.paths['/inventory/{petId}'].patch.security = [{ bearerAuth: ['inventory:write', 'inventory:read'] }]
    spec.paths['/store/orders'].get.security = [{ bearerAuth: ['orders:everything'] }]
    delete spec.paths['/pets/{petId}'].get.responses['403']
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  const scopes = Object.keys((parseYaml(readFileSync(openapiPath, 'utf8')) as Json).components.securitySchemes.bearerAuth['x-scopes']).join(', ')
  t.same(problems(res.stderr, file), [
    `listInventory (GET /inventory): its security requirement must name exactly one scope of bearerAuth, e.g. security: [{ bearerAuth: ['inventory:read'] }] (the scopes: ${scopes})`,
    `listOrders (GET /store/orders): the scope orders:everything is not one bearerAuth declares (x-scopes: ${scopes}); add it there with its meaning, or use one of those`,
    'getPetById (GET /pets/{petId}): no 403 response (a valid API key without the operation\'s scope); every /v1 operation can answer it',
    `updateInventory (PATCH /inventory/{petId}): its security requirement must name exactly one scope of bearerAuth, e.g. security: [{ bearerAuth: ['inventory:read'] }] (the scopes: ${scopes})`
  ].sort())
})

t.test('an error code without an example fails', async (t) => {
  const file = copyWith(t, (spec) => {
    delete spec.components.responses.NotImplemented.content['application/json'].example
    delete spec.components.responses.TooManyRequests.content['application/json'].examples.api_key_banned
  })
  const res = await lint(file)
  t.equal(res.code, 1, 'lint fails')
  t.same(problems(res.stderr, file), [
    'Error code api_key_banned has no example: give a response that carries it an example with the message the service sends',
    'Error code not_implemented has no example: give a response that carries it an example with the message the service sends',
    'components/responses/NotImplemented application/json: no example; Swagger UI would make one up at the schema\'s bounds (2147483647 for a stock count): add example: … beside its schema, or examples: [ … ] to the schema'
  ])
})

t.test('a document that is not OpenAPI, or no file at all, is a clear error', async (t) => {
  const file = copyWith(t, (spec) => { delete spec.info })
  let res = await lint(file)
  t.equal(res.code, 1)
  t.match(res.stderr, `${file} is not a valid OpenAPI document: `)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')

  res = await lint(join(tempDir(t), 'missing.yaml'))
  t.equal(res.code, 1)
  t.match(res.stderr, /missing\.yaml is not a valid OpenAPI document: .*missing\.yaml/)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')
})
