import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'

/**
 * Every handler-level HTTP test (test/handlers/*.test.ts, read from the folder) run a second
 * time on PostgreSQL: the same files, with buildTestApp giving each test a fresh PostgreSQL schema.
 */
process.env.TEST_DATABASE = 'postgres'
const handlersDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'handlers')
const files = readdirSync(handlersDir).filter((file) => file.endsWith('.test.ts')).sort()
t.ok(files.length > 0, `the handler tests run on PostgreSQL: ${files.join(', ')}`)
for (const file of files) await import(pathToFileURL(join(handlersDir, file)).href)
