import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Teardown } from './app.js'

/**
 * The suite's PostgreSQL database: TEST_DATABASE_URL, by default the machine's shared server's
 * `test` database. Tests only ever create and drop their own schemas in it, so another database
 * (`TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/petstore_other`) keeps a run apart from
 * others on the same server.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

function parseDatabaseUrl (text: string) {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error(`TEST_DATABASE_URL must be postgres://[user[:password]@]host[:port]/database (got ${JSON.stringify(text)})`)
  }
  if ((url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') || url.hostname === '' || url.pathname.length < 2) {
    throw new Error(`TEST_DATABASE_URL must be postgres://[user[:password]@]host[:port]/database (got ${JSON.stringify(text)})`)
  }
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? 5432 : Number(url.port),
    user: url.username === '' ? 'postgres' : decodeURIComponent(url.username),
    ...url.password === '' ? {} : { password: decodeURIComponent(url.password) },
    database: decodeURIComponent(url.pathname.slice(1)),
    params: Object.fromEntries(url.searchParams)
  }
}

const { params: extraParams, ...connection } = parseDatabaseUrl(TEST_DATABASE_URL)

/** TEST_DATABASE_URL as pg's client options (host, port, user, password, database). */
export const POSTGRES: pg.ClientConfig & { host: string, port: number, user: string, database: string } = connection

/** The database, as skip messages name it (no password). */
export const POSTGRES_SHOWN = `${POSTGRES.host}:${POSTGRES.port}, database ${POSTGRES.database}`

/** The prefix of every schema createTestSchema makes. */
export const TEST_SCHEMA_PREFIX = 'petstore_t_'

const hostInUrl = (host: string) => host.includes(':') ? `[${host}]` : host

/** The address of `database` on the suite's server, as TEST_DATABASE_URL's user; with `port`, through a loopback proxy there. */
export function databaseUrl (database: string, port?: number): string {
  const credentials = encodeURIComponent(POSTGRES.user) + (POSTGRES.password === undefined ? '' : `:${encodeURIComponent(String(POSTGRES.password))}`)
  const address = port === undefined ? `${hostInUrl(POSTGRES.host)}:${POSTGRES.port}` : `127.0.0.1:${port}`
  return `postgres://${credentials}@${address}/${encodeURIComponent(database)}`
}

/**
 * A connection string whose sessions use only `schema` (set at connection start, so every pooled
 * connection has it). With `port`, through a loopback proxy listening there (tcp-proxy.ts) instead
 * of to the server itself.
 */
export function schemaUrl (schema: string, port?: number, params: Record<string, string> = {}): string {
  const query = new URLSearchParams({ ...extraParams, options: `-c search_path=${schema}`, ...params })
  return `${databaseUrl(POSTGRES.database, port)}?${query.toString().replace(/\+/g, '%20')}`
}

/** Runs one statement on a short-lived connection of its own (outside any store under test). */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow> (text: string, values?: unknown[]): Promise<R[]> {
  const client = new pg.Client({ ...POSTGRES, application_name: 'petstore-test-admin' })
  await client.connect()
  try {
    return (await client.query<R>(text, values)).rows
  } finally {
    await client.end()
  }
}

export interface TestSchema {
  schema: string
  /** DATABASE_URL for the schema, optionally through a loopback proxy on another port. */
  url (port?: number, params?: Record<string, string>): string
}

/** A fresh, empty schema with a random name in the test database, dropped in teardown. */
export async function createTestSchema (t: Teardown): Promise<TestSchema> {
  const schema = `${TEST_SCHEMA_PREFIX}${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE SCHEMA ${schema}`)
  t.teardown(() => adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return { schema, url: (port, params) => schemaUrl(schema, port, params) }
}
