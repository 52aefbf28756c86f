import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import { ConfigError, loadConfig, maskPassword } from '../../src/config.js'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from '../helpers/app.js'
import { typescriptArgs } from '../helpers/node-args.js'

t.test('loadConfig defaults are those of README.md (Configuration)', async (t) => {
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
    { TRUST_PROXY: '2' },
    { BODY_LIMIT: '-1' },
    { BODY_LIMIT: '16kb' },
    { BODY_LIMIT: '1' },
    // Numbers are plain decimals, for every numeric variable.
    ...['PORT', 'DATABASE_POOL_MAX', 'DATABASE_TIMEOUT_MS', 'REDIS_COMMAND_TIMEOUT_MS', 'RATE_LIMIT_BAN_AFTER', 'RATE_LIMIT_BAN_SECONDS',
      'BODY_LIMIT', 'METRICS_PORT', 'REQUEST_TIMEOUT_MS', 'SHUTDOWN_TIMEOUT_MS'].flatMap((name) =>
      ['0x10', '1e3', '1000.0', '+100', ' 100', '0100', '1_000'].map((value) => ({ [name]: value }))),
    { REDIS_URL: 'redis://u:pw@127.0.0.1:notaport' },
    { REDIS_URL: 'redis://127.0.0.1:6379/abc' },
    { REDIS_URL: 'redis://:6379' },
    { DATABASE_URL: 'postgres://u:pw@127.0.0.1:notaport/db' },
    { REQUEST_TIMEOUT_MS: '10' },
    { SHUTDOWN_TIMEOUT_MS: '0' }
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

t.test('the messages say what a valid value is', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ LOG_LEVEL: 'loud' }, 'Invalid configuration: LOG_LEVEL must be equal to one of the allowed values: fatal, error, warn, info, debug, trace, silent (got "loud")'],
    [{ SEED: 'yes' }, 'Invalid configuration: SEED must be equal to one of the allowed values: true, false (got "yes")'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT must be <= 65535 (got "70000")'],
    [{ BODY_LIMIT: '16kb' }, 'Invalid configuration: BODY_LIMIT must be a whole number in plain decimal digits (got "16kb")'],
    [{ HOST: 'my host' }, 'Invalid configuration: HOST must be an address or host name without spaces (got "my host")'],
    [{ DATABASE_URL: './petstore.db' }, 'Invalid configuration: DATABASE_URL must be sqlite:PATH or postgres://… (got "./petstore.db")'],
    [{ REDIS_URL: 'localhost:6379' }, 'Invalid configuration: REDIS_URL must be redis://… or rediss://… (got "localhost:6379")'],
    [{ PUBLIC_BASE_URL: 'https://example.com/' }, 'Invalid configuration: PUBLIC_BASE_URL must be an http(s) address without a trailing slash (got "https://example.com/")'],
    [{ PORT: '8\n0' }, 'Invalid configuration: PORT must be a whole number in plain decimal digits (got "8\\n0")'],
    [{ REDIS_URL: 'redis://u:pw@127.0.0.1:notaport' }, 'Invalid configuration: REDIS_URL must be an address that parses: redis://[[user]:password@]host[:port][/db] (a numeric port and database index; percent-encode special characters) (got "redis://u:***@127.0.0.1:notaport")'],
    [{ REDIS_URL: 'redis://127.0.0.1:6379/abc' }, 'Invalid configuration: REDIS_URL must be an address that parses: redis://[[user]:password@]host[:port][/db] (a numeric port and database index; percent-encode special characters) (got "redis://127.0.0.1:6379/abc")'],
    [{ DATABASE_URL: 'postgres://u:pw@db.example:x/petstore' }, 'Invalid configuration: DATABASE_URL must be an address that parses: postgres://[user[:password]@]host[:port]/database (a numeric port; percent-encode special characters) (got "postgres://u:***@db.example:x/petstore")']
  ]
  for (const [env, message] of cases) t.throws(() => loadConfig(env), { name: 'ConfigError', message }, message)
})

t.test('loadConfig reads only the environment it is given, by default process.env', async (t) => {
  const saved = process.env.PORT
  process.env.PORT = '4321'
  t.teardown(() => { if (saved === undefined) delete process.env.PORT; else process.env.PORT = saved })
  t.equal(loadConfig({}).port, 3000, 'a given environment is not mixed with process.env')
  t.equal(loadConfig().port, 4321, 'without one, process.env')
  t.equal(loadConfig({ PORT: '5000', UNRELATED: 'x' }).port, 5000, 'other variables are ignored')
})

t.test('a refused address is echoed without its password', async (t) => {
  const cases: [string, string, string][] = [
    ['DATABASE_URL', 'mysql://admin:s3cret-pw@db.example/petstore', '"mysql://admin:***@db.example/petstore"'],
    ['DATABASE_URL', 'postgres//admin:s3cret-pw@db.example/petstore', '"postgres//admin:***@db.example/petstore"'],
    ['DATABASE_URL', 'mysql://admin:s3cret@pw@db.example/petstore', '"mysql://admin:***@db.example/petstore"'],
    ['DATABASE_URL', 'mysql://db.example/petstore?user=admin&password=s3cret-pw', '"mysql://db.example/petstore?user=admin&password=***"'],
    ['REDIS_URL', 'http://:s3cret-pw@cache.example:6379', '"http://:***@cache.example:6379"'],
    ['PUBLIC_BASE_URL', 'https://admin:s3cret-pw@api.example/', '"https://admin:***@api.example/"'],
    ['REDIS_URL', 'redis://s3cret-pw@:6379', '"redis://***@:6379"'],
    ['CORS_ORIGINS', 'https://admin:s3cret-pw@app.example', '"https://admin:***@app.example"'],
    ['CORS_ORIGINS', 'https://app.example,https://s3cret-pw@other.example', '"https://app.example,https://***@other.example"'],
    ['PUBLIC_BASE_URL', 'https://admin:s3cret-pw@api.example', '"https://admin:***@api.example"'],
    ['PUBLIC_BASE_URL', 'https://s3cret-pw@api.example', '"https://***@api.example"']
  ]
  for (const [name, value, shown] of cases) {
    try {
      loadConfig({ [name]: value })
      t.fail(`${name}=${value} was accepted`)
    } catch (error) {
      const message = (error as Error).message
      t.ok(message.startsWith(`Invalid configuration: ${name} must `), `${name}: names the variable: ${message}`)
      t.ok(message.endsWith(`(got ${shown})`), `${name}: shows the value masked`)
      t.notMatch(message, /s3cret/, `${name}: no part of the password`)
    }
  }
  t.equal(maskPassword('postgres://user:secret@host/db'), 'postgres://user:***@host/db', 'README.md (Configuration) example')
  t.equal(maskPassword('postgres://app@db.example:5432/petstore'), 'postgres://app@db.example:5432/petstore', 'a PostgreSQL user without a password and a port are left alone')
  t.equal(maskPassword('redis://s3cret@cache.example:6379'), 'redis://***@cache.example:6379', 'Redis reads user info without a colon as the password')
  t.equal(maskPassword('https://t0ken@api.example:8443/x'), 'https://***@api.example:8443/x', 'so may other services (a token as the user)')
  t.equal(maskPassword('redis://cache.example:6379/2'), 'redis://cache.example:6379/2', 'nothing to mask')
})

t.test('PUBLIC_BASE_URL with user info is refused: the document and the docs page publish it', async (t) => {
  t.throws(() => loadConfig({ PUBLIC_BASE_URL: 'https://u:hunter2@api.example.com' }), {
    name: 'ConfigError',
    message: 'Invalid configuration: PUBLIC_BASE_URL must not carry user info (user:password@): clients and the docs page are given this address (got "https://u:***@api.example.com")'
  })
  t.equal(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com' }).publicBaseUrl, 'https://api.example.com', 'an address without user info is taken')
})

t.test('TRUST_PROXY: true, false, or the proxies\' addresses as Fastify\'s trustProxy takes them', async (t) => {
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
  const accepted = [
    '127.0.0.1',
    '10.0.0.0/8',
    '10.0.0.0/255.0.0.0',
    '192.168.1.10/32',
    '::1',
    '2001:db8::/32',
    '::ffff:10.0.0.1',
    'loopback',
    'loopback, linklocal, uniquelocal',
    ' 10.0.0.0/8 ,127.0.0.1,fd00::/8 '
  ]
  for (const value of accepted) {
    const { trustProxy } = loadConfig({ TRUST_PROXY: value })
    t.equal(trustProxy, value, `${JSON.stringify(value)} is passed on as it is`)
    // Fastify compiles the list when it is constructed, and throws on an entry proxy-addr refuses.
    t.doesNotThrow(() => Fastify({ trustProxy }), `${JSON.stringify(value)}: Fastify takes it`)
  }

  const refused = ['2', '0', ' 1 ', '???', 'yes', 'TRUE', 'localhost', '10.0.0.0/0', '10.0.0.1/33', '::1/129', '10.0.0.0/255.0.255.0',
    '10.0.0.256', '10.0.0', '010.0.0.1', '10.0.0.1,', '10.0.0.1,,127.0.0.1', '10.0.0.0/8/8', 'loopback,proxy.example']
  for (const value of refused) {
    t.throws(() => loadConfig({ TRUST_PROXY: value }), { name: 'ConfigError', message: /^Invalid configuration: TRUST_PROXY [^\n]+$/ }, `${JSON.stringify(value)} is refused`)
  }
  t.throws(() => loadConfig({ TRUST_PROXY: '2' }), {
    message: 'Invalid configuration: TRUST_PROXY is a hop count, which is not accepted (a count cannot check who the proxy is): list the proxies\' addresses or CIDRs instead, e.g. TRUST_PROXY=10.0.0.0/8 (got "2")'
  }, 'a hop count: says to list the addresses instead')
  t.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.1,proxy.example' }), {
    message: 'Invalid configuration: TRUST_PROXY must be true, false, or a comma-separated list of the proxies\' addresses, CIDRs or loopback, linklocal, uniquelocal (got "10.0.0.1,proxy.example")'
  })
})

t.test('a TRUST_PROXY list gives Fastify the client address behind the listed proxies only', async (t) => {
  const app = Fastify({ trustProxy: loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy })
  app.get('/', async (request) => ({ ip: request.ip }))
  t.teardown(() => app.close())
  const ip = async (remoteAddress: string, forwarded: string) =>
    (await app.inject({ url: '/', remoteAddress, headers: { 'x-forwarded-for': forwarded } })).json<{ ip: string }>().ip
  t.equal(await ip('10.1.2.3', '203.0.113.7'), '203.0.113.7', 'through a listed proxy: the forwarded address')
  t.equal(await ip('10.1.2.3', '198.51.100.1, 203.0.113.7, 10.9.9.9'), '203.0.113.7', 'the nearest untrusted hop, not what the client wrote in front')
  t.equal(await ip('192.0.2.44', '203.0.113.7'), '192.0.2.44', 'from an address not listed: the header is ignored')
})

/** Runs the real server entry point and collects its output (it is expected to exit by itself). */
function runServer (env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, [...typescriptArgs, join(projectRoot, 'src', 'server.ts')], {
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
    ['TRUST_PROXY', { TRUST_PROXY: '???' }],
    ['TRUST_PROXY', { TRUST_PROXY: '2' }],
    ['REDIS_URL', { REDIS_URL: 'http://:s3cret-pw@cache.example' }],
    ['REDIS_URL', { REDIS_URL: 'redis://u:s3cret-pw@127.0.0.1:notaport' }],
    ['REDIS_URL', { REDIS_URL: 'redis://127.0.0.1:6379/abc' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://u:s3cret-pw@127.0.0.1:notaport/test' }],
    ['PUBLIC_BASE_URL', { PUBLIC_BASE_URL: 'https://u:s3cret-pw@api.example.com' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://u:s3cret-pw@app.example.com' }],
    ['PORT', { PORT: '0x10' }],
    ['PORT', { PORT: '1e3' }]
  ]
  // One at a time: each is a whole Node process on a small machine.
  for (const [name, env] of cases) {
    const file = join(dir, `${name}.db`)
    const { code, stdout, stderr } = await runServer({ DATABASE_URL: `sqlite:${file}`, PORT: '0', ...env })
    if (Object.values(env).some((value) => value.includes('s3cret'))) t.match(stderr, ':***@', `${name}: the address is shown masked`)
    t.not(code, 0, `${name}: non-zero exit`)
    t.not(code, null, `${name}: exited by itself`)
    const lines = stderr.trim().split('\n')
    t.equal(lines.length, 1, `${name}: exactly one line on stderr`)
    t.match(lines[0], name, `${name}: the line names the variable: ${lines[0]}`)
    t.notMatch(stderr, /\bat .+:\d+:\d+/, `${name}: no stack trace`)
    t.equal(stdout, '', `${name}: nothing on stdout`)
    t.notOk(existsSync(file), `${name}: the database was not touched`)
    t.notMatch(stderr, /s3cret/, `${name}: no password in the output`)
  }
})
