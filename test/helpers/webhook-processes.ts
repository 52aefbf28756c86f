import Database from 'better-sqlite3'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { tempDir } from './app.js'
import { adminQuery, createTestSchema, POSTGRES_SHOWN } from './postgres.js'
import { keyInDatabase } from './keys.js'
import { processClient, type ProcessClient } from './process-client.js'
import { startServer } from './server-process.js'
import { stockForOrders } from './webhook-changes.js'
import { startReceiver, type Answer, type Received } from './webhook-receiver.js'

/**
 * What the webhook tests on real processes give every server: http to loopback receivers, and a
 * time limit and retries short enough that a test takes seconds. A delivery leased by a process
 * that died is taken over WEBHOOK_TIMEOUT_MS + 5 s after it was claimed.
 */
export const QUICK_WEBHOOKS = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_SCHEDULE: '500ms,500ms,500ms,500ms,500ms' }

export interface Endpoint { id: number, secret: string, url: string, events: string[] }

export async function subscribe (api: ProcessClient, url: string, events = ['inventory.updated', 'order.placed', 'order.approved', 'order.delivered', 'order.cancelled']): Promise<Endpoint> {
  const res = await api.request('POST', '/v1/webhooks', { url, events })
  if (res.status !== 201) throw new Error(`createWebhookEndpoint answered ${res.status}: ${res.text}`)
  return res.json()
}

export interface Attempt { id: number, eventId: string, eventType: string, attempt: number, statusCode: number | null, error: string | null, durationMs: number, responseBody: string | null, nextAttemptAt: string | null }

/** The endpoint's whole delivery log, newest first, every page (each answer checked against openapi.yaml). */
export async function deliveryLog (api: ProcessClient, endpointId: number): Promise<Attempt[]> {
  const log: Attempt[] = []
  let path: string | undefined = `/v1/webhooks/${endpointId}/deliveries`
  while (path !== undefined) {
    const res = await api.request('GET', path)
    if (res.status !== 200) throw new Error(`listWebhookDeliveries answered ${res.status}: ${res.text}`)
    log.push(...res.json<Attempt[]>())
    const next = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1]
    // The Link may be absolute (PUBLIC_BASE_URL): its path and query are what the client sends.
    const url = next === undefined ? undefined : new URL(next, 'http://localhost')
    path = url === undefined ? undefined : url.pathname + url.search
  }
  return log
}

export interface EventBody { id: string, type: string, createdAt: string, data: Record<string, unknown> }
export const bodyOf = (received: Received) => JSON.parse(received.body) as EventBody
export const webhookId = (received: Received) => String(received.headers['webhook-id'])

/** How many requests each webhook-id came in. */
export function countById (received: readonly Received[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const request of received) counts.set(webhookId(request), (counts.get(webhookId(request)) ?? 0) + 1)
  return counts
}

/** Where a server keeps its data, read beside it (the outbox's tables) to compare what was recorded with what arrived. */
export type Outbox = { engine: 'sqlite', file: string } | { engine: 'postgres', schema: string }

/** Why the PostgreSQL half of these tests is skipped; false when PostgreSQL answers. */
export const postgresSkip: Promise<string | false> = adminQuery('SELECT 1').then(() => false,
  (error: Error) => `PostgreSQL at ${POSTGRES_SHOWN} (TEST_DATABASE_URL) is unreachable (${error.message})`)

/**
 * The test `title` on each engine: a SQLite file of its own, then a PostgreSQL schema of its own
 * (skipped, saying why, when PostgreSQL is unreachable), each given its DATABASE_URL and outbox.
 */
export async function onBothEngines (t: Test, title: string, body: (t: Test, databaseUrl: string, outbox: Outbox) => Promise<void>): Promise<void> {
  t.test(`SQLite: ${title}`, async (t) => {
    const file = join(tempDir(t), 'webhooks.db')
    await body(t, `sqlite:${file}`, { engine: 'sqlite', file })
  })
  t.test(`PostgreSQL: ${title}`, { skip: await postgresSkip }, async (t) => {
    const schema = await createTestSchema(t)
    await body(t, schema.url(), { engine: 'postgres', schema: schema.schema })
  })
}

/** `sql` on the outbox's database; `{table}` names one of its tables. */
async function rows<R> (outbox: Outbox, sql: string): Promise<R[]> {
  if (outbox.engine === 'postgres') return await adminQuery(sql.replace(/\{(\w+)\}/g, `${outbox.schema}.$1`)) as R[]
  const db = new Database(outbox.file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare(sql.replace(/\{(\w+)\}/g, '$1')).all() as R[]
  } finally {
    db.close()
  }
}

/** The ids of the events recorded so far (webhook_events). */
export async function recordedEventIds (outbox: Outbox): Promise<string[]> {
  return (await rows<{ event_id: string }>(outbox, 'SELECT event_id FROM {webhook_events} ORDER BY id')).map((row) => row.event_id)
}

/** Deliveries still to be made (state pending). */
export async function pendingDeliveries (outbox: Outbox): Promise<number> {
  return Number((await rows<{ n: number | string }>(outbox, "SELECT count(*) AS n FROM {webhook_deliveries} WHERE state = 'pending'"))[0]?.n ?? 0)
}

/** Polls `check` every 100 ms until it holds or `ms` have passed; whether it held. */
export async function until (check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await sleep(100)
  }
}

/**
 * Two server processes on one new PostgreSQL schema, with a key made there, a client of each, the
 * pets orders need in stock, and a receiver whose endpoint gets every event type.
 */
export async function twoPostgresInstances (t: Test, keyName: string, answer: () => Answer) {
  const schema = await createTestSchema(t)
  const outbox = { engine: 'postgres', schema: schema.schema } as const
  const { secret } = await keyInDatabase(schema.url(), keyName)
  const env = { DATABASE_URL: schema.url(), DATABASE_POOL_MAX: '4', ...QUICK_WEBHOOKS }
  const servers = await Promise.all([startServer(t, env), startServer(t, env)])
  const apis = servers.map((server) => processClient(server.baseUrl, secret, 8))
  t.teardown(() => { for (const api of apis) api.close() })
  const receiver = await startReceiver(t, answer)
  await stockForOrders(apis[0]!)
  await subscribe(apis[0]!, receiver.url)
  return { outbox, servers, apis, receiver }
}
