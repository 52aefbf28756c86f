import type { Access, CompiledSql, Engine, Statement } from './query.js'
import { writeLocks, type TableName } from './schema.js'

/**
 * What a repository asks of the database, written once for both engines: a generator that yields
 * one step at a time and gets each step's result back. SQLite runs it synchronously inside one
 * transaction (better-sqlite3 is synchronous, so nothing else of this process can slip in between
 * its statements); PostgreSQL runs it step by step on one connection of the pool. Repositories
 * write `const rows = yield* all(statement, args)`; they never see an engine.
 *
 * A step that only reads is a ReadStep; every other step (a write, a lock) is a WriteStep. A
 * read's work (ReadWork) can yield only ReadSteps: a write or a lock inside `read` does not compile.
 */
export type ReadStep = { readonly kind: 'all', readonly statement: Statement<unknown, unknown, 'read'>, readonly args: unknown }
export type WriteStep =
  | { readonly kind: 'all' | 'run', readonly statement: Statement<unknown, unknown>, readonly args: unknown }
  | { readonly kind: 'lockRow', readonly table: TableName, readonly key: number | string }
  | { readonly kind: 'tryLock', readonly scope: string }
export type Step = ReadStep | WriteStep

/** Work that only reads: what DataAccess.read runs. */
export type ReadWork<T> = Generator<ReadStep, T, unknown>
/** Work that may write (what DataAccess.write runs); every ReadWork is one too. */
export type Work<T> = Generator<Step, T, unknown>

/** The step a statement's rows are read with: a read's, or a write's (INSERT … RETURNING). */
export type StepOf<K extends Access> = K extends 'read' ? ReadStep : WriteStep

/** Every row the statement returns. */
export function * all<A, R, K extends Access> (statement: Statement<A, R, K>, args: A): Generator<StepOf<K>, R[], unknown> {
  // The executor answers an 'all' step with the statement's rows.
  return (yield { kind: 'all', statement: statement as Statement<unknown, unknown>, args } as StepOf<K>) as R[]
}

/** The first row, or undefined. */
export function * first<A, R, K extends Access> (statement: Statement<A, R, K>, args: A): Generator<StepOf<K>, R | undefined, unknown> {
  return (yield * all(statement, args))[0]
}

/** Runs a write; the number of rows it changed. */
export function * run<A, R> (statement: Statement<A, R, 'write'>, args: A): Generator<WriteStep, number, unknown> {
  return (yield { kind: 'run', statement: statement as Statement<unknown, unknown>, args }) as number
}

/**
 * Holds the row of `table` with this primary key against other writers until the transaction
 * ends, so that what the transaction reads of it (and of rows that depend on it) stays true.
 */
export function * lockRow (table: TableName, key: number | string): Generator<WriteStep, void, unknown> {
  yield { kind: 'lockRow', table, key }
}

/**
 * Takes a lock named `scope` for the rest of the transaction if no other transaction holds it;
 * false when one does (the caller answers "in progress" instead of waiting).
 */
export function * tryLock (scope: string): Generator<WriteStep, boolean, unknown> {
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

/** Every table a step reads or writes; a lock names its table. */
export const tablesTouched = (step: Step): readonly TableName[] =>
  step.kind === 'run' || step.kind === 'all' ? step.statement.tables : step.kind === 'lockRow' ? [step.table] : []

/** What runSync returns when `stopBefore` stopped the work. */
export const STOPPED: unique symbol = Symbol('stopped')

/**
 * Runs work whose steps complete synchronously (SQLite). `watch` sees each step before it runs,
 * and may refuse it by throwing (see readOnly, writeRules); when `stopBefore` returns true, the
 * work is stopped (its finally blocks run) and runSync returns STOPPED.
 */
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, watch?: (step: Step) => void): T
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, watch: (step: Step) => void, stopBefore: (step: Step) => boolean): T | typeof STOPPED
export function runSync<T> (work: Work<T>, engine: Engine, runner: StepRunner<unknown>, watch?: (step: Step) => void, stopBefore?: (step: Step) => boolean): T | typeof STOPPED {
  let next = work.next()
  while (next.done !== true) {
    const step = next.value
    if (stopBefore?.(step) === true) {
      work.return(undefined as T)
      return STOPPED
    }
    let result: unknown
    try {
      watch?.(step)
      result = dispatch(engine, step, runner)
    } catch (error) {
      work.return(undefined as T)
      throw error
    }
    next = work.next(result)
  }
  return next.value
}

/** Runs work step by step, each awaited (PostgreSQL); `watch` as for runSync. */
export async function runAsync<T> (work: Work<T>, engine: Engine, runner: StepRunner<Promise<unknown>>, watch?: (step: Step) => void): Promise<T> {
  let next = work.next()
  while (next.done !== true) {
    let result: unknown
    try {
      watch?.(next.value)
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

/** A step the rules of work.ts refuse: the work is a bug, whatever the engine. */
export class WorkRuleError extends TypeError {
  override name = 'WorkRuleError'
}

/**
 * The watch of a read: a step that writes or locks is refused before it runs. ReadWork already
 * admits only reads; this also refuses a SELECT whose common table expressions write, which the
 * types cannot tell from a read.
 */
export function readOnly (step: Step): void {
  if (step.kind !== 'all' || step.statement.access !== 'read') {
    throw new WorkRuleError(`a read ran a step that writes or locks (${step.kind}${'statement' in step ? ` ${step.statement.name}` : ''}): use DataAccess.write`)
  }
}

/**
 * The watch of one write's work, the same on both engines (so a rule broken on PostgreSQL fails
 * on SQLite too, where a lock itself has nothing to do): every lock comes before the first write
 * (a transaction never waits for a lock while holding rows it wrote, so writers cannot deadlock),
 * and a write to a table of `writeLocks` comes after a lockRow of the table named there. `wrote`
 * is told the tables each step writes.
 */
export function writeRules (wrote?: (tables: readonly TableName[]) => void): (step: Step) => void {
  const locked = new Set<TableName>()
  let written: string | undefined
  return (step) => {
    if (step.kind === 'lockRow' || step.kind === 'tryLock') {
      if (written !== undefined) throw new WorkRuleError(`${step.kind} after the write ${written}: take every lock before the first write`)
      if (step.kind === 'lockRow') locked.add(step.table)
      return
    }
    if (step.statement.access !== 'write') return
    written ??= step.statement.name
    for (const table of step.statement.changes) {
      const needed = writeLocks[table]
      if (needed !== undefined && !locked.has(needed)) {
        throw new WorkRuleError(`${step.statement.name} writes ${table} without lockRow('${needed}', …) first`)
      }
    }
    wrote?.(step.statement.changes)
  }
}

/** Reads and writes written once (repositories), run by the engine. */
export interface DataAccess {
  readonly engine: Engine
  /**
   * Runs a read. It sees every write this process has acknowledged, and waits for writes this
   * process has accepted but not yet committed.
   *
   * `work` may be called more than once: an engine may stop a read part-way and run it again
   * from the start (SQLite does, when a write of the rows it reads is queued behind it). That is
   * safe because a read's work has no effect but its steps, and its steps only read: ReadWork
   * admits no other step, and the engine refuses a statement that writes (a SELECT whose common
   * table expression writes, which the types cannot see). Work that keeps state of its own
   * outside the generator must not be given to `read`.
   */
  read<T> (work: () => ReadWork<T>): Promise<T>
  /**
   * Runs `work` in one write transaction, committed before the promise resolves. What it changed
   * (derived from its statements and the database's change triggers) reaches this process's
   * caches before it resolves, and other processes' through the engine's change channel.
   */
  write<T> (work: () => Work<T>): Promise<T>
}

