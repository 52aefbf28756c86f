import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { projectRoot } from '../../src/contract/paths.js'
import { createStore } from '../../src/store/create-store.js'
import { typescriptArgs } from './node-args.js'

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** The environment commands run with: a minimal one, plus `env`. */
const commandEnv = (env: Record<string, string>) => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env })

/** Runs a command in the project directory with a minimal environment and collects its output. */
export function run (command: string, args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliResult> {
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: commandEnv(env),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) })
  })
}

/** Runs src/cli/<name>.ts (its TypeScript, as the tests run), as `npm run keys --` / `npm run db:…` would run its build. */
export const runCli = (name: 'keys' | 'db', args: string[], env: Record<string, string>) =>
  run(process.execPath, [...typescriptArgs, join(projectRoot, 'src', 'cli', `${name}.ts`), ...args], env)

/**
 * runCli's counterpart inside this process: the same arguments and environment, relative paths
 * resolved against `cwd` (the project directory, runCli's working directory), the lines printed
 * collected as console.log / console.error write them. Everything goes through the command's
 * CliIo, so this process's environment, working directory and exit code are left alone (the
 * exit code is checked). What only a process shows, the bin with its real streams and exit
 * status, is left to runCli. (One read stays outside the CliIo: the pg driver takes PG*
 * variables of this process for what a postgres:// DATABASE_URL leaves out.)
 */
export async function runCliInProcess (name: 'keys' | 'db', args: string[], env: Record<string, string>, { cwd = projectRoot } = {}): Promise<CliResult> {
  // Imported on first use: most files importing this helper never run a command in-process.
  const command = name === 'keys' ? (await import('../../src/cli/keys-command.js')).runKeys : (await import('../../src/cli/db-command.js')).runDb
  let stdout = ''
  let stderr = ''
  const exitCodeBefore = process.exitCode
  const code = await command({
    argv: [...args],
    env: commandEnv(env),
    cwd,
    stdout: (line) => { stdout += `${line}\n` },
    stderr: (line) => { stderr += `${line}\n` }
  })
  if (process.exitCode !== exitCodeBefore) throw new Error(`${name} ${args.join(' ')} set process.exitCode of the test process to ${String(process.exitCode)}`)
  return { code, stdout, stderr }
}

/** Creates the database of `databaseUrl` with its schema, as `db migrate` does, without a process of its own. */
export async function migrateDatabase (databaseUrl: string): Promise<void> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
  } finally {
    await store.close()
  }
}
