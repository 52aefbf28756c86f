import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import t from 'tap'
import { load as loadWithJsYaml } from 'js-yaml'
import { parse as parseYaml } from 'yaml'
import { type ApiDocument, documentForServing, PLANS_MARKER, SCOPES_MARKER } from '../../src/contract/document.js'
import { openapiPath } from '../../src/contract/paths.js'
import openapiDocument from '../../src/routes/openapi-document.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

type Json = Record<string, unknown>
type Server = { url: string, description?: string, variables?: Record<string, { default: string }> }
type Operation = Json & { operationId: string, summary?: string, 'x-sunset'?: string }

const fileSpec = parseYaml(readFileSync(openapiPath, 'utf8')) as Json & { info: Json & { description: string, title: string }, servers: Server[], paths: Record<string, Record<string, Operation>>, components: Json }

/** The plans table's body rows, as the page must show them, from info.x-rate-limit-plans of openapi.yaml. */
const planRows = () => Object.entries(fileSpec.info['x-rate-limit-plans'] as Record<string, Record<string, unknown>>).map(([name, limits]) =>
  [name.charAt(0).toUpperCase() + name.slice(1), ...[limits.perMinute, limits.perDay].map((n) => typeof n === 'number' ? n.toLocaleString('en-US') : 'per key')])

/** The body rows of the first Markdown table in the text, cell by cell. */
function markdownTableRows (text: string): string[][] {
  const lines = text.split('\n').filter((line) => line.startsWith('|'))
  return lines.slice(2).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()))
}

/** GET that follows redirects inside the app, as a browser would; returns the final URL too. */
async function get (api: TestApp, url: string, headers: Record<string, string> = {}) {
  for (let hops = 0; hops < 5; hops++) {
    const res = await api.request({ method: 'GET', url, headers })
    if (res.statusCode < 300 || res.statusCode >= 400) return { res, url }
    url = new URL(String(res.headers.location), `http://app${url}`).pathname
  }
  throw new Error(`too many redirects from ${url}`)
}

t.test('/docs serves Swagger UI with every asset from this process', async (t) => {
  const api = await buildTestApp(t)
  const { res, url } = await get(api, '/docs')
  t.equal(res.statusCode, 200, 'the docs page answers (after any redirect)')
  t.match(res.headers['content-type'], /^text\/html/)
  t.match(res.body, /swagger-ui/i, 'it is Swagger UI')

  const refs = [...res.body.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
  t.ok(refs.some((r) => r.endsWith('.js')), 'the page loads scripts')
  t.ok(refs.some((r) => r.endsWith('.css')), 'the page loads style sheets')
  t.notMatch(res.body, /(?:src|href)="(?:https?:)?\/\//, 'no asset comes from another host')

  const assetTypes: [string, RegExp][] = [['.js', /javascript/], ['.css', /^text\/css/], ['.html', /^text\/html/], ['.png', /^image\/png/]]
  const page = new URL(url, 'http://app')
  const assets = [...refs.map((r) => new URL(r, page).pathname), new URL('./static/oauth2-redirect.html', `${page.href.replace(/\/?$/, '/')}`).pathname]
  for (const asset of assets) {
    const { res: file } = await get(api, asset)
    t.equal(file.statusCode, 200, `${asset} is served locally`)
    const kind = assetTypes.find(([extension]) => asset.endsWith(extension))
    t.ok(kind, `${asset} is a kind of asset the page is expected to load`)
    t.match(file.headers['content-type'], kind?.[1] ?? /^$/, `${asset} is served as ${String(kind?.[1])}`)
    t.ok(file.rawPayload.length > 0, `${asset} is not empty`)
  }
  const bundle = assets.find((a) => a.endsWith('swagger-ui-bundle.js'))
  t.ok(bundle, 'the Swagger UI bundle itself is among them')
  t.ok((await get(api, bundle!)).res.rawPayload.length > 100_000, 'the bundle is the real thing, not a stub')

  // The initializer loads the document from this process and configures no external validator.
  const initializer = assets.find((a) => a.endsWith('swagger-initializer.js'))!
  const script = (await get(api, initializer)).res.body
  t.match(script, /"showExtensions":true/, 'x-stability and other extensions are shown')
  t.match(script, /"layout":"BaseLayout"/, 'Swagger UI\'s layout without the top bar (no explore box)')
  t.match(script, /"persistAuthorization":false/, 'a key pasted into Authorize is not kept in the browser\'s storage by default')
  t.match(res.body, new RegExp(`<title>${fileSpec.info.title}</title>`), 'the page is titled with the API\'s title')
  t.match(script, /validatorUrl: null/, 'no call to the public swagger.io validator')
  const specUrl = /url: resolveUrl\('\.\/([^']+)'\)/.exec(script)?.[1]
  t.ok(specUrl, 'the initializer names the document it loads')
  const served = await get(api, new URL(specUrl!, page.href.replace(/\/?$/, '/')).pathname)
  t.equal(served.res.statusCode, 200, 'the document the page loads is served here')
  t.equal((served.res.json() as Json).openapi, fileSpec.openapi)
})

t.test('/openapi.json and /openapi.yaml serve the document with the three servers', async (t) => {
  const defaults = await buildTestApp(t)
  const custom = await buildTestApp(t, { env: { PUBLIC_BASE_URL: 'https://api.internal.example:8443/petstore' } })
  const otherPort = await buildTestApp(t, { env: { PORT: '3103' } })

  // The first server as written, without the variable the instance fills in.
  const { variables: _filled, ...servedFirst } = fileSpec.servers[0]!
  for (const [api, base] of [[defaults, 'http://127.0.0.1:3000'], [custom, 'https://api.internal.example:8443/petstore'], [otherPort, 'http://127.0.0.1:3103']] as const) {
    const jsonRes = await api.request({ method: 'GET', url: '/openapi.json' })
    t.equal(jsonRes.statusCode, 200)
    t.match(jsonRes.headers['content-type'], /^application\/json/)
    const yamlRes = await api.request({ method: 'GET', url: '/openapi.yaml' })
    t.equal(yamlRes.statusCode, 200)
    t.match(yamlRes.headers['content-type'], /yaml/)
    const doc = jsonRes.json() as typeof fileSpec
    t.same(parseYaml(yamlRes.body), doc, 'the YAML and the JSON are the same document (the yaml package)')
    // js-yaml's default schema reads an unquoted timestamp as a Date: x-sunset, the shipDate examples.
    t.same(loadWithJsYaml(yamlRes.body), doc, 'and the same with js-yaml: strings that look like dates stay strings')

    t.same(doc.servers[0], { ...servedFirst, url: `${base}/v1` }, `the first (default) server is this instance as a plain address, ${base}/v1`)
    t.ok(doc.servers.some((s) => /production/i.test(s.description ?? '') && s.url.endsWith('/v1') && s.url.startsWith('https://')), 'a production server ending in /v1')
    t.ok(doc.servers.some((s) => /staging/i.test(s.description ?? '') && s.url.endsWith('/v1') && s.url.startsWith('https://')), 'a staging server ending in /v1')
    t.ok(doc.servers.every((s) => s.url.endsWith('/v1') && !s.url.includes('{')), 'every server ends in /v1, with no variable to fill in')

    // The plans table takes the marker's place in the introduction.
    const [before, after] = fileSpec.info.description.split(PLANS_MARKER) as [string, string]
    t.ok(after !== undefined, `openapi.yaml's info.description has the marker ${PLANS_MARKER}`)
    const description = doc.info.description
    t.ok(description.startsWith(before) && description.endsWith(after), 'the introduction is openapi.yaml\'s, around the table')
    const table = description.slice(before.length, description.length - after.length)
    t.same(markdownTableRows(table), planRows(), 'the table has every plan of x-rate-limit-plans with its numbers')
    t.same(doc.info['x-rate-limit-plans'], fileSpec.info['x-rate-limit-plans'], 'the plan data itself is served as written')

    // Apart from these, the served document is openapi.yaml as written.
    const expected = structuredClone(fileSpec)
    expected.servers[0] = { ...servedFirst, url: `${base}/v1` }
    expected.info.description = description
    expected.paths['/inventory/{petId}']!.patch!.summary = 'Update stock level · experimental'
    expected.paths['/store/orders']!.post!.summary = 'Place an order · beta'
    expected.paths['/store/orders/{orderId}']!.patch!.summary = 'Approve or deliver an order · beta'
    expected.paths['/pets/{petId}']!.get!.summary = `Find a pet by id · deprecated, sunset ${fileSpec.paths['/pets/{petId}']!.get!['x-sunset']!.slice(0, 10)}`
    // Each operation's description starts with the scope its security requirement names.
    for (const item of Object.values(expected.paths)) {
      for (const op of Object.values(item)) {
        const scope = (op.security as [{ bearerAuth: [string] }] | undefined)?.[0].bearerAuth[0]
        if (scope !== undefined) op.description = `**Scope:** \`${scope}\`\n\n${String(op.description)}`
      }
    }
    // The Authorize dialog's text: bearerAuth's description with the table of x-scopes at its marker.
    const bearer = (doc.components as { securitySchemes: { bearerAuth: { description: string, 'x-scopes': Record<string, string> } } }).securitySchemes.bearerAuth
    const expectedBearer = (expected.components as typeof doc.components & { securitySchemes: { bearerAuth: { description: string } } }).securitySchemes.bearerAuth
    const [scopesBefore, scopesAfter] = expectedBearer.description.split(SCOPES_MARKER) as [string, string]
    t.ok(scopesAfter !== undefined, `bearerAuth's description has the marker ${SCOPES_MARKER}`)
    const scopesTable = bearer.description.slice(scopesBefore.length, bearer.description.length - scopesAfter.length)
    t.same(markdownTableRows(scopesTable), [...Object.entries(bearer['x-scopes']).map(([scope, meaning]) => [`\`${scope}\``, meaning])],
      'the Authorize dialog lists every scope of x-scopes with its meaning')
    expectedBearer.description = bearer.description
    t.same(doc, expected, 'the served document is openapi.yaml with the instance\'s address, the plans table, the scopes and the summary marks')
  }
})

t.test('/openapi.yaml: a string that a YAML reader could take for another type is written so that both readers get the string', async (t) => {
  const strings = ['2027-06-30T00:00:00Z', '2027-06-30', '2001-12-14 21:59:43.10 -5', 'yes', 'No', 'on', 'OFF', 'y', 'null', '~', 'true',
    '42', '-1.5', '.inf', '.NaN', '0x1F', '0o17', '0b101', '012', '1_000', '1:20', '1e3', '<<', '']
  const served = { openapi: '3.0.3', info: { title: 'strings', version: '1', 'x-strings': strings, x: Object.fromEntries(strings.map((v) => [v, v])) }, paths: {} }
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(openapiDocument, { served })
  const body = (await app.inject({ method: 'GET', url: '/openapi.yaml' })).body
  t.same(loadWithJsYaml(body), served, 'js-yaml reads every string back, as values and as keys')
  t.same(parseYaml(body), served, 'so does the yaml package')
})

t.test('the served document says that a 5xx may have been applied, and which retries are safe', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as { info: { description: string }, components: { responses: Record<string, { description: string }> } }
  t.match(doc.info.description, /A `5xx` does not mean the request was not applied[^]*`Idempotency-Key`/, 'the introduction (Errors)')
  t.match(doc.components.responses.ServiceUnavailable!.description, /may have been applied/, 'every 503 of /v1')
})

t.test('documentForServing: the marks of any operation, and the table without a marker', async (t) => {
  const spec = {
    openapi: '3.0.3',
    info: { title: 't', version: '1', description: 'Intro.', 'x-rate-limit-plans': { free: { perMinute: 5, perDay: 12000 }, gold: { perMinute: 'custom', perDay: 'custom' } } },
    servers: [{ url: '{baseUrl}/v1', variables: { baseUrl: { default: 'http://x' } } }],
    paths: {
      '/a': {
        get: { operationId: 'a', summary: 'A thing', 'x-stability': 'beta', deprecated: true, 'x-sunset': '2030-01-31T00:00:00Z' },
        post: { operationId: 'b', deprecated: true } as { operationId: string, deprecated: boolean, summary?: string },
        put: { operationId: 'c', summary: 'C' }
      }
    }
  }
  const served = documentForServing({ spec } as unknown as ApiDocument, 'https://api.example/base') as typeof spec
  t.same(served.servers, [{ url: 'https://api.example/base/v1' }], 'the variable entry becomes the plain address')
  t.same(served.paths['/a'].get.summary, 'A thing · beta · deprecated, sunset 2030-01-31', 'stability, then the deprecation with its sunset')
  t.same(served.paths['/a'].post.summary, 'b · deprecated', 'no summary: the operationId; no sunset: no date')
  t.same(served.paths['/a'].put.summary, 'C', 'a stable operation keeps its summary')
  t.ok(served.info.description.startsWith('Intro.\n\n'), 'without the marker the table follows the description')
  t.same(markdownTableRows(served.info.description), [['Free', '5', '12,000'], ['Gold', 'per key', 'per key']], 'numbers grouped by thousands, custom limits per key')
  t.same(spec.paths['/a'].get.summary, 'A thing', 'the loaded document is left as it was')
})

t.test('DOCS_PERSIST_AUTHORIZATION=true keeps a pasted key in the browser (Swagger UI persistAuthorization)', async (t) => {
  const api = await buildTestApp(t, { env: { DOCS_PERSIST_AUTHORIZATION: 'true' } })
  const script = (await api.request({ method: 'GET', url: '/docs/static/swagger-initializer.js' })).body
  t.match(script, /"persistAuthorization":true/)
})

t.test('the served document declares bearer auth on every operation (the Authorize button)', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as Json & {
    components: { securitySchemes: Record<string, Json> }
    security?: Record<string, unknown>[]
    paths: Record<string, Record<string, { security?: unknown[], operationId: string, 'x-stability'?: string }>>
  }
  const bearerSchemes = Object.entries(doc.components.securitySchemes).filter(([, s]) => s.type === 'http' && s.scheme === 'bearer').map(([name]) => name)
  t.ok(bearerSchemes.length > 0, 'an http bearer security scheme')
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const security = (op.security ?? doc.security ?? []) as Record<string, unknown>[]
      t.ok(security.length > 0 && security.every((req) => Object.keys(req).some((n) => bearerSchemes.includes(n))), `${method.toUpperCase()} ${path} requires the bearer key`)
    }
  }
  t.equal(doc.paths['/inventory/{petId}']?.patch?.['x-stability'], 'experimental', 'updateInventory is marked experimental')
})

t.test('/healthz and /readyz; none of the documentation or health routes needs a key', async (t) => {
  const api = await buildTestApp(t)
  const badAuth = { authorization: 'Bearer psk_not-a-key' }
  for (const url of ['/docs', '/openapi.json', '/openapi.yaml', '/healthz', '/readyz']) {
    for (const headers of [{}, badAuth]) {
      const { res } = await get(api, url, headers)
      t.equal(res.statusCode, 200, `${url} ${Object.keys(headers).length > 0 ? 'with an invalid key' : 'without a key'}`)
      t.equal(res.headers['www-authenticate'], undefined, `${url}: no challenge`)
    }
  }
  t.same((await api.request({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' })
  t.match((await api.request({ method: 'GET', url: '/readyz' })).json(), { status: 'ok', checks: { storage: 'ok' } })
})

t.test('/readyz answers 503 service_unavailable once the storage is gone; /healthz stays 200', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  await api.store.close()

  const body = expectError(t, await api.request({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable', '/readyz with a closed store')
  t.match(body.message, /storage/, 'names what is unavailable')
  t.equal((await api.request({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process is still alive')
  expectError(t, await api.request({ method: 'GET', url: '/v1/inventory', headers }), 503, 'service_unavailable', 'an API call with a closed store')
})
