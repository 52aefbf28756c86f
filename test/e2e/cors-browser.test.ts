/**
 * CORS in a real browser (Debian's Chromium through playwright-core): a page served from another
 * loopback port calls the API with fetch, as a partner's dashboard would. From an origin in
 * CORS_ORIGINS the calls (GET with a key, a conditional GET, a PATCH, placeOrder with an
 * Idempotency-Key and its retry, a DELETE, a page of orders) pass their preflights and the page
 * reads X-RateLimit-Remaining, ETag, Location, Idempotent-Replayed and Link; from another origin
 * fetch fails.
 * Without /usr/bin/chromium the test is skipped, and says why.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

const CHROMIUM = '/usr/bin/chromium'
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium); the CORS browser test did not run`
if (skip) t.comment(`skipped: ${skip}`)

/** A partner's page: any HTML, served from its own origin (127.0.0.1 on a port of its own). */
async function servePage (t: Test): Promise<string> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end('<!doctype html><title>Partner dashboard</title><h1>Stock</h1>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return `http://127.0.0.1:${address.port}`
}

async function launch (t: Test): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'petstore-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'],
    timeout: 60_000
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true })
  })
  return context
}

interface Calls {
  list: { status: number, remaining: string | null, etag: string | null, entries: number }
  conditional: { status: number, remaining: string | null, etag: string | null }
  patch: { status: number, quantity: number, requestId: string | null }
  order: { status: number, location: string | null, replayStatus: number, replayed: string | null, replayLocation: string | null, cancelStatus: number, pageLink: string | null }
}

/** What the page's script does: calls to the API, reading the headers CORS exposes. */
async function callApi ({ api, key }: { api: string, key: string }): Promise<Calls> {
  const authorization = `Bearer ${key}`
  const first = await fetch(`${api}/v1/inventory`, { headers: { authorization } })
  const entries = (await first.json() as unknown[]).length
  const etag = first.headers.get('etag')
  const again = await fetch(`${api}/v1/inventory`, { headers: { authorization, 'if-none-match': etag ?? '' } })
  const patch = await fetch(`${api}/v1/inventory/1`, {
    method: 'PATCH',
    headers: { authorization, 'content-type': 'application/json', 'x-request-id': 'dashboard-1' },
    body: JSON.stringify({ quantity: 9 })
  })
  // The same request twice, a retry (no named function here: the page receives this one's source).
  const order = {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', 'idempotency-key': 'dashboard-order-1' },
    body: JSON.stringify({ petId: 12, quantity: 1 })
  }
  const placed = await fetch(`${api}/v1/store/orders`, order)
  const replay = await fetch(`${api}/v1/store/orders`, order)
  const cancel = await fetch(`${api}${placed.headers.get('location') ?? '/v1/store/orders/0'}`, { method: 'DELETE', headers: { authorization } })
  const page = await fetch(`${api}/v1/store/orders?limit=2`, { headers: { authorization } })
  return {
    order: {
      status: placed.status,
      location: placed.headers.get('location'),
      replayStatus: replay.status,
      replayed: replay.headers.get('idempotent-replayed'),
      replayLocation: replay.headers.get('location'),
      cancelStatus: cancel.status,
      pageLink: page.headers.get('link')
    },
    list: { status: first.status, remaining: first.headers.get('x-ratelimit-remaining'), etag, entries },
    conditional: { status: again.status, remaining: again.headers.get('x-ratelimit-remaining'), etag: again.headers.get('etag') },
    patch: { status: patch.status, quantity: (await patch.json() as { quantity: number }).quantity, requestId: patch.headers.get('x-request-id') }
  }
}

t.test('a page on an allowed origin calls the API from Chromium; a page on another origin cannot', { skip }, async (t) => {
  const allowedPage = await servePage(t)
  const otherPage = await servePage(t)
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(tempDir(t), 'cors.db')}`,
    CORS_ORIGINS: allowedPage
  })
  const key = server.demoKey
  if (key === undefined) throw new Error('the first start printed no demo key')

  const browser = await launch(t)
  const page = await browser.newPage()
  page.setDefaultTimeout(20_000)

  await page.goto(`${allowedPage}/`)
  const calls = await page.evaluate(callApi, { api: server.baseUrl, key })
  t.equal(calls.list.status, 200, 'GET /v1/inventory with the key: 200')
  t.ok(calls.list.entries > 0, `the page read the list (${calls.list.entries} entries)`)
  t.match(calls.list.remaining, /^\d+$/, `the page reads X-RateLimit-Remaining (${String(calls.list.remaining)})`)
  t.match(calls.list.etag, /^"[\w-]+"$/, 'and ETag')
  t.equal(calls.conditional.status, 304, 'the conditional GET with that tag: 304')
  t.equal(calls.conditional.etag, calls.list.etag, 'with the same tag')
  t.equal(Number(calls.conditional.remaining), Number(calls.list.remaining) - 1, 'counted like any request')
  t.equal(calls.patch.status, 200, 'PATCH with a JSON body passes its preflight')
  t.equal(calls.patch.quantity, 9)
  t.equal(calls.patch.requestId, 'dashboard-1', 'X-Request-Id is sent and read back')
  t.equal(calls.order.status, 201, 'placeOrder with an Idempotency-Key passes its preflight')
  t.match(calls.order.location, /^\/v1\/store\/orders\/[1-9][0-9]*$/, `the page reads Location (${String(calls.order.location)})`)
  t.equal(calls.order.replayStatus, 201, 'the retry with the same key')
  t.equal(calls.order.replayed, 'true', 'the page reads Idempotent-Replayed')
  t.equal(calls.order.replayLocation, calls.order.location, 'and the same Location')
  t.equal(calls.order.cancelStatus, 204, 'DELETE at that Location passes its preflight')
  t.match(calls.order.pageLink, /rel="next"/, 'the page reads the Link to the next page of orders')

  const refused = await browser.newPage()
  const errors: string[] = []
  refused.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  await refused.goto(`${otherPage}/`)
  const outcome = await refused.evaluate(async ({ api, key }) => {
    try {
      const res = await fetch(`${api}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })
      return `answered ${res.status}`
    } catch (error) {
      return `${(error as Error).name}: ${(error as Error).message}`
    }
  }, { api: server.baseUrl, key })
  t.match(outcome, /^TypeError: Failed to fetch/, `from ${otherPage}, fetch fails (${outcome})`)
  t.ok(errors.some((text) => /CORS policy/.test(text)), 'Chromium reports a CORS refusal')

  // Preflights carry no key: had any been counted, this address would have fewer than 59 left.
  const unauthenticated = await fetch(`${server.baseUrl}/v1/inventory`)
  t.equal(unauthenticated.status, 401)
  t.equal(unauthenticated.headers.get('x-ratelimit-remaining'), '59', 'no preflight was counted for the address')
  t.equal(await server.stop('SIGTERM'), 0, 'the server stops cleanly')

  // Playwright does not report preflights as page requests: the server's log (complete once it
  // has stopped) shows them, the refused page's included.
  const answered = new Map(server.logs.filter((entry) => entry.msg === 'request completed')
    .map((entry) => [entry.reqId, (entry.res as { statusCode: number }).statusCode]))
  const preflights = server.logs.filter((entry) => entry.msg === 'incoming request' && (entry.req as { method: string }).method === 'OPTIONS')
  t.ok(preflights.length >= 3, `Chromium sent ${preflights.length} preflights (the allowed page's calls with a key or a JSON body, and the GET from the other)`)
  t.ok(preflights.every((entry) => answered.get(entry.reqId) === 204), 'each answered 204')
})
