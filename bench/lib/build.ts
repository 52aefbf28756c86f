/** The service compiled as `npm start` runs it, into a directory of the benchmark's own. */
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative } from 'node:path'
import { projectRoot } from '../../src/contract/paths.js'

/**
 * Compiles the service (`tsc -p tsconfig.build.json`) into `outDir`, emptied first, so that a
 * `dist/` other processes use is left alone. tsc emits the JavaScript even when it reports type
 * errors: `ok` says whether it did, `entry` is the server to start.
 */
export function compileService (outDir: string): { entry: string, ok: boolean } {
  rmSync(outDir, { recursive: true, force: true })
  console.log(`Compiling the service (tsc -p tsconfig.build.json) into ${relative(projectRoot, outDir)}/`)
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: projectRoot, stdio: 'inherit' })
  return { entry: join(outDir, 'src', 'server.js'), ok: build.status === 0 }
}
