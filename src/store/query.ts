import {
  DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, SqliteAdapter,
  SqliteIntrospector, SqliteQueryCompiler, type Compilable, type Dialect
} from 'kysely'
import type { Database, TableName } from './schema.js'

export type Engine = 'sqlite' | 'postgres'

/**
 * Kysely instances that only compile: each engine runs the SQL with its own executor (prepared
 * statements on SQLite, named statements on a pg pool), so nothing here opens a connection.
 */
const compileOnly = (adapter: () => Dialect['createAdapter'], compiler: Dialect['createQueryCompiler'], introspector: Dialect['createIntrospector']): Kysely<Database> =>
  new Kysely<Database>({ dialect: { createAdapter: adapter(), createDriver: () => new DummyDriver(), createIntrospector: introspector, createQueryCompiler: compiler } })

export const builders: Readonly<Record<Engine, Kysely<Database>>> = {
  sqlite: compileOnly(() => () => new SqliteAdapter(), () => new SqliteQueryCompiler(), (db) => new SqliteIntrospector(db)),
  postgres: compileOnly(() => () => new PostgresAdapter(), () => new PostgresQueryCompiler(), (db) => new PostgresIntrospector(db))
}

/** SQL and its parameters, ready for an engine's executor. */
export interface CompiledSql {
  readonly sql: string
  readonly parameters: readonly unknown[]
}

/** The value of a named argument, filled in each time a statement runs (see `statement`). */
class Argument {
  constructor (readonly name: string) {}
}

/**
 * A query written once with Kysely, compiled once per engine. Arguments are placeholders in the
 * compiled parameters, replaced by the call's values when it runs: no query is built per request.
 * `changes` are the tables a write changes, read from the query itself.
 */
export interface Statement<A, R> {
  readonly name: string
  /** The tables the statement writes. */
  readonly changes: readonly TableName[]
  /** Every table the statement reads or writes. */
  readonly tables: readonly TableName[]
  compiled (engine: Engine, args: A): CompiledSql
  /** Only for typing: the row the statement returns. */
  readonly row?: R
}

type Row<Q> = Q extends Compilable<infer R> ? R : never

/** The tables a compiled query writes (INSERT, UPDATE, DELETE; CTEs included), from Kysely's tree. */
export function tablesWritten (node: unknown): TableName[] {
  const found = new Set<TableName>()
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return
    if (Array.isArray(value)) { for (const item of value) visit(item); return }
    const record = value as Record<string, unknown>
    const kind = record.kind
    const target = kind === 'InsertQueryNode' ? record.into : kind === 'UpdateQueryNode' ? record.table : kind === 'DeleteQueryNode' ? record.from : undefined
    for (const table of tableNames(target)) found.add(table)
    for (const child of Object.values(record)) visit(child)
  }
  visit(node)
  return [...found]
}

/** Every table a compiled query names (read or written), from Kysely's tree. */
export function tablesNamed (node: unknown): TableName[] {
  const found = new Set<TableName>()
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return
    if (Array.isArray(value)) { for (const item of value) visit(item); return }
    for (const table of tableNames(value)) found.add(table)
    for (const child of Object.values(value as Record<string, unknown>)) visit(child)
  }
  visit(node)
  return [...found]
}

function tableNames (target: unknown): TableName[] {
  if (target === undefined || target === null || typeof target !== 'object') return []
  const record = target as Record<string, unknown>
  if (record.kind === 'FromNode' && Array.isArray(record.froms)) return record.froms.flatMap(tableNames)
  if (record.kind === 'AliasNode') return tableNames(record.node)
  if (record.kind === 'TableNode') {
    const name = (record.table as { identifier?: { name?: unknown } } | undefined)?.identifier?.name
    return typeof name === 'string' ? [name as TableName] : []
  }
  return []
}

/** The arguments of a statement: `arg('petId')` stands for the call's `petId`. */
export type Arg<A> = <K extends keyof A & string>(key: K) => A[K]

/**
 * Defines a statement: `build` writes the query with Kysely, using `arg('name')` wherever a value
 * of the call goes; annotate it (`arg: Arg<{ petId: number }>`) to type the call's arguments.
 * (An argument is typed as its value so that Kysely types the query; it is a placeholder until
 * the statement runs.)
 */
export function statement<A extends object, Q extends Compilable<unknown>> (
  name: string,
  build: (db: Kysely<Database>, arg: Arg<A>) => Q
): Statement<A, Row<Q>> {
  const arg: Arg<A> = (key) => new Argument(key) as unknown as A[typeof key]
  const perEngine = {
    sqlite: build(builders.sqlite, arg).compile(),
    postgres: build(builders.postgres, arg).compile()
  }
  const fill = (engine: Engine) => {
    const { sql, parameters } = perEngine[engine]
    const slots = parameters.map((value) => value instanceof Argument ? value.name : undefined)
    return (args: A): CompiledSql => ({
      sql,
      parameters: parameters.map((value, i) => {
        const slot = slots[i]
        return slot === undefined ? value : (args as Record<string, unknown>)[slot]
      })
    })
  }
  const filled = { sqlite: fill('sqlite'), postgres: fill('postgres') }
  return {
    name,
    changes: tablesWritten(perEngine.sqlite.query),
    tables: tablesNamed(perEngine.sqlite.query),
    compiled: (engine, args) => filled[engine](args)
  }
}
