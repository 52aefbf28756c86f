import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { once } from 'node:events'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { issueApiKey } from '../../src/repositories/api-keys.js'
import { webhooksRepository } from '../../src/repositories/webhooks.js'
import { createStore } from '../../src/store/create-store.js'
import { SecretBox } from '../../src/webhooks/secrets.js'
import { newSecret } from '../../src/webhooks/signing.js'
import { tempDir } from '../helpers/app.js'
import { migrateDatabase, run } from '../helpers/cli.js'
import { typescriptArgs } from '../helpers/node-args.js'
import { databaseUrl } from '../helpers/postgres.js'
import { REDIS, REDIS_SKIP, redisAvailable, redisUrlWithIndex } from '../helpers/redis.js'

// docs/operations.md (configuration): a start-up failure prints one line saying what failed and what to check, exits 1.
const startServer = (env: Record<string, string>, timeoutMs = 60_000) =>
  run(process.execPath, [...typescriptArgs, join(projectRoot, 'src', 'server.ts')], { LOG_LEVEL: 'silent', SEED: 'false', ...env }, timeoutMs)

function oneLine (t: Pick<typeof import('tap').default, 'equal' | 'match' | 'notMatch'>, stderr: string, pattern: RegExp): void {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '')
  t.equal(lines.length, 1, `one line on stderr, got: ${stderr}`)
  t.match(lines[0], pattern)
  t.notMatch(stderr, /\n\s+at /, 'no stack trace')
}

t.test('the port is in use', async (t) => {
  const blocker = createServer().listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => blocker.close())
  const port = (blocker.address() as { port: number }).port
  const res = await startServer({ PORT: String(port), DATABASE_URL: `sqlite:${join(tempDir(t), 'a.db')}` })
  t.equal(res.code, 1)
  oneLine(t, res.stderr, new RegExp(`^Pet Store API could not start: 127\\.0\\.0\\.1:${port} is already in use: stop the other process or set PORT`))
})

t.test('PostgreSQL does not answer, and the password is not printed', async (t) => {
  const res = await startServer({ PORT: '0', DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/petstore', DATABASE_TIMEOUT_MS: '500' })
  t.equal(res.code, 1)
  oneLine(t, res.stderr, /^Pet Store API could not start: cannot open the database \(DATABASE_URL=postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/petstore\): .*ECONNREFUSED/)
  t.notMatch(res.stderr, /s3cret/)
})

t.test('a PostgreSQL database that does not exist', async (t) => {
  const res = await startServer({ PORT: '0', DATABASE_URL: databaseUrl('petstore_no_such_db') })
  t.equal(res.code, 1)
  oneLine(t, res.stderr, /^Pet Store API could not start: PostgreSQL: database "petstore_no_such_db" does not exist .*createdb petstore_no_such_db/)
})

t.test('an SQLite path that cannot be a database', async (t) => {
  const dir = tempDir(t)
  const res = await startServer({ PORT: '0', DATABASE_URL: `sqlite:${dir}` })
  t.equal(res.code, 1)
  oneLine(t, res.stderr, /^Pet Store API could not start: cannot open the database \(DATABASE_URL=sqlite:/)
})

t.test('a REDIS_URL whose database cannot be selected', { skip: !await redisAvailable() && REDIS_SKIP }, async (t) => {
  // The shared Redis has 16 databases (0 to 15): SELECT 99 is refused.
  const res = await startServer({ PORT: '0', DATABASE_URL: `sqlite:${join(tempDir(t), 'r.db')}`, REDIS_URL: redisUrlWithIndex(99) }, 20_000)
  t.equal(res.code, 1)
  const address = `${REDIS.host}:${REDIS.port}/99`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  oneLine(t, res.stderr, new RegExp(`^Pet Store API could not start: .*REDIS_URL=rediss?://(?:[^@]*@)?${address}.*database 99`))
})

t.test('webhook secrets stored encrypted, and a WEBHOOK_ENCRYPTION_KEY that cannot open them', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'w.db')}`
  await migrateDatabase(databaseUrl)
  const sealingKey = randomBytes(32)
  const store = await createStore(databaseUrl)
  const key = await issueApiKey(store, { name: 'partner', plan: 'free', scopes: ['webhooks', 'inventory:read'] })
  await webhooksRepository(store, new SecretBox(sealingKey), Date.now).create(key.record.id, { url: 'https://hooks.example.com/in', events: ['inventory.updated'] }, newSecret())
  await store.close()

  const wrongKey = await startServer({ PORT: '0', DATABASE_URL: databaseUrl, WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64') })
  t.equal(wrongKey.code, 1)
  oneLine(t, wrongKey.stderr, /^Pet Store API could not start: WEBHOOK_ENCRYPTION_KEY does not open the webhook secrets stored in the database: set the key they were sealed with$/)
  const noKey = await startServer({ PORT: '0', DATABASE_URL: databaseUrl })
  t.equal(noKey.code, 1)
  oneLine(t, noKey.stderr, /^Pet Store API could not start: webhook secrets are stored encrypted and WEBHOOK_ENCRYPTION_KEY is not set: set the key they were sealed with$/)
})
