import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config.js'
import { projectRoot } from '../../src/paths.js'
import { tempDir } from '../helpers/app.js'

t.test('loadConfig defaults are those of PRODUCT.md §8', async (t) => {
  const config = loadConfig({})
  const expected = {
    nodeEnv: 'development',
    port: 3000,
    host: '127.0.0.1',
    databaseUrl: 'sqlite:./data/petstore.db',
    redisUrl: undefined,
    logLevel: 'info',
    publicBaseUrl: 'http://127.0.0.1:3000',
    seed: true,
    rateLimitBanAfter: 10,
    rateLimitBanSeconds: 900,
    trustProxy: false,
    bodyLimit: 16 * 1024
  }
  const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, config[k as keyof typeof config]]))
  t.strictSame(picked, expected)
  t.strictSame(loadConfig({ PORT: '', SEED: '', LOG_LEVEL: '' }), config, 'an empty variable counts as unset')
})

t.test('loadConfig reads valid values with their types', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATABASE_URL: 'postgres://u:p@db.example:5432/petstore',
    REDIS_URL: 'redis://127.0.0.1:6379/2',
    LOG_LEVEL: 'debug',
    PUBLIC_BASE_URL: 'https://api.example.com/petstore',
    SEED: 'false',
    RATE_LIMIT_BAN_AFTER: '3',
    RATE_LIMIT_BAN_SECONDS: '60',
    TRUST_PROXY: 'true',
    BODY_LIMIT: '1024',
    NODE_ENV: 'production'
  })
  t.match(config, {
    port: 8080,
    host: '0.0.0.0',
    databaseUrl: 'postgres://u:p@db.example:5432/petstore',
    redisUrl: 'redis://127.0.0.1:6379/2',
    logLevel: 'debug',
    publicBaseUrl: 'https://api.example.com/petstore',
    seed: false,
    rateLimitBanAfter: 3,
    rateLimitBanSeconds: 60,
    trustProxy: true,
    bodyLimit: 1024,
    nodeEnv: 'production'
  })
  t.equal(loadConfig({ PORT: '0' }).port, 0, 'PORT=0 picks a free port')
  t.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2, 'TRUST_PROXY as a hop count')
  t.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1', 'TRUST_PROXY as addresses')
  t.equal(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).databaseUrl, 'sqlite::memory:')
})

t.test('each bad value throws ConfigError with a one-line message naming the variable', async (t) => {
  const bad: Record<string, string>[] = [
    { PORT: 'abc' },
    { PORT: '70000' },
    { PORT: '-1' },
    { PORT: '80.5' },
    { PORT: '8\n0' },
    { DATABASE_URL: 'mysql://x' },
    { DATABASE_URL: './petstore.db' },
    { REDIS_URL: 'http://localhost:6379' },
    { LOG_LEVEL: 'loud' },
    { LOG_LEVEL: 'INFO ' },
    { PUBLIC_BASE_URL: 'ftp://example.com' },
    { PUBLIC_BASE_URL: 'https://example.com/' },
    { SEED: 'maybe' },
    { SEED: 'yes' },
    { RATE_LIMIT_BAN_AFTER: '0' },
    { RATE_LIMIT_BAN_SECONDS: 'forever' },
    { TRUST_PROXY: '???' },
    { BODY_LIMIT: '-1' },
    { BODY_LIMIT: '16kb' },
    { BODY_LIMIT: '1' }
  ]
  for (const env of bad) {
    const [name, value] = Object.entries(env)[0]!
    const label = `${name}=${JSON.stringify(value)}`
    try {
      loadConfig(env)
      t.fail(`${label} was accepted`)
    } catch (error) {
      t.ok(error instanceof ConfigError, `${label}: ConfigError`)
      const message = (error as Error).message
      t.notMatch(message, /\n/, `${label}: one line`)
      t.match(message, name!, `${label}: names ${name}: ${message}`)
    }
  }
})

/** Runs the real server entry point and collects its output (it is expected to exit by itself). */
function runServer (env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'src', 'server.ts')], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  return new Promise((resolve) => child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) }))
}

t.test('the server refuses to start on a bad value: non-zero exit, one line naming the variable', async (t) => {
  const dir = tempDir(t)
  const cases: [string, Record<string, string>][] = [
    ['PORT', { PORT: '70000' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['TRUST_PROXY', { TRUST_PROXY: '???' }]
  ]
  // One at a time: each is a whole Node process on a small machine.
  for (const [name, env] of cases) {
    const file = join(dir, `${name}.db`)
    const { code, stdout, stderr } = await runServer({ DATABASE_URL: `sqlite:${file}`, PORT: '0', ...env })
    t.not(code, 0, `${name}: non-zero exit`)
    t.not(code, null, `${name}: exited by itself`)
    const lines = stderr.trim().split('\n')
    t.equal(lines.length, 1, `${name}: exactly one line on stderr`)
    t.match(lines[0], name, `${name}: the line names the variable: ${lines[0]}`)
    t.notMatch(stderr, /\bat .+:\d+:\d+/, `${name}: no stack trace`)
    t.equal(stdout, '', `${name}: nothing on stdout`)
    t.notOk(existsSync(file), `${name}: the database was not touched`)
  }
})
