import { createHash } from 'node:crypto'
import type pg from 'pg'
import { primaryKeyOf } from '../schema.js'
import type { StepRunner } from '../work.js'
import { fromDatabase } from './pool.js'

/** Statement names per SQL text: pg prepares a named statement once per connection. */
const names = new Map<string, string>()
const MAX_NAMES = 500

function statementName (label: string, sql: string): string {
  let name = names.get(sql)
  if (name === undefined) {
    if (names.size >= MAX_NAMES) names.clear()
    // Dynamic statements share a label but not their SQL: the hash tells their shapes apart.
    name = `${label}:${createHash('sha1').update(sql).digest('base64url').slice(0, 12)}`
    names.set(sql, name)
  }
  return name
}

/** A client of the pool, or the pool itself (each statement in autocommit). */
export type Queryable = Pick<pg.ClientBase, 'query'>

/**
 * What differs on PostgreSQL when the repositories' work runs (work.ts): statements are named, so
 * each is prepared once per connection; a row is locked with FOR UPDATE; a named scope is a
 * transaction-scoped advisory lock on 64 bits of the scope's MD5, tried without waiting.
 */
export function postgresStepRunner (client: Queryable): StepRunner<Promise<unknown>> {
  const query = (label: string, text: string, values: readonly unknown[]) =>
    fromDatabase(client.query({ name: statementName(label, text), text, values: [...values] }))
  return {
    all: async (compiled, label) => (await query(label, compiled.sql, compiled.parameters)).rows,
    run: async (compiled, label) => (await query(label, compiled.sql, compiled.parameters)).rowCount ?? 0,
    lockRow: async (table, key) => {
      await query(`lock:${table}`, `SELECT 1 FROM "${table}" WHERE "${primaryKeyOf[table]}" = $1 FOR UPDATE`, [key])
    },
    tryLock: async (scope) => {
      const { rows } = await query('tryLock', "SELECT pg_try_advisory_xact_lock(('x' || substr(md5($1), 1, 16))::bit(64)::bigint) AS locked", [scope])
      return (rows[0] as { locked?: unknown } | undefined)?.locked === true
    }
  }
}
