/**
 * The docs page in a real browser (Debian's Chromium through playwright-core), against a real
 * server process started with a PORT and no PUBLIC_BASE_URL: the page is titled with the API's
 * title, has no explore bar, shows the plans table and the first operations on its first screen
 * (1280 × 1800), every expanded operation in two screens of 1280 × 1080, the running instance as a plain address, the stability and deprecation marks in
 * the summary lines, each operation's scope at the top of its description (as its security
 * requirement names it); Swagger UI loads under the page's content-security-policy, the Authorize
 * dialog lists the scopes with their meaning (bearerAuth's x-scopes) and takes an API key without
 * keeping it in the browser's storage, and "Try it out" on listInventory calls this instance and
 * renders its 200. The examples shown come from the document's 3.1 `examples`. The Webhooks
 * section lists every event type of the document's `webhooks` with its body's schema (name,
 * properties, its `type`'s const, closed by unevaluatedProperties), the example of that schema and
 * the scope receiving it needs, without "Try it out". Screenshots go to test-output/
 * (docs-browser*.png).
 * Without /usr/bin/chromium the test is skipped, and says why.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { loadDocument } from '../../src/contract/document.js'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'
import { freePort } from '../helpers/ports.js'

const CHROMIUM = '/usr/bin/chromium'
const FIRST_SCREEN = { width: 1280, height: 1800 }
const FIRST_SCREEN_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-first-screen.png')
const SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser.png')
const RESPONSE_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-response.png')
const OPERATION_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-operation.png')
const AUTHORIZE_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-authorize.png')
const WEBHOOKS_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-webhooks.png')
const TALLEST_SCREENSHOT = join(tmpdir(), 'docs-browser-tallest-operation.png')
/** A common screen, 1280 wide; an expanded operation reads in two of them at most. */
const SCREEN = { width: 1280, height: 1080 }
const MAX_EXPANDED = 2 * SCREEN.height

interface OperationSpec {
  operationId?: string
  tags?: string[]
  parameters?: Record<string, unknown>[]
  requestBody?: { content: Record<string, { schema: { examples?: unknown[] } }> }
}
type Schema = { $ref?: string, allOf?: Schema[], properties?: Record<string, Schema>, const?: unknown, unevaluatedProperties?: unknown, examples?: unknown[] }
interface WebhookSpec { operationId: string, summary: string, 'x-scope'?: string, requestBody: { content: Record<string, { schema: Schema }> } }
/** The properties a schema gives its instances, its allOf parts' included. */
const propertiesOf = (schema: Schema): string[] => [...new Set([...(schema.allOf ?? []).flatMap(propertiesOf), ...Object.keys(schema.properties ?? {})])]
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium); the browser test of the docs page did not run`
if (skip) t.comment(`skipped: ${skip}`)

/** Chromium on a fresh profile directory (a persistent context is how Playwright takes --user-data-dir). */
async function launch (t: Test): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'petstore-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'],
    viewport: FIRST_SCREEN,
    timeout: 60_000
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true })
  })
  return context
}

/** Records what the page complains about: CSP violations, script errors, failed requests. */
function watch (page: Page): string[] {
  const problems: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(`console: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`))
  return problems
}

/** The plans table as the page should show it, from info.x-rate-limit-plans of openapi.yaml. */
async function expectedPlanRows (): Promise<string[][]> {
  const plans = ((await loadDocument()).spec.info as Record<string, unknown>)['x-rate-limit-plans'] as Record<string, Record<string, unknown>>
  const cell = (value: unknown) => typeof value === 'number' ? value.toLocaleString('en-US') : 'per key'
  return Object.entries(plans).map(([name, limits]) => [name.charAt(0).toUpperCase() + name.slice(1), cell(limits.perMinute), cell(limits.perDay)])
}

t.test('the docs page in Chromium: the contract on the first screen, authorize, try listInventory, see its 200', { skip }, async (t) => {
  const document = await loadDocument()
  const title = String((document.spec.info as Record<string, unknown>).title)
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  // No PUBLIC_BASE_URL: the instance's own address (HOST:PORT) is the default.
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(tempDir(t), 'docs.db')}`,
    PORT: String(port)
  })
  t.equal(server.baseUrl, baseUrl, 'the server listens on the port it was given')
  const key = server.demoKey
  if (key === undefined) throw new Error('the first start printed no demo key')

  const browser = await launch(t)
  const page = await browser.newPage()
  page.setDefaultTimeout(20_000)
  const problems = watch(page)

  const docs = await page.goto(`${baseUrl}/docs`)
  t.equal(docs?.status(), 200, '/docs answers 200')
  t.match(docs?.headers()['content-security-policy'] ?? '', /script-src 'self'/, 'the page is served with its content-security-policy')
  await page.locator('.swagger-ui .info .title').waitFor()
  await page.locator('.opblock').first().waitFor()
  t.equal(await page.title(), title, 'the browser tab shows the API\'s title')
  t.match(await page.locator('.swagger-ui .info .title').innerText(), title, 'Swagger UI rendered the document')
  t.equal(await page.locator('.topbar, .download-url-wrapper').count(), 0, 'no explore bar')

  // The first screen: the introduction, the plans table and the operations, nothing expanded.
  const onFirstScreen = async (selector: string) => {
    const box = await page.locator(selector).first().boundingBox()
    return box !== null && box.y >= 0 && box.y + box.height <= FIRST_SCREEN.height
  }
  const intro = await page.locator('.swagger-ui .info .description').innerText()
  t.match(intro, /Authorization: Bearer <API_KEY>/, 'the introduction says how to authenticate')
  t.match(intro, /Authorize/, 'and how to do it on this page')
  const table = page.locator('.swagger-ui .info .description table')
  t.ok(await table.isVisible(), 'the plans table is visible without expanding anything')
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')))
  t.same(rows, await expectedPlanRows(), 'every plan with its numbers per minute and per day, Enterprise per key')
  t.ok(await onFirstScreen('.swagger-ui .info .description table'), 'the plans table is on the first screen')
  t.ok(await onFirstScreen('#operations-Inventory-listInventory'), 'the first operation is on the first screen')
  const details = page.locator('.swagger-ui .info .description details')
  t.ok(await details.count() >= 4, 'the detailed rules are in sections of their own')
  t.same(await details.evaluateAll((all) => all.map((d) => (d as unknown as { open: boolean }).open)), Array<boolean>(await details.count()).fill(false), 'they start closed')
  mkdirSync(join(projectRoot, 'test-output'), { recursive: true })
  await page.screenshot({ path: FIRST_SCREEN_SCREENSHOT })
  await details.filter({ has: page.locator('summary', { hasText: 'Rate limits' }) }).locator('summary').click()
  t.match(await details.filter({ has: page.locator('summary', { hasText: 'Rate limits' }) }).innerText(), /api_key_banned/, 'a section opens with its rules')

  // The running instance, as a plain address (no variable to fill in).
  t.match(await page.locator('.swagger-ui .servers select option').first().innerText(), `${baseUrl}/v1`, 'the first server is this instance')
  t.equal(await page.locator('.swagger-ui .servers input').count(), 0, 'no server variable to fill in')

  // Stability and deprecation in the summary lines.
  const summaryOf = (id: string) => page.locator(`#operations-${id} .opblock-summary-description`).innerText()
  t.equal(await summaryOf('Inventory-updateInventory'), 'Update stock level · experimental', 'the experimental mark is on the summary line')
  const sunset = document.operations.get('getPetById')!.sunset!.toISOString().slice(0, 10)
  t.equal(await summaryOf('Pets-getPetById'), `Find a pet by id · deprecated, sunset ${sunset}`, 'the deprecation and its sunset date are on the summary line')
  t.match(await page.locator('#operations-Pets-getPetById').getAttribute('class') ?? '', /opblock-deprecated/, 'next to Swagger UI\'s own deprecated marking')
  t.equal(await summaryOf('Inventory-listInventory'), 'List inventory', 'a stable operation has no mark')

  // Every operation of the document, each opened once as a reader first opens it: its scope, its
  // height before "Try it out" (two screens at most), the examples its responses show, then the
  // inputs "Try it out" starts from. Closed again after: Swagger UI re-renders every open
  // operation on each click, so the page stays as light as a reader's.
  await page.setViewportSize(SCREEN)
  const eventTypes = Object.keys(document.spec.webhooks ?? {})
  const shown = async (block: Locator, selector: string) => JSON.parse(await block.locator(selector).first().innerText()) as unknown
  const bodyShown = async (block: Locator) => JSON.parse(await block.locator('textarea.body-param__text').inputValue()) as unknown
  // What some operations' examples say, beyond being shown.
  const particular: Record<string, (block: Locator) => Promise<void>> = {
    listInventory: async (block) => {
      t.same(await shown(block, 'tr.response[data-code="200"] .example'), [{ petId: 12, quantity: 7, status: 'available' }], 'the inventory example: pet 12 with 7 in stock')
    },
    updateInventory: async (block) => {
      t.same(await bodyShown(block), { quantity: 7 }, '"Try it out" starts the update from its example, 7 in stock')
    },
    getPetById: async (block) => {
      t.match(await shown(block, 'tr.response[data-code="200"] .example'), { id: 12, name: 'Pepper' }, 'the pet example is pet 12')
      t.match(await shown(block, 'tr.response[data-code="404"] .example'), { code: 'not_found', status: 404 }, 'a deprecated operation\'s error shows the Error example, not one made up from the schema')
      await block.screenshot({ path: OPERATION_SCREENSHOT })
    },
    listOrders: async (block) => {
      const orders = await shown(block, 'tr.response[data-code="200"] .example') as Record<string, unknown>[]
      t.match(orders.find((order) => order.id === 42), { petId: 12, quantity: 2, status: 'placed' }, 'the orders example has order 42, of 2 of pet 12')
    },
    // A webhook endpoint as a partner registers one: an https address (all the service takes unless
    // its operator allows private ones), subscribed to event types of the document.
    createWebhookEndpoint: async (block) => {
      const endpoint = await bodyShown(block) as { url: string, events: string[] }
      t.equal(new URL(endpoint.url).protocol, 'https:', '"Try it out" starts a webhook endpoint at an https address')
      t.ok(endpoint.events.length > 0 && endpoint.events.every((type) => eventTypes.includes(type)), 'subscribed to event types of the document\'s webhooks')
    },
    listWebhookDeliveries: async (block) => {
      const attempts = await shown(block, 'tr.response[data-code="200"] .example') as { eventType: string }[]
      t.ok(attempts.length > 0 && attempts.every((attempt) => eventTypes.includes(attempt.eventType)), 'the deliveries example shows attempts at events of the document\'s webhooks')
    }
  }
  const heights = new Map<string, number>()
  let tallest = 0
  for (const [path, item] of Object.entries(document.resolved.paths as Record<string, Record<string, OperationSpec>>)) {
    for (const [method, spec] of Object.entries(item)) {
      if (typeof spec.operationId !== 'string') continue
      const id = `${spec.tags?.[0] ?? 'default'}-${spec.operationId}`
      const block = page.locator(`#operations-${id}`)
      await block.locator('.opblock-summary').first().click()
      await block.locator('.responses-wrapper').waitFor()
      const scope = document.operations.get(spec.operationId)?.scope
      t.equal(await block.locator('.opblock-description-wrapper p').first().innerText(), `Scope: ${String(scope)}`,
        `${spec.operationId}: its scope, ${String(scope)}, opens its description`)
      const height = (await block.boundingBox())?.height ?? Infinity
      heights.set(id, height)
      t.ok(height <= MAX_EXPANDED, `${method.toUpperCase()} ${path} expanded is ${Math.round(height)} px tall, at most ${MAX_EXPANDED} (two screens of ${SCREEN.height})`)
      if (height > tallest) {
        tallest = height
        await block.screenshot({ path: TALLEST_SCREENSHOT })
      }
      // That no example shows a limit of its schema, or is made up from one, is lint:openapi's rule; here, that they are shown.
      const examples = await block.locator('tr.response .example').allInnerTexts()
      t.ok(examples.length > 0, `${spec.operationId}: its responses show their examples`)
      await block.locator('button.try-out__btn').click()
      for (const parameter of spec.parameters ?? []) {
        // An array of an enum (listOrders' status) is a multiple select; any other parameter, an input.
        const input = block.locator(`tr[data-param-name="${parameter.name}"][data-param-in="${parameter.in}"]`).locator('input, select').first()
        // Swagger UI fills in a default (listOrders' limit, 100): sent, it asks for what leaving it out does.
        const fallback = (parameter.schema as { default?: unknown } | undefined)?.default
        const expected = parameter.required === true && parameter.example !== undefined ? String(parameter.example) : fallback !== undefined ? String(fallback) : ''
        const start = expected === '' ? 'empty' : parameter.required === true ? `at its example ${expected}` : `at its default ${expected}`
        t.equal(await input.inputValue(), expected, `${spec.operationId}: "Try it out" starts ${parameter.name} ${start}`)
      }
      // OpenAPI 3.1: a schema's example is the first of its JSON Schema `examples`.
      const bodyExample = spec.requestBody?.content['application/json']?.schema.examples?.[0]
      if (spec.requestBody !== undefined) {
        t.same(await bodyShown(block), bodyExample, `${spec.operationId}: "Try it out" starts the body from its schema's first example ${JSON.stringify(bodyExample)}`)
      }
      await particular[spec.operationId]?.(block)
      // "Try it out" off again (as a reader leaves it), and the operation closed.
      await block.locator('button.try-out__btn.cancel').click()
      await block.locator('.opblock-summary').first().click()
      await block.locator('.opblock-body').waitFor({ state: 'detached' })
    }
  }
  t.equal(heights.size, document.operations.size, 'every operation of the document was opened and measured')
  t.same(Object.keys(particular).filter((operationId) => !document.operations.has(operationId)), [], 'every operation checked in particular is in the document')
  const [tallestId] = [...heights].sort(([, a], [, b]) => b - a)
  if (tallestId !== undefined) t.comment(`the tallest expanded operation: ${tallestId[0]}, ${Math.round(tallestId[1])} px (${TALLEST_SCREENSHOT})`)

  // The document's webhooks, in Swagger UI's Webhooks section: each event type with its body's
  // schema, as the document declares them. First each as a reader first opens it, to measure it.
  const webhooks = Object.entries((document.spec.webhooks ?? {}) as Record<string, Record<string, WebhookSpec>>)
  const resolvedWebhooks = document.resolved.webhooks as Record<string, Record<string, WebhookSpec>>
  const section = page.locator('.swagger-ui .webhooks')
  t.equal(await section.locator('h2').innerText(), 'Webhooks', 'the page has a Webhooks section')
  t.same(await section.locator('.opblock-summary-path').evaluateAll((paths) => paths.map((path) => path.getAttribute('data-path'))), webhooks.map(([type]) => type),
    'listing every event type of the document\'s webhooks, in its order')
  for (const [type, item] of webhooks) {
    for (const spec of Object.values(item)) {
      const block = section.locator(`#operations-webhooks-${spec.operationId}`)
      await block.locator('.opblock-summary').first().click()
      await block.locator('.opblock-body').waitFor()
      const height = (await block.boundingBox())?.height ?? Infinity
      t.ok(height <= MAX_EXPANDED, `the event ${type} expanded is ${Math.round(height)} px tall, at most ${MAX_EXPANDED}`)
      await block.locator('.opblock-summary').first().click()
      await block.locator('.opblock-body').waitFor({ state: 'detached' })
    }
  }
  for (const [type, item] of webhooks) {
    for (const [method, spec] of Object.entries(item)) {
      const block = section.locator(`#operations-webhooks-${spec.operationId}`)
      t.equal(await block.locator('.opblock-summary-method').innerText(), method.toUpperCase(), `${type}: sent as ${method.toUpperCase()}`)
      t.equal(await block.locator('.opblock-summary-description').innerText(), spec.summary, `${type}: with its summary`)
      await block.locator('.opblock-summary').first().click()
      await block.locator('.opblock-body').waitFor()
      t.equal(await block.locator('button.try-out__btn').count(), 0, `${type}: no "Try it out" (the service sends it, nobody calls it)`)
      const extensions = await block.locator('.opblock-section', { has: page.locator('h4', { hasText: 'Extensions' }) }).locator('tbody tr')
        .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent?.trim() ?? '')))
      t.same(extensions, [['x-scope', JSON.stringify(spec['x-scope'])]], `${type}: the scope receiving it needs, ${String(spec['x-scope'])}`)

      const reference = String(spec.requestBody.content['application/json']?.schema.$ref)
      const schema = resolvedWebhooks[type]![method]!.requestBody.content['application/json']!.schema
      const tabs = block.locator('.opblock-section-request-body .model-example')
      await tabs.locator('button.tablinks[data-name="example"]').click()
      t.same(JSON.parse(await tabs.locator('.highlight-code').first().innerText()), schema.examples?.[0], `${type}: the body's example is its schema's first`)
      await tabs.locator('button.tablinks[data-name="model"]').click()
      const model = tabs.locator('.model-box > .json-schema-2020-12')
      const name = reference.split('/').at(-1)
      t.equal(await model.locator(':scope > .json-schema-2020-12-head .json-schema-2020-12__title').innerText(), name, `${type}: the body's schema is ${String(name)}`)
      const property = (name: string) => model.locator(':scope > .json-schema-2020-12-body > .json-schema-2020-12-keyword--properties > ul > li')
        .filter({ has: page.locator(':scope > article > .json-schema-2020-12-head .json-schema-2020-12__title', { hasText: new RegExp(`^${name}$`) }) })
      const shownProperties = await model.locator(':scope > .json-schema-2020-12-body > .json-schema-2020-12-keyword--properties > ul > li > article > .json-schema-2020-12-head .json-schema-2020-12__title').allInnerTexts()
      t.same(shownProperties.sort(), propertiesOf(schema).sort(), `${type}: with every property of the schema and of its allOf parts`)
      // The event's own `type` is a const of the envelope's enum.
      await property('type').locator('.json-schema-2020-12-accordion').first().click()
      t.equal(await property('type').locator('.json-schema-2020-12-keyword--const .json-schema-2020-12-json-viewer__value').innerText(), JSON.stringify(schema.properties?.type?.const),
        `${type}: its type is the const ${JSON.stringify(schema.properties?.type?.const)}`)
      t.equal(await model.locator(':scope > .json-schema-2020-12-body > .json-schema-2020-12-keyword--unevaluatedProperties').count(), schema.unevaluatedProperties === false ? 1 : 0,
        `${type}: no property beyond these (unevaluatedProperties: ${String(schema.unevaluatedProperties)})`)
      // Swagger UI keeps the tab chosen for the next body it shows: back to the example.
      await tabs.locator('button.tablinks[data-name="example"]').click()
      await block.locator('.opblock-summary').first().click()
      await block.locator('.opblock-body').waitFor({ state: 'detached' })
    }
  }
  await section.locator('.opblock').first().locator('.opblock-summary').first().click()
  await section.screenshot({ path: WEBHOOKS_SCREENSHOT })
  await section.locator('.opblock').first().locator('.opblock-summary').first().click()

  // Authorize with the API key (bearer), in a dialog that lists the scopes a key can hold.
  await page.locator('.swagger-ui .auth-wrapper button.authorize').click()
  const modal = page.locator('.swagger-ui .dialog-ux .modal-ux')
  await modal.locator('table').waitFor()
  const scopeMeanings = ((document.spec.components as Record<string, Record<string, Record<string, unknown>>>).securitySchemes!.bearerAuth!)['x-scopes'] as Record<string, string>
  const scopeRows = await modal.locator('table tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')))
  t.same(scopeRows, Object.entries(scopeMeanings), 'the Authorize dialog lists every scope with its meaning')
  t.match(await modal.innerText(), /insufficient_scope/, 'and says what a key without one gets')
  await modal.screenshot({ path: AUTHORIZE_SCREENSHOT })
  await modal.locator('input').first().fill(key)
  await modal.locator('.auth-btn-wrapper button.authorize').click()
  await modal.locator('.auth-btn-wrapper button.btn-done').click()
  t.match(await page.locator('.swagger-ui .auth-wrapper button.authorize').getAttribute('class') ?? '', /(^|\s)locked(\s|$)/, 'the Authorize button shows the key is set')
  // Runs in the page (the project's tsconfig has no DOM types).
  const stored = await page.evaluate(() => {
    const { localStorage, sessionStorage } = globalThis as unknown as Record<'localStorage' | 'sessionStorage', Record<string, string>>
    return JSON.stringify([{ ...localStorage }, { ...sessionStorage }])
  })
  t.notOk(stored.includes(key), 'the key is not kept in the browser\'s storage (DOCS_PERSIST_AUTHORIZATION is off)')

  // listInventory: expand, Try it out, Execute.
  const operation = page.locator('#operations-Inventory-listInventory')
  await operation.locator('.opblock-summary').first().click()
  await operation.locator('button.try-out__btn').click()
  await operation.locator('button.execute').click()
  const response = operation.locator('.live-responses-table .response').first()
  await response.locator('.response-col_status').filter({ hasText: '200' }).waitFor()
  t.match(await response.locator('.response-col_status').innerText(), /200/, 'the live response is 200')
  const body = await response.locator('.highlight-code').first().innerText()
  t.match(body, /"petId": 1/, 'the rendered body is the inventory')
  t.match(await operation.locator('.request-url').innerText(), new RegExp(`${baseUrl}/v1/inventory`), 'the request went to this instance (HOST:PORT, the default PUBLIC_BASE_URL)')

  const snippet = await operation.locator('.request-snippets').innerText()
  t.match(snippet, /curl -X 'GET'/, 'a ready curl command for the call made')
  t.ok(snippet.includes(`'${baseUrl}/v1/inventory'`), 'to this instance')
  t.match(snippet, /Authorization: Bearer psk_/, 'with the key')
  t.notMatch(snippet, /X-Request-Id|If-None-Match/i, 'and no optional header nobody filled in')

  await page.screenshot({ path: SCREENSHOT, fullPage: true })
  await response.screenshot({ path: RESPONSE_SCREENSHOT })
  t.comment(`screenshots: ${FIRST_SCREEN_SCREENSHOT} (the first screen), ${SCREENSHOT} (whole page), ${RESPONSE_SCREENSHOT} (the live response), ${OPERATION_SCREENSHOT} (getPetById expanded), ${AUTHORIZE_SCREENSHOT} (the Authorize dialog), ${WEBHOOKS_SCREENSHOT} (the Webhooks section, its first event open)`)
  t.same(problems, [], 'no CSP violation, script error or failed request on the page')

  // After a reload the key is gone: nothing kept it.
  await page.reload()
  await page.locator('.swagger-ui .auth-wrapper button.authorize').waitFor()
  t.match(await page.locator('.swagger-ui .auth-wrapper button.authorize').getAttribute('class') ?? '', /(^|\s)unlocked(\s|$)/, 'after a reload the page is not authorized')
  t.equal(await server.stop('SIGTERM'), 0, 'the server stops cleanly')
})
