import type { CliIo } from './run-cli.js'

/**
 * A bin's own process as a command's input and output: its arguments after the script, its
 * environment, its working directory (paths passed on as given) and console.log/console.error,
 * so that a command run this way prints exactly what it printed before it took a CliIo.
 */
export function processIo (): CliIo {
  return {
    argv: process.argv.slice(2),
    env: process.env,
    stdout: (line) => console.log(line),
    stderr: (line) => console.error(line)
  }
}
