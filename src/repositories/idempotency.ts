import { statement, type Arg } from '../store/query.js'
import { first, run, tryLock, type DataAccess, type Work } from '../store/work.js'

/** How long an answer is kept for retries (the Idempotency-Key rules of openapi.yaml). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** A request made with an Idempotency-Key: the key is scoped to the API key that sent it. */
export interface IdempotentRequest {
  apiKeyId: string
  key: string
  /** SHA-256 of what the request asks for: another request under the same key differs here. */
  fingerprint: string
}

/** What became of a request under an Idempotency-Key. */
export type Idempotent<T> =
  | { kind: 'done', outcome: T, replayed: boolean }
  | { kind: 'reused' }
  | { kind: 'in_use' }

const find = statement('idempotency.find', (db, arg: Arg<{ apiKeyId: string, key: string, now: number }>) => db
  .selectFrom('idempotency_keys')
  .select(['fingerprint', 'outcome'])
  .where('api_key_id', '=', arg('apiKeyId'))
  .where('idempotency_key', '=', arg('key'))
  .where('expires_at', '>', arg('now')))

// An expired record that the sweep has not removed yet is replaced.
const save = statement('idempotency.save', (db, arg: Arg<{ apiKeyId: string, key: string, fingerprint: string, outcome: string, expiresAt: number }>) => db
  .insertInto('idempotency_keys')
  .values({ api_key_id: arg('apiKeyId'), idempotency_key: arg('key'), fingerprint: arg('fingerprint'), outcome: arg('outcome'), expires_at: arg('expiresAt') })
  .onConflict((conflict) => conflict.columns(['api_key_id', 'idempotency_key']).doUpdateSet((eb) => ({
    fingerprint: eb.ref('excluded.fingerprint'),
    outcome: eb.ref('excluded.outcome'),
    expires_at: eb.ref('excluded.expires_at')
  }))))

const sweep = statement('idempotency.sweep', (db, arg: Arg<{ now: number }>) => db
  .deleteFrom('idempotency_keys')
  .where('expires_at', '<=', arg('now')))

export interface IdempotencyRepository {
  /**
   * Work that runs `work` once per Idempotency-Key, inside the caller's transaction: a retry with
   * the same request gets the outcome kept from the first run (if `keep` kept it), another request
   * under the key is refused, and so is a retry while the first run's transaction is still open.
   */
  guard<T> (request: IdempotentRequest, now: number, work: () => Work<T>, keep: (outcome: T) => boolean): Work<Idempotent<T>>
  /** Removes the records past their 24 hours; the number removed. */
  sweep (now: number): Promise<number>
}

/** See IdempotencyRepository.guard. */
function * guard<T> (request: IdempotentRequest, now: number, work: () => Work<T>, keep: (outcome: T) => boolean): Work<Idempotent<T>> {
  const { apiKeyId, key, fingerprint } = request
  if (!(yield * tryLock(`idempotency ${apiKeyId} ${key}`))) return { kind: 'in_use' }
  const kept = yield * first(find, { apiKeyId, key, now })
  if (kept !== undefined) {
    if (kept.fingerprint !== fingerprint) return { kind: 'reused' }
    // The text written below from an outcome of the same work.
    const outcome: T = JSON.parse(kept.outcome)
    return { kind: 'done', outcome, replayed: true }
  }
  const outcome = yield * work()
  if (keep(outcome)) {
    yield * run(save, { apiKeyId, key, fingerprint, outcome: JSON.stringify(outcome), expiresAt: now + IDEMPOTENCY_TTL_MS })
  }
  return { kind: 'done', outcome, replayed: false }
}

export function idempotencyRepository (data: DataAccess): IdempotencyRepository {
  return {
    guard,
    sweep: (now) => data.write(() => run(sweep, { now }))
  }
}
