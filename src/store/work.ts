import type { CompiledSql, Engine, Statement } from './query.js'
import type { TableName } from './schema.js'

/**
 * What a repository asks of the database, written once for both engines: a generator that yields
 * one step at a time and gets each step's result back. SQLite runs it synchronously inside one
 * transaction (better-sqlite3 is synchronous, so nothing else of this process can slip in between
 * its statements); PostgreSQL runs it step by step on one connection of the pool. Repositories
 * write `const rows = yield* all(statement, args)`; they never see an engine.
 */
export type Step =
  | { readonly kind: 'all', readonly statement: Statement<unknown, unknown>, readonly args: unknown }
  | { readonly kind: 'run', readonly statement: Statement<unknown, unknown>, readonly args: unknown }
  | { readonly kind: 'lockRow', readonly table: TableName, readonly key: number | string }
  | { readonly kind: 'tryLock', readonly scope: string }

export type Work<T> = Generator<Step, T, unknown>

/** Every row the statement returns. */
export function * all<A, R> (statement: Statement<A, R>, args: A): Work<R[]> {
  // The executor answers an 'all' step with the statement's rows.
  return (yield { kind: 'all', statement: statement as Statement<unknown, unknown>, args }) as R[]
}

/** The first row, or undefined. */
export function * first<A, R> (statement: Statement<A, R>, args: A): Work<R | undefined> {
  return (yield * all(statement, args))[0]
}

/** Runs a write; the number of rows it changed. */
export function * run<A, R> (statement: Statement<A, R>, args: A): Work<number> {
  return (yield { kind: 'run', statement: statement as Statement<unknown, unknown>, args }) as number
}

/**
 * Holds the row of `table` with this primary key against other writers until the transaction
 * ends, so that what the transaction reads of it (and of rows that depend on it) stays true.
 */
export function * lockRow (table: TableName, key: number | string): Work<void> {
  yield { kind: 'lockRow', table, key }
}

/**
 * Takes a lock named `scope` for the rest of the transaction if no other transaction holds it;
 * false when one does (the caller answers "in progress" instead of waiting).
 */
export function * tryLock (scope: string): Work<boolean> {
  return (yield { kind: 'tryLock', scope }) as boolean
}

/** How an engine carries out the steps; its dialect-specific SQL lives with it. */
export interface StepRunner<Result> {
  all (compiled: CompiledSql, name: string): Result
  run (compiled: CompiledSql, name: string): Result
  lockRow (table: TableName, key: number | string): Result
  tryLock (scope: string): Result
}

export function compiledStep (engine: Engine, step: Extract<Step, { statement: unknown }>): CompiledSql {
  return step.statement.compiled(engine, step.args)
}

/** Dispatches one step to the runner. */
export function dispatch<Result> (engine: Engine, step: Step, runner: StepRunner<Result>): Result {
  switch (step.kind) {
    case 'all': return runner.all(compiledStep(engine, step), step.statement.name)
    case 'run': return runner.run(compiledStep(engine, step), step.statement.name)
    case 'lockRow': return runner.lockRow(step.table, step.key)
    case 'tryLock': return runner.tryLock(step.scope)
  }
}

/** The tables a step writes (read from its statement). */
export const tablesOf = (step: Step): readonly TableName[] => step.kind === 'run' || step.kind === 'all' ? step.statement.changes : []

/** Every table a step reads or writes; a lock names its table. */
export const tablesTouched = (step: Step): readonly TableName[] =>
  step.kind === 'run' || step.kind === 'all' ? step.statement.tables : step.kind === 'lockRow' ? [step.table] : []

/** What runSync returns when `before` stopped the work. */
export const STOPPED: unique symbol = Symbol('stopped')

/**
 * Runs work whose steps complete synchronously (SQLite). `before` sees each step before it runs;
 * when it returns false, the work is stopped (its finally blocks run) and runSync returns STOPPED.
 */
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, wrote?: (tables: readonly TableName[]) => void): T
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, wrote: undefined, before: (step: Step) => boolean): T | typeof STOPPED
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, wrote?: (tables: readonly TableName[]) => void, before?: (step: Step) => boolean): T | typeof STOPPED {
  let next = work.next()
  while (next.done !== true) {
    if (before !== undefined && !before(next.value)) {
      work.return(undefined as T)
      return STOPPED
    }
    wrote?.(tablesOf(next.value))
    next = work.next(dispatch(engine, next.value, runner))
  }
  return next.value
}

/** Runs work step by step, each awaited (PostgreSQL). */
export async function runAsync<T> (work: Work<T>, engine: Engine, runner: StepRunner<Promise<unknown>>, wrote?: (tables: readonly TableName[]) => void): Promise<T> {
  let next = work.next()
  while (next.done !== true) {
    wrote?.(tablesOf(next.value))
    let result: unknown
    try {
      result = await dispatch(engine, next.value, runner)
    } catch (error) {
      // Let the work clean up (finally blocks), then fail with the database's error.
      work.return(undefined as T)
      throw error
    }
    next = work.next(result)
  }
  return next.value
}

/** Reads and writes written once (repositories), run by the engine. */
export interface DataAccess {
  readonly engine: Engine
  /**
   * Runs a read. It sees every write this process has acknowledged, and waits for writes this
   * process has accepted but not yet committed.
   */
  read<T> (work: () => Work<T>): Promise<T>
  /**
   * Runs `work` in one write transaction, committed before the promise resolves. What it changed
   * (derived from its statements and the database's change triggers) reaches this process's
   * caches before it resolves, and other processes' through the engine's change channel.
   */
  write<T> (work: () => Work<T>): Promise<T>
}
