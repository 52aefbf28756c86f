/**
 * The peer the issue compares against: the same API on Express 5, with express-openapi-validator
 * (requests and responses checked against the same openapi.yaml), express-rate-limit (a
 * per-minute and a per-day window, per API key) and a key lookup on every request. It shares the
 * service's store (createStore from src/store/create-store.ts) through the service's repositories
 * (src/repositories/: a key by hash, the inventory list, PATCH, a pet), which it reads without its
 * caches' help beyond what the repositories give. It serves no POST /store/orders.
 * Small on purpose: it is what a straightforward Express build of this API costs, nothing more.
 *
 * Environment: DATABASE_URL (a database the service's CLI made), PORT, HOST.
 */
import { hash } from 'node:crypto'
import express, { type NextFunction, type Request, type Response } from 'express'
import * as OpenApiValidator from 'express-openapi-validator'
import { ipKeyGenerator, rateLimit } from 'express-rate-limit'
import { loadDocument } from '../../src/contract/document.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { webhookEvents } from '../../src/webhooks/events.js'
import { createStore } from '../../src/store/create-store.js'
import type { ApiKeyRecord } from '../../src/store/types.js'

const port = Number(process.env.PORT ?? 0)
const host = process.env.HOST ?? '127.0.0.1'
const databaseUrl = process.env.DATABASE_URL ?? 'sqlite:./data/petstore.db'

const document = await loadDocument()
const store = await createStore(databaseUrl)
const keys = apiKeysRepository(store)
const inventory = inventoryRepository(store, webhookEvents(document).scopes)
const pets = petsRepository(store)

type KeyedRequest = Request & { apiKey?: ApiKeyRecord }

const codes: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited'
}
const sendError = (res: Response, status: number, message: string) => {
  res.status(status).json({ code: codes[status] ?? 'internal_error', message: status >= 500 ? 'internal server error' : message, status })
}

const free = document.plans.free ?? { perMinute: 60, perDay: 1000 }
const limiter = (windowMs: number, window: 'perMinute' | 'perDay') => rateLimit({
  windowMs,
  limit: (req: Request) => {
    const key = (req as KeyedRequest).apiKey
    if (key === undefined) return free[window]
    return key[window] ?? document.plans[key.plan]?.[window] ?? free[window]
  },
  keyGenerator: (req: Request) => {
    const key = (req as KeyedRequest).apiKey
    return key === undefined ? `ip:${ipKeyGenerator(req.ip ?? '')}` : `key:${key.id}`
  },
  standardHeaders: false,
  legacyHeaders: true,
  handler: (_req, res) => sendError(res, 429, 'rate limit exceeded')
})

const app = express()
app.disable('x-powered-by')
app.disable('etag')
app.get('/healthz', (_req, res) => { res.json({ status: 'ok' }) })

// Identify the key first (a failure is counted by the limiters too), then limit, then reject.
app.use('/v1', async (req: KeyedRequest, _res, next) => {
  const header = req.headers.authorization
  if (header?.startsWith('Bearer ')) {
    // The service stores the SHA-256 of a key, in hex.
    const record = await keys.findActive(hash('sha256', header.slice('Bearer '.length), 'hex'))
    if (record !== undefined) req.apiKey = record
  }
  next()
})
app.use('/v1', limiter(60_000, 'perMinute'), limiter(86_400_000, 'perDay'))
app.use('/v1', (req: KeyedRequest, res, next) => {
  if (req.apiKey === undefined) {
    res.setHeader('www-authenticate', 'Bearer realm="petstore"')
    sendError(res, 401, 'invalid or revoked API key')
    return
  }
  next()
})
app.use(express.json({ limit: '16kb' }))

const apiSpec = structuredClone(document.spec) as Record<string, unknown>
apiSpec.servers = [{ url: '/v1' }]
app.use(OpenApiValidator.middleware({
  apiSpec: apiSpec as never,
  validateRequests: { allowUnknownQueryParameters: false },
  validateResponses: true,
  validateSecurity: false,
  formats: {
    int64: { type: 'number', validate: (n: number) => Number.isSafeInteger(n) },
    int32: { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 }
  }
}))

app.get('/v1/inventory', async (_req, res) => { res.json(await inventory.list()) })
app.patch('/v1/inventory/:petId', async (req, res) => {
  const item = await inventory.update(Number(req.params.petId), (req.body as { quantity: number }).quantity)
  if (item === undefined) return sendError(res, 404, `no inventory entry for pet ${req.params.petId}`)
  res.json(item)
})
app.get('/v1/pets/:petId', async (req, res) => {
  const pet = await pets.get(Number(req.params.petId))
  if (pet === undefined) return sendError(res, 404, `no pet with id ${req.params.petId}`)
  res.json(pet)
})

app.use((error: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
  sendError(res, error.status ?? 500, error.message)
})

const server = app.listen(port, host)
const stop = () => { server.close(() => { void store.close().then(() => process.exit(0)) }) }
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
