import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { type Config, ConfigError } from '../config.js'
import { createStore } from '../store/create-store.js'
import type { Store } from '../store/types.js'
import { databaseFailure } from '../startup.js'

/** A mistake in how the command was called: printed with the usage, exit code 2 (or as given). */
export class UsageError extends Error {
  constructor (message: string, readonly exitCode = 2) {
    super(message)
  }
}

export interface CliText {
  /** The synopsis, printed after a usage error. */
  usage: string
  /** What the commands do, printed after the synopsis by -h / --help. */
  details: string
}

const wantsHelp = (argv: string[]) => {
  const end = argv.indexOf('--')
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '-h' || arg === '--help')
}

/**
 * Runs a CLI body with one-line errors on stderr and meaningful exit codes; no stack traces for
 * user errors. -h or --help anywhere before `--` prints the help on stdout and exits 0.
 */
export async function runCli (text: CliText, body: (argv: string[]) => Promise<void>): Promise<void> {
  const argv = process.argv.slice(2)
  if (wantsHelp(argv)) {
    console.log(`${text.usage}\n\n${text.details}`)
    return
  }
  try {
    await body(argv)
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`error: ${error.message}`)
      if (error.exitCode === 2) console.error(text.usage)
      process.exitCode = error.exitCode
    } else if (error instanceof ConfigError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      console.error(`error: ${(error as Error).message}`)
      if (!(error instanceof ConfigError)) console.error(text.usage)
      process.exitCode = 2
    } else {
      console.error(`error: ${(error as Error).message}`)
      process.exitCode = 1
    }
  }
}

/**
 * Opens the database of DATABASE_URL and brings its schema up to date. Only `db migrate` (and the
 * server) may create a SQLite file: elsewhere a mistyped DATABASE_URL, or a command run from
 * another directory, would silently start an empty database beside the real one.
 */
export async function openStore (config: Config, { create }: { create: boolean }): Promise<Store> {
  const url = config.databaseUrl
  const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : undefined
  // Resolved as createStore resolves it: against the working directory.
  if (!create && file !== undefined && file !== ':memory:' && !existsSync(resolve(file))) {
    throw new UsageError(`no database at ${resolve(file)} (DATABASE_URL=${url}): run npm run db:migrate (or start the server) first, or check DATABASE_URL and the working directory`, 1)
  }
  let store: Store | undefined
  try {
    store = await createStore(url, { poolMax: config.databasePoolMax, timeoutMs: config.databaseTimeoutMs })
    await store.migrate()
    return store
  } catch (error) {
    await store?.close().catch(() => {})
    throw new UsageError(databaseFailure(error, url, create ? ', then run this again' : ', then run npm run db:migrate'), 1)
  }
}
