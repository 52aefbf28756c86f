import { hash, randomBytes } from 'node:crypto'
import { ConstraintViolation } from '../contract/errors.js'
import type { MaybePromise } from '../maybe-promise.js'
import { statement, type Arg } from '../store/query.js'
import type { ApiKeyRecord, NewApiKey, Store } from '../store/types.js'
import { all, first, run, type ReadWork } from '../store/work.js'
import { dropRevokedKeyDeliveries } from './webhook-deliveries.js'

// API keys: what a key is (a secret shown once, kept only as its SHA-256), the repository the
// service finds keys through, and the issuing of a key (the keys command, the demo key).

const KEY_PREFIX = 'psk_'

/** SHA-256 of the presented key: the only form in which keys are stored or looked up. */
export function hashApiKey (key: string): string {
  // One-shot crypto.hash: a third of the cost of createHash().update().digest() for a short input.
  return hash('sha256', key, 'hex')
}

/** A fresh key: 32 random bytes shown as psk_ + base64url, and its hash. */
export function generateApiKey (): { id: string, secret: string, hash: string } {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url')
  return { id: 'key_' + randomBytes(8).toString('hex'), secret, hash: hashApiKey(secret) }
}

/** The api_keys columns under the names of ApiKeyRecord. */
const keyColumns = ['id', 'name', 'plan', 'scopes', 'per_minute as perMinute', 'per_day as perDay', 'created_at as createdAt', 'revoked_at as revokedAt'] as const

/** A row of keyColumns as the record: its scopes are kept as one text, separated by spaces. */
const toKeyRecord = <R extends { scopes: string }>(row: R): Omit<R, 'scopes'> & { scopes: string[] } =>
  ({ ...row, scopes: row.scopes === '' ? [] : row.scopes.split(' ') })

/** How many keys one lookup of several asks about: a statement has a fixed number of placeholders. */
export const KEY_HASH_SLOTS = 32
type KeyHashSlots = Record<`hash${number}`, string>

const q = {
  insert: statement('apiKeys.insert', (db, arg: Arg<Omit<NewApiKey, 'scopes'> & { scopes: string, createdAt: string }>) => db
    .insertInto('api_keys')
    .values({ id: arg('id'), name: arg('name'), plan: arg('plan'), key_hash: arg('keyHash'), scopes: arg('scopes'), per_minute: arg('perMinute'), per_day: arg('perDay'), created_at: arg('createdAt') })
    .returning(keyColumns)),
  setScopes: statement('apiKeys.setScopes', (db, arg: Arg<{ id: string, scopes: string }>) => db
    .updateTable('api_keys').set({ scopes: arg('scopes') }).where('id', '=', arg('id'))),
  byId: statement('apiKeys.byId', (db, arg: Arg<{ id: string }>) => db.selectFrom('api_keys').select(keyColumns).where('id', '=', arg('id'))),
  // Revokes once: a key revoked before keeps its first revocation time.
  revoke: statement('apiKeys.revoke', (db, arg: Arg<{ id: string, at: string }>) => db
    .updateTable('api_keys').set({ revoked_at: arg('at') }).where('id', '=', arg('id')).where('revoked_at', 'is', null)),
  list: statement('apiKeys.list', (db) => db.selectFrom('api_keys').select(keyColumns).orderBy('created_at').orderBy('id')),
  activeByHash: statement('apiKeys.activeByHash', (db, arg: Arg<{ keyHash: string }>) => db
    .selectFrom('api_keys').select(keyColumns).where('key_hash', '=', arg('keyHash')).where('revoked_at', 'is', null)),
  activeByHashes: statement('apiKeys.activeByHashes', (db, arg: Arg<KeyHashSlots>) => db
    .selectFrom('api_keys').select([...keyColumns, 'key_hash as keyHash'])
    .where('key_hash', 'in', Array.from({ length: KEY_HASH_SLOTS }, (_, i) => arg(`hash${i}`)))
    .where('revoked_at', 'is', null)),
  count: statement('apiKeys.count', (db) => db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')))
}

/** The active keys among these hashes, by hash: one statement per KEY_HASH_SLOTS hashes (slots left over repeat the first). */
function * activeByHashes (keyHashes: readonly string[]): ReadWork<Map<string, ApiKeyRecord>> {
  const found = new Map<string, ApiKeyRecord>()
  for (let start = 0; start < keyHashes.length; start += KEY_HASH_SLOTS) {
    const chunk = keyHashes.slice(start, start + KEY_HASH_SLOTS)
    const args: KeyHashSlots = {}
    for (let i = 0; i < KEY_HASH_SLOTS; i++) args[`hash${i}`] = chunk[i] ?? chunk[0]!
    for (const { keyHash, ...row } of yield * all(q.activeByHashes, args)) found.set(keyHash, toKeyRecord(row))
  }
  return found
}

/**
 * API keys, written once for both engines. Every /v1 request looks its key up by hash: through
 * the engine's cache of active keys, which every key written or revoked, by this process or
 * another (the keys command), reaches through the store's coherence.
 */
export interface ApiKeysRepository {
  /** The active (unrevoked) key with this SHA-256 hash, if any; in the same call when the store has it at hand. */
  findActive (keyHash: string): MaybePromise<ApiKeyRecord | undefined>
  /** The active keys among these hashes, by hash, looked up together. */
  findActiveMany (keyHashes: readonly string[]): MaybePromise<ReadonlyMap<string, ApiKeyRecord>>
  create (key: NewApiKey): Promise<ApiKeyRecord>
  list (): Promise<ApiKeyRecord[]>
  /** Undefined when no key has that id; a key revoked before keeps its first revocation time. */
  revoke (id: string): Promise<ApiKeyRecord | undefined>
  /** Replaces the key's scopes; undefined when no key has that id. */
  setScopes (id: string, scopes: readonly string[]): Promise<ApiKeyRecord | undefined>
  count (): Promise<number>
}

export function apiKeysRepository (store: Store): ApiKeysRepository {
  const { activeKeys } = store.caches
  return {
    findActive: (keyHash) => activeKeys.get(keyHash, function * () {
      const row = yield * first(q.activeByHash, { keyHash })
      return row && toKeyRecord(row)
    }),
    findActiveMany: (keyHashes) => activeKeys.getMany(keyHashes, activeByHashes),
    create: (key) => store.write(function * () {
      const row = yield * first(q.insert, { ...key, scopes: key.scopes.join(' '), createdAt: new Date().toISOString() })
      if (row === undefined) throw new Error('the key insert returned no row')
      return toKeyRecord(row)
    }),
    list: () => store.read(function * () { return (yield * all(q.list, {})).map(toKeyRecord) }),
    revoke: (id) => store.write(function * () {
      yield * run(q.revoke, { id, at: new Date().toISOString() })
      yield * run(dropRevokedKeyDeliveries, { apiKeyId: id })
      const row = yield * first(q.byId, { id })
      return row && toKeyRecord(row)
    }),
    setScopes: (id, scopes) => store.write(function * () {
      yield * run(q.setScopes, { id, scopes: scopes.join(' ') })
      const row = yield * first(q.byId, { id })
      return row && toKeyRecord(row)
    }),
    // COUNT(*) is a BIGINT on PostgreSQL, which pg may hand over as text.
    count: () => store.read(function * () { return Number((yield * first(q.count, {}))?.n ?? 0) })
  }
}

export interface KeyRequest {
  name: string
  plan: string
  /** The scopes it holds (bearerAuth's x-scopes of openapi.yaml). */
  scopes: readonly string[]
  /** Enterprise keys only: their own limits. */
  perMinute?: number | null
  perDay?: number | null
}

/** The database refused a key row without valid limits (SQLite migration 004, PostgreSQL migration 005: api_keys_limits). */
export class InvalidApiKeyError extends Error {
  override name = 'InvalidApiKeyError'
}

/** Whether `error` is the database's refusal of a key without valid limits, on either engine. */
function isLimitsRefusal (error: unknown): boolean {
  const refusal = error instanceof ConstraintViolation ? error.cause : error
  const { code, message, constraint } = (refusal ?? {}) as { code?: unknown, message?: unknown, constraint?: unknown }
  return (code === 'SQLITE_CONSTRAINT_TRIGGER' && String(message).startsWith('api_keys_limits')) ||
    (code === '23514' && constraint === 'api_keys_limits')
}

/** Creates a key in the store; the secret is returned once and never stored. */
export async function issueApiKey (store: Store, request: KeyRequest): Promise<{ record: ApiKeyRecord, secret: string }> {
  const key = generateApiKey()
  try {
    const record = await apiKeysRepository(store).create({
      id: key.id,
      name: request.name,
      plan: request.plan,
      keyHash: key.hash,
      scopes: request.scopes,
      perMinute: request.perMinute ?? null,
      perDay: request.perDay ?? null
    })
    return { record, secret: key.secret }
  } catch (error) {
    if (!isLimitsRefusal(error)) throw error
    throw new InvalidApiKeyError(`the database refuses a key on plan ${JSON.stringify(request.plan)} with per-minute ${String(request.perMinute ?? 'none')} and per-day ${String(request.perDay ?? 'none')}: the plan must be free, pro, business or enterprise, and an enterprise key needs both limits above 0`, { cause: error })
  }
}
