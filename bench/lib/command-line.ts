import { parseArgs, type ParseArgsConfig } from 'node:util'

/**
 * The command line of a benchmark script, named `name` in its messages (`npm run bench`,
 * `bench/counts.ts`, …): a usage error is one line on stderr and exit status 2, never a crash.
 */
export function commandLine (name: string, usage: string) {
  const usageError = (message: string): never => {
    console.error(`${name}: ${message} (--help lists the options)`)
    process.exit(2)
  }
  return {
    usageError,
    /** parseArgs, its errors as usage errors; `--help` (declare it) prints `usage` and exits. */
    parse<T extends ParseArgsConfig> (config: T): ReturnType<typeof parseArgs<T>> {
      let parsed: ReturnType<typeof parseArgs<T>>
      try {
        parsed = parseArgs(config)
      } catch (error) {
        return usageError((error as Error).message)
      }
      if ((parsed.values as { help?: unknown }).help === true) {
        console.log(`usage: ${usage}`)
        process.exit(0)
      }
      return parsed
    },
    /** A whole-number option from `min` up, `fallback` when it is not given. */
    wholeNumber (option: string, value: string | undefined, fallback: number, min: number): number {
      const n = Number(value ?? fallback)
      if (!Number.isSafeInteger(n) || n < min) usageError(`--${option} must be a whole number from ${min} up, not ${value}`)
      return n
    }
  }
}
