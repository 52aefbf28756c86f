import type { ApiKeyRecord, NewApiKey, Store } from '../store/types.js'

/**
 * API keys: their queries are written once (shared-queries.ts); the lookup of an active key by
 * its hash is cached by each engine, and every key written or revoked, by this process or another
 * (the keys command), reaches that cache through the store's coherence.
 */
export interface ApiKeysRepository {
  /** The active (unrevoked) key with this SHA-256 hash, if any. */
  findActive (keyHash: string): Promise<ApiKeyRecord | undefined>
  create (key: NewApiKey): Promise<ApiKeyRecord>
  list (): Promise<ApiKeyRecord[]>
  /** Undefined when no key has that id; a key revoked before keeps its first revocation time. */
  revoke (id: string): Promise<ApiKeyRecord | undefined>
  count (): Promise<number>
}

export function apiKeysRepository (store: Store): ApiKeysRepository {
  return {
    findActive: (keyHash) => store.findActiveApiKey(keyHash),
    create: (key) => store.createApiKey(key),
    list: () => store.listApiKeys(),
    revoke: (id) => store.revokeApiKey(id),
    count: () => store.countApiKeys()
  }
}
