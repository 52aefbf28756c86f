import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { type Config, ConfigError } from '../config.js'
import { createStore } from '../store/create-store.js'
import type { Store } from '../store/types.js'
import { databaseFailure } from '../startup.js'

/**
 * A mistake in how the command was called: exit code 2 (or as given), printed with the usage
 * unless `showUsage` is false (a wrong value of a known option: its one line says it all).
 */
export class UsageError extends Error {
  constructor (message: string, readonly exitCode = 2, readonly showUsage = exitCode === 2) {
    super(message)
  }
}

export interface CliText {
  /** The synopsis, printed after a usage error. */
  usage: string
  /** What the commands do, printed after the synopsis by -h / --help. */
  details: string
}

/**
 * What a command reads and where it writes. The bins pass their process's own (process-io.ts);
 * tests pass their own, so that a command can run inside the test's process without touching
 * its environment, working directory, streams or exit code.
 */
export interface CliIo {
  /** The arguments after the command's name. */
  argv: string[]
  /** The variables the configuration is read from (loadConfig). */
  env: Readonly<Record<string, string | undefined>>
  /**
   * The directory a relative path (in DATABASE_URL=sqlite:PATH, or FILE.json) is resolved
   * against. Absent: the process's working directory, with the paths passed on as given.
   */
  cwd?: string
  /** Print one line, as console.log does. */
  stdout: (line: string) => void
  /** Print one line, as console.error does. */
  stderr: (line: string) => void
}

const wantsHelp = (argv: string[]) => {
  const end = argv.indexOf('--')
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '-h' || arg === '--help')
}

/**
 * Runs a CLI body with one-line errors on stderr and meaningful exit codes; no stack traces for
 * user errors. -h or --help anywhere before `--` prints the help on stdout and exits 0.
 * Resolves to the exit code, for the caller to set (the bins: process.exitCode).
 */
export async function runCli (text: CliText, io: CliIo, body: (argv: string[]) => Promise<void>): Promise<number> {
  if (wantsHelp(io.argv)) {
    io.stdout(`${text.usage}\n\n${text.details}`)
    return 0
  }
  try {
    await body(io.argv)
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message}`)
      if (error.showUsage) io.stderr(text.usage)
      return error.exitCode
    } else if (error instanceof ConfigError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      io.stderr(`error: ${(error as Error).message}`)
      if (!(error instanceof ConfigError)) io.stderr(text.usage)
      return 2
    } else {
      io.stderr(`error: ${(error as Error).message}`)
      return 1
    }
  }
}

/**
 * Opens the database of DATABASE_URL and brings its schema up to date. Only `db migrate` (and the
 * server) may create a SQLite file: elsewhere a mistyped DATABASE_URL, or a command run from
 * another directory, would silently start an empty database beside the real one.
 */
export async function openStore (config: Config, { create, cwd }: { create: boolean, cwd?: string | undefined }): Promise<Store> {
  const url = config.databaseUrl
  const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : undefined
  // Resolved as createStore resolves it, against the working directory: the process's, or the
  // one a command was given (CliIo.cwd). createStore is given the resolved path.
  const path = file === undefined || file === ':memory:' ? undefined : cwd === undefined ? resolve(file) : resolve(cwd, file)
  if (!create && path !== undefined && !existsSync(path)) {
    throw new UsageError(`no database at ${path} (DATABASE_URL=${url}): run npm run db:migrate (or start the server) first, or check DATABASE_URL and the working directory`, 1)
  }
  let store: Store | undefined
  try {
    store = await createStore(path === undefined ? url : `sqlite:${path}`, { poolMax: config.databasePoolMax, timeoutMs: config.databaseTimeoutMs })
    await store.migrate()
    return store
  } catch (error) {
    await store?.close().catch(() => {})
    throw new UsageError(databaseFailure(error, url, create ? ', then run this again' : ', then run npm run db:migrate'), 1)
  }
}
