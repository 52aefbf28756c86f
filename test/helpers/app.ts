import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance, type FastifyServerOptions, type InjectOptions } from 'fastify'
import type { Response as InjectResponse } from 'light-my-request'
import app, { type AppOptions, serverOptions } from '../../src/app.js'
import { type Config, loadConfig } from '../../src/config.js'
import { issueApiKey } from '../../src/repositories/api-keys.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'
import type { Store } from '../../src/store/types.js'
import { ALL_SCOPES, checkResponse, document } from './contract.js'
import { createTestSchema } from './postgres.js'
import './glue-validator.js'

/** The part of a tap test the helpers need (teardown), so helpers stay independent of tap's types. */
export interface Teardown { teardown (fn: () => unknown): void }

export interface TestApp {
  app: FastifyInstance
  store: Store
  config: Config
  /** app.inject, then the response is checked against openapi.yaml (throws when it breaks the contract). */
  request (options: InjectOptions & { method: string, url: string }): Promise<InjectResponse>
  /** Creates a key (holding every scope unless `scopes` says otherwise) and returns its secret. */
  createKey (plan?: string, limits?: { perMinute: number, perDay: number }, scopes?: readonly string[]): Promise<string>
  /** `Authorization` header for a fresh key on the plan (enterprise: 100,000 a minute, 10,000,000 a day). */
  authHeader (plan?: string): Promise<{ authorization: string }>
}

export function tempDir (t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export interface TestAppOptions extends Omit<AppOptions, 'config'> {
  env?: Record<string, string>
  /** In place of the configured logger (silent by default): a stream to read the log lines, say. */
  logger?: FastifyServerOptions['logger']
  /** The engine of the throwaway database; default: TEST_DATABASE from the environment, else sqlite. */
  database?: 'sqlite' | 'postgres'
}

/** The engine test apps use unless a test names one: `TEST_DATABASE=postgres npx tap …` runs them on PostgreSQL. */
export const defaultTestDatabase = (): 'sqlite' | 'postgres' => process.env.TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite'

// SQLite databases as a new app leaves them once started (migrated; seeded with the demo
// catalogue unless SEED=false), made once per test process and copied for each test app: the
// app's own start then finds the schema up to date and the catalogue there, as on a second start.
let templateDir: string | undefined
const sqliteTemplates = new Map<boolean, Promise<string>>()

function sqliteTemplate (seed: boolean): Promise<string> {
  let template = sqliteTemplates.get(seed)
  if (template === undefined) {
    if (templateDir === undefined) {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-template-'))
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
      templateDir = dir
    }
    const file = join(templateDir, seed ? 'seeded.db' : 'empty.db')
    template = (async () => {
      // What src/plugins/app/storage.ts does on an app's first start.
      const store = createSqliteStore(file)
      try {
        await store.migrate()
        if (seed) await store.importCatalogue(demoCatalogue)
      } finally {
        await store.close()
      }
      return file
    })()
    sqliteTemplates.set(seed, template)
  }
  return template
}

/** The environment for a throwaway database of the engine, unless the test gives its own DATABASE_URL. */
async function throwawayDatabase (t: Teardown, database: 'sqlite' | 'postgres', env: Record<string, string> | undefined): Promise<Record<string, string>> {
  if (env?.DATABASE_URL !== undefined) return {}
  if (database === 'postgres') return { DATABASE_URL: (await createTestSchema(t)).url(), DATABASE_POOL_MAX: '4' }
  const file = join(tempDir(t), 'test.db')
  const url = `sqlite:${file}`
  copyFileSync(await sqliteTemplate(loadConfig({ LOG_LEVEL: 'silent', ...env, DATABASE_URL: url }).seed), file)
  return { DATABASE_URL: url }
}

/**
 * A fresh app on its own throwaway database (seeded with the demo catalogue unless SEED=false):
 * a SQLite file in a temporary directory (a copy of the process's template, above), or a
 * PostgreSQL schema with a random name, dropped after.
 */
export async function buildTestApp (t: Teardown, options: TestAppOptions = {}): Promise<TestApp> {
  const { env, database = defaultTestDatabase(), logger, ...appOptions } = options
  const config = loadConfig({ ...await throwawayDatabase(t, database, env), LOG_LEVEL: 'silent', ...env })
  const server = Fastify({ ...serverOptions(config), ...(logger === undefined ? {} : { logger }) })
  t.teardown(() => server.close())
  // openapi.yaml as loaded once for this process (the contract check reads the same copy); the app
  // only reads it, and a test may still give its own.
  await server.register(app, { document, ...appOptions, config })
  await server.ready()

  const createKey = async (plan = 'free', limits?: { perMinute: number, perDay: number }, scopes: readonly string[] = ALL_SCOPES) =>
    (await issueApiKey(server.store, { name: `test ${plan}`, plan, ...limits, scopes })).secret
  return {
    app: server,
    store: server.store,
    config,
    createKey,
    // An enterprise key has its own limits (the database refuses one without): high ones here.
    authHeader: async (plan = 'free') => ({ authorization: `Bearer ${await createKey(plan, plan === 'enterprise' ? { perMinute: 100_000, perDay: 10_000_000 } : undefined)}` }),
    request: async (opts) => {
      const res = await server.inject(opts)
      checkResponse(opts.method.toUpperCase(), opts.url, res)
      return res
    }
  }
}
