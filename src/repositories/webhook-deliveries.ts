import { sql } from 'kysely'
import { statement, type Arg } from '../store/query.js'
import type { Store } from '../store/types.js'
import { all, first, lockRow, run, type Work } from '../store/work.js'

/** An endpoint whose deliveries have all failed this long is disabled (openapi.yaml, Webhooks). */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

/** A delivery an instance holds: what it needs to make one attempt. */
export interface ClaimedDelivery {
  id: number
  endpointId: number
  apiKeyId: string
  /** Attempts made before this one. */
  attempts: number
  eventId: string
  type: string
  /** The envelope as JSON text: the body. */
  payload: string
  url: string
  /** As stored (SecretBox seals them). */
  secret: string
  previousSecret: string | null
  previousSecretExpiresAt: number | null
}

/** How one attempt went. */
export interface AttemptOutcome {
  delivered: boolean
  statusCode: number | null
  /** Why it failed (timeout, connection_refused, status_code…); null when delivered. */
  error: string | null
  durationMs: number
  responseBody: string | null
  /** When to try again (milliseconds since the epoch); null: delivered, or given up. */
  nextAttemptAt: number | null
}

/** A disabled endpoint gets nothing more: what was still to be sent to it is dropped. */
export const dropPendingDeliveries = statement('webhookDeliveries.dropPending', (db, arg: Arg<{ endpointId: number }>) => db
    .updateTable('webhook_deliveries').set({ state: 'failed', next_attempt_at: null, lease_until: null, leased_by: null })
    .where('endpoint_id', '=', arg('endpointId')).where('state', '=', 'pending')
    .where((eb) => eb.exists(eb.selectFrom('webhook_endpoints as e').select('e.id').where('e.id', '=', arg('endpointId')).where('e.enabled', '=', false))))

/**
 * A revoked key's endpoints get nothing more: what was still to be sent to them is dropped with
 * the revocation (a key revoked because it leaked may have registered the endpoint).
 */
export const dropRevokedKeyDeliveries = statement('webhookDeliveries.dropRevokedKey', (db, arg: Arg<{ apiKeyId: string }>) => db
  .updateTable('webhook_deliveries').set({ state: 'failed', next_attempt_at: null, lease_until: null, leased_by: null })
  .where('state', '=', 'pending')
  .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints as e').innerJoin('api_keys as k', 'k.id', 'e.api_key_id').select('e.id')
    .where('e.api_key_id', '=', arg('apiKeyId')).where('k.revoked_at', 'is not', null)))

const q = {
  // Due, pending deliveries to enabled endpoints that no instance holds (or whose holder's lease
  // has run out), taken for `until`. PostgreSQL skips the rows another instance is taking at this
  // moment rather than waiting for them; SQLite has one writer at a time.
  claim: statement('webhookDeliveries.claim', (db, arg: Arg<{ now: number, until: number, instance: string, limit: number }>, engine) => db
    .updateTable('webhook_deliveries')
    .set({ lease_until: arg('until'), leased_by: arg('instance') })
    .where('id', 'in', (eb) => {
      const due = eb.selectFrom('webhook_deliveries as d').innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id').select('d.id')
        .where('d.state', '=', 'pending').where('e.enabled', '=', true).where('d.next_attempt_at', '<=', arg('now'))
        .where((w) => w.or([w('d.lease_until', 'is', null), w('d.lease_until', '<', arg('now'))]))
        .orderBy('d.next_attempt_at').limit(arg('limit'))
      return engine === 'postgres' ? due.forUpdate('d').skipLocked() : due
    })
    .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', arg('now'))]))
    .returning('id')),
  due: statement('webhookDeliveries.due', (db, arg: Arg<{ now: number }>) => db
    .selectFrom('webhook_deliveries').select('id').where('state', '=', 'pending').where('next_attempt_at', '<=', arg('now'))
    .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', arg('now'))])).limit(1)),
  details: statement('webhookDeliveries.details', (db, arg: Arg<{ id: number, instance: string }>) => db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.id', 'd.endpoint_id as endpointId', 'e.api_key_id as apiKeyId', 'd.attempts', 'ev.event_id as eventId', 'ev.type', 'ev.payload', 'e.url',
      'e.secret', 'e.previous_secret as previousSecret', 'e.previous_secret_expires_at as previousSecretExpiresAt'])
    .where('d.id', '=', arg('id')).where('d.leased_by', '=', arg('instance'))),
  logAttempt: statement('webhookDeliveries.logAttempt', (db, arg: Arg<{ deliveryId: number, endpointId: number, attempt: number, at: string, statusCode: number | null, error: string | null, durationMs: number, responseBody: string | null, nextAttemptAt: string | null }>) => db
    .insertInto('webhook_attempts')
    .values({ delivery_id: arg('deliveryId'), endpoint_id: arg('endpointId'), attempt: arg('attempt'), attempted_at: arg('at'), status_code: arg('statusCode'), error: arg('error'), duration_ms: arg('durationMs'), response_body: arg('responseBody'), next_attempt_at: arg('nextAttemptAt') })),
  // Only while this instance still holds it: a delivery another one took over meanwhile is theirs.
  settle: statement('webhookDeliveries.settle', (db, arg: Arg<{ id: number, instance: string, state: 'pending' | 'delivered' | 'failed', attempts: number, nextAttemptAt: number | null }>) => db
    .updateTable('webhook_deliveries')
    .set({ state: arg('state'), attempts: arg('attempts'), next_attempt_at: arg('nextAttemptAt'), lease_until: null, leased_by: null })
    .where('id', '=', arg('id')).where('leased_by', '=', arg('instance'))),
  succeeded: statement('webhookDeliveries.succeeded', (db, arg: Arg<{ endpointId: number }>) => db
    .updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', arg('endpointId'))),
  failed: statement('webhookDeliveries.failed', (db, arg: Arg<{ endpointId: number, now: number }>) => db
    .updateTable('webhook_endpoints').set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', sql<number>`${arg('now')}`) })).where('id', '=', arg('endpointId'))),
  disable: statement('webhookDeliveries.disable', (db, arg: Arg<{ endpointId: number, since: number, reason: string, at: string }>) => db
    .updateTable('webhook_endpoints').set({ enabled: false, disabled_reason: arg('reason'), updated_at: arg('at') })
    .where('id', '=', arg('endpointId')).where('enabled', '=', true).where('failing_since', '<=', arg('since'))),
  endpoint: statement('webhookDeliveries.endpoint', (db, arg: Arg<{ endpointId: number }>) => db
    .selectFrom('webhook_endpoints').select(['enabled', 'api_key_id as apiKeyId']).where('id', '=', arg('endpointId'))),
  // The schedule starts again: attempts are numbered from 1 in the log.
  redeliver: statement('webhookDeliveries.redeliver', (db, arg: Arg<{ endpointId: number, since: string, now: number }>) => db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', attempts: 0, next_attempt_at: arg('now'), lease_until: null, leased_by: null })
    .where('endpoint_id', '=', arg('endpointId')).where('state', '=', 'failed')
    .where('event_id', 'in', (eb) => eb.selectFrom('webhook_events').select('id').where('created_at', '>=', arg('since')))),
  pending: statement('webhookDeliveries.pending', (db) => db
    .selectFrom('webhook_deliveries as d').innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('ev.created_at').as('oldest')])
    .where('d.state', '=', 'pending'))
}

/** What `redeliver` did: queued `count` deliveries again, or nothing (no such endpoint, or a disabled one). */
export type Redelivery = { outcome: 'queued', count: number } | { outcome: 'no_endpoint' } | { outcome: 'disabled' }

/** The outbox's deliveries, as the delivering instances take them, attempt them and settle them. */
export interface DeliveryQueue {
  /** Whether a delivery is due and free to take (a read: an idle instance looks without writing). */
  anyDue (now: number): Promise<boolean>
  /** Takes up to `limit` due deliveries for this instance until `until`. */
  claim (instance: string, now: number, until: number, limit: number): Promise<ClaimedDelivery[]>
  /**
   * Logs an attempt and moves its delivery on (delivered, due again, or failed); an endpoint
   * whose deliveries have all failed for DISABLE_AFTER_MS is disabled. Whether this instance still
   * held the delivery (the attempt is logged either way).
   */
  settle (instance: string, delivery: ClaimedDelivery, outcome: AttemptOutcome, now: number): Promise<boolean>
  /** Deliveries not yet made, and when the oldest one's event happened. */
  pending (): Promise<{ count: number, oldest: string | null }>
  /**
   * The endpoint's failed deliveries of events recorded at `since` or later, due again from `now`
   * with the whole schedule (an operator's replay, `db redeliver`). Only an enabled endpoint.
   */
  redeliver (endpointId: number, since: string, now: number): Promise<Redelivery>
}

export function deliveryQueue (store: Store): DeliveryQueue {
  return {
    anyDue: (now) => store.read(function * () { return (yield * first(q.due, { now })) !== undefined }),

    claim: (instance, now, until, limit) => store.write(function * () {
      const claimed = yield * all(q.claim, { now, until, instance, limit })
      const deliveries: ClaimedDelivery[] = []
      for (const { id } of claimed) {
        const row = yield * first(q.details, { id, instance })
        if (row !== undefined) deliveries.push(row)
      }
      return deliveries
    }),

    settle: (instance, delivery, outcome, now) => store.write(function * (): Work<boolean> {
      // The endpoint's row is written below; its key's row orders such writes (schema.ts writeLocks).
      yield * lockRow('api_keys', delivery.apiKeyId)
      const attempt = delivery.attempts + 1
      yield * run(q.logAttempt, {
        deliveryId: delivery.id,
        endpointId: delivery.endpointId,
        attempt,
        at: new Date(now).toISOString(),
        statusCode: outcome.statusCode,
        error: outcome.error,
        durationMs: outcome.durationMs,
        responseBody: outcome.responseBody,
        nextAttemptAt: outcome.nextAttemptAt === null ? null : new Date(outcome.nextAttemptAt).toISOString()
      })
      const state = outcome.delivered ? 'delivered' : outcome.nextAttemptAt === null ? 'failed' : 'pending'
      const held = (yield * run(q.settle, { id: delivery.id, instance, state, attempts: attempt, nextAttemptAt: outcome.nextAttemptAt })) > 0
      if (outcome.delivered) {
        yield * run(q.succeeded, { endpointId: delivery.endpointId })
      } else {
        yield * run(q.failed, { endpointId: delivery.endpointId, now })
        yield * run(q.disable, {
          endpointId: delivery.endpointId,
          since: now - DISABLE_AFTER_MS,
          reason: 'every delivery failed for 5 days',
          at: new Date(now).toISOString()
        })
        yield * run(dropPendingDeliveries, { endpointId: delivery.endpointId })
      }
      return held
    }),

    redeliver: (endpointId, since, now) => store.write(function * (): Work<Redelivery> {
      const endpoint = yield * first(q.endpoint, { endpointId })
      if (endpoint === undefined) return { outcome: 'no_endpoint' }
      // Ordered with the endpoint's own changes (disabling drops what is pending): its key's row.
      yield * lockRow('api_keys', endpoint.apiKeyId)
      if (!(yield * first(q.endpoint, { endpointId }))?.enabled) return { outcome: 'disabled' }
      return { outcome: 'queued', count: yield * run(q.redeliver, { endpointId, since, now }) }
    }),

    pending: () => store.read(function * () {
      const row = yield * first(q.pending, {})
      return { count: Number(row?.n ?? 0), oldest: (row?.oldest as string | null | undefined) ?? null }
    })
  }
}
