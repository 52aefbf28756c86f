import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * The handler-level HTTP tests for inventory, run a second time on PostgreSQL: the same files as
 * under test/handlers, with buildTestApp giving each test a fresh PostgreSQL schema.
 */
process.env.TEST_DATABASE = 'postgres'
const handlersDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'handlers')
for (const file of readdirSync(handlersDir).filter((f) => /inventory.*\.test\.ts$/i.test(f)).sort()) {
  await import(pathToFileURL(join(handlersDir, file)).href)
}
