/** The service compiled as production runs it (`npm run build`), into a directory of the run's own. */
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { relative } from 'node:path'
import { projectRoot } from '../../src/contract/paths.js'

/**
 * Compiles src/ and handlers/ (`tsc -p tsconfig.build.json`) into `outDir`, inside the project
 * so that the compiled code finds the project's package.json, openapi.yaml and node_modules, and
 * apart from dist/ so that a build others use is left alone. tsc emits the JavaScript even when it
 * reports type errors: `ok` says whether it did.
 */
export function compileService (outDir: string): { ok: boolean } {
  rmSync(outDir, { recursive: true, force: true })
  console.log(`Compiling the service (tsc -p tsconfig.build.json) into ${relative(projectRoot, outDir)}/`)
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: projectRoot, stdio: 'inherit' })
  return { ok: build.status === 0 }
}
