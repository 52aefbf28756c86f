import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Store } from '../../store/types.js'
import type { DependencyName } from './dependencies.js'

export type RateLimitOutcome = 'allowed' | 'limited' | 'banned' | 'failed_open'
/**
 * Why a request under /v1 was not authenticated; `key_not_checked` and `key_checks_busy` are keys
 * the key guard kept from the store (src/authentication/key-guard.ts); `error` is a failure none of
 * the others name (a bug).
 */
export type AuthFailureReason = 'missing' | 'scheme' | 'invalid_key' | 'insufficient_scope' | 'key_not_checked' | 'key_checks_busy' | 'storage_unavailable' | 'error'

/**
 * What became of one webhook attempt: delivered; failed_attempt (it will be tried again); gave_up
 * (its last attempt failed); invalid_payload (its body broke its schema in openapi.yaml: a bug).
 */
export type WebhookOutcome = 'delivered' | 'failed_attempt' | 'gave_up' | 'invalid_payload'

/** What the rest of the app reports; `app.metrics` is null without METRICS_PORT, so nothing is kept. */
export interface Metrics {
  readonly registry: Registry
  rateLimitDecision (outcome: RateLimitOutcome): void
  authFailure (reason: AuthFailureReason): void
  /** A request's call to a dependency failed (storage answered 503, the rate-limit store failed open). */
  dependencyFailure (dependency: DependencyName): void
  /** The store with every method timed into store_operation_duration_seconds. */
  timed (store: Store): Store
  webhookAttempt (outcome: WebhookOutcome): void
  /** How the gauges of pending webhook deliveries are read, at each scrape. */
  webhookQueue (read: () => Promise<{ count: number, oldest: string | null }>): void
  /** Serves GET /metrics on its own listener (never the API's); it closes with the app. */
  listen (host: string, port: number): Promise<AddressInfo>
}

export interface MetricsOptions {
  enabled: boolean
}

// Finer than prom-client's defaults at the low end: most requests here take well under 5 ms.
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/** Requests the router matched to no route: one label, never the URL, so the series stay few. */
const UNKNOWN_ROUTE = 'unknown'

/** `fn`, observing into `histogram` how long each call's promise (or the call) took. */
function timedFunction (fn: (...args: unknown[]) => unknown, self: unknown, histogram: Histogram<'engine' | 'operation'>, labels: { engine: string, operation: string }) {
  return (...args: unknown[]) => {
    const start = performance.now()
    const result: unknown = fn.apply(self, args)
    // Observed when the promise settles; the caller gets the store's own promise.
    const done = () => { histogram.observe(labels, (performance.now() - start) / 1000) }
    if (result instanceof Promise) result.then(done, done)
    else done()
    return result
  }
}

/** Each method of `methods` timed, under the operation `prefix` + its name. */
function timedMethods<T extends object> (methods: T, prefix: string, engine: string, histogram: Histogram<'engine' | 'operation'>): T {
  return Object.fromEntries(Object.entries(methods).map(([name, fn]) =>
    [name, timedFunction(fn as (...args: unknown[]) => unknown, methods, histogram, { engine, operation: `${prefix}${name}` })])) as T
}

/**
 * A proxy of the store whose methods each observe how long their promise took to settle, and so
 * do those of its inventory paths and of its caches (operations `inventory.listJson`,
 * `activeKeys.get`, …).
 */
function timedStore (store: Store, histogram: Histogram<'engine' | 'operation'>): Store {
  const wrappers = new Map<PropertyKey, unknown>()
  const inventory = timedMethods(store.inventory, 'inventory.', store.engine, histogram)
  const caches = Object.fromEntries(Object.entries(store.caches).map(([name, cache]) => [name, timedMethods(cache as object, `${name}.`, store.engine, histogram)]))
  return new Proxy(store, {
    get (target, property) {
      if (property === 'inventory') return inventory
      if (property === 'caches') return caches
      const value: unknown = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      let wrapper = wrappers.get(property)
      if (wrapper === undefined) {
        wrapper = timedFunction(value as (...args: unknown[]) => unknown, target, histogram, { engine: target.engine, operation: String(property) })
        wrappers.set(property, wrapper)
      }
      return wrapper
    }
  })
}

/** GET (or HEAD) /metrics in Prometheus text format; nothing else. */
function metricsListener (registry: Registry, onError: (error: unknown) => void): Server {
  return createServer((request, response) => {
    const path = (request.url ?? '').split('?', 1)[0]
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n')
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n')
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      response.end(request.method === 'HEAD' ? undefined : text)
    }, (error: unknown) => {
      onError(error)
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n')
    })
  })
}

/**
 * Prometheus metrics (docs/monitoring.md, Metrics), kept only with METRICS_PORT: without it `app.metrics` is
 * null and no hook is added, so a request does no metrics work at all. Each app has a registry of
 * its own (two apps in one process, as in the tests, do not share counters).
 */
async function metrics (app: FastifyInstance, options: MetricsOptions) {
  if (!options.enabled) {
    app.decorate('metrics', null)
    return
  }
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requestDuration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Time from the request\'s arrival to its response, by method, operation (operationId under /v1, the route elsewhere) and status',
    labelNames: ['method', 'operation', 'status'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry]
  })
  const rateLimitDecisions = new Counter({
    name: 'rate_limit_decisions_total',
    help: 'Rate-limit decisions on requests under /v1: allowed, limited (429 rate_limited), banned (429 api_key_banned), failed_open (counter store unreachable)',
    labelNames: ['outcome'] as const,
    registers: [registry]
  })
  const authFailures = new Counter({
    name: 'auth_failures_total',
    help: 'Requests under /v1 that were not authenticated, by reason',
    labelNames: ['reason'] as const,
    registers: [registry]
  })
  const dependencyFailures = new Counter({
    name: 'dependency_failures_total',
    help: 'Calls of requests to a dependency that failed, by dependency: storage (answered 503), rate-limit-store (served without limits)',
    labelNames: ['dependency'] as const,
    registers: [registry]
  })
  const storeDuration = new Histogram({
    name: 'store_operation_duration_seconds',
    help: 'Time each storage operation took, by engine and operation',
    labelNames: ['engine', 'operation'] as const,
    buckets: STORE_BUCKETS,
    registers: [registry]
  })

  const webhookAttempts = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, failed_attempt (tried again later), gave_up (the last attempt failed), invalid_payload (a body outside its schema: a bug)',
    labelNames: ['outcome'] as const,
    registers: [registry]
  })
  let readQueue: (() => Promise<{ count: number, oldest: string | null }>) | undefined
  let queueRead: Promise<{ count: number, oldest: string | null } | undefined> | undefined
  // Both gauges come from one read of the queue per scrape. While the storage is down they keep
  // their last values: the scrape itself still answers (the outage has its own metric).
  const queue = () => (queueRead ??= (readQueue?.() ?? Promise.resolve({ count: 0, oldest: null }))
    .catch(() => undefined)
    .finally(() => { setImmediate(() => { queueRead = undefined }) }))
  // Registered with the registry, which keeps them.
  new Gauge({
    name: 'webhook_events_pending',
    help: 'Webhook deliveries not yet made (each an event for one endpoint)',
    registers: [registry],
    async collect () {
      const read = await queue()
      if (read !== undefined) this.set(read.count)
    }
  })
  new Gauge({
    name: 'webhook_oldest_pending_event_age_seconds',
    help: 'Age of the oldest event with a delivery not yet made; 0 when none',
    registers: [registry],
    async collect () {
      const read = await queue()
      if (read !== undefined) this.set(read.oldest === null ? 0 : Math.max(0, (Date.now() - Date.parse(read.oldest)) / 1000))
    }
  })

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions
    const operation = (route.schema as { operationId?: string } | undefined)?.operationId ?? route.url ?? UNKNOWN_ROUTE
    requestDuration.observe({ method: request.method, operation, status: reply.statusCode }, reply.elapsedTime / 1000)
    done()
  })

  let listener: Server | undefined
  app.addHook('onClose', async () => {
    if (listener === undefined || !listener.listening) return
    const closed = once(listener, 'close')
    listener.close()
    listener.closeIdleConnections()
    await closed
  })

  const decoration: Metrics = {
    registry,
    rateLimitDecision: (outcome) => { rateLimitDecisions.inc({ outcome }) },
    authFailure: (reason) => { authFailures.inc({ reason }) },
    dependencyFailure: (dependency) => { dependencyFailures.inc({ dependency }) },
    timed: (store) => timedStore(store, storeDuration),
    webhookAttempt: (outcome) => { webhookAttempts.inc({ outcome }) },
    webhookQueue: (read) => { readQueue = read },
    async listen (host, port) {
      if (listener !== undefined) throw new Error('the metrics listener is already started')
      const server = metricsListener(registry, (error) => { app.log.error({ err: error }, 'collecting the metrics failed') })
      listener = server
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          server.off('error', reject)
          resolve()
        })
      })
      server.on('error', (error) => { app.log.error({ err: error }, 'metrics listener failed') })
      return server.address() as AddressInfo
    }
  }
  app.decorate('metrics', decoration)
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Null unless METRICS_PORT is set. */
    metrics: Metrics | null
  }
}

export default fp(metrics, { name: 'metrics' })
