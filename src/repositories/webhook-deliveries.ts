import { sql } from 'kysely'
import { statement, type Arg } from '../store/query.js'
import type { Store } from '../store/types.js'
import { all, first, lockRow, run, type Work } from '../store/work.js'

/** An endpoint whose deliveries have all failed this long is disabled (openapi.yaml, Webhooks). */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

/** An endpoint gets at most about this many attempts under way at once, on all instances together. */
export const PER_ENDPOINT = 16

/** A delivery an instance holds: what it needs to make one attempt. */
export interface ClaimedDelivery {
  id: number
  /** Whom the delivery is leased to: the claim that took it (settling checks it still is). */
  lease: string
  endpointId: number
  apiKeyId: string
  /** When the endpoint's deliveries started failing, as the claim read it; null: they were not. */
  failingSince: number | null
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
  // The enabled endpoints with a due delivery that no instance holds (or whose holder's lease has
  // run out), the earliest due first, each with how many of its deliveries are under way (the
  // leased ones: webhook_deliveries_leased holds only those). Driven by the endpoints, so that a
  // claim reads a few index entries per endpoint, never the whole backlog of one.
  ready: statement('webhookDeliveries.ready', (db, arg: Arg<{ now: number, perEndpoint: number, limit: number }>) => db
    .selectFrom((eb) => eb.selectFrom('webhook_endpoints as e')
      .select((s) => ['e.id',
        s.selectFrom('webhook_deliveries as h').select((c) => c.fn.countAll().as('n'))
          .whereRef('h.endpoint_id', '=', 'e.id').where('h.lease_until', '>=', arg('now')).as('busy'),
        s.selectFrom('webhook_deliveries as n').select('n.next_attempt_at')
          .whereRef('n.endpoint_id', '=', 'e.id').where('n.state', '=', 'pending').where('n.next_attempt_at', '<=', arg('now'))
          .where((x) => x.or([x('n.lease_until', 'is', null), x('n.lease_until', '<', arg('now'))]))
          .orderBy('n.next_attempt_at').limit(1).as('due')])
      .where('e.enabled', '=', true)
      .as('r'))
    .select(['r.id', 'r.busy'])
    .where('r.due', 'is not', null).where('r.busy', '<', arg('perEndpoint'))
    .orderBy('r.due').limit(arg('limit'))),
  // Up to `limit` of one endpoint's due deliveries that no instance holds, taken for `until` under
  // the claim's own lease name. PostgreSQL skips the rows another instance is taking at this
  // moment rather than waiting for them; SQLite has one writer at a time.
  take: statement('webhookDeliveries.take', (db, arg: Arg<{ endpointId: number, now: number, until: number, lease: string, limit: number }>, engine) => db
    .updateTable('webhook_deliveries')
    .set({ lease_until: arg('until'), leased_by: arg('lease') })
    .where('id', 'in', (eb) => {
      const next = eb.selectFrom('webhook_deliveries as n').select('n.id')
        .where('n.endpoint_id', '=', arg('endpointId')).where('n.state', '=', 'pending').where('n.next_attempt_at', '<=', arg('now'))
        .where((x) => x.or([x('n.lease_until', 'is', null), x('n.lease_until', '<', arg('now'))]))
        .orderBy('n.next_attempt_at').limit(arg('limit'))
      return engine === 'postgres' ? next.forUpdate().skipLocked() : next
    })
    .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', arg('now'))]))),
  due: statement('webhookDeliveries.due', (db, arg: Arg<{ now: number }>) => db
    .selectFrom('webhook_deliveries').select('id').where('state', '=', 'pending').where('next_attempt_at', '<=', arg('now'))
    .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', arg('now'))])).limit(1)),
  // What one claim took, in one read.
  claimed: statement('webhookDeliveries.claimed', (db, arg: Arg<{ lease: string }>) => db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.id', 'd.leased_by as lease', 'd.endpoint_id as endpointId', 'e.api_key_id as apiKeyId', 'e.failing_since as failingSince', 'd.attempts',
      'ev.event_id as eventId', 'ev.type', 'ev.payload', 'e.url', 'e.secret', 'e.previous_secret as previousSecret',
      'e.previous_secret_expires_at as previousSecretExpiresAt'])
    .where('d.leased_by', '=', arg('lease')).where('d.state', '=', 'pending')),
  logAttempt: statement('webhookDeliveries.logAttempt', (db, arg: Arg<{ deliveryId: number, endpointId: number, attempt: number, at: string, statusCode: number | null, error: string | null, durationMs: number, responseBody: string | null, nextAttemptAt: string | null }>) => db
    .insertInto('webhook_attempts')
    .values({ delivery_id: arg('deliveryId'), endpoint_id: arg('endpointId'), attempt: arg('attempt'), attempted_at: arg('at'), status_code: arg('statusCode'), error: arg('error'), duration_ms: arg('durationMs'), response_body: arg('responseBody'), next_attempt_at: arg('nextAttemptAt') })),
  // Only while this instance still holds it: a delivery another one took over meanwhile is theirs.
  settle: statement('webhookDeliveries.settle', (db, arg: Arg<{ id: number, lease: string, state: 'pending' | 'delivered' | 'failed', attempts: number, nextAttemptAt: number | null }>) => db
    .updateTable('webhook_deliveries')
    .set({ state: arg('state'), attempts: arg('attempts'), next_attempt_at: arg('nextAttemptAt'), lease_until: null, leased_by: null })
    .where('id', '=', arg('id')).where('leased_by', '=', arg('lease'))),
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
/** One attempt to settle: the delivery as claimed and how the attempt went. */
export interface Settlement {
  delivery: ClaimedDelivery
  outcome: AttemptOutcome
}

export interface DeliveryQueue {
  /** Whether a delivery is due and free to take (a read: an idle instance looks without writing). */
  anyDue (now: number): Promise<boolean>
  /** Takes up to `limit` due deliveries until `until`, leased to `instance` (named per claim). */
  claim (instance: string, now: number, until: number, limit: number): Promise<ClaimedDelivery[]>
  /**
   * Logs attempts and moves their deliveries on (delivered, due again, or failed), all in one
   * transaction; an endpoint whose deliveries have all failed for DISABLE_AFTER_MS is disabled.
   * How many of them were still leased as claimed (each attempt is logged either way).
   */
  settle (settlements: readonly Settlement[], now: number): Promise<number>
  /** Deliveries not yet made, and when the oldest one's event happened. */
  pending (): Promise<{ count: number, oldest: string | null }>
  /**
   * The endpoint's failed deliveries of events recorded at `since` or later, due again from `now`
   * with the whole schedule (an operator's replay, `db redeliver`). Only an enabled endpoint.
   */
  redeliver (endpointId: number, since: string, now: number): Promise<Redelivery>
}

export function deliveryQueue (store: Store): DeliveryQueue {
  let claims = 0
  return {
    anyDue: (now) => store.read(function * () { return (yield * first(q.due, { now })) !== undefined }),

    claim: (instance, now, until, limit) => store.write(function * () {
      const lease = `${instance}.${++claims}`
      // At most PER_ENDPOINT of an endpoint's deliveries under way, so that a receiver that hangs
      // holds a few delivery slots, never all of them: every other endpoint's deliveries go on.
      let taken = 0
      for (const { id, busy } of yield * all(q.ready, { now, perEndpoint: PER_ENDPOINT, limit })) {
        if (taken === limit) break
        taken += yield * run(q.take, { endpointId: id, now, until, lease, limit: Math.min(PER_ENDPOINT - Number(busy), limit - taken) })
      }
      if (taken === 0) return []
      // BIGINT columns come from pg as text.
      const time = (value: number | string | null) => value === null ? null : Number(value)
      return (yield * all(q.claimed, { lease })).map((row) => ({
        ...row, lease, failingSince: time(row.failingSince), previousSecretExpiresAt: time(row.previousSecretExpiresAt)
      }))
    }),

    settle: (settlements, now) => store.write(function * (): Work<number> {
      // An endpoint's row is written after a failure, and after a success when its deliveries
      // were failing; its key's row orders such writes (schema.ts writeLocks), locked first, in
      // one order. A success on an endpoint that was not failing writes nothing of it, so the
      // deliveries of one busy endpoint do not queue on its key's row. (An endpoint that began
      // failing after the claim read it is cleared by the next success claimed after.)
      const touchesEndpoint = (s: Settlement) => !s.outcome.delivered || s.delivery.failingSince !== null
      for (const key of [...new Set(settlements.filter(touchesEndpoint).map((s) => s.delivery.apiKeyId))].sort()) yield * lockRow('api_keys', key)
      const at = new Date(now).toISOString()
      let held = 0
      for (const { delivery, outcome } of settlements) {
        const attempt = delivery.attempts + 1
        yield * run(q.logAttempt, {
          deliveryId: delivery.id,
          endpointId: delivery.endpointId,
          attempt,
          at,
          statusCode: outcome.statusCode,
          error: outcome.error,
          durationMs: outcome.durationMs,
          responseBody: outcome.responseBody,
          nextAttemptAt: outcome.nextAttemptAt === null ? null : new Date(outcome.nextAttemptAt).toISOString()
        })
        const state = outcome.delivered ? 'delivered' : outcome.nextAttemptAt === null ? 'failed' : 'pending'
        held += yield * run(q.settle, { id: delivery.id, lease: delivery.lease, state, attempts: attempt, nextAttemptAt: outcome.nextAttemptAt })
        if (outcome.delivered) {
          if (delivery.failingSince !== null) yield * run(q.succeeded, { endpointId: delivery.endpointId })
        } else {
          yield * run(q.failed, { endpointId: delivery.endpointId, now })
          yield * run(q.disable, { endpointId: delivery.endpointId, since: now - DISABLE_AFTER_MS, reason: 'every delivery failed for 5 days', at })
          yield * run(dropPendingDeliveries, { endpointId: delivery.endpointId })
        }
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
