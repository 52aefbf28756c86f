import { ConstraintViolation } from '../contract/errors.js'

const messages = {
  out_of_range: 'the change would take a stored value past its bound',
  already_exists: 'a resource with the same identifying value already exists',
  invalid_reference: 'the change refers to a resource that does not exist, or removes one that others refer to'
} as const

type Kind = keyof typeof messages

/** Each engine's codes of a broken constraint, by what the client is told. */
const kinds: Readonly<Record<string, Kind>> = {
  // SQLite (better-sqlite3's extended result codes). A trigger's RAISE(ABORT) is a rule of the
  // schema the row breaks, as a CHECK is.
  SQLITE_CONSTRAINT_CHECK: 'out_of_range',
  SQLITE_CONSTRAINT_TRIGGER: 'out_of_range',
  SQLITE_CONSTRAINT_UNIQUE: 'already_exists',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'already_exists',
  SQLITE_CONSTRAINT_FOREIGNKEY: 'invalid_reference',
  // PostgreSQL (SQLSTATE). A number past its column's type (22003: an INTEGER over 2^31 - 1) is
  // the bound SQLite's schema states as a CHECK.
  23514: 'out_of_range',
  22003: 'out_of_range',
  23505: 'already_exists',
  23503: 'invalid_reference'
}

/**
 * The database's refusal of a write for a constraint, as the 409 the client gets, the same on
 * both engines; undefined for any other error. The one place constraint errors are mapped: each
 * engine passes its write errors through it (src/store/sqlite/index.ts, src/store/postgres/pool.ts).
 * A NOT NULL violation is not here: no request can cause one, so it is a bug (500).
 */
export function constraintViolationOf (error: unknown): ConstraintViolation | undefined {
  if (error instanceof ConstraintViolation) return error
  const { code, constraint } = (error ?? {}) as { code?: unknown, constraint?: unknown }
  const kind = typeof code === 'string' ? kinds[code] : undefined
  if (kind === undefined) return undefined
  return new ConstraintViolation(kind, messages[kind], typeof constraint === 'string' ? constraint : undefined, { cause: error })
}
