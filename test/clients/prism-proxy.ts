/**
 * A measurement, not a test: requests to every operation of openapi.yaml through Prism
 * (@stoplight/prism-cli 5, run with npx, not a dependency) as a validating proxy in front of a
 * live server, counting the contract violations Prism reports. 5.14.2 is the last Prism that runs
 * on Node 20; 5.16.0 asks for Node 24 and, on 20, never answers a request whose body is not JSON.
 *
 *   npx tsx test/clients/prism-proxy.ts          (PRISM=path/to/prism to use an installed one)
 *
 * Two rounds, each on a fresh server and database: `--errors` as is, where Prism answers a request
 * it finds invalid itself (422, or 401 without a key) and forwards the rest; then
 * `--errors --validate-request false`, where every request reaches the service and only its
 * answers are checked. Every operation is called with keys holding every scope, only its scope,
 * every scope but its own, no key and an unknown key, then with the errors a client meets. The
 * server accepts webhook endpoints on loopback (WEBHOOK_ALLOW_PRIVATE); their address answers
 * nothing, so the delivery log fills with failed attempts.
 * Prints each request's outcome, and the violations with their causes: Prism's 500 VIOLATIONS
 * (response errors) and its sl-violations header (warnings too, such as an undeclared status).
 *
 * Prism answers some requests itself in both rounds, so they say nothing of the service: one
 * without a key (its forwarder refuses a failed security requirement before forwarding), a path
 * or method the document lacks, and a body that is not JSON. An answer is the service's when it
 * carries X-Request-Id, which the service sets on every answer and Prism on none.
 *
 * Prism 5.14.2 does not apply `unevaluatedProperties`: a webhook endpoint with a property its
 * schema lacks passes here (tried by hand), so that the webhook schemas are closed is checked by
 * the client tests (served-contract.ts, ajv), not by this measurement.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadDocument } from '../../src/contract/document.js'
import { openapiPath } from '../../src/contract/paths.js'
import { keyInDatabase } from '../helpers/keys.js'
import { freePort } from '../helpers/ports.js'
import { startServer } from '../helpers/server-process.js'
import { scopedKey } from './served-contract.js'

const PRISM_PACKAGE = '@stoplight/prism-cli@5.14.2'
const PRISM_ERRORS = 'https://stoplight.io/prism/errors#'

interface Request { method: string, path: string, key?: string | undefined, headers?: Record<string, string>, body?: string }
interface Outcome { operationId: string, what: string, request: Request, status: number, byService: boolean, prism: string | undefined, violations: string[], body: unknown, headers: Headers }

async function startPrism (upstream: string, validateRequest: boolean): Promise<{ url: string, stop: () => void }> {
  const port = await freePort()
  const args = ['proxy', openapiPath, upstream, '--errors', '--port', String(port), ...(validateRequest ? [] : ['--validate-request', 'false'])]
  const [command, commandArgs] = process.env.PRISM !== undefined ? [process.env.PRISM, args] : ['npx', ['--yes', PRISM_PACKAGE, ...args]]
  // Its own process group, so that stopping it stops npx's child too.
  const child: ChildProcess = spawn(command, commandArgs, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start in 120 s\n${log}`)), 120_000)
    const onData = (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes('Prism is listening')) { clearTimeout(timer); resolve() }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`Prism exited with ${String(code)}\n${log}`)) })
  })
  return { url: `http://127.0.0.1:${port}`, stop: () => { try { process.kill(-child.pid!, 'SIGTERM') } catch { /* gone */ } } }
}

async function round (validateRequest: boolean): Promise<Outcome[]> {
  const document = await loadDocument()
  const dir = mkdtempSync(join(tmpdir(), 'petstore-prism-'))
  const cleanups: (() => unknown)[] = [() => rmSync(dir, { recursive: true, force: true })]
  try {
    const databaseUrl = `sqlite:${join(dir, 'prism.db')}`
    const every = await scopedKey(databaseUrl, 'every scope', document.scopes)
    const only = new Map<string, string>()
    const allBut = new Map<string, string>()
    for (const scope of document.scopes) {
      only.set(scope, await scopedKey(databaseUrl, `only ${scope}`, [scope]))
      allBut.set(scope, await scopedKey(databaseUrl, `all but ${scope}`, document.scopes.filter((s) => s !== scope)))
    }
    const { secret: tiny } = await keyInDatabase(databaseUrl, 'one request a day', 'enterprise', { perMinute: 1, perDay: 1 })
    // A key of its own for the limit of 10 webhook endpoints.
    const tenEndpoints = await scopedKey(databaseUrl, 'ten webhook endpoints', document.scopes)
    const server = await startServer({ teardown: (fn) => cleanups.push(fn) }, { DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true' })
    const prism = await startPrism(`${server.baseUrl}/v1`, validateRequest)
    cleanups.push(prism.stop)

    const outcomes: Outcome[] = []
    async function send (operationId: string, what: string, request: Request): Promise<Outcome> {
      const headers: Record<string, string> = { ...request.headers }
      if (request.key !== undefined) headers.authorization = `Bearer ${request.key}`
      if (request.body !== undefined) headers['content-type'] ??= 'application/json'
      let response: Response
      try {
        response = await fetch(`${prism.url}${request.path}`, { method: request.method, headers, signal: AbortSignal.timeout(10_000), ...(request.body === undefined ? {} : { body: request.body }) })
      } catch (error) {
        const outcome = { operationId, what, request, status: 0, byService: false, prism: `no answer (${(error as Error).name})`, violations: [], body: undefined, headers: new Headers() }
        outcomes.push(outcome)
        return outcome
      }
      const text = await response.text()
      let body: unknown = text
      try { body = text === '' ? undefined : JSON.parse(text) } catch { /* not JSON */ }
      const problem = body as { type?: string, validation?: { location: string[], message: string, severity: string }[] } | undefined
      const byService = response.headers.has('x-request-id')
      const prismError = typeof problem?.type === 'string' && problem.type.startsWith(PRISM_ERRORS) ? problem.type.slice(PRISM_ERRORS.length) : byService ? undefined : text.slice(0, 80)
      const violations = [
        ...(prismError === 'VIOLATIONS' ? (problem?.validation ?? []).map((v) => `${v.severity} ${v.location.join('.')}: ${v.message}`) : []),
        // Without --errors Prism reports in this header; with it, warnings may still come this way.
        ...(response.headers.get('sl-violations') !== null ? [`sl-violations: ${response.headers.get('sl-violations')}`] : [])
      ]
      const outcome = { operationId, what, request, status: response.status, byService, prism: prismError, violations, body, headers: response.headers }
      outcomes.push(outcome)
      return outcome
    }
    const json = (value: unknown) => JSON.stringify(value)
    const idOf = (outcome: Outcome) => (outcome.body as { id: number }).id
    // Port 9 (discard) on loopback: nothing listens, so every delivery there fails at once.
    const endpoint = (events: string[] = ['order.placed', 'inventory.updated']) => json({ url: 'http://127.0.0.1:9/petstore/events', events, description: 'Stock sync' })

    // Every operation with every key that matters; a call that must succeed gets what it needs.
    const calls: Record<string, (key: string | undefined, target: number) => Request> = {
      listInventory: (key) => ({ method: 'GET', path: '/inventory', key }),
      getPetById: (key) => ({ method: 'GET', path: '/pets/1', key }),
      listOrders: (key) => ({ method: 'GET', path: '/store/orders?status=placed&limit=5', key }),
      getOrderById: (key) => ({ method: 'GET', path: '/store/orders/42', key }),
      placeOrder: (key) => ({ method: 'POST', path: '/store/orders', key, body: json({ petId: 10, quantity: 1 }) }),
      updateInventory: (key) => ({ method: 'PATCH', path: '/inventory/1', key, body: json({ quantity: 7 }) }),
      updateOrder: (key, target) => ({ method: 'PATCH', path: `/store/orders/${target}`, key, body: json({ status: 'approved' }) }),
      cancelOrder: (key, target) => ({ method: 'DELETE', path: `/store/orders/${target}`, key }),
      createWebhookEndpoint: (key) => ({ method: 'POST', path: '/webhooks', key, body: endpoint() }),
      listWebhookEndpoints: (key) => ({ method: 'GET', path: '/webhooks?limit=5', key }),
      getWebhookEndpoint: (key, target) => ({ method: 'GET', path: `/webhooks/${target}`, key }),
      updateWebhookEndpoint: (key, target) => ({ method: 'PATCH', path: `/webhooks/${target}`, key, body: json({ description: 'Stock and order sync' }) }),
      deleteWebhookEndpoint: (key, target) => ({ method: 'DELETE', path: `/webhooks/${target}`, key }),
      rotateWebhookSecret: (key, target) => ({ method: 'POST', path: `/webhooks/${target}/secret`, key }),
      listWebhookDeliveries: (key, target) => ({ method: 'GET', path: `/webhooks/${target}/deliveries?limit=5`, key })
    }
    const missing = [...document.operations.keys()].filter((id) => calls[id] === undefined)
    if (missing.length > 0) throw new Error(`operations of openapi.yaml this measurement does not call yet: ${missing.join(', ')}; add each to \`calls\``)
    const unknownKey = 'psk_unknownunknownunknownunknownunknownunknownu'
    for (const [operationId, info] of document.operations) {
      const scope = info.scope!
      // Orders of their own for the calls that change one: two succeed (every scope, only its scope).
      // A webhook endpoint of the key with every scope for the calls on one: with only the scope
      // webhooks, a key can subscribe to no event, so it has none, and another key's is 404.
      const webhookTarget = info.path.startsWith('/webhooks/') ? idOf(await send('createWebhookEndpoint', `an endpoint for ${operationId}`, calls.createWebhookEndpoint!(every, 0))) : 0
      const targets = operationId === 'updateOrder' || operationId === 'cancelOrder'
        ? [idOf(await send('placeOrder', `an order for ${operationId}`, calls.placeOrder!(every, 0))),
            idOf(await send('placeOrder', `an order for ${operationId}`, calls.placeOrder!(every, 0)))]
        : [webhookTarget, webhookTarget]
      const call = calls[operationId]!
      await send(operationId, 'every scope', call(every, targets[0]!))
      await send(operationId, `only ${scope}`, call(only.get(scope), targets[1]!))
      await send(operationId, `every scope but ${scope}`, call(allBut.get(scope), targets[1]!))
      await send(operationId, 'no key', call(undefined, targets[1]!))
      await send(operationId, 'an unknown key', call(unknownKey, targets[1]!))
      await send(operationId, 'an unknown query parameter', { ...call(every, targets[1]!), path: `${call(every, targets[1]!).path.replace(/\?.*$/, '')}?verbose=true` })
    }

    // The errors a client meets, and the answers with optional headers.
    for (const [operationId, path] of [['listInventory', '/inventory'], ['getPetById', '/pets/1'], ['listOrders', '/store/orders'], ['getOrderById', '/store/orders/42']] as const) {
      const first = await send(operationId, 'for its ETag', { method: 'GET', path, key: every })
      await send(operationId, 'If-None-Match with its ETag (304)', { method: 'GET', path, key: every, headers: { 'if-none-match': first.headers.get('etag') ?? '' } })
    }
    await send('getPetById', 'an unknown pet', { method: 'GET', path: '/pets/999999', key: every })
    await send('getPetById', 'a petId that is not a number', { method: 'GET', path: '/pets/abc', key: every })
    await send('getOrderById', 'an unknown order', { method: 'GET', path: '/store/orders/999999', key: every })
    await send('getOrderById', 'an orderId of 0', { method: 'GET', path: '/store/orders/0', key: every })
    const page = await send('listOrders', 'a page of 2, with a Link', { method: 'GET', path: '/store/orders?limit=2', key: every })
    const next = /<\/v1([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1]
    if (next !== undefined) await send('listOrders', 'the next page, from the Link', { method: 'GET', path: next, key: every })
    await send('listOrders', 'a cursor the service did not give', { method: 'GET', path: '/store/orders?cursor=not-a-cursor', key: every })
    await send('listOrders', 'a limit of 101', { method: 'GET', path: '/store/orders?limit=101', key: every })
    await send('listOrders', 'a status not in the enum', { method: 'GET', path: '/store/orders?status=lost', key: every })
    // The webhook endpoint of the key with every scope that stays to the end, with the deliveries of the changes above.
    const kept = idOf(outcomes.find((o) => o.operationId === 'createWebhookEndpoint' && o.what === 'every scope')!)
    for (const [operationId, path] of [['listWebhookEndpoints', '/webhooks'], ['getWebhookEndpoint', `/webhooks/${kept}`], ['listWebhookDeliveries', `/webhooks/${kept}/deliveries`]] as const) {
      const first = await send(operationId, 'for its ETag', { method: 'GET', path, key: every })
      await send(operationId, 'If-None-Match with its ETag (304)', { method: 'GET', path, key: every, headers: { 'if-none-match': first.headers.get('etag') ?? '' } })
    }
    // Each write with a valid body, and the same body broken: a field of the wrong type.
    const writes = [
      ['updateInventory', 'PATCH', '/inventory/1', { quantity: 7 }, { quantity: '7' }],
      ['placeOrder', 'POST', '/store/orders', { petId: 12, quantity: 1 }, { petId: '12', quantity: 1 }],
      ['updateOrder', 'PATCH', '/store/orders/42', { status: 'approved' }, { status: 7 }],
      ['createWebhookEndpoint', 'POST', '/webhooks', JSON.parse(endpoint()) as object, { url: 7, events: 'order.placed' }],
      ['updateWebhookEndpoint', 'PATCH', `/webhooks/${kept}`, { enabled: true }, { enabled: 'false' }]
    ] as const
    for (const [operationId, method, path, valid, wrongType] of writes) {
      await send(operationId, 'a body of the wrong type', { method, path, key: every, body: json(wrongType) })
      await send(operationId, 'a body with an unknown property', { method, path, key: every, body: json({ ...valid, extra: true }) })
      await send(operationId, 'no body', { method, path, key: every })
      await send(operationId, 'a body that is not JSON', { method, path, key: every, body: '{"quantity": ' })
      await send(operationId, 'a body as text/plain', { method, path, key: every, body: '{}', headers: { 'content-type': 'text/plain' } })
      await send(operationId, 'a body over the size limit', { method, path, key: every, body: json({ ...valid, pad: 'x'.repeat(20_000) }) })
    }
    await send('updateInventory', 'a pet without an inventory entry', { method: 'PATCH', path: '/inventory/999999', key: every, body: json({ quantity: 1 }) })
    await send('placeOrder', 'a pet without an inventory entry', { method: 'POST', path: '/store/orders', key: every, body: json({ petId: 999999, quantity: 1 }) })
    await send('placeOrder', 'more than is left to reserve', { method: 'POST', path: '/store/orders', key: every, body: json({ petId: 12, quantity: 1000 }) })
    const idempotent = { method: 'POST', path: '/store/orders', key: every, headers: { 'idempotency-key': 'prism-1' } }
    const keyed = await send('placeOrder', 'with an Idempotency-Key', { ...idempotent, body: json({ petId: 8, quantity: 1 }) })
    await send('placeOrder', 'the same key and body again (replayed)', { ...idempotent, body: json({ petId: 8, quantity: 1 }) })
    await send('placeOrder', 'the same key with another body (422)', { ...idempotent, body: json({ petId: 8, quantity: 2 }) })
    await send('updateOrder', 'deliver an order', { method: 'PATCH', path: `/store/orders/${idOf(keyed)}`, key: every, body: json({ status: 'delivered' }) })
    await send('updateOrder', 'approve it once delivered (409)', { method: 'PATCH', path: `/store/orders/${idOf(keyed)}`, key: every, body: json({ status: 'approved' }) })
    await send('updateOrder', 'an unknown order', { method: 'PATCH', path: '/store/orders/999999', key: every, body: json({ status: 'approved' }) })
    await send('cancelOrder', 'the delivered order (409)', { method: 'DELETE', path: `/store/orders/${idOf(keyed)}`, key: every })
    await send('cancelOrder', 'an unknown order', { method: 'DELETE', path: '/store/orders/999999', key: every })
    await send('createWebhookEndpoint', 'an event type the service does not send', { method: 'POST', path: '/webhooks', key: every, body: endpoint(['order.shipped']) })
    await send('createWebhookEndpoint', 'no events', { method: 'POST', path: '/webhooks', key: every, body: endpoint([]) })
    await send('createWebhookEndpoint', 'an ftp address', { method: 'POST', path: '/webhooks', key: every, body: json({ url: 'ftp://127.0.0.1/events', events: ['order.placed'] }) })
    await send('createWebhookEndpoint', 'inventory events, with only the scope webhooks', { method: 'POST', path: '/webhooks', key: only.get('webhooks'), body: endpoint(['inventory.updated']) })
    const ten: number[] = []
    for (let n = 1; n <= 10; n++) ten.push(idOf(await send('createWebhookEndpoint', `endpoint ${n} of a key's 10`, { method: 'POST', path: '/webhooks', key: tenEndpoints, body: endpoint(['order.cancelled']) })))
    await send('createWebhookEndpoint', 'an 11th endpoint (409)', { method: 'POST', path: '/webhooks', key: tenEndpoints, body: endpoint(['order.cancelled']) })
    const endpoints = await send('listWebhookEndpoints', 'a page of 4, with a Link', { method: 'GET', path: '/webhooks?limit=4', key: tenEndpoints })
    const nextEndpoints = /<\/v1([^>]+)>; rel="next"/.exec(endpoints.headers.get('link') ?? '')?.[1]
    if (nextEndpoints !== undefined) await send('listWebhookEndpoints', 'the next page, from the Link', { method: 'GET', path: nextEndpoints, key: tenEndpoints })
    await send('listWebhookEndpoints', 'a cursor the service did not give', { method: 'GET', path: '/webhooks?cursor=not-a-cursor', key: every })
    await send('listWebhookEndpoints', 'a limit of 101', { method: 'GET', path: '/webhooks?limit=101', key: every })
    await send('getWebhookEndpoint', 'another key\'s endpoint', { method: 'GET', path: `/webhooks/${kept}`, key: tenEndpoints })
    await send('getWebhookEndpoint', 'an unknown endpoint', { method: 'GET', path: '/webhooks/999999', key: every })
    await send('getWebhookEndpoint', 'an endpointId that is not a number', { method: 'GET', path: '/webhooks/abc', key: every })
    await send('updateWebhookEndpoint', 'disable an endpoint', { method: 'PATCH', path: `/webhooks/${ten[0]}`, key: tenEndpoints, body: json({ enabled: false }) })
    await send('updateWebhookEndpoint', 'no description', { method: 'PATCH', path: `/webhooks/${ten[1]}`, key: tenEndpoints, body: json({ description: null }) })
    await send('updateWebhookEndpoint', 'other events, without their scope', { method: 'PATCH', path: `/webhooks/${ten[1]}`, key: only.get('webhooks'), body: json({ events: ['order.placed'] }) })
    await send('updateWebhookEndpoint', 'an empty body', { method: 'PATCH', path: `/webhooks/${ten[2]}`, key: tenEndpoints, body: json({}) })
    await send('updateWebhookEndpoint', 'another key\'s endpoint', { method: 'PATCH', path: `/webhooks/${kept}`, key: tenEndpoints, body: json({ enabled: false }) })
    await send('rotateWebhookSecret', 'twice in a row', { method: 'POST', path: `/webhooks/${ten[3]}/secret`, key: tenEndpoints })
    await send('rotateWebhookSecret', 'twice in a row', { method: 'POST', path: `/webhooks/${ten[3]}/secret`, key: tenEndpoints })
    await send('rotateWebhookSecret', 'an unknown endpoint', { method: 'POST', path: '/webhooks/999999/secret', key: every })
    await send('deleteWebhookEndpoint', 'an unknown endpoint', { method: 'DELETE', path: '/webhooks/999999', key: every })
    await send('deleteWebhookEndpoint', 'another key\'s endpoint', { method: 'DELETE', path: `/webhooks/${kept}`, key: tenEndpoints })
    // The deliveries of the orders placed above: each attempt fails (nothing listens), and is logged.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const attempts = await send('listWebhookDeliveries', 'a page of 1 attempt, with a Link', { method: 'GET', path: `/webhooks/${kept}/deliveries?limit=1`, key: every })
    const nextAttempts = /<\/v1([^>]+)>; rel="next"/.exec(attempts.headers.get('link') ?? '')?.[1]
    if (nextAttempts !== undefined) await send('listWebhookDeliveries', 'the next page, from the Link', { method: 'GET', path: nextAttempts, key: every })
    await send('listWebhookDeliveries', 'another key\'s endpoint', { method: 'GET', path: `/webhooks/${kept}/deliveries`, key: tenEndpoints })
    await send('listWebhookDeliveries', 'a cursor the service did not give', { method: 'GET', path: `/webhooks/${kept}/deliveries?cursor=not-a-cursor`, key: every })
    await send('listInventory', 'a key\'s one request of the day', { method: 'GET', path: '/inventory', key: tiny })
    await send('listInventory', 'over the limit (429)', { method: 'GET', path: '/inventory', key: tiny })
    await send('-', 'a path the document does not have', { method: 'GET', path: '/nothing', key: every })
    await send('-', 'a method the path does not have', { method: 'DELETE', path: '/inventory', key: every })
    return outcomes
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}

for (const validateRequest of [true, false]) {
  const started = Date.now()
  const outcomes = await round(validateRequest)
  const mode = validateRequest ? '--errors' : '--errors --validate-request false'
  console.log(`\n## prism proxy ${mode}: ${outcomes.length} requests in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const o of outcomes) {
    console.log(`${o.operationId.padEnd(16)} ${o.what.padEnd(42)} ${o.request.method.padEnd(6)} ${o.status}${o.prism === undefined ? '' : ` (Prism: ${o.prism})`}` +
      (o.violations.length > 0 ? `\n    ${o.violations.join('\n    ')}` : ''))
  }
  const byService = outcomes.filter((o) => o.byService)
  const unanswered = outcomes.filter((o) => o.status === 0)
  const violating = outcomes.filter((o) => o.violations.length > 0)
  console.log(`answered by the service: ${byService.length}; by Prism itself: ${outcomes.length - byService.length - unanswered.length}; not answered: ${unanswered.length}; responses with violations: ${violating.length} (${violating.reduce((n, o) => n + o.violations.length, 0)} violations)`)
}
