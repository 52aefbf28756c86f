/**
 * A client written by others, as docs/clients.md tells a partner to write one: a live server
 * process serves /openapi.json; openapi-typescript generates types from it; the program in
 * outside-client/main.ts (openapi-fetch) is compiled beside them with `tsc --strict`, run against
 * the server, and what it got is checked here: the status of every call is one the document
 * declares for the operation, every body is valid against that response's schema and equal to
 * what the server sends a plain request, the headers the response declares are there and valid
 * (served-contract.ts), and every operation of the served document is called. Errors include a
 * 403 for a key with every scope but the operation's, whose WWW-Authenticate names the scope the
 * document gives it. The program's own receiver gets the webhooks of the changes it makes: each
 * event is valid against the document's `webhooks` entry for its type (body and headers), signed
 * with the endpoint's secrets, and listed in the endpoint's deliveries. docs/clients.md's examples
 * compile against the same types.
 */
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { keyInDatabase } from '../helpers/keys.js'
import { startServer } from '../helpers/server-process.js'
import { ServedContract, scopedKey, type ServedDocument } from './served-contract.js'

type Json = Record<string, unknown>
interface Order { id: number, petId: number, quantity: number, shipDate: string, status: string, complete: boolean }
interface Call { what: string, status: number, data?: unknown, error?: unknown, headers: Record<string, string> }
interface Endpoint { id: number, url: string, events: string[], description: string | null, enabled: boolean, disabledReason: string | null, createdAt: string, updatedAt: string, secret?: string, previousSecretExpiresAt?: string | null }
interface Delivery { id: number, eventId: string, eventType: string, attempt: number, statusCode: number | null, error: string | null, nextAttemptAt: string | null }
interface Received { headers: Record<string, string>, body: { id: string, type: string, data: unknown }, signedBy: string[] }
interface Report { operations: Record<string, Call[]>, descriptions: string[], events: Received[] }

const bin = (name: string) => join(projectRoot, 'node_modules', '.bin', name)

t.test('a client generated from the served /openapi.json calls every operation and gets what its types say', async (t) => {
  const dir = tempDir(t)
  const databaseUrl = `sqlite:${join(dir, 'outside.db')}`
  const { secret: key } = await keyInDatabase(databaseUrl, 'outside client')
  // One request a day: its second is over the limit whatever the time.
  const { secret: tinyKey } = await keyInDatabase(databaseUrl, 'outside client, tiny', 'enterprise', { perMinute: 1, perDay: 1 })
  // The program's webhook receiver listens on loopback.
  const server = await startServer(t, { DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true' })
  const served = await (await fetch(`${server.baseUrl}/openapi.json`)).json() as ServedDocument
  const contract = new ServedContract(served)
  // A key with every scope but the one updateInventory needs, as the served document names it.
  const missingScope = contract.operations.get('updateInventory')?.scope
  const narrowKey = await scopedKey(databaseUrl, 'outside client, one scope short', contract.scopes.filter((scope) => scope !== missingScope))
  const withoutScope = contract.insufficientScope('updateInventory')
  const webhooksScope = contract.operations.get('createWebhookEndpoint')?.scope
  const webhooksOnlyKey = await scopedKey(databaseUrl, 'outside client, webhooks only', contract.scopes.filter((scope) => scope === webhooksScope))
  const noWebhooksKey = await scopedKey(databaseUrl, 'outside client, no webhooks', contract.scopes.filter((scope) => scope !== webhooksScope))

  // What a partner does: the document as served, its types, the program, tsc --strict.
  const program = join(dir, 'client')
  mkdirSync(program)
  writeFileSync(join(program, 'openapi.json'), JSON.stringify(served))
  const generated = await run(bin('openapi-typescript'), [join(program, 'openapi.json'), '-o', join(program, 'schema.d.ts')], {})
  t.equal(generated.code, 0, `openapi-typescript generates the types ${generated.stderr}`)
  copyFileSync(join(projectRoot, 'test', 'clients', 'outside-client', 'main.ts'), join(program, 'main.ts'))
  writeFileSync(join(program, 'package.json'), JSON.stringify({ type: 'module', private: true }))
  symlinkSync(join(projectRoot, 'node_modules'), join(program, 'node_modules'), 'dir')

  // docs/clients.md's TypeScript blocks, one after the other as a partner would paste them, compile
  // against the same types (imported there as ./petstore.js).
  const guide = readFileSync(join(projectRoot, 'docs', 'clients.md'), 'utf8')
  const blocks = [...guide.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)
  t.ok(blocks.length >= 3, `docs/clients.md has its TypeScript examples (${blocks.length} blocks)`)
  copyFileSync(join(program, 'schema.d.ts'), join(program, 'petstore.d.ts'))
  writeFileSync(join(program, 'guide.ts'), blocks.join('\n'))

  // One compiler run for both: each file imports, so each is a module and neither sees the other's
  // names (the test refuses a guide without an import). The errors are told apart by their file.
  t.match(blocks.join('\n'), /^import /m, 'the examples import what they use (so they compile as a module)')
  writeFileSync(join(program, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023', 'DOM'], types: ['node'], outDir: 'out' },
    files: ['main.ts', 'schema.d.ts', 'guide.ts', 'petstore.d.ts']
  }))
  const compiled = await run(bin('tsc'), ['-p', program], {})
  const errors = compiled.stdout.split('\n').filter((line) => /error TS\d+/.test(line))
  // tsc names each file by its path from the working directory (the project's root).
  const guideErrors = errors.filter((line) => /(^|\/)(guide\.ts|petstore\.d\.ts)\(\d+,\d+\)/.test(line))
  const programErrors = errors.filter((line) => !guideErrors.includes(line))
  // A failure without an error line (the compiler itself failing) counts against the program.
  t.ok(programErrors.length === 0 && (compiled.code === 0 || guideErrors.length > 0),
    `tsc --strict compiles the program against the generated types ${programErrors.join('\n')}${guideErrors.length > 0 ? '' : compiled.stdout + compiled.stderr}`)
  t.same(guideErrors, [], `docs/clients.md's examples compile with tsc --strict ${guideErrors.join('\n')}`)
  if (programErrors.length > 0 || (compiled.code !== 0 && guideErrors.length === 0)) return

  // Plain requests first, to compare bodies with (the program writes only after reading these).
  const authorization = { authorization: `Bearer ${key}` }
  const plain = async (path: string) => await (await fetch(`${server.baseUrl}/v1${path}`, { headers: authorization })).json() as unknown
  const inventory = await plain('/inventory') as Json[]
  const pet = await plain('/pets/1')
  const orders = await plain('/store/orders') as Order[]
  const order42 = await plain('/store/orders/42')

  const ran = await run(process.execPath, [join(program, 'out', 'main.js'), server.baseUrl, key, tinyKey, narrowKey, webhooksOnlyKey, noWebhooksKey], {})
  t.equal(ran.code, 0, `the program runs to its end ${ran.stderr}`)
  const report = JSON.parse(ran.stdout) as Report

  // Every operation of the served document is called, and each call is one the document declares.
  t.same([...Object.keys(report.operations)].sort(), [...contract.operations.keys()].sort(), 'the program calls every operation of the served document (a new one: its function in outside-client/main.ts, called from run; each call\'s answer in `expected` here)')
  for (const [operationId, calls] of Object.entries(report.operations)) {
    for (const call of calls) {
      const body = call.status < 300 ? call.data : call.error
      // data and error undefined, as typed, when the response has no body.
      if (contract.check(t, operationId, call, body) === 'json') {
        t.equal(call.status < 300 ? call.error : call.data, undefined, `${operationId}, ${call.what}: ${call.status}: the other of data and error is undefined`)
      }
    }
  }

  // What each call got.
  const got = (operationId: string, what: string): Call => {
    const call = report.operations[operationId]?.find((c) => c.what === what)
    if (call === undefined) throw new Error(`the program made no call "${what}" of ${operationId}`)
    return call
  }
  const updated = { petId: 1, quantity: 7, status: 'available' }
  // The orders the program placed: their ids come from the service.
  const plainOrder = got('placeOrder', 'an order of 2 for pet 12').data as Order
  const keyedOrder = got('placeOrder', 'an order with an Idempotency-Key').data as Order
  t.match(plainOrder, { petId: 12, quantity: 2, status: 'placed', complete: false }, 'placeOrder: the order of 2 for pet 12')
  t.ok(plainOrder.id > Math.max(...orders.map((o) => o.id)), `placeOrder: its id ${plainOrder.id} follows every order listed before`)
  t.same(keyedOrder, { id: keyedOrder.id, petId: 8, quantity: 1, shipDate: '2026-12-02T10:30:00+01:00', status: 'placed', complete: false }, 'placeOrder with a key: the order, its shipDate as sent')
  t.ok(keyedOrder.id > plainOrder.id, 'placeOrder: ids increase')
  const isOpen = (o: Order) => o.status === 'placed' || o.status === 'approved'
  const stockOf12 = Number(inventory.find((item) => item.petId === 12)?.quantity)
  const leftFor12 = stockOf12 - orders.filter((o) => o.petId === 12 && isOpen(o)).reduce((sum, o) => sum + o.quantity, 0) - plainOrder.quantity
  const pages = Array.from({ length: Math.ceil(orders.length / 3) }, (_, i) => orders.slice(3 * i, 3 * i + 3))
  const badCursor = { code: 'invalid_request', message: 'querystring/cursor is not a cursor this service gave for this list: send back the one of a Link header, with the same filters', status: 400 }

  // The webhook endpoints: the receiver's, and nine more to reach the limit of 10.
  const endpoint = (operationId: string, what: string) => got(operationId, what).data as Endpoint
  const withoutSecret = ({ secret: _secret, previousSecretExpiresAt: _expires, ...rest }: Endpoint): Endpoint => rest
  const receiver = endpoint('createWebhookEndpoint', 'the receiver, for every event')
  const eventTypes = Object.keys(served.webhooks as Json)
  t.match(receiver, { url: /^http:\/\/127\.0\.0\.1:[0-9]+\/petstore\/events$/, events: eventTypes, description: 'Stock and order sync', enabled: true, disabledReason: null, previousSecretExpiresAt: null },
    'createWebhookEndpoint: the receiver\'s endpoint, for every event type of the document\'s webhooks')
  t.equal(receiver.updatedAt, receiver.createdAt, 'created and updated at once')
  t.equal(got('createWebhookEndpoint', 'the receiver, for every event').headers.location, `/v1/webhooks/${receiver.id}`, 'createWebhookEndpoint: Location names the endpoint')
  const more = Array.from({ length: 9 }, (_, i) => endpoint('createWebhookEndpoint', `endpoint ${i + 2} of 10`))
  more.forEach((made, i) => {
    const n = i + 2
    t.match(made, { url: `http://127.0.0.1:9/shop-${n}/events`, events: ['order.cancelled'], description: `Cancellations, shop ${n}`, enabled: true, disabledReason: null, previousSecretExpiresAt: null }, `createWebhookEndpoint: endpoint ${n}, as sent`)
    t.equal(got('createWebhookEndpoint', `endpoint ${n} of 10`).headers.location, `/v1/webhooks/${made.id}`, `endpoint ${n}: Location names it`)
  })
  t.ok([receiver, ...more].every((made, i, all) => i === 0 || made.id > all[i - 1]!.id), 'ids increase')
  const withoutDescription = endpoint('updateWebhookEndpoint', 'the receiver\'s description removed')
  const disabled = endpoint('updateWebhookEndpoint', 'endpoint 2 disabled')
  const moved = endpoint('updateWebhookEndpoint', 'endpoint 3 to another address and events')
  const rotated = endpoint('rotateWebhookSecret', 'the receiver\'s')
  for (const [what, before, after] of [['the receiver', receiver, withoutDescription], ['endpoint 2', more[0]!, disabled], ['endpoint 3', more[1]!, moved], ['the receiver, rotated', withoutDescription, rotated]] as const) {
    t.ok(Date.parse(after.updatedAt) >= Date.parse(before.updatedAt), `${what}: updatedAt moves on`)
  }
  const rotatedAt = Date.parse(rotated.updatedAt)
  t.ok(rotated.secret !== receiver.secret, 'rotateWebhookSecret: a new secret')
  t.ok(Math.abs(Date.parse(String(rotated.previousSecretExpiresAt)) - (rotatedAt + 24 * 3600_000)) < 1000, `the one before signs for 24 hours more (${String(rotated.previousSecretExpiresAt)})`)
  const missing = (id: number) => ({ code: 'not_found', message: `no webhook endpoint of yours with id ${id}`, status: 404 })
  const eventScope = (type: string) => String(((served.webhooks as Record<string, Record<string, Json>>)[type]?.post)?.['x-scope'])
  const lacksEventScope = (type: string) => ({ code: 'insufficient_scope', message: `the API key lacks the scope ${eventScope(type)}, which receiving ${type} needs`, status: 403 })
  const unknownEvent = { code: 'invalid_request', message: 'body/events/0 must be equal to one of the allowed values', status: 400 }
  const endpointPages = [withoutSecret(rotated), ...more.map(withoutSecret)].reduce<Endpoint[][]>((all, item, i) => (i % 4 === 0 ? all.push([item]) : all.at(-1)!.push(item), all), [])

  // The deliveries to the receiver, as a plain request lists them now.
  const deliveries = await plain(`/webhooks/${receiver.id}/deliveries`) as Delivery[]
  const deliveryPages = deliveries.reduce<Delivery[][]>((all, item, i) => (i % 3 === 0 ? all.push([item]) : all.at(-1)!.push(item), all), [])
  const webhookScope = (operationId: string): [string, string, number, unknown] => [operationId, 'a key without its scope', 403, contract.insufficientScope(operationId).body]

  const expected: [string, string, number, unknown][] = [
    ['listInventory', 'the list', 200, inventory],
    ['listInventory', 'If-None-Match with its ETag', 304, undefined],
    ['listInventory', 'an If-None-Match over 4096 characters', 400, { code: 'invalid_request', message: 'headers/if-none-match must NOT have more than 4096 characters', status: 400 }],
    ['listInventory', 'an unknown key', 401, { code: 'unauthorized', message: 'invalid or revoked API key', status: 401 }],
    ['listInventory', 'a key\'s one request of the day', 200, inventory.map((item) => item.petId === 1 ? updated : item)],
    ['getPetById', 'pet 1', 200, pet],
    ['getPetById', 'If-None-Match with its ETag', 304, undefined],
    ['getPetById', 'an unknown pet', 404, { code: 'not_found', message: 'no pet with id 999999', status: 404 }],
    ['listOrders', 'the list', 200, orders],
    ['listOrders', 'If-None-Match with its ETag', 304, undefined],
    ['updateInventory', 'pet 1 to 7 in stock', 200, updated],
    ['updateInventory', 'a negative quantity', 400, { code: 'invalid_request', message: 'body/quantity must be >= 0', status: 400 }],
    ['updateInventory', 'a pet without an inventory entry', 404, { code: 'not_found', message: 'no inventory entry for pet 999999', status: 404 }],
    ['updateInventory', 'a key without its scope', 403, withoutScope.body],
    ...pages.map((page, i): [string, string, number, unknown] => ['listOrders', `page ${i + 1} of 3 orders`, 200, page]),
    ['listOrders', 'the open orders', 200, orders.filter(isOpen)],
    ['listOrders', 'a cursor the service did not give', 400, badCursor],
    ['placeOrder', 'an order of 2 for pet 12', 201, plainOrder],
    ['placeOrder', 'an order with an Idempotency-Key', 201, keyedOrder],
    ['placeOrder', 'the same key and body again', 201, keyedOrder],
    ['placeOrder', 'the same key with another body', 422, { code: 'idempotency_key_reused', message: 'this Idempotency-Key was used with another request body', status: 422 }],
    ['placeOrder', 'more than is left to reserve', 409, { code: 'insufficient_stock', message: `pet 12 has ${leftFor12} units left to reserve; 5 requested`, status: 409 }],
    ['placeOrder', 'a pet without an inventory entry', 404, { code: 'not_found', message: 'no inventory entry for pet 999999', status: 404 }],
    ['getOrderById', 'order 42', 200, order42],
    ['getOrderById', 'If-None-Match with its ETag', 304, undefined],
    ['getOrderById', 'the order placed with a key, at its Location', 200, keyedOrder],
    ['getOrderById', 'an unknown order', 404, { code: 'not_found', message: 'no order with id 999999', status: 404 }],
    ['updateOrder', 'approve the order of 2 for pet 12', 200, { ...plainOrder, status: 'approved' }],
    ['updateOrder', 'deliver it', 200, { ...plainOrder, status: 'delivered', complete: true }],
    ['updateOrder', 'approve it once delivered', 409, { code: 'invalid_transition', message: `order ${plainOrder.id} is delivered; it cannot become approved`, status: 409 }],
    ['updateOrder', 'an unknown order', 404, { code: 'not_found', message: 'no order with id 999999', status: 404 }],
    ['cancelOrder', 'the order placed with a key', 204, undefined],
    ['cancelOrder', 'the same order again', 404, { code: 'not_found', message: `no order with id ${keyedOrder.id}`, status: 404 }],
    ['cancelOrder', 'the delivered order', 409, { code: 'invalid_transition', message: `order ${plainOrder.id} is delivered; it cannot be cancelled`, status: 409 }],
    ['createWebhookEndpoint', 'the receiver, for every event', 201, receiver],
    ...more.map((made, i): [string, string, number, unknown] => ['createWebhookEndpoint', `endpoint ${i + 2} of 10`, 201, made]),
    ['createWebhookEndpoint', 'an 11th endpoint', 409, { code: 'limit_exceeded', message: 'this API key has 10 webhook endpoints, the most it may have: remove one first', status: 409 }],
    ['createWebhookEndpoint', 'an event type the service does not send', 400, unknownEvent],
    ['createWebhookEndpoint', 'an ftp address', 400, { code: 'invalid_request', message: 'body/url must be an http or https address', status: 400 }],
    ['createWebhookEndpoint', 'order events, with a key without orders:read', 403, lacksEventScope('order.placed')],
    ['createWebhookEndpoint', 'inventory events, with a key without inventory:read', 403, lacksEventScope('inventory.updated')],
    webhookScope('createWebhookEndpoint'),
    ['listWebhookEndpoints', 'the receiver\'s alone', 200, [withoutSecret(receiver)]],
    ['listWebhookEndpoints', 'If-None-Match with its ETag', 304, undefined],
    ...endpointPages.map((page, i): [string, string, number, unknown] => ['listWebhookEndpoints', `page ${i + 1} of 4 endpoints`, 200, page]),
    ['listWebhookEndpoints', 'a cursor the service did not give', 400, badCursor],
    ['listWebhookEndpoints', 'another key\'s list', 200, []],
    webhookScope('listWebhookEndpoints'),
    ['getWebhookEndpoint', 'the receiver\'s, at its Location', 200, withoutSecret(receiver)],
    ['getWebhookEndpoint', 'If-None-Match with its ETag', 304, undefined],
    ['getWebhookEndpoint', 'an unknown endpoint', 404, missing(999999)],
    ['getWebhookEndpoint', 'another key\'s endpoint', 404, missing(receiver.id)],
    webhookScope('getWebhookEndpoint'),
    ['updateWebhookEndpoint', 'the receiver\'s description removed', 200, { ...withoutSecret(receiver), description: null, updatedAt: withoutDescription.updatedAt }],
    ['updateWebhookEndpoint', 'endpoint 2 disabled', 200, { ...withoutSecret(more[0]!), enabled: false, updatedAt: disabled.updatedAt }],
    ['updateWebhookEndpoint', 'endpoint 3 to another address and events', 200,
      { ...withoutSecret(more[1]!), url: 'http://127.0.0.1:9/shop-3/orders', events: ['order.placed', 'order.cancelled'], updatedAt: moved.updatedAt }],
    ['updateWebhookEndpoint', 'an event type the service does not send', 400, unknownEvent],
    ['updateWebhookEndpoint', 'another key\'s endpoint', 404, missing(receiver.id)],
    webhookScope('updateWebhookEndpoint'),
    ['rotateWebhookSecret', 'the receiver\'s', 200, { ...withoutDescription, updatedAt: rotated.updatedAt, secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt }],
    ['rotateWebhookSecret', 'an unknown endpoint', 404, missing(999999)],
    ['rotateWebhookSecret', 'another key\'s endpoint', 404, missing(receiver.id)],
    webhookScope('rotateWebhookSecret'),
    ...more.map((made, i): [string, string, number, unknown] => ['deleteWebhookEndpoint', `endpoint ${i + 2} of 10`, 204, undefined]),
    ['deleteWebhookEndpoint', 'the same endpoint again', 404, missing(more.at(-1)!.id)],
    ['deleteWebhookEndpoint', 'another key\'s endpoint', 404, missing(receiver.id)],
    webhookScope('deleteWebhookEndpoint'),
    ['listWebhookDeliveries', 'every attempt', 200, deliveries],
    ['listWebhookDeliveries', 'If-None-Match with its ETag', 304, undefined],
    ...deliveryPages.map((page, i): [string, string, number, unknown] => ['listWebhookDeliveries', `page ${i + 1} of 3 attempts`, 200, page]),
    ['listWebhookDeliveries', 'a cursor the service did not give', 400, badCursor],
    ['listWebhookDeliveries', 'an unknown endpoint', 404, missing(999999)],
    ['listWebhookDeliveries', 'another key\'s endpoint', 404, missing(receiver.id)],
    webhookScope('listWebhookDeliveries')
  ]
  for (const [operationId, what, status, body] of expected) {
    const call = got(operationId, what)
    t.equal(call.status, status, `${operationId}, ${what}: ${status}`)
    t.same(status < 300 ? call.data : call.error, body, `${operationId}, ${what}: every field as expected`)
  }
  pages.forEach((_, i) => {
    const link = got('listOrders', `page ${i + 1} of 3 orders`).headers.link
    if (i + 1 < pages.length) t.match(link, /cursor=/, `listOrders, page ${i + 1}: a Link to the next page, which the program followed`)
    else t.equal(link, undefined, `listOrders, page ${i + 1}: the last, without a Link`)
  })
  const first = got('placeOrder', 'an order with an Idempotency-Key')
  const replayed = got('placeOrder', 'the same key and body again')
  t.equal(first.headers['idempotent-replayed'], undefined, 'placeOrder: a first answer is not marked replayed')
  t.equal(replayed.headers['idempotent-replayed'], 'true', 'placeOrder: the repeat is the first answer replayed')
  t.equal(replayed.headers.location, first.headers.location, 'with its Location')
  t.equal(first.headers.location, `/v1/store/orders/${keyedOrder.id}`, 'placeOrder: Location names the order')
  const after = await plain('/inventory') as Json[]
  t.equal(after.find((item) => item.petId === 12)?.quantity, stockOf12 - plainOrder.quantity, 'the delivered order took its units out of pet 12\'s stock')
  t.same(((await plain('/store/orders')) as Order[]).map((o) => o.id), [...orders.map((o) => o.id), plainOrder.id], 'one order placed with a key, once, then cancelled')

  for (const [operationId, prefix, count] of [['listWebhookEndpoints', 'page', endpointPages.length], ['listWebhookDeliveries', 'page', deliveryPages.length]] as const) {
    const what = operationId === 'listWebhookEndpoints' ? 'of 4 endpoints' : 'of 3 attempts'
    for (let i = 0; i < count; i++) {
      const link = got(operationId, `${prefix} ${i + 1} ${what}`).headers.link
      if (i + 1 < count) t.match(link, /cursor=/, `${operationId}, page ${i + 1}: a Link to the next page, which the program followed`)
      else t.equal(link, undefined, `${operationId}, page ${i + 1}: the last, without a Link`)
    }
  }
  for (const operationId of [...contract.operations.keys()].filter((id) => contract.operations.get(id)?.scope === webhooksScope)) {
    t.equal(got(operationId, 'a key without its scope').headers['www-authenticate'], contract.insufficientScope(operationId).challenge, `${operationId}, a key without its scope: WWW-Authenticate names ${String(webhooksScope)}`)
  }
  for (const [what, type] of [['order events, with a key without orders:read', 'order.placed'], ['inventory events, with a key without inventory:read', 'inventory.updated']]) {
    t.equal(got('createWebhookEndpoint', what!).headers['www-authenticate'], `Bearer realm="petstore", error="insufficient_scope", scope="${eventScope(type!)}"`, `createWebhookEndpoint, ${what}: WWW-Authenticate names the scope of ${type}'s x-scope`)
  }
  t.same(await plain(`/webhooks/${receiver.id}`), withoutSecret(rotated), 'the receiver\'s endpoint as a plain request gets it, as the program last saw it')
  t.same(await plain('/webhooks'), [withoutSecret(rotated)], 'the other endpoints are removed')

  // The events of the program's changes, each once, to its receiver, as the document declares them.
  const inventoryBefore = (petId: number) => inventory.find((item) => item.petId === petId) as { quantity: number, status: string }
  const expectedEvents = [
    { type: 'inventory.updated', data: { ...updated, previous: { quantity: inventoryBefore(1).quantity, status: inventoryBefore(1).status } } },
    { type: 'order.placed', data: plainOrder },
    { type: 'order.placed', data: keyedOrder },
    { type: 'order.approved', data: { ...plainOrder, status: 'approved' } },
    { type: 'order.delivered', data: { ...plainOrder, status: 'delivered', complete: true } },
    { type: 'inventory.updated', data: { petId: 12, quantity: stockOf12 - plainOrder.quantity, status: 'available', previous: { quantity: stockOf12, status: inventoryBefore(12).status } } },
    { type: 'order.cancelled', data: keyedOrder }
  ]
  const byJson = (a: unknown, b: unknown) => JSON.stringify(a).localeCompare(JSON.stringify(b))
  t.same(report.events.map(({ body }) => ({ type: body.type, data: body.data })).sort(byJson), expectedEvents.sort(byJson), 'the receiver got one event per change the program made, each with its data')
  for (const event of report.events) {
    contract.checkEvent(t, event)
    t.equal(event.body.id, event.headers['webhook-id'], `${event.body.type} event: its id is its webhook-id`)
    t.same(event.signedBy, ['first', 'rotated'], `${event.body.type} event: signed with both secrets, the rotation being under 24 hours old`)
  }
  t.equal(new Set(report.events.map((event) => event.body.id)).size, report.events.length, 'every event has an id of its own')
  // The delivery log: one attempt per event, delivered at once (the receiver answers 204), newest first.
  t.same(deliveries.map((d) => d.eventId).sort(), report.events.map((e) => e.body.id).sort(), 'listWebhookDeliveries: an attempt for each event received')
  for (const delivery of deliveries) {
    const event = report.events.find((e) => e.body.id === delivery.eventId)
    t.match(delivery, { eventType: event?.body.type, attempt: 1, statusCode: 204, error: null, nextAttemptAt: null }, `listWebhookDeliveries: ${delivery.eventType}, delivered at the first attempt`)
  }
  t.ok(deliveries.every((d, i) => i === 0 || d.id < deliveries[i - 1]!.id), 'newest first')

  const over = got('listInventory', 'the next request, over the limit')
  t.equal(over.status, 429, 'over the limit: 429')
  t.match(over.error, { code: 'rate_limited', status: 429 }, 'rate_limited, in the Error body the types promise')
  t.ok(Number(over.headers['retry-after']) >= 1, 'with Retry-After in seconds')
  t.equal(got('updateInventory', 'a key without its scope').headers['www-authenticate'], withoutScope.challenge, 'a key without the scope: WWW-Authenticate names the scope the document gives the operation')
  t.ok(missingScope !== undefined && contract.scopes.includes(missingScope), `the scope it lacks, ${String(missingScope)}, is one of bearerAuth's x-scopes`)
  t.equal(Object.values(report.operations).flat().length, expected.length + 1, 'and no call goes unchecked (each call of outside-client/main.ts has its line in `expected`)')

  // The program used every field as its type says (a lying type would have thrown there).
  const described = {
    listInventory: inventory.length + 1 + 1, // the list, the too-long If-None-Match, over the limit
    getPetById: 1,
    listOrders: orders.length + orders.length + orders.filter(isOpen).length + 1, // the list, its pages, the open orders, the bad cursor
    updateInventory: 3, // the update, the negative quantity, the missing scope
    placeOrder: 5,
    getOrderById: 2,
    updateOrder: 3,
    cancelOrder: 1,
    // Every body of the webhook operations (each item of a list), and every event received.
    webhooks: Object.entries(report.operations).filter(([operationId]) => contract.operations.get(operationId)?.scope === webhooksScope).flatMap(([, calls]) => calls)
      .reduce((sum, call) => sum + (Array.isArray(call.data) ? call.data.length : call.data === undefined ? 0 : 1) + (call.error === undefined ? 0 : 1), 0),
    events: report.events.length
  }
  t.equal(report.descriptions.length, Object.values(described).reduce((sum, n) => sum + n, 0), 'every body went through the typed code (`described` counts the bodies each operation\'s calls describe)')
  t.equal(await server.stop('SIGTERM'), 0, 'the server stops cleanly')
})
