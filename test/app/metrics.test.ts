/**
 * Prometheus metrics (docs/monitoring.md, Metrics) on their own listener: scraped over real sockets, since
 * inject cannot reach a second listener. Each request kind moves its own series.
 */
import { createServer } from 'node:net'
import { join } from 'node:path'
import { types } from 'node:util'
import t, { type Test } from 'tap'
import { buildTestApp, tempDir, type TestApp } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { REDIS, redisUrlThrough } from '../helpers/redis.js'
import { freePort } from '../helpers/ports.js'

/** The samples of a scrape: `name{label="value",…}` (labels as Prometheus writes them) → value. */
type Samples = Map<string, number>

function parseSamples (text: string): Samples {
  const samples: Samples = new Map()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const cut = line.lastIndexOf(' ')
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)))
  }
  return samples
}

const series = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}}`

interface MetricsApp extends TestApp {
  metricsUrl: string
  apiUrl: string
  scrape (): Promise<Samples>
}

/** An app with METRICS_PORT, its API and its metrics each on a real loopback port. */
async function metricsApp (t: Test, env: Record<string, string> = {}): Promise<MetricsApp> {
  const api = await buildTestApp(t, { env: { METRICS_PORT: '0', ...env } })
  await api.app.listen({ port: 0, host: '127.0.0.1' })
  const address = await api.app.metrics!.listen('127.0.0.1', 0)
  const metricsUrl = `http://127.0.0.1:${address.port}/metrics`
  return {
    ...api,
    metricsUrl,
    apiUrl: `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}`,
    scrape: async () => {
      const res = await fetch(metricsUrl)
      if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`)
      return parseSamples(await res.text())
    }
  }
}

/** How much each series moved between two scrapes (absent before: from 0). */
const moved = (before: Samples, after: Samples, key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0)

t.test('the metrics listener serves Prometheus text with the service\'s metrics and the default ones', async (t) => {
  const api = await metricsApp(t)
  t.not(new URL(api.metricsUrl).port, new URL(api.apiUrl).port, 'a listener of its own')
  const res = await fetch(api.metricsUrl)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/, 'Prometheus text format')
  const text = await res.text()
  for (const [name, type] of [
    ['http_server_request_duration_seconds', 'histogram'],
    ['rate_limit_decisions_total', 'counter'],
    ['auth_failures_total', 'counter'],
    ['dependency_failures_total', 'counter'],
    ['store_operation_duration_seconds', 'histogram'],
    ['process_cpu_user_seconds_total', 'counter'],
    ['process_resident_memory_bytes', 'gauge'],
    ['nodejs_eventloop_lag_seconds', 'gauge'],
    ['nodejs_heap_size_used_bytes', 'gauge']
  ]) {
    t.match(text, new RegExp(`^# TYPE ${name} ${type}$`, 'm'), `${name} is a ${type}`)
  }

  const head = await fetch(api.metricsUrl, { method: 'HEAD' })
  t.equal(head.status, 200, 'HEAD /metrics')
  const post = await fetch(api.metricsUrl, { method: 'POST' })
  t.equal(post.status, 405, 'POST /metrics is refused')
  t.equal(post.headers.get('allow'), 'GET, HEAD')
  t.equal((await fetch(new URL('/other', api.metricsUrl))).status, 404, 'nothing else is served there')

  const onApiPort = await fetch(`${api.apiUrl}/metrics`)
  t.equal(onApiPort.status, 404, '/metrics is not on the API port')
  t.equal((await onApiPort.json() as { code: string }).code, 'not_found')
})

t.test('a 200, a 401 of each reason, a 429 and a ban move the right series', async (t) => {
  const api = await metricsApp(t, { RATE_LIMIT_BAN_AFTER: '1' })
  const headers = await api.authHeader('pro')
  const inventory = (h: Record<string, string> = {}) => api.request({ method: 'GET', url: '/v1/inventory', headers: h })
  const http = (operation: string, status: string, method = 'GET') =>
    series('http_server_request_duration_seconds_count', { method, operation, status })
  const decision = (outcome: string) => series('rate_limit_decisions_total', { outcome })
  const authFailure = (reason: string) => series('auth_failures_total', { reason })
  const store = (operation: string) => series('store_operation_duration_seconds_count', { engine: api.store.engine, operation })

  let before = await api.scrape()
  t.equal((await inventory(headers)).statusCode, 200)
  let after = await api.scrape()
  t.equal(moved(before, after, http('listInventory', '200')), 1, 'a 200 of listInventory is one observation with its operationId')
  t.equal(moved(before, after, decision('allowed')), 1, 'one allowed rate-limit decision')
  t.equal(moved(before, after, store('activeKeys.getMany')), 1, 'the key lookup is timed (a key this instance has not verified yet: looked up with others)')
  t.equal(moved(before, after, store('inventory.listJson')), 1, 'the list is timed')
  t.ok((after.get(series('http_server_request_duration_seconds_sum', { method: 'GET', operation: 'listInventory', status: '200' })) ?? 0) > 0, 'with its duration')
  t.equal(after.get(series('http_server_request_duration_seconds_bucket', { le: '+Inf', method: 'GET', operation: 'listInventory', status: '200' })), after.get(http('listInventory', '200')), 'a histogram with buckets')

  before = after
  t.equal((await inventory()).statusCode, 401)
  t.equal((await inventory({ authorization: 'Basic dXNlcjpwdw==' })).statusCode, 401)
  t.equal((await inventory({ authorization: 'Bearer psk_not-a-key' })).statusCode, 401)
  after = await api.scrape()
  t.equal(moved(before, after, authFailure('missing')), 1, 'no header: reason missing')
  t.equal(moved(before, after, authFailure('scheme')), 1, 'another scheme: reason scheme')
  t.equal(moved(before, after, authFailure('invalid_key')), 1, 'an unknown key: reason invalid_key')
  t.equal(moved(before, after, http('listInventory', '401')), 3, 'three 401s of listInventory')
  t.equal(moved(before, after, decision('allowed')), 3, 'failed authentications are counted (per address) and allowed')

  // An enterprise key allowed one request a minute: the second is limited, the third (two past
  // the limit, RATE_LIMIT_BAN_AFTER=1) starts a ban.
  const tight = { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 1, perDay: 100 })}` }
  before = await api.scrape()
  const statuses = []
  for (let i = 0; i < 3; i++) {
    const res = await inventory(tight)
    statuses.push(`${res.statusCode} ${res.statusCode === 429 ? (res.json() as { code: string }).code : ''}`.trim())
  }
  t.same(statuses, ['200', '429 rate_limited', '429 api_key_banned'])
  after = await api.scrape()
  t.equal(moved(before, after, decision('allowed')), 1)
  t.equal(moved(before, after, decision('limited')), 1, 'one limited decision')
  t.equal(moved(before, after, decision('banned')), 1, 'one banned decision')
  t.equal(moved(before, after, http('listInventory', '429')), 2, 'two 429s of listInventory')
})

t.test('the operation label: operationId under /v1, the route outside it, one label for unknown paths', async (t) => {
  const api = await metricsApp(t)
  const headers = await api.authHeader('pro')
  const before = await api.scrape()
  await api.request({ method: 'HEAD', url: '/v1/inventory', headers })
  await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, 'content-type': 'application/json' }, payload: { quantity: 3 } })
  await api.request({ method: 'DELETE', url: '/v1/inventory', headers })
  await api.request({ method: 'GET', url: '/healthz' })
  await api.request({ method: 'GET', url: '/v1/no-such-thing-1', headers })
  await api.request({ method: 'GET', url: '/no-such-thing-2' })
  const after = await api.scrape()
  const http = (method: string, operation: string, status: string) => moved(before, after, series('http_server_request_duration_seconds_count', { method, operation, status }))
  t.equal(http('HEAD', 'listInventory', '200'), 1, 'HEAD of a GET operation: its operationId')
  t.equal(http('PATCH', 'updateInventory', '200'), 1, 'PATCH: updateInventory')
  t.equal(http('DELETE', '/v1/inventory', '405'), 1, 'a 405 of a known path: the route')
  t.equal(http('GET', '/healthz', '200'), 1, 'outside /v1: the path')
  t.equal(http('GET', 'unknown', '404'), 2, 'unknown paths, under /v1 or not: one fixed label')
  const labels = [...after.keys()].join('\n')
  t.notMatch(labels, /no-such-thing/, 'never the raw URL')
})

t.test('a failed rate-limit store is counted as failed_open; a failed key lookup as storage_unavailable', async (t) => {
  // A Redis address that drops every connection: the counters fail and requests are served.
  const proxy = await startTcpProxy(t, REDIS.port, REDIS.host)
  proxy.cut()
  const api = await metricsApp(t, { REDIS_URL: redisUrlThrough(proxy.port), REDIS_COMMAND_TIMEOUT_MS: '100' })
  const headers = await api.authHeader('free')
  let before = await api.scrape()
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, 'served (fail open)')
  let after = await api.scrape()
  t.equal(moved(before, after, series('rate_limit_decisions_total', { outcome: 'failed_open' })), 1, 'one failed_open decision')
  t.equal(moved(before, after, series('rate_limit_decisions_total', { outcome: 'allowed' })), 0, 'not counted as allowed')
  t.equal(moved(before, after, series('dependency_failures_total', { dependency: 'rate-limit-store' })), 1, 'one failure of the rate-limit store')

  before = after
  await api.store.close()
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 503)
  after = await api.scrape()
  t.equal(moved(before, after, series('auth_failures_total', { reason: 'storage_unavailable' })), 1, 'the key could not be looked up: storage_unavailable')
  t.equal(moved(before, after, series('dependency_failures_total', { dependency: 'storage' })), 1, 'one failure of the storage')
  t.equal(moved(before, after, series('http_server_request_duration_seconds_count', { method: 'GET', operation: 'listInventory', status: '503' })), 1)
})

t.test('without METRICS_PORT nothing is kept: no registry, the store unwrapped', async (t) => {
  const plain = await buildTestApp(t)
  t.equal(plain.app.metrics, null, 'app.metrics is null')
  t.notOk(types.isProxy(plain.store), 'the store is not wrapped')
  const kept = await buildTestApp(t, { env: { METRICS_PORT: '0' } })
  t.ok(types.isProxy(kept.store), 'with METRICS_PORT it is (the timing wrapper)')
  t.equal(kept.store.engine, plain.store.engine, 'and reads as the same store')
})

t.test('the metrics listener closes with the app', async (t) => {
  const api = await metricsApp(t)
  t.equal((await fetch(api.metricsUrl)).status, 200)
  await api.app.close()
  await t.rejects(fetch(api.metricsUrl), 'nothing listens after close')
})

t.test('the server process: metrics start after the API listens, on METRICS_PORT, and stop with it', async (t) => {
  const metricsPort = await freePort()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'metrics.db')}`, METRICS_PORT: String(metricsPort) })
  const messages = server.logs.map((l) => String(l.msg))
  const listening = messages.findIndex((m) => m.startsWith('Server listening at'))
  const metricsLine = messages.findIndex((m) => m === `metrics listening at http://127.0.0.1:${metricsPort}/metrics`)
  t.ok(listening >= 0 && metricsLine > listening, 'the metrics listener starts after the API listens, and says where')
  t.equal(server.logs.find((l) => String(l.msg).startsWith('Pet Store API ready'))?.docs, `${server.baseUrl}/docs`,
    'PORT=0 and no PUBLIC_BASE_URL: the ready line names the port the API got')
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  t.equal(res.status, 200)
  t.match(await res.text(), /^# TYPE http_server_request_duration_seconds histogram$/m)
  t.equal((await fetch(`${server.baseUrl}/metrics`)).status, 404, 'not on the API port')
  t.equal(await server.stop('SIGTERM'), 0, 'a clean stop')
  await t.rejects(fetch(`http://127.0.0.1:${metricsPort}/metrics`), 'the metrics listener is closed too')
})

t.test('the server process: METRICS_PORT in use is one line on stderr and exit 1', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
  const port = (blocker.address() as { port: number }).port
  await t.rejects(startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'metrics.db')}`, METRICS_PORT: String(port) }),
    { message: new RegExp(`exited with 1 before it was ready\\nPet Store API could not start: 127\\.0\\.0\\.1:${port} \\(the metrics listener\\) is already in use`) })
})
