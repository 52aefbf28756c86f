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

/** Runs a command in the project directory with a minimal environment and collects its output. */
export function run (command: string, args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliResult> {
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env },
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

/** Creates the database of `databaseUrl` with its schema, as `db migrate` does, without a process of its own. */
export async function migrateDatabase (databaseUrl: string): Promise<void> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
  } finally {
    await store.close()
  }
}
