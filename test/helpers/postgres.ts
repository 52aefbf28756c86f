import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Teardown } from './app.js'

/** The machine's shared PostgreSQL; tests only ever create and drop their own schemas in it. */
export const POSTGRES = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' }

/** A connection string whose sessions use only `schema` (set at connection start, so every pooled connection has it). */
export function schemaUrl (schema: string, port = POSTGRES.port, params: Record<string, string> = {}): string {
  const query = new URLSearchParams({ options: `-c search_path=${schema}`, ...params })
  return `postgres://${POSTGRES.user}@${POSTGRES.host}:${port}/${POSTGRES.database}?${query.toString().replace(/\+/g, '%20')}`
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
  /** DATABASE_URL for the schema, optionally through another port (a TCP proxy). */
  url (port?: number, params?: Record<string, string>): string
}

/** A fresh, empty schema with a random name in the test database, dropped in teardown. */
export async function createTestSchema (t: Teardown): Promise<TestSchema> {
  const schema = `petstore_t_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE SCHEMA ${schema}`)
  t.teardown(() => adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return { schema, url: (port, params) => schemaUrl(schema, port, params) }
}
