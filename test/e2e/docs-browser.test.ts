/**
 * The docs page in a real browser (Debian's Chromium through playwright-core), against a real
 * server process: Swagger UI loads under the page's content-security-policy, Authorize takes
 * an API key, "Try it out" on listInventory calls the running server and renders its 200, and
 * getPetById is shown as deprecated. Screenshots go to test-output/ (docs-browser*.png).
 * Without /usr/bin/chromium the test is skipped, and says why.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { projectRoot } from '../../src/paths.js'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

const CHROMIUM = '/usr/bin/chromium'
const SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser.png')
const RESPONSE_SCREENSHOT = join(projectRoot, 'test-output', 'docs-browser-response.png')
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium); the browser test of the docs page did not run`
if (skip) t.comment(`skipped: ${skip}`)

/** A port free right now, so the server can be told its own public address before it starts. */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/** Chromium on a fresh profile directory (a persistent context is how Playwright takes --user-data-dir). */
async function launch (t: Test): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'petstore-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 1400 },
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

t.test('the docs page in Chromium: authorize, try listInventory, see its 200; getPetById is deprecated', { skip }, async (t) => {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(tempDir(t), 'docs.db')}`,
    PORT: String(port),
    PUBLIC_BASE_URL: baseUrl
  })
  t.equal(server.baseUrl, baseUrl, 'the server listens on the address it publishes')
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
  t.match(await page.locator('.swagger-ui .info .title').innerText(), /Pet Store inventory API/, 'Swagger UI rendered the document')

  // Authorize with the API key (bearer).
  await page.locator('.swagger-ui .auth-wrapper button.authorize').click()
  const modal = page.locator('.swagger-ui .dialog-ux .modal-ux')
  await modal.locator('input').first().fill(key)
  await modal.locator('.auth-btn-wrapper button.authorize').click()
  await modal.locator('.auth-btn-wrapper button.btn-done').click()
  t.match(await page.locator('.swagger-ui .auth-wrapper button.authorize').getAttribute('class') ?? '', /locked/, 'the Authorize button shows the key is set')

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
  t.match(await operation.locator('.request-url').innerText(), new RegExp(`${baseUrl}/v1/inventory`), 'the request went to this instance (PUBLIC_BASE_URL)')

  // The deprecated operation is marked so.
  const deprecated = page.locator('#operations-Pets-getPetById')
  t.match(await deprecated.getAttribute('class') ?? '', /opblock-deprecated/, 'getPetById is shown as deprecated')

  mkdirSync(join(projectRoot, 'test-output'), { recursive: true })
  await page.screenshot({ path: SCREENSHOT, fullPage: true })
  await response.screenshot({ path: RESPONSE_SCREENSHOT })
  t.comment(`screenshots: ${SCREENSHOT} (whole page), ${RESPONSE_SCREENSHOT} (the live response)`)
  t.same(problems, [], 'no CSP violation, script error or failed request on the page')
  t.equal(await server.stop('SIGTERM'), 0, 'the server stops cleanly')
})
