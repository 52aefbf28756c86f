import type { Config } from './config.js'
import { issueApiKey } from './store/api-keys.js'
import type { Store } from './store/types.js'

/**
 * First start outside production with no keys at all: one demo key on the free plan, so a
 * newcomer can call the API at once. Returns the secret (to print once) or undefined.
 */
export async function ensureDemoKey (store: Store, config: Config): Promise<string | undefined> {
  if (config.nodeEnv === 'production' || await store.countApiKeys() > 0) return undefined
  const { secret } = await issueApiKey(store, { name: 'demo', plan: 'free' })
  return secret
}
