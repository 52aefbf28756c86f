import { issueApiKey } from '../../src/repositories/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import { ALL_SCOPES } from './contract.js'

/**
 * Writes a key straight into a database (migrating it first), before or beside a server process;
 * by default an enterprise key whose limits a test never reaches.
 */
export async function keyInDatabase (databaseUrl: string, name: string, plan = 'enterprise',
  limits: { perMinute: number, perDay: number } | undefined = plan === 'enterprise' ? { perMinute: 10_000_000, perDay: 100_000_000 } : undefined): Promise<{ id: string, secret: string }> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
    const { record, secret } = await issueApiKey(store, { name, plan, ...limits, scopes: ALL_SCOPES })
    return { id: record.id, secret }
  } finally {
    await store.close()
  }
}
