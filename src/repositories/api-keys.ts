import { hash, randomBytes } from 'node:crypto'
import { ConstraintViolation } from '../contract/errors.js'
import type { MaybePromise } from '../maybe-promise.js'
import type { ApiKeyRecord, NewApiKey, Store } from '../store/types.js'

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

/**
 * API keys: their queries are written once (shared-queries.ts); the lookup of an active key by
 * its hash is cached by each engine, and every key written or revoked, by this process or another
 * (the keys command), reaches that cache through the store's coherence.
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
  count (): Promise<number>
}

export function apiKeysRepository (store: Store): ApiKeysRepository {
  return {
    findActive: (keyHash) => store.findActiveApiKey(keyHash),
    findActiveMany: (keyHashes) => store.findActiveApiKeys(keyHashes),
    create: (key) => store.createApiKey(key),
    list: () => store.listApiKeys(),
    revoke: (id) => store.revokeApiKey(id),
    count: () => store.countApiKeys()
  }
}

export interface KeyRequest {
  name: string
  plan: string
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
    const record = await store.createApiKey({
      id: key.id,
      name: request.name,
      plan: request.plan,
      keyHash: key.hash,
      perMinute: request.perMinute ?? null,
      perDay: request.perDay ?? null
    })
    return { record, secret: key.secret }
  } catch (error) {
    if (!isLimitsRefusal(error)) throw error
    throw new InvalidApiKeyError(`the database refuses a key on plan ${JSON.stringify(request.plan)} with per-minute ${String(request.perMinute ?? 'none')} and per-day ${String(request.perDay ?? 'none')}: the plan must be free, pro, business or enterprise, and an enterprise key needs both limits above 0`, { cause: error })
  }
}
