import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Teardown } from './app.js'

/**
 * The suite's Redis: TEST_REDIS_URL, by default the machine's shared server, index 0 (`.ci/run`
 * keeps one running); a path `/N` chooses index N, which keeps a run's keys apart from others'.
 * Tests use key prefixes of their own (redisPrefix) and delete their keys.
 */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

function parseRedisUrl (text: string) {
  const refused = new Error(`TEST_REDIS_URL must be redis://[[user]:password@]host[:port][/index] (got ${JSON.stringify(text)})`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw refused
  }
  const index = url.pathname.replace(/^\//, '')
  if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '' || !/^[0-9]*$/.test(index)) throw refused
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port === '' ? 6379 : Number(url.port), db: Number(index || 0) }
}

/** TEST_REDIS_URL's host, port and index. */
export const REDIS = parseRedisUrl(REDIS_URL)

/** The server and index, as messages name them (no password). */
export const REDIS_SHOWN = `${REDIS.host}:${REDIS.port}, index ${REDIS.db}`

/** TEST_REDIS_URL with another index (its credentials kept). */
export function redisUrlWithIndex (db: number): string {
  const url = new URL(REDIS_URL)
  url.pathname = `/${db}`
  return url.toString()
}

/** TEST_REDIS_URL through a loopback proxy listening on `port` (tcp-proxy.ts): the same index and credentials. */
export function redisUrlThrough (port: number): string {
  const url = new URL(REDIS_URL)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return url.toString()
}

let redisReachable: Promise<boolean> | undefined
/**
 * Whether the suite's Redis answers; the Redis variants are skipped (saying why) when it does not.
 * An index the server refuses is an error, not a skip: ioredis would go on with index 0.
 */
export function redisAvailable (): Promise<boolean> {
  redisReachable ??= (async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.ping()
    } catch {
      client.disconnect()
      return false
    }
    try {
      await client.select(REDIS.db)
      return true
    } catch (error) {
      throw new Error(`TEST_REDIS_URL: Redis at ${REDIS_SHOWN} refuses the index (${(error as Error).message})`)
    } finally {
      client.disconnect()
    }
  })()
  return redisReachable
}

export const REDIS_SKIP = `Redis is not reachable at ${REDIS_SHOWN} (TEST_REDIS_URL; start it, as .ci/run does, to run the shared-store tests)`

/** What every key prefix of redisPrefix starts with. */
export const TEST_KEY_PREFIX = 'petstore-test:'

/** A random key prefix, whose keys are deleted when the test ends. */
export function redisPrefix (t: Teardown): string {
  const prefix = `${TEST_KEY_PREFIX}${randomUUID()}:`
  t.teardown(async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    try {
      let cursor = '0'
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
        if (keys.length > 0) await client.del(...keys)
        cursor = next
      } while (cursor !== '0')
    } finally {
      client.disconnect()
    }
  })
  return prefix
}
