import type { CliIo } from './run-cli.js'

/**
 * A bin's own process as a command's input and output: its arguments after the script, its
 * environment, its working directory (no cwd: paths are passed on, and quoted in messages, as
 * typed) and console.log/console.error, which write each line to the real stdout/stderr.
 */
export function processIo (): CliIo {
  return {
    argv: process.argv.slice(2),
    env: process.env,
    stdout: (line) => console.log(line),
    stderr: (line) => console.error(line)
  }
}
