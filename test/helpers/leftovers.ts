/**
 * What the suite left behind in its PostgreSQL database and Redis index (TEST_DATABASE_URL,
 * TEST_REDIS_URL): schemas of createTestSchema and keys under redisPrefix's prefixes, which every
 * test drops or deletes as it ends. Meaningful once no test runs (others' tests on the same
 * database and index count too): `.ci/run` runs it after `npm test`, and so can you,
 *
 *   node --import ./test/helpers/ts-register.mjs test/helpers/leftovers.ts
 *
 * It prints one line for each, and exits 1 when a schema or a key is left.
 */
import { Redis } from 'ioredis'
import { adminQuery, POSTGRES_SHOWN, TEST_SCHEMA_PREFIX } from './postgres.js'
import { REDIS_SHOWN, REDIS_URL, TEST_KEY_PREFIX } from './redis.js'

let left = 0

try {
  const schemas = (await adminQuery<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY nspname', [TEST_SCHEMA_PREFIX]))
    .map((row) => row.name)
  left += schemas.length
  console.log(`PostgreSQL (${POSTGRES_SHOWN}): ${schemas.length} ${TEST_SCHEMA_PREFIX}… schemas left${schemas.length > 0 ? `: ${schemas.join(', ')}` : ''}`)
} catch (error) {
  console.log(`PostgreSQL (${POSTGRES_SHOWN}): not checked, unreachable (${(error as Error).message})`)
}

const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null })
client.on('error', () => {})
try {
  await client.connect()
  let keys = 0
  let cursor = '0'
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${TEST_KEY_PREFIX}*`, 'COUNT', 1000)
    keys += found.length
    cursor = next
  } while (cursor !== '0')
  left += keys
  console.log(`Redis (${REDIS_SHOWN}): ${keys} ${TEST_KEY_PREFIX}… keys left; ${await client.dbsize()} keys in the index in all`)
} catch (error) {
  console.log(`Redis (${REDIS_SHOWN}): not checked, unreachable (${(error as Error).message})`)
} finally {
  client.disconnect()
}

process.exitCode = left > 0 ? 1 : 0
