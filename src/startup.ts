import { availableParallelism } from 'node:os'
import { type Config, maskPassword } from './config.js'
import { apiKeysRepository, issueApiKey } from './repositories/api-keys.js'
import type { Store } from './store/types.js'

/** NODE_ENV values (unset is development) under which a demo key may be made: any other is a deployment. */
const demoEnvironments = new Set(['development', 'test'])

/**
 * First start on the embedded SQLite database, in development or test, with no keys at all: one
 * demo key on the free plan holding every scope (`scopes`: openapi.yaml's), so a newcomer can call
 * every operation at once. Never on PostgreSQL, where a
 * shared database with no keys yet is a deployment, not a newcomer's laptop, and never under
 * another NODE_ENV (prod, staging…): an unknown name is not taken for a laptop either. Returns the
 * secret (to print once) or undefined.
 */
export async function ensureDemoKey (store: Store, config: Config, scopes: readonly string[]): Promise<string | undefined> {
  if (store.engine !== 'sqlite' || !demoEnvironments.has(config.nodeEnv) || await apiKeysRepository(store).count() > 0) return undefined
  const { secret } = await issueApiKey(store, { name: 'demo', plan: 'free', scopes })
  return secret
}

/** The database name of a postgres:// address, if it has one that can be read. */
function postgresDatabaseName (databaseUrl: string): string | undefined {
  try {
    const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1))
    return name === '' ? undefined : name
  } catch {
    return undefined
  }
}

/**
 * One line for a database that could not be opened, saying what failed and what to check; the
 * address is shown without its password. `next` says what to do once a missing PostgreSQL
 * database exists (the server and `db migrate` create the tables themselves).
 */
export function databaseFailure (error: unknown, databaseUrl: string, next = ''): string {
  const shown = databaseUrl.startsWith('sqlite:') ? databaseUrl : maskPassword(databaseUrl)
  // A driver's message could quote the address it was given.
  const message = (error instanceof Error ? error.message : String(error)).split(databaseUrl).join(shown)
  // 3D000, invalid_catalog_name: PostgreSQL does not create databases on connection.
  if ((error as { code?: unknown }).code === '3D000') {
    const name = postgresDatabaseName(databaseUrl)
    return `PostgreSQL: ${message} (DATABASE_URL=${shown}): create it first${name === undefined ? '' : ` (e.g. createdb ${name})`}${next}`
  }
  return `cannot open the database (DATABASE_URL=${shown}): ${message}`
}

/** The V8 flag docs/operations.md ("One core") gives for a process confined to one core. */
export const ONE_CORE_FLAG = '--single-threaded-gc'

/**
 * Advice for the start-up log when the process may use one core only (its CPU affinity: taskset,
 * cpusets) and node was started without ONE_CORE_FLAG: V8's marking threads would take turns with
 * the event loop. The service does not set the flag itself: NODE_OPTIONS refuses it, and Node
 * leaves V8 flags changed after start undefined. So it says so, once.
 */
export function oneCoreAdvice (cores = availableParallelism(), nodeFlags: readonly string[] = process.execArgv): string | undefined {
  if (cores !== 1 || nodeFlags.includes(ONE_CORE_FLAG)) return undefined
  return `one CPU core available: start node with ${ONE_CORE_FLAG} so that garbage collection does not take turns with requests (docs/operations.md, "One core")`
}
