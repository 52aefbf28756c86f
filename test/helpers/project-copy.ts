import { cpSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../../src/contract/paths.js'
import { type Teardown, tempDir } from './app.js'
import { type CliResult, run } from './cli.js'

// What the tests that work on a copy of the project share (test/spec-evolution.test.ts,
// test/data-evolution.test.ts, test/cli/dev.test.ts): the copy, its npm scripts, the timing of
// their slow steps, and the pieces of openapi.yaml their fixture operations are written with.

/** A copy of the project's `entries` in a temporary directory, with the project's node_modules linked in. */
export function copyProject (t: Teardown, entries: string[]): string {
  const copy = tempDir(t)
  for (const entry of entries) cpSync(join(projectRoot, entry), join(copy, entry), { recursive: true })
  symlinkSync(realpathSync(join(projectRoot, 'node_modules')), join(copy, 'node_modules'))
  return copy
}

/** An npm script of the copy, run there as a user would (`npm run -s script -- args`). */
export const npmScript = (copy: string, script: string, ...args: string[]): Promise<CliResult> =>
  run('sh', ['-c', `cd "${copy}" && npm run -s ${script}${args.length > 0 ? ' -- ' + args.join(' ') : ''}`], {}, 240_000)

/** Runs a slow step and writes how long it took as a comment of `t`. */
export async function timed<T> (t: { comment (...message: unknown[]): void }, step: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now()
  try { return await work() } finally { t.comment(`${step}: ${((Date.now() - started) / 1000).toFixed(1)} s`) }
}

type Json = Record<string, unknown>

/** A reference to a response of openapi.yaml's components. */
export const ref = (name: string) => ({ $ref: `#/components/responses/${name}` })
/** The headers every success of a /v1 operation declares, as references to openapi.yaml's components. */
export const headers = Object.fromEntries(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id']
  .map((name) => [name, { $ref: `#/components/headers/${name}` }]))
/** The `content` of a JSON body of `schema`. */
export const json = (schema: Json) => ({ 'application/json': { schema } })
