import type Database from 'better-sqlite3'
import type { CompiledSql } from '../query.js'
import type { StepRunner } from '../work.js'

/** Prepared statements kept per SQL text; past this many (query shapes), the cache starts over. */
const MAX_PREPARED = 500

/** SQLite has no boolean: true and false are bound as 1 and 0, as the tables store them. */
const bindable = (value: unknown) => typeof value === 'boolean' ? (value ? 1 : 0) : value

/**
 * What differs on SQLite when the repositories' work runs (work.ts): statements are prepared once
 * per SQL text and run synchronously; a transaction already holds the database's one write lock
 * (BEGIN IMMEDIATE), so locking a row, or a named scope, has nothing left to do.
 */
export function sqliteStepRunner (db: Database.Database): StepRunner<unknown> {
  const prepared = new Map<string, Database.Statement<unknown[], unknown>>()
  const prepare = (sql: string) => {
    let statement = prepared.get(sql)
    if (statement === undefined) {
      if (prepared.size >= MAX_PREPARED) prepared.clear()
      statement = db.prepare<unknown[], unknown>(sql)
      prepared.set(sql, statement)
    }
    return statement
  }
  const params = (compiled: CompiledSql) => compiled.parameters.map(bindable)
  return {
    all: (compiled) => {
      const statement = prepare(compiled.sql)
      if (statement.reader) return statement.all(...params(compiled))
      statement.run(...params(compiled))
      return []
    },
    run: (compiled) => prepare(compiled.sql).run(...params(compiled)).changes,
    lockRow: () => undefined,
    tryLock: () => true
  }
}
