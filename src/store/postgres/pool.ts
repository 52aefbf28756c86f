import pg from 'pg'
import { ConstraintViolation, StoreUnavailableError } from '../../contract/errors.js'
import { constraintViolationOf } from '../constraints.js'
import { ForeignDatabaseError } from '../migrations.js'
import { WriteFaults } from '../write-faults.js'

export interface PostgresStoreOptions {
  /** Most connections this store opens (DATABASE_POOL_MAX). */
  poolMax?: number
  /** Bound on getting a connection and on each statement, in milliseconds (DATABASE_TIMEOUT_MS). */
  timeoutMs?: number
}

/** Bulk work (migrations, imports) may legitimately take longer than a request. */
const BULK_TIMEOUT_MS = 10 * 60_000

/** Idle time after which TCP probes a connection, so a server gone without a reset is found without traffic too. */
export const KEEPALIVE_DELAY_MS = 10_000

// Ids are capped at 2^53-1 by openapi.yaml, so BIGINT values are exact as JavaScript numbers.
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)
}

export function openPool (connectionString: string, options: PostgresStoreOptions): pg.Pool {
  const timeoutMs = options.timeoutMs ?? 5000
  const pool = new pg.Pool({
    connectionString,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: timeoutMs,
    // Server side: the statement is cancelled. Client side, a little later: for a server that
    // stopped answering altogether (the connection is then discarded).
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    idle_in_transaction_session_timeout: BULK_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    idleTimeoutMillis: 30_000,
    application_name: 'petstore',
    types: typeParsers,
    // Statements given to one connection together go out together (writeAndAnnounce).
    pipeline: true
  })
  // An idle connection that breaks (server restart, network cut) is removed from the pool and
  // reported here; without a listener the process would crash. Requests report their own errors.
  pool.on('error', () => {})
  closeIdleAfterSilence(pool)
  return pool
}

/** pg's error for a statement left without an answer for query_timeout, as it is or translated. */
const isReadTimeout = (error: unknown): boolean =>
  error instanceof Error && (error.message === 'Query read timeout' || isReadTimeout(error.cause))

/**
 * A statement that got no answer within query_timeout (pg then destroys its connection) means
 * the server, or the way to it, went silent: the connections idle in the pool were opened the
 * same way, and each would cost a request a time-out of its own once the server is back (a
 * firewall that forgot them drops their packets for good). They are closed with it, and the pool
 * opens fresh ones when asked.
 */
function closeIdleAfterSilence (pool: pg.Pool): void {
  const idle = new Set<pg.PoolClient>()
  pool.on('acquire', (client) => { idle.delete(client) })
  pool.on('remove', (client) => { idle.delete(client as pg.PoolClient) })
  pool.on('release', (error: unknown, client) => {
    if (error === undefined || error === null) {
      idle.add(client)
      return
    }
    if (!isReadTimeout(error)) return
    const silent = new Error('closed: another connection to the server went silent')
    for (const other of idle) {
      // The pool drops an idle connection that reports an error there and then (a socket closed
      // instead would stay in its idle list until the close event, and could be handed out).
      other.emit('error', silent)
      other.connection.stream.destroy()
    }
    idle.clear()
  })
}

/**
 * SQLSTATE classes that mean "the database cannot serve us right now" rather than "this request
 * is wrong": connection exceptions (08), insufficient resources (53), operator intervention (57,
 * which includes 57014, a statement cancelled by statement_timeout), system errors (58), a
 * lock wait that timed out (55P03), and a write refused by a read-only server (25006).
 */
const unavailableClasses = new Set(['08', '53', '57', '58'])
/** 25006 read_only_sql_transaction: a standby, or default_transaction_read_only: writes pass once it is writable. */
const unavailableCodes = new Set(['55P03', '25006'])

export function translate (error: unknown): unknown {
  if (error instanceof StoreUnavailableError || error instanceof ConstraintViolation) return error
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? ''
    if (unavailableClasses.has(code.slice(0, 2)) || unavailableCodes.has(code)) {
      return new StoreUnavailableError(`database unavailable: ${error.message}`, { cause: error })
    }
    return constraintViolationOf(error) ?? error
  }
  if (error instanceof ForeignDatabaseError) return error
  // Programming errors stay what they are (500); everything else pg raises without a SQLSTATE is
  // about the connection: refused, reset, terminated, timed out, or the pool has been closed.
  if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError || error instanceof ReferenceError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new StoreUnavailableError(`database unavailable: ${message}`, { cause: error })
}

/** What a statement sent to PostgreSQL fails with: its error, translated (see translate). */
export function fromDatabase<T> (sent: Promise<T>): Promise<T> {
  return sent.catch((error: unknown) => { throw translate(error) })
}

/** A failure of the connection itself (refused, reset, timed out), not one the server reported. */
export const connectionFailed = (error: unknown) => error instanceof StoreUnavailableError && !(error.cause instanceof pg.DatabaseError)

/**
 * SQLSTATEs of a write the server refuses for storage reasons, which readiness reports until
 * writes pass: disk full (53100), an I/O error (58030), a read-only server (25006).
 */
const writeFaultCodes = new Set(['53100', '58030', '25006'])

/** The storage fault writes met, per pool (see WriteFaults). */
const faults = new WeakMap<pg.Pool, WriteFaults>()
const faultsOf = (pool: pg.Pool): WriteFaults => {
  let kept = faults.get(pool)
  if (kept === undefined) faults.set(pool, kept = new WriteFaults())
  return kept
}

/** `error` as it is, once a storage fault it reports (the server's error, or the one translate wrapped) is kept for readiness. */
function noteFault (pool: pg.Pool, error: unknown): unknown {
  const server = error instanceof pg.DatabaseError ? error : (error as { cause?: unknown } | null)?.cause
  if (server instanceof pg.DatabaseError && writeFaultCodes.has(server.code ?? '')) faultsOf(pool).met(server.code!)
  return error
}

/** A write that changes nothing (one row of this service's migration record), for readiness while a storage fault is kept. */
const PROBE_WRITE = 'UPDATE schema_migrations SET applied_at = applied_at WHERE version = (SELECT min(version) FROM schema_migrations)'

/** The server answers, and writes pass (a probe write decides while a storage fault is kept). */
export async function ping (pool: pg.Pool): Promise<void> {
  await query(pool, 'SELECT 1')
  await faultsOf(pool).check(() => query(pool, PROBE_WRITE))
}

/** A query on the connection of the transaction at hand. */
export type Run = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>

/**
 * A connection of the pool for several statements. While it is checked out the pool does not
 * listen for its errors: a connection lost then would otherwise be an uncaught 'error' event
 * (the statement under way fails on its own). `release` gives it back.
 */
async function checkOut (pool: pg.Pool): Promise<{ client: pg.PoolClient, release: (failure?: unknown) => void }> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw translate(error)
  }
  const ignore = () => {}
  client.on('error', ignore)
  return {
    client,
    // A failure discards the connection; pg-pool's release event carries it (closeIdleAfterSilence).
    release: (failure) => {
      client.removeListener('error', ignore)
      client.release(failure === undefined ? undefined : failure instanceof Error ? failure : true)
    }
  }
}

/**
 * Runs `work` on a connection of the pool inside the transaction it opens itself, then gives the
 * connection back: after a ROLLBACK when the work failed, discarded when the connection did.
 * `work` sends its statements through fromDatabase, so what it throws is the database's error
 * translated, or its own error, which stays what it is (a bug in a repository is not an outage).
 */
async function onConnection<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkOut(pool)
  let failure: unknown
  try {
    return await work(client)
  } catch (error) {
    if (connectionFailed(error)) failure = error
    await client.query('ROLLBACK').catch((rollbackError: unknown) => { failure ??= rollbackError })
    throw noteFault(pool, error)
  } finally {
    release(failure)
  }
}

/** Runs `work` in one transaction on one connection, with the longer bound of bulk work. */
export function bulkTransaction<T> (pool: pg.Pool, work: (run: Run) => Promise<T>): Promise<T> {
  return onConnection(pool, async (client) => {
    const run: Run = (text, values) => {
      // pg reads query_timeout per query too, though its types do not declare it.
      const config: pg.QueryConfig & { query_timeout: number } = { text, values: values ?? [], query_timeout: BULK_TIMEOUT_MS + 1000 }
      return fromDatabase(client.query(config))
    }
    await run('BEGIN')
    await run(`SET LOCAL statement_timeout = ${BULK_TIMEOUT_MS}`)
    const result = await work(run)
    await run('COMMIT')
    return result
  })
}

/** One statement in autocommit. A statement given a name is prepared once per connection. */
export async function query<R extends pg.QueryResultRow> (pool: pg.Pool, text: string, values: unknown[] = [], name?: string): Promise<R[]> {
  try {
    return (await pool.query<R>(name === undefined ? { text, values } : { name, text, values })).rows
  } catch (error) {
    throw noteFault(pool, translate(error))
  }
}

/**
 * A write, then its announcement, each in its own transaction, sent together on one connection:
 * one round trip. A failed announcement is tried once more on another connection; the write's
 * outcome is what the caller gets.
 */
export async function writeAndAnnounce<R extends pg.QueryResultRow> (pool: pg.Pool, write: pg.QueryConfig, announcement: pg.QueryConfig): Promise<R[]> {
  const { client, release } = await checkOut(pool)
  // Corked, the two reach the socket in one write (pg writes each statement when it is queued).
  const stream = client.connection.stream
  stream.cork()
  let queries: [Promise<pg.QueryResult<R>>, Promise<pg.QueryResult>]
  try {
    queries = [client.query<R>(write), client.query(announcement)]
  } finally {
    stream.uncork()
  }
  const [written, announced] = await Promise.allSettled(queries)
  const failure = written.status === 'rejected' ? written.reason : announced.status === 'rejected' ? announced.reason : undefined
  release(failure !== undefined && connectionFailed(translate(failure)) ? failure : undefined)
  if (written.status === 'rejected') throw noteFault(pool, translate(written.reason))
  if (announced.status === 'rejected') pool.query(announcement).catch(() => {})
  return written.value.rows
}

/** What the change triggers recorded in this transaction (migration 003): payloads separated by ';'. */
const RECORDED_CHANGES = "SELECT current_setting('petstore.changes', true) AS changes"

/**
 * Runs `work` in one transaction on one connection of the pool, and returns with its value the
 * change payloads the triggers recorded in it, for this instance's own caches. BEGIN goes out with
 * the first statement, and the read of the recorded changes with COMMIT (the pool pipelines).
 */
export function writeTransaction<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<{ value: T, changes: string[] }> {
  return onConnection(pool, async (client) => {
    const begun = fromDatabase(client.query('BEGIN'))
    begun.catch(() => {})
    const value = await work(client)
    await begun
    const [recorded] = await fromDatabase(Promise.all([client.query<{ changes: string | null }>(RECORDED_CHANGES), client.query('COMMIT')]))
    const text = recorded.rows[0]?.changes ?? ''
    return { value, changes: text === '' ? [] : text.split(';') }
  })
}
