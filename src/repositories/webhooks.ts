import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { components } from '../generated/openapi.js'
import { statement, type Arg } from '../store/query.js'
import type { Store } from '../store/types.js'
import { all, first, lockRow, run, type DataAccess, type ReadWork, type Work } from '../store/work.js'
import { SEALED_PREFIX, type SecretBox } from '../webhooks/secrets.js'
import { dropPendingDeliveries } from './webhook-deliveries.js'

export type WebhookEventType = components['schemas']['WebhookEventType']
export type WebhookEndpoint = components['schemas']['WebhookEndpoint']
export type WebhookDelivery = components['schemas']['WebhookDelivery']

/** At most this many endpoints per API key (openapi.yaml, createWebhookEndpoint). */
export const ENDPOINTS_PER_KEY = 10
/** How long the secret before a rotation keeps signing. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000
/** The delivery log is kept this long. */
export const DELIVERY_LOG_MS = 30 * 24 * 60 * 60 * 1000

/** What each event type needs of the key that subscribes to it: a scope (openapi.yaml, each webhook's x-scope). */
export type EventScopes = Readonly<Record<WebhookEventType, string>>

const endpointColumns = ['e.id', 'e.api_key_id as apiKeyId', 'e.url', 'e.description', 'e.events', 'e.enabled', 'e.disabled_reason as disabledReason',
  'e.created_at as createdAt', 'e.updated_at as updatedAt'] as const

interface EndpointRow {
  id: number
  apiKeyId: string
  url: string
  description: string | null
  events: string
  enabled: boolean | number
  disabledReason: string | null
  createdAt: string
  updatedAt: string
}

/** An endpoint as the API shows it (never its secret). */
function toEndpoint (row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events.split(' ') as WebhookEventType[],
    description: row.description,
    // SQLite keeps booleans as 0 and 1.
    enabled: row.enabled === true || row.enabled === 1,
    disabledReason: row.disabledReason,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt
  }
}

/** `text` as a LIKE pattern that matches it as one space-separated word of a list. */
const wordOf = (text: string) => `% ${text} %`

const q = {
  // One sealed secret, if any: the one a wrong WEBHOOK_ENCRYPTION_KEY would fail to open.
  aSecret: statement('webhooks.aSealedSecret', (db) => db
    .selectFrom('webhook_endpoints').select('secret').where('secret', 'like', `${SEALED_PREFIX}%`).limit(1)),
  // What the enabled endpoints of active keys subscribe to, with their keys' scopes.
  subscriptions: statement('webhooks.subscriptions', (db) => db
    .selectFrom('webhook_endpoints as e').innerJoin('api_keys as k', 'k.id', 'e.api_key_id').select(['e.events', 'k.scopes']).distinct()
    .where('e.enabled', '=', true).where('k.revoked_at', 'is', null)),
  insertEvent: statement('webhooks.insertEvent', (db, arg: Arg<{ eventId: string, type: string, createdAt: string, payload: string }>) => db
    .insertInto('webhook_events')
    .values({ event_id: arg('eventId'), type: arg('type'), created_at: arg('createdAt'), payload: arg('payload') })
    .returning('id')),
  insertDeliveries: statement('webhooks.insertDeliveries', (db, arg: Arg<{ event: number, type: string, scope: string, now: number }>) => db
    .insertInto('webhook_deliveries')
    .columns(['event_id', 'endpoint_id', 'state', 'attempts', 'next_attempt_at'])
    .expression((eb) => eb.selectFrom('webhook_endpoints as e').innerJoin('api_keys as k', 'k.id', 'e.api_key_id')
      .select([sql<number>`${arg('event')}`.as('event_id'), 'e.id', sql<string>`'pending'`.as('state'), sql<number>`0`.as('attempts'), sql<number>`${arg('now')}`.as('next_attempt_at')])
      .where('e.enabled', '=', true).where('k.revoked_at', 'is', null)
      .where(sql<string>`' ' || e.events || ' '`, 'like', arg('type'))
      .where(sql<string>`' ' || k.scopes || ' '`, 'like', arg('scope')))),

  count: statement('webhooks.countOfKey', (db, arg: Arg<{ apiKeyId: string }>) => db
    .selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('api_key_id', '=', arg('apiKeyId'))),
  insert: statement('webhooks.insert', (db, arg: Arg<{ apiKeyId: string, url: string, description: string | null, events: string, secret: string, at: string }>) => db
    .insertInto('webhook_endpoints')
    .values({ api_key_id: arg('apiKeyId'), url: arg('url'), description: arg('description'), events: arg('events'), enabled: true, secret: arg('secret'), created_at: arg('at'), updated_at: arg('at') })
    .returning('id')),
  byId: statement('webhooks.byId', (db, arg: Arg<{ apiKeyId: string, id: number }>) => db
    .selectFrom('webhook_endpoints as e').select(endpointColumns).where('e.id', '=', arg('id')).where('e.api_key_id', '=', arg('apiKeyId'))),
  page: statement('webhooks.page', (db, arg: Arg<{ apiKeyId: string, afterId: number, limit: number }>) => db
    .selectFrom('webhook_endpoints as e').select(endpointColumns)
    .where('e.api_key_id', '=', arg('apiKeyId')).where('e.id', '>', arg('afterId')).orderBy('e.id').limit(arg('limit'))),
  update: statement('webhooks.update', (db, arg: Arg<{ apiKeyId: string, id: number, url: string, description: string | null, events: string, enabled: boolean, disabledReason: string | null, at: string }>) => db
    .updateTable('webhook_endpoints')
    .set({ url: arg('url'), description: arg('description'), events: arg('events'), enabled: arg('enabled'), disabled_reason: arg('disabledReason'), updated_at: arg('at') })
    .where('id', '=', arg('id')).where('api_key_id', '=', arg('apiKeyId'))),
  // Re-enabled: its failures before are no longer a reason to disable it again.
  resetFailures: statement('webhooks.resetFailures', (db, arg: Arg<{ id: number }>) => db
    .updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', arg('id'))),
  remove: statement('webhooks.remove', (db, arg: Arg<{ apiKeyId: string, id: number }>) => db
    .deleteFrom('webhook_endpoints').where('id', '=', arg('id')).where('api_key_id', '=', arg('apiKeyId'))),
  // The deliveries of the endpoint go with it (ON DELETE CASCADE), and so do their attempts.
  // Within a rotation's window the secret from before it keeps signing: a second rotation (a
  // retry whose first answer was lost, say) replaces only the secret no receiver may have yet.
  rotate: statement('webhooks.rotate', (db, arg: Arg<{ apiKeyId: string, id: number, secret: string, now: number, expiresAt: number, at: string }>) => db
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      previous_secret: eb.case().when(eb.and([eb('previous_secret', 'is not', null), eb('previous_secret_expires_at', '>', arg('now'))]))
        .then(eb.ref('previous_secret')).else(eb.ref('secret')).end(),
      secret: arg('secret'),
      previous_secret_expires_at: arg('expiresAt'),
      updated_at: arg('at')
    }))
    .where('id', '=', arg('id')).where('api_key_id', '=', arg('apiKeyId'))),
  attempts: statement('webhooks.attempts', (db, arg: Arg<{ endpointId: number, beforeId: number, limit: number }>) => db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select(['a.id', 'ev.event_id as eventId', 'ev.type as eventType', 'a.attempt', 'a.attempted_at as attemptedAt', 'a.status_code as statusCode', 'a.error',
      'a.duration_ms as durationMs', 'a.response_body as responseBody', 'a.next_attempt_at as nextAttemptAt'])
    .where('a.endpoint_id', '=', arg('endpointId')).where('a.id', '<', arg('beforeId')).orderBy('a.id', 'desc').limit(arg('limit'))),
  sweepAttempts: statement('webhooks.sweepAttempts', (db, arg: Arg<{ before: string }>) => db
    .deleteFrom('webhook_attempts').where('attempted_at', '<', arg('before'))),
  sweepDeliveries: statement('webhooks.sweepDeliveries', (db, arg: Arg<{ before: string }>) => db
    .deleteFrom('webhook_deliveries').where('state', '<>', 'pending')
    .where('event_id', 'in', (eb) => eb.selectFrom('webhook_events').select('id').where('created_at', '<', arg('before')))),
  sweepEvents: statement('webhooks.sweepEvents', (db, arg: Arg<{ before: string }>) => db
    .deleteFrom('webhook_events').where('created_at', '<', arg('before'))
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'webhook_events.id')))))
}

/** A fresh event id: evt_ and 16 random bytes in base64url (22 characters). */
export const newEventId = () => `evt_${randomBytes(16).toString('base64url')}`

/**
 * The event types some endpoint would receive now: subscribed to by an enabled endpoint whose API
 * key is active and holds the type's scope. A change reads it once, in its transaction, and
 * records only the events someone wants (an event no endpoint wants costs this read, and nothing
 * later).
 */
export function * subscribedTypes (scopes: EventScopes): ReadWork<ReadonlySet<WebhookEventType>> {
  const wanted = new Set<WebhookEventType>()
  for (const { events, scopes: held } of yield * all(q.subscriptions, {})) {
    const keyScopes = held.split(' ')
    for (const type of events.split(' ') as WebhookEventType[]) {
      if (scopes[type] !== undefined && keyScopes.includes(scopes[type])) wanted.add(type)
    }
  }
  return wanted
}

/**
 * Records an event in the transaction of the change that caused it (the transactional outbox),
 * with one delivery, due now, per endpoint that would receive it (as subscribedTypes tells).
 */
export function * recordEvent (type: WebhookEventType, data: unknown, scope: string, at: { now: number, eventId?: string }): Work<void> {
  const eventId = at.eventId ?? newEventId()
  const createdAt = new Date(at.now).toISOString()
  const envelope = { id: eventId, type, createdAt, data }
  const event = yield * first(q.insertEvent, { eventId, type, createdAt, payload: JSON.stringify(envelope) })
  if (event === undefined) throw new Error('the event insert returned no row')
  yield * run(q.insertDeliveries, { type: wordOf(type), scope: wordOf(scope), event: event.id, now: at.now })
}

export type CreateOutcome = { kind: 'created', endpoint: WebhookEndpoint } | { kind: 'limit_exceeded' }

export interface EndpointChanges {
  url?: string
  events?: readonly WebhookEventType[]
  description?: string | null
  enabled?: boolean
}

/** The webhook endpoints of API keys, each key seeing only its own, and their delivery log. */
export interface WebhooksRepository {
  create (apiKeyId: string, endpoint: { url: string, events: readonly WebhookEventType[], description?: string | undefined }, secret: string): Promise<CreateOutcome>
  get (apiKeyId: string, id: number): Promise<WebhookEndpoint | undefined>
  /** The key's endpoints in id order, after `afterId`; `more` when others follow. */
  page (apiKeyId: string, afterId: number | undefined, limit: number): Promise<{ endpoints: WebhookEndpoint[], more: boolean }>
  update (apiKeyId: string, id: number, changes: EndpointChanges): Promise<WebhookEndpoint | undefined>
  remove (apiKeyId: string, id: number): Promise<boolean>
  /** A new secret; the one before keeps signing for ROTATION_OVERLAP_MS. */
  rotate (apiKeyId: string, id: number, secret: string): Promise<{ endpoint: WebhookEndpoint, previousSecretExpiresAt: string } | undefined>
  /** The endpoint's attempts, newest first, before `beforeId`; undefined when the key has no such endpoint. */
  attempts (apiKeyId: string, id: number, beforeId: number | undefined, limit: number): Promise<{ attempts: WebhookDelivery[], more: boolean } | undefined>
  /** Removes the delivery log older than DELIVERY_LOG_MS (pending deliveries stay); the attempts removed. */
  sweep (now: number): Promise<number>
  /** Throws unless the secrets box opens a stored secret (one is tried): WEBHOOK_ENCRYPTION_KEY is the key they were sealed with. */
  checkSecretsOpen (): Promise<void>
}

export function webhooksRepository (store: Store, box: SecretBox, now: () => number): WebhooksRepository {
  const data: DataAccess = store
  const iso = () => new Date(now()).toISOString()

  function * endpointOf (apiKeyId: string, id: number): ReadWork<WebhookEndpoint | undefined> {
    const row = yield * first(q.byId, { apiKeyId, id })
    return row && toEndpoint(row)
  }

  return {
    create: (apiKeyId, endpoint, secret) => data.write(function * (): Work<CreateOutcome> {
      // The key's row orders the creations of its endpoints, so that two at once cannot both be the 10th.
      yield * lockRow('api_keys', apiKeyId)
      if (Number((yield * first(q.count, { apiKeyId }))?.n ?? 0) >= ENDPOINTS_PER_KEY) return { kind: 'limit_exceeded' }
      const row = yield * first(q.insert, {
        apiKeyId, url: endpoint.url, description: endpoint.description ?? null, events: endpoint.events.join(' '), secret: box.seal(secret), at: iso()
      })
      const created = row && (yield * endpointOf(apiKeyId, row.id))
      if (created === undefined) throw new Error('the endpoint insert returned no row')
      return { kind: 'created', endpoint: created }
    }),

    get: (apiKeyId, id) => data.read(() => endpointOf(apiKeyId, id)),

    page: (apiKeyId, afterId, limit) => data.read(function * () {
      const rows = yield * all(q.page, { apiKeyId, afterId: afterId ?? 0, limit: limit + 1 })
      return { endpoints: rows.slice(0, limit).map(toEndpoint), more: rows.length > limit }
    }),

    update: (apiKeyId, id, changes) => data.write(function * () {
      yield * lockRow('api_keys', apiKeyId)
      const current = yield * endpointOf(apiKeyId, id)
      if (current === undefined) return undefined
      const enabled = changes.enabled ?? current.enabled
      const reenabled = enabled && !current.enabled
      yield * run(q.update, {
        apiKeyId,
        id,
        url: changes.url ?? current.url,
        description: changes.description === undefined ? current.description : changes.description,
        events: (changes.events ?? current.events).join(' '),
        enabled,
        disabledReason: enabled ? null : current.disabledReason,
        at: iso()
      })
      if (reenabled) yield * run(q.resetFailures, { id })
      if (!enabled) yield * run(dropPendingDeliveries, { endpointId: id })
      return yield * endpointOf(apiKeyId, id)
    }),

    remove: (apiKeyId, id) => data.write(function * () {
      yield * lockRow('api_keys', apiKeyId)
      return (yield * run(q.remove, { apiKeyId, id })) > 0
    }),

    checkSecretsOpen: async () => {
      const stored = await data.read(() => first(q.aSecret, {}))
      if (stored === undefined) return
      try {
        box.open(stored.secret)
      } catch {
        throw new Error(box.encrypting
          ? 'WEBHOOK_ENCRYPTION_KEY does not open the webhook secrets stored in the database: set the key they were sealed with'
          : 'webhook secrets are stored encrypted and WEBHOOK_ENCRYPTION_KEY is not set: set the key they were sealed with')
      }
    },

    rotate: (apiKeyId, id, secret) => data.write(function * () {
      yield * lockRow('api_keys', apiKeyId)
      const at = now()
      const expiresAt = at + ROTATION_OVERLAP_MS
      if ((yield * run(q.rotate, { apiKeyId, id, secret: box.seal(secret), now: at, expiresAt, at: new Date(at).toISOString() })) === 0) return undefined
      const endpoint = yield * endpointOf(apiKeyId, id)
      return endpoint && { endpoint, previousSecretExpiresAt: new Date(expiresAt).toISOString() }
    }),

    attempts: (apiKeyId, id, beforeId, limit) => data.read(function * () {
      if ((yield * first(q.byId, { apiKeyId, id })) === undefined) return undefined
      const rows = yield * all(q.attempts, { endpointId: id, beforeId: beforeId ?? Number.MAX_SAFE_INTEGER, limit: limit + 1 })
      return { attempts: rows.slice(0, limit) as WebhookDelivery[], more: rows.length > limit }
    }),

    sweep: (at) => data.write(function * () {
      const before = new Date(at - DELIVERY_LOG_MS).toISOString()
      const removed = yield * run(q.sweepAttempts, { before })
      yield * run(q.sweepDeliveries, { before })
      yield * run(q.sweepEvents, { before })
      return removed
    })
  }
}
