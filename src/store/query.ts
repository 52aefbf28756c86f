import {
  DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, SqliteAdapter,
  SqliteIntrospector, SqliteQueryCompiler, type Compilable, type Dialect, type SelectQueryBuilder
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

/** A statement that only reads, or one that writes (INSERT, UPDATE, DELETE, a CTE that does). */
export type Access = 'read' | 'write'

/**
 * A query written once with Kysely, compiled once per engine. Arguments are placeholders in the
 * compiled parameters, replaced by the call's values when it runs: no query is built per request.
 * `changes` are the tables a write changes, read from the query itself; `access` says, in the
 * type, whether it may change anything (a read's work admits only reads: see work.ts).
 */
export interface Statement<A, R, K extends Access = Access> {
  readonly name: string
  readonly access: K
  /** The tables the statement writes. */
  readonly changes: readonly TableName[]
  /** Every table the statement reads or writes. */
  readonly tables: readonly TableName[]
  compiled (engine: Engine, args: A): CompiledSql
  /** Only for typing: the row the statement returns. */
  readonly row?: R
}

/**
 * What a placeholder can bind on both engines: one value. (An array binds on PostgreSQL only, and
 * a statement is written once for both: a list of values is one placeholder per element.)
 */
export type Bindable = string | number | boolean | null

/** Arguments whose every value a placeholder can bind. */
export type BindableArgs<A> = { readonly [K in keyof A]: Bindable }

type Row<Q> = Q extends Compilable<infer R> ? R : never
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table set, any selection: only the builder's kind matters
type AccessOf<Q> = Q extends SelectQueryBuilder<any, any, any> ? 'read' : 'write'

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
 * of the call goes; annotate it (`arg: Arg<{ petId: number }>`) to type the call's arguments, each
 * of which must be Bindable. (An argument is typed as its value so that Kysely types the query; it
 * is a placeholder until the statement runs.) A SELECT is a read; anything else is a write, and
 * so is a SELECT whose common table expressions write. `engine` is for the rare clause only one
 * engine has (FOR UPDATE SKIP LOCKED): the statement stays one, written in one place.
 */
export function statement<A extends BindableArgs<A> = Record<never, never>, Q extends Compilable<unknown> = Compilable<unknown>> (
  name: string,
  build: (db: Kysely<Database>, arg: Arg<A>, engine: Engine) => Q
): Statement<A, Row<Q>, AccessOf<Q>> {
  const arg: Arg<A> = (key) => new Argument(key) as unknown as A[typeof key]
  const perEngine = {
    sqlite: build(builders.sqlite, arg, 'sqlite').compile(),
    postgres: build(builders.postgres, arg, 'postgres').compile()
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
  const changes = tablesWritten(perEngine.sqlite.query)
  const access = (perEngine.sqlite.query.kind === 'SelectQueryNode' && changes.length === 0 ? 'read' : 'write') as AccessOf<Q>
  return {
    name,
    access,
    changes,
    tables: tablesNamed(perEngine.sqlite.query),
    compiled: (engine, args) => filled[engine](args)
  }
}
