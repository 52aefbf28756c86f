import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root, found from this file whether it runs from src/ (tsx) or dist/src/ (node). */
function findProjectRoot (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
  return dir
}

export const projectRoot = findProjectRoot()
export const openapiPath = join(projectRoot, 'openapi.yaml')
