import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { tempDir } from './helpers/app.js'
import { run } from './helpers/cli.js'
import { copyProject, headers, json, npmScript, ref, timed as timedStep } from './helpers/project-copy.js'
import { isStub, operations } from './helpers/surface.js'
import { type ServerProcess, startServer } from './helpers/server-process.js'

// Issue 12, as a new user meets it, on a copy of the project: three operations added to
// openapi.yaml, generated, type-checked as stubs, served (501, and 400 for malformed
// parameters), implemented (the compiler refusing bodies sent with the wrong status), then one
// renamed and one removed. Slow: it runs the compiler three times over the copy and starts the
// server twice: 2 to 3 minutes on a busy 2-core machine, 20 to 35 s of it per compiler run.

// More than the 300 s of .taprc, for a machine busier still.
t.setTimeout(600_000)

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- free edits of a parsed document

const copy = copyProject(t, ['openapi.yaml', 'package.json', 'tsconfig.json', 'src', 'handlers', 'scripts'])
// The copy's compiler runs build on each other's work (tsc --incremental: the same errors, found
// again only in the files an edit can change), as an editor's watch would.
const tsconfig = JSON.parse(readFileSync(join(copy, 'tsconfig.json'), 'utf8')) as { compilerOptions: Json }
tsconfig.compilerOptions.incremental = true
tsconfig.compilerOptions.tsBuildInfoFile = 'typecheck.tsbuildinfo'
writeFileSync(join(copy, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2))

/** An npm script of the copy, run there as a user would. */
const npm = (script: string, ...args: string[]) => npmScript(copy, script, ...args)
const shell = (command: string) => run('sh', ['-c', `cd "${copy}" && ${command}`], {})
const write = (file: string, content: string) => {
  mkdirSync(join(copy, file, '..'), { recursive: true })
  writeFileSync(join(copy, file), content)
}
const editSpec = (edit: (spec: Json) => void) => {
  const spec = parseYaml(readFileSync(join(copy, 'openapi.yaml'), 'utf8')) as Json
  edit(spec)
  write('openapi.yaml', toYaml(spec))
}
/** tsc's diagnostics, as `file(line,col): error TS…` lines, keyed by file. */
const errorsByFile = (output: string) => {
  const files = new Map<string, string[]>()
  for (const [line, file] of output.matchAll(/^(\S+?)\(\d+,\d+\): error TS\d+: .*$/gm)) files.set(file!, [...files.get(file!) ?? [], line])
  return files
}
const timed = <T> (step: string, work: () => Promise<T>) => timedStep(t, step, work)
const requestId = { $ref: '#/components/parameters/RequestId' }
const everyOperation = {
  400: ref('BadRequest'), 401: ref('Unauthorized'), 403: ref('Forbidden'), 405: ref('MethodNotAllowed'), 429: ref('TooManyRequests'), 500: ref('InternalError'), 503: ref('ServiceUnavailable')
}
const scope = (name: string) => [{ bearerAuth: [name] }]

const fixtureCreateOrder = {
  operationId: 'fixtureCreateOrder',
  tags: ['Store'],
  security: scope('orders:write'),
  summary: 'Place an order',
  description: 'Places an order for a pet. With `dryRun=true` nothing is placed: the answer is the order as it would be.',
  parameters: [requestId, { name: 'dryRun', in: 'query', schema: { type: 'boolean' } }],
  requestBody: { required: true, content: json({ $ref: '#/components/schemas/ZzFixtureOrderRequest' }) },
  responses: {
    200: { description: 'Dry run: the order as it would be placed', headers, content: json({ $ref: '#/components/schemas/ZzFixtureOrderRequest' }) },
    201: { description: 'The order placed', headers, content: json({ $ref: '#/components/schemas/Order' }) },
    404: ref('NotFound'), 413: ref('PayloadTooLarge'), 415: ref('UnsupportedMediaType'), ...everyOperation
  }
}
const fixtureDeleteOrder = {
  operationId: 'fixtureDeleteOrder',
  tags: ['Store'],
  security: scope('orders:write'),
  summary: 'Cancel an order',
  parameters: [
    requestId,
    { name: 'orderId', in: 'path', required: true, schema: { type: 'integer', format: 'int64', minimum: 1, maximum: 9007199254740991 } },
    { name: 'X-Confirm', in: 'header', required: true, description: 'Must be `true`: a cancellation is not undone.', schema: { type: 'boolean' } }
  ],
  responses: { 204: { description: 'Cancelled', headers }, 404: ref('NotFound'), ...everyOperation }
}
const fixtureFindPetsByStatus = {
  operationId: 'fixtureFindPetsByStatus',
  tags: ['Pets'],
  security: scope('inventory:read'),
  summary: 'Find pets by status',
  description: 'The pets whose inventory status is one of `status` (repeat it for several). `HEAD` answers as this does, without a body.',
  parameters: [requestId, { $ref: '#/components/parameters/IfNoneMatch' }, { name: 'status', in: 'query', schema: { type: 'array', minItems: 1, items: { $ref: '#/components/schemas/PetStatus' } } }],
  responses: {
    200: { description: 'The pets, by id', headers: { ETag: { $ref: '#/components/headers/ETag' }, ...headers }, content: json({ type: 'array', items: { $ref: '#/components/schemas/Pet' } }) },
    304: ref('NotModified'),
    ...everyOperation
  }
}

// Operations of the repository itself still waiting for their handler (usually none).
const repositoryStubs = operations.filter((op) => isStub(op.operationId)).map((op) => op.operationId).sort()

let server: ServerProcess | undefined
const call = async (method: string, path: string, extra: Record<string, string> = {}, body?: unknown) => {
  const res = await fetch(`${server!.baseUrl}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${server!.demoKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, body: text === '' ? undefined : JSON.parse(text) as Json }
}
const serve = (name: string) => timed(`start the server (${name})`, () => startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), `${name}.db`)}` }, 60_000, join(copy, 'src', 'server.ts')))

t.test('three operations added to openapi.yaml are generated, type-checked and served as 501 stubs, with their parameters validated', async (t) => {
  editSpec((spec) => {
    spec.components.schemas.ZzFixtureOrderRequest = {
      type: 'object',
      additionalProperties: false,
      required: ['petId', 'quantity'],
      properties: { petId: { type: 'integer', format: 'int64', minimum: 1, maximum: 9007199254740991 }, quantity: { type: 'integer', minimum: 1, maximum: 2147483647 } },
      examples: [{ petId: 12, quantity: 2 }]
    }
    spec.paths['/zz-fixture/orders'] = { post: fixtureCreateOrder }
    spec.paths['/zz-fixture/orders/{orderId}'] = { delete: fixtureDeleteOrder }
    spec.paths['/zz-fixture/pets'] = { get: fixtureFindPetsByStatus }
  })
  const lint = await npm('lint:openapi')
  t.equal(lint.code, 0, `the new operations pass lint:openapi ${lint.stderr}`)
  t.match(lint.stdout, `${operations.length + 3} operations follow the project's rules`)

  const generate = await timed('generate', () => npm('generate'))
  t.equal(generate.code, 0, `generate succeeds ${generate.stderr}`)
  for (const id of ['fixtureCreateOrder', 'fixtureDeleteOrder', 'fixtureFindPetsByStatus']) t.match(generate.stdout, `created handlers/${id}.ts (a stub answering 501 not_implemented)`)
  const stubs = [...repositoryStubs, 'fixtureCreateOrder', 'fixtureDeleteOrder', 'fixtureFindPetsByStatus'].sort()
  t.match(generate.stdout, `\nnot implemented yet (the handler is the generated stub, answering 501): ${stubs.join(', ')}\n`, 'generate lists the stubs')

  const typecheck = await timed('typecheck with the stubs', () => npm('typecheck'))
  t.equal(typecheck.code, 0, `the stubs type-check ${typecheck.stdout}`)

  server = await serve('stubs')
  const warning = server.logs.find((line) => line.level === 40 && String(line.msg).startsWith('not implemented yet'))
  t.same([...warning?.operations as string[] ?? []].sort(), stubs, 'one warning at start names every stub')

  const stub = (id: string) => ({ code: 'not_implemented', message: `operation ${id} is not implemented yet`, status: 501 })
  let res = await call('POST', '/zz-fixture/orders?dryRun=true', {}, { petId: 1, quantity: 2 })
  t.same([res.status, res.body], [501, stub('fixtureCreateOrder')], 'fixtureCreateOrder: 501')
  res = await call('DELETE', '/zz-fixture/orders/1', { 'x-confirm': 'true' })
  t.same([res.status, res.body], [501, stub('fixtureDeleteOrder')], 'fixtureDeleteOrder: 501')
  res = await call('GET', '/zz-fixture/pets?status=available&status=sold')
  t.same([res.status, res.body], [501, stub('fixtureFindPetsByStatus')], 'fixtureFindPetsByStatus: 501')

  const invalid = (message: string) => ({ code: 'invalid_request', message, status: 400 })
  res = await call('POST', '/zz-fixture/orders?dryRun=yes', {}, { petId: 1, quantity: 2 })
  t.same([res.status, res.body], [400, invalid('querystring/dryRun must be boolean')], 'a boolean query parameter that is not true or false')
  res = await call('DELETE', '/zz-fixture/orders/1')
  t.same([res.status, res.body], [400, invalid("headers must have required property 'x-confirm'")], 'a required header missing')
  res = await call('DELETE', '/zz-fixture/orders/1', { 'x-confirm': 'yes' })
  t.same([res.status, res.body], [400, invalid('headers/x-confirm must be boolean')], 'a boolean header that is not true or false')
  res = await call('GET', '/zz-fixture/pets?status=available&status=lost')
  t.same([res.status, res.body], [400, invalid('querystring/status/1 must be equal to one of the allowed values')], 'an array item outside its enum')
  res = await call('PUT', '/zz-fixture/orders')
  t.equal(res.status, 405, 'another method on the path of the new POST')
  t.equal(res.headers.get('allow'), 'POST', 'Allow names the new method')
  res = await call('DELETE', '/zz-fixture/pets')
  t.same([res.status, res.headers.get('allow')], [405, 'GET, HEAD'], 'and HEAD comes with a new GET')
  t.equal(await server.stop(), 0)
})

t.test('implemented, the handlers compile; a body sent with a status whose schema it does not match does not', async (t) => {
  write('handlers/fixtureCreateOrder.ts', `import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

let nextId = 1000

/** POST /v1/zz-fixture/orders (nothing is stored: the store has no orders to write to). */
export const fixtureCreateOrder: OperationHandler<'fixtureCreateOrder'> = async (request, reply) => {
  const { petId, quantity } = request.body
  if (await request.server.petsRepository.get(petId) === undefined) throw notFound(\`no pet with id \${petId}\`)
  if (request.query.dryRun === true) return { petId, quantity }
  return reply.code(201).send({ id: nextId++, petId, quantity, shipDate: new Date(0).toISOString(), status: 'placed', complete: false })
}
`)
  write('handlers/fixtureDeleteOrder.ts', `import { ApiError, notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** DELETE /v1/zz-fixture/orders/{orderId} (nothing is deleted: the store cannot). */
export const fixtureDeleteOrder: OperationHandler<'fixtureDeleteOrder'> = async (request, reply) => {
  if (!request.headers['x-confirm']) throw new ApiError('invalid_request', 'send X-Confirm: true to cancel an order')
  const { orderId } = request.params
  if (await request.server.ordersRepository.get(orderId) === undefined) throw notFound(\`no order with id \${orderId}\`)
  return reply.code(204).send()
}
`)
  write('handlers/fixtureFindPetsByStatus.ts', `import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/zz-fixture/pets?status=…: the pets whose inventory entry has one of the statuses. */
export const fixtureFindPetsByStatus: OperationHandler<'fixtureFindPetsByStatus'> = async (request) => {
  const { inventoryRepository, petsRepository } = request.server
  const wanted = new Set(request.query.status ?? ['available'])
  const ids = (await inventoryRepository.list()).filter((item) => wanted.has(item.status)).map((item) => item.petId)
  const pets = await Promise.all(ids.map((id) => petsRepository.get(id)))
  return pets.filter((pet) => pet !== undefined)
}
`)
  // Each mistake in a file of its own, so that the compiler's answer shows which are refused.
  const wrong = {
    'src/wrong/created-with-the-request-body.ts': `export const w: OperationHandler<'fixtureCreateOrder'> = async (request, reply) => reply.code(201).send(request.body)`,
    'src/wrong/no-content-with-a-body.ts': `export const w: OperationHandler<'fixtureDeleteOrder'> = async (_request, reply) => reply.code(204).send({ deleted: true })`,
    'src/wrong/not-found-with-an-order.ts': `export const w: OperationHandler<'fixtureDeleteOrder'> = async (request, reply) =>
  reply.code(404).send({ id: request.params.orderId, petId: 1, quantity: 1, shipDate: '2026-01-01T00:00:00Z', status: 'placed', complete: false })`,
    'src/wrong/undeclared-status.ts': `export const w: OperationHandler<'fixtureCreateOrder'> = async (_request, reply) => reply.code(409).send({ code: 'invalid_request', message: 'taken', status: 409 })`,
    'src/wrong/success-of-another-schema.ts': `export const w: OperationHandler<'fixtureFindPetsByStatus'> = async (request) => request.server.inventoryRepository.list()`
  }
  for (const [file, code] of Object.entries(wrong)) write(file, `import type { OperationHandler } from '../contract/operation-types.js'\n\n${code}\n`)

  const typecheck = await timed('typecheck with the implementations and the mistakes', () => npm('typecheck'))
  t.not(typecheck.code, 0, 'tsc fails')
  const errors = errorsByFile(typecheck.stdout)
  t.same([...errors.keys()].sort(), Object.keys(wrong).sort(), 'every mistake is refused, and nothing else: the three handlers compile', { output: typecheck.stdout })
  // Refused for the body or the status (TS2322, TS2345), not for a typo in the test's own code.
  const reasons = [...errors.values()].flat().map((line) => /error (TS\d+)/.exec(line)![1])
  t.same([...new Set(reasons)].filter((code) => code !== 'TS2322' && code !== 'TS2345'), [], 'each one as a type that does not match', { output: typecheck.stdout })
  t.match(typecheck.stdout, /undeclared-status\.ts.*Argument of type '409' is not assignable to parameter of type '200 \| 201 \| 400/, 'an undeclared status is named as such')
  for (const file of Object.keys(wrong)) await shell(`rm ${file}`)

  server = await serve('implemented')
  const warned = server.logs.filter((line) => String(line.msg).startsWith('not implemented yet')).flatMap((line) => line.operations as string[])
  t.same(warned.sort(), repositoryStubs, 'no warning at start for them any more')
  let res = await call('POST', '/zz-fixture/orders?dryRun=true', {}, { petId: 1, quantity: 2 })
  t.same([res.status, res.body], [200, { petId: 1, quantity: 2 }], 'the returned body is sent with the first 2xx, 200')
  res = await call('POST', '/zz-fixture/orders', {}, { petId: 1, quantity: 2 })
  t.same([res.status, res.body], [201, { id: 1000, petId: 1, quantity: 2, shipDate: '1970-01-01T00:00:00.000Z', status: 'placed', complete: false }], 'reply.code(201).send(order)')
  res = await call('DELETE', '/zz-fixture/orders/1', { 'x-confirm': 'true' })
  t.same([res.status, res.text], [204, ''], 'reply.code(204).send(): no body')
  res = await call('DELETE', '/zz-fixture/orders/1', { 'x-confirm': 'false' })
  t.same([res.status, res.body?.message], [400, 'send X-Confirm: true to cancel an order'], 'the parsed header reaches the handler as a boolean')
  res = await call('GET', '/zz-fixture/pets?status=sold')
  t.equal(res.status, 200)
  t.ok(Array.isArray(res.body) && res.body.length > 0 && res.body.every((pet: Json) => pet.status === 'sold'), 'the sold pets of the demo catalogue')
  res = await call('HEAD', '/zz-fixture/pets?status=sold')
  t.same([res.status, res.text, res.headers.get('x-request-id') !== null], [200, '', true], 'HEAD: the status and headers of GET, no body')
  t.equal(await server.stop(), 0)
})

t.test('renamed, an operation keeps its handler; removed, its edited handler is reported until it is gone', async (t) => {
  editSpec((spec) => {
    spec.paths['/zz-fixture/pets'].get.operationId = 'fixtureListPetsByStatus'
    delete spec.paths['/zz-fixture/orders/{orderId}']
  })
  const check = await npm('generate', '--check')
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/fixtureFindPetsByStatus.ts is the handler of GET /zz-fixture/pets, now operation fixtureListPetsByStatus: npm run generate renames it to handlers/fixtureListPetsByStatus.ts')
  const removal = 'rm handlers/fixtureDeleteOrder.ts'
  const orphan = `handlers/fixtureDeleteOrder.ts is not used by any operation in openapi.yaml and has been edited; move what you need out of it, then remove it: ${removal}`
  t.match(check.stderr, `generate --check: ${orphan}`)

  const generate = await npm('generate')
  t.equal(generate.code, 1, 'generate fails while the edited orphan is there')
  t.match(generate.stdout, "renamed handlers/fixtureFindPetsByStatus.ts → handlers/fixtureListPetsByStatus.ts (GET /zz-fixture/pets is now operation fixtureListPetsByStatus; its export and 'fixtureFindPetsByStatus' type arguments renamed)")
  t.match(generate.stderr, `generate: ${orphan}`)
  t.ok(existsSync(join(copy, 'handlers', 'fixtureDeleteOrder.ts')), 'the edited handler is kept')
  t.match(readFileSync(join(copy, 'handlers', 'fixtureListPetsByStatus.ts'), 'utf8'), "export const fixtureListPetsByStatus: OperationHandler<'fixtureListPetsByStatus'> = async (request) => {", 'the code moved with its new name')
  t.equal((await npm('generate', '--check')).code, 1, '--check still fails')

  t.equal((await shell(removal)).code, 0, 'the printed command works')
  const again = await npm('generate')
  t.equal(again.code, 0, `generate passes ${again.stderr}`)
  t.match(again.stdout, new RegExp(`^everything up to date \\(${operations.length + 2} operations\\)$`, 'm'))
  const checked = await npm('generate', '--check')
  t.equal(checked.code, 0, `--check passes ${checked.stderr}`)
  const typecheck = await timed('typecheck after the rename and the removal', () => npm('typecheck'))
  t.equal(typecheck.code, 0, `the renamed handler compiles ${typecheck.stdout}`)
})

t.test('a required field added to a schema the stores return is a compile error where the engines build it', async (t) => {
  editSpec((spec) => {
    const item = spec.components.schemas.InventoryItem
    item.required.push('aisle')
    item.properties.aisle = { type: 'string', description: 'Where the animals are kept' }
  })
  const generate = await npm('generate')
  t.equal(generate.code, 0, `generate passes ${generate.stderr}`)
  const typecheck = await timed('typecheck with a new required InventoryItem field', () => npm('typecheck'))
  t.not(typecheck.code, 0, 'tsc fails')
  const errors = errorsByFile(typecheck.stdout)
  // The SQL of every inventory statement (rows and JSON text, SQLite and PostgreSQL) is made from
  // the field map, and every row becomes an item through toInventoryItem: those two refuse. So
  // does SQLite's PATCH, which builds its answer from the stock it wrote, without a row.
  t.same([...errors.keys()].sort(), ['src/store/inventory-fields.ts', 'src/store/rows.ts', 'src/store/sqlite/index.ts'],
    'the field map, the row mapping and the SQLite PATCH', { output: typecheck.stdout })
  t.match(typecheck.stdout, /inventory-fields\.ts.*Property 'aisle' is missing/, 'the SQL field map names the field')
  t.match(typecheck.stdout, /rows\.ts.*Property 'aisle' is missing/, 'the row mapping names the field')
  t.match(typecheck.stdout, /sqlite\/index\.ts.*Property 'aisle' is missing/, 'the SQLite PATCH names the field')
})
