import { ConfigError } from '../config.js'

/** A mistake in how the command was called: printed with the usage, exit code 2 (or as given). */
export class UsageError extends Error {
  constructor (message: string, readonly exitCode = 2) {
    super(message)
  }
}

/** Runs a CLI body with one-line errors on stderr and meaningful exit codes; no stack traces for user errors. */
export async function runCli (usage: string, body: (argv: string[]) => Promise<void>): Promise<void> {
  try {
    await body(process.argv.slice(2))
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`error: ${error.message}`)
      if (error.exitCode === 2) console.error(usage)
      process.exitCode = error.exitCode
    } else if (error instanceof ConfigError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      console.error(`error: ${(error as Error).message}`)
      if (!(error instanceof ConfigError)) console.error(usage)
      process.exitCode = 2
    } else {
      console.error(`error: ${(error as Error).message}`)
      process.exitCode = 1
    }
  }
}
