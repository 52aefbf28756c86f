import { isIP, isIPv4 } from 'node:net'
import { Ajv, type ErrorObject } from 'ajv'
import envSchema from 'env-schema'

/** Everything the service reads from its environment, validated once at start. */
export interface Config {
  nodeEnv: string
  port: number
  host: string
  databaseUrl: string
  /** PostgreSQL only: most connections each instance opens. */
  databasePoolMax: number
  /** PostgreSQL only: bound on connecting and on each statement, in milliseconds. */
  databaseTimeoutMs: number
  redisUrl: string | undefined
  /** Prepended to every rate-limit key in Redis, so deployments (and tests) can share one server. */
  redisKeyPrefix: string
  /** Longest a Redis command may take before the request is served without a rate limit. */
  redisCommandTimeoutMs: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  publicBaseUrl: string
  seed: boolean
  rateLimitBanAfter: number
  rateLimitBanSeconds: number
  /** Fastify's `trustProxy`: true (trust every hop), false (trust none) or the proxies' addresses, comma-separated. */
  trustProxy: boolean | string
  bodyLimit: number
  /** Origins a browser page may call the API from (CORS); '*' for any; undefined: CORS is off. */
  corsOrigins: '*' | string[] | undefined
  /** The metrics listener's port (GET /metrics); undefined: no listener and no metrics kept. */
  metricsPort: number | undefined
  metricsHost: string
  /** Swagger UI keeps a key pasted into Authorize in the browser's storage. */
  docsPersistAuthorization: boolean
  /** Longest a request's headers and body may take to arrive before it is answered 408. */
  requestTimeoutMs: number
  /** Longest SIGTERM/SIGINT may take: in-flight requests drain, then remaining connections are closed. */
  shutdownTimeoutMs: number
  /** Longest a webhook receiver may take to answer an attempt. */
  webhookTimeoutMs: number
  /** Milliseconds to wait before each retry of a failed delivery (the first retry, the second, …). */
  webhookRetrySchedule: number[]
  /** Webhook endpoints may be http and private addresses (development and tests). */
  webhookAllowPrivate: boolean
  /** 32 bytes that encrypt the stored webhook secrets (AES-256-GCM); undefined: stored as they are. */
  webhookEncryptionKey: Buffer | undefined
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The environment as the schema leaves it: defaults filled in, numbers coerced. */
interface Env {
  NODE_ENV: string
  PORT: number
  HOST: string
  DATABASE_URL: string
  DATABASE_POOL_MAX: number
  DATABASE_TIMEOUT_MS: number
  REDIS_URL?: string
  REDIS_KEY_PREFIX: string
  REDIS_COMMAND_TIMEOUT_MS: number
  LOG_LEVEL: Config['logLevel']
  PUBLIC_BASE_URL?: string
  SEED: 'true' | 'false'
  RATE_LIMIT_BAN_AFTER: number
  RATE_LIMIT_BAN_SECONDS: number
  TRUST_PROXY: string
  BODY_LIMIT: number
  CORS_ORIGINS?: string
  METRICS_PORT?: number
  METRICS_HOST: string
  DOCS_PERSIST_AUTHORIZATION: 'true' | 'false'
  REQUEST_TIMEOUT_MS: number
  SHUTDOWN_TIMEOUT_MS: number
  WEBHOOK_TIMEOUT_MS: number
  WEBHOOK_RETRY_SCHEDULE: string
  WEBHOOK_ALLOW_PRIVATE: 'true' | 'false'
  WEBHOOK_ENCRYPTION_KEY?: string
}

const schema = {
  type: 'object',
  properties: {
    NODE_ENV: { type: 'string', default: 'development' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', pattern: '^\\S+$', default: '127.0.0.1' },
    DATABASE_URL: { type: 'string', pattern: '^(sqlite:.+|postgres(ql)?://.+)$', format: 'database-url', default: 'sqlite:./data/petstore.db' },
    DATABASE_POOL_MAX: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    DATABASE_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 5000 },
    REDIS_URL: { type: 'string', pattern: '^rediss?://.+', format: 'redis-url' },
    REDIS_KEY_PREFIX: { type: 'string', minLength: 1, maxLength: 200, default: 'petstore:ratelimit:' },
    REDIS_COMMAND_TIMEOUT_MS: { type: 'integer', minimum: 10, maximum: 60000, default: 500 },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    PUBLIC_BASE_URL: { type: 'string', pattern: '^https?://[^/]+(/.*[^/])?$', format: 'public-base-url' },
    SEED: { type: 'string', enum: ['true', 'false'], default: 'true' },
    RATE_LIMIT_BAN_AFTER: { type: 'integer', minimum: 1, maximum: 1000000, default: 10 },
    RATE_LIMIT_BAN_SECONDS: { type: 'integer', minimum: 1, maximum: 31536000, default: 900 },
    TRUST_PROXY: { type: 'string', format: 'trust-proxy', default: 'false' },
    BODY_LIMIT: { type: 'integer', minimum: 64, maximum: 104857600, default: 16384 },
    CORS_ORIGINS: { type: 'string', format: 'cors-origins' },
    METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    METRICS_HOST: { type: 'string', pattern: '^\\S+$', default: '127.0.0.1' },
    DOCS_PERSIST_AUTHORIZATION: { type: 'string', enum: ['true', 'false'], default: 'false' },
    REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 3600000, default: 30000 },
    SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 10000 },
    WEBHOOK_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 60000, default: 10000 },
    WEBHOOK_RETRY_SCHEDULE: { type: 'string', format: 'duration-list', default: '5s,5m,30m,2h,5h,10h,10h' },
    WEBHOOK_ALLOW_PRIVATE: { type: 'string', enum: ['true', 'false'], default: 'false' },
    WEBHOOK_ENCRYPTION_KEY: { type: 'string', format: 'encryption-key' }
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
const DURATION = /^([1-9]\d{0,8})(ms|s|m|h)$/

/** WEBHOOK_RETRY_SCHEDULE: durations with a unit, comma-separated (`1s,1s,1s`), each up to 10 days. */
function durationList (text: string): number[] | undefined {
  const durations = text.split(',').map((entry) => {
    const match = DURATION.exec(entry.trim())
    return match === null ? Number.NaN : Number(match[1]) * DURATION_UNITS[match[2]!]!
  })
  return durations.length <= 20 && durations.every((ms) => Number.isFinite(ms) && ms <= 864_000_000) ? durations : undefined
}

/** WEBHOOK_ENCRYPTION_KEY: 32 bytes in base64 (or base64url). */
const encryptionKey = (text: string) => /^[A-Za-z0-9+/_-]{43}=?$/.test(text.trim()) ? Buffer.from(text.trim(), 'base64') : undefined

const variables = Object.keys(schema.properties)
const integerVariables = Object.entries(schema.properties).filter(([, property]) => property.type === 'integer').map(([name]) => name)

/** Variables holding an address (or, CORS_ORIGINS, a list of them) that may carry credentials: echoed only masked. */
const urlVariables = new Set(['DATABASE_URL', 'REDIS_URL', 'PUBLIC_BASE_URL', 'CORS_ORIGINS'])

/** proxy-addr's names for address ranges, which Fastify's trustProxy accepts in its list. */
const proxyRangeNames = ['loopback', 'linklocal', 'uniquelocal']

/** An IPv4 netmask such as 255.255.0.0 as its prefix length; undefined when the ones are not contiguous. */
function netmaskPrefix (mask: string): number | undefined {
  const bits = mask.split('.').reduce((n, octet) => n * 256 + Number(octet), 0)
  const hostBits = (~bits) >>> 0
  if ((hostBits & (hostBits + 1)) !== 0) return undefined
  return 32 - Math.log2(hostBits + 1)
}

/** One entry of a TRUST_PROXY list, as proxy-addr takes it: address, address/prefix, address/netmask, or a range name. */
function isProxyEntry (entry: string): boolean {
  if (proxyRangeNames.includes(entry)) return true
  const [address = '', range, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (range === undefined) return true
  const max = family === 4 ? 32 : 128
  // proxy-addr refuses a zero prefix (it would trust every address: say `true` for that).
  const prefix = /^\d{1,3}$/.test(range) ? Number(range) : family === 4 && isIPv4(range) ? netmaskPrefix(range) : undefined
  return prefix !== undefined && prefix >= 1 && prefix <= max
}

/** A URL the WHATWG parser reads (pg reads its addresses with it). */
function parsedUrl (text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

/** sqlite:PATH, or a postgres:// address that parses (a numeric port, say). */
const isDatabaseUrl = (text: string) => text.startsWith('sqlite:') || parsedUrl(text) !== undefined

/** A redis(s):// address that parses, with a host, whose path is empty or a database index. */
function isRedisUrl (text: string): boolean {
  const url = parsedUrl(text)
  return url !== undefined && url.hostname !== '' && /^(\/(\d{1,5})?)?$/.test(url.pathname)
}

/** User info (`user:password@`) before the host of an address. */
const hasUserInfo = (text: string) => /^[a-z][a-z\d+.-]*:\/\/[^/?#]*@/i.test(text)

/**
 * An address that parses and carries no user info: the document's servers, the docs page and the
 * Link headers give it to every client, so a credential in it would be published.
 */
const isPublicBaseUrl = (text: string) => parsedUrl(text) !== undefined && !hasUserInfo(text)

const isTrustProxy = (text: string) =>
  text === 'true' || text === 'false' || text.split(',').every((entry) => isProxyEntry(entry.trim()))

/** An http(s) origin written as browsers send it in `Origin`: scheme, host and port only. */
function isOrigin (text: string): boolean {
  try {
    const url = new URL(text)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text
  } catch {
    return false
  }
}

const corsOriginList = (text: string) => text.split(',').map((entry) => entry.trim())
const isCorsOrigins = (text: string) => text.trim() === '*' || corsOriginList(text).every(isOrigin)

// Our own instance (env-schema's documented option) so that the first error, with its keyword,
// is the one reported, and TRUST_PROXY is checked by the schema like every other variable.
const ajv = new Ajv({
  allErrors: false,
  removeAdditional: true,
  useDefaults: true,
  coerceTypes: true,
  formats: {
    'trust-proxy': isTrustProxy,
    'cors-origins': isCorsOrigins,
    'database-url': isDatabaseUrl,
    'redis-url': isRedisUrl,
    'public-base-url': isPublicBaseUrl,
    'duration-list': (text: string) => durationList(text) !== undefined,
    'encryption-key': (text: string) => encryptionKey(text)?.length === 32
  }
})

/** What a valid value looks like, where ajv's own words ("must match pattern …") would not say. */
const describe: Record<string, (value: string) => string> = {
  HOST: () => 'must be an address or host name without spaces',
  METRICS_HOST: () => 'must be an address or host name without spaces',
  DATABASE_URL: (value) => /^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(value)
    ? 'must be an address that parses: postgres://[user[:password]@]host[:port]/database (a numeric port; percent-encode special characters)'
    : 'must be sqlite:PATH or postgres://…',
  REDIS_URL: (value) => /^rediss?:\/\/.+/.test(value)
    ? 'must be an address that parses: redis://[[user]:password@]host[:port][/db] (a numeric port and database index; percent-encode special characters)'
    : 'must be redis://… or rediss://…',
  PUBLIC_BASE_URL: (value) => hasUserInfo(value)
    ? 'must not carry user info (user:password@): clients and the docs page are given this address'
    : 'must be an http(s) address without a trailing slash',
  TRUST_PROXY: (value) => /^\d+$/.test(value.trim())
    ? 'is a hop count, which is not accepted (a count cannot check who the proxy is): list the proxies\' addresses or CIDRs instead, e.g. TRUST_PROXY=10.0.0.0/8'
    : `must be true, false, or a comma-separated list of the proxies' addresses, CIDRs or ${proxyRangeNames.join(', ')}`,
  WEBHOOK_RETRY_SCHEDULE: () => 'must be durations with a unit (ms, s, m or h), comma-separated, each at most 10 days, at most 20 of them: e.g. 5s,5m,30m',
  WEBHOOK_ENCRYPTION_KEY: () => 'must be 32 bytes in base64 (44 characters, e.g. from: openssl rand -base64 32)',
  CORS_ORIGINS: (value) => {
    const entries = corsOriginList(value)
    const bad = entries.find((entry) => !isOrigin(entry))
    return 'must be * or a comma-separated list of origins such as https://app.example.com, written as browsers send them ' +
      `(scheme, host and any non-default port; no path, no trailing slash)${entries.length > 1 && bad !== undefined ? `: ${JSON.stringify(maskPassword(bad))} is not one` : ''}`
  }
}

/**
 * The address with its credentials replaced by ***: the password of the user info
 * (`postgres://user:***@host/db`), user info without a colon except PostgreSQL's (where it is
 * the user name; Redis reads it as the password, other services as a token), and password
 * parameters (`?password=***`). Works on text that is not a valid URL too, since it is used for
 * values that were refused.
 */
export function maskPassword (text: string): string {
  const scheme = text.indexOf('://')
  const start = scheme === -1 ? 0 : scheme + 3
  // The user info ends at the last @ (as URL parsers read it): a password may contain an @.
  const at = text.lastIndexOf('@')
  let masked = text
  if (at >= start) {
    const userInfo = text.slice(start, at)
    const colon = userInfo.indexOf(':')
    const shown = colon !== -1 ? `${userInfo.slice(0, colon + 1)}***` : /^postgres(ql)?:/i.test(text) ? userInfo : '***'
    masked = `${text.slice(0, start)}${shown}${text.slice(at)}`
  }
  return masked.replace(/([?&][^=&#]*password=)[^&#]*/gi, '$1***')
}

/** A comma-separated list of addresses (CORS_ORIGINS), each masked. */
const maskList = (text: string) => text.split(',').map(maskPassword).join(',')

/**
 * Every address with user info in a text (a log line, a driver's message) masked as maskPassword
 * does; the user info ends at its first @ here, since the text goes on after the address.
 */
export function maskCredentials (text: string): string {
  if (!text.includes('@')) return text
  return text.replace(/\b([a-z][a-z\d+.-]*:\/\/)([^\s/?#@"'\\]+)@/gi, (_match, scheme: string, userInfo: string) => {
    const colon = userInfo.indexOf(':')
    const shown = colon !== -1 ? `${userInfo.slice(0, colon + 1)}***` : /^postgres(ql)?:/i.test(scheme) ? userInfo : '***'
    return `${scheme}${shown}@`
  })
}

function explain (error: ErrorObject | undefined, env: Record<string, string>): string {
  const name = error?.instancePath.slice(1) ?? ''
  if (!variables.includes(name)) return `Invalid configuration: ${error?.message ?? 'the environment is invalid'}`
  const value = env[name] ?? ''
  const allowed = error?.keyword === 'enum' ? `: ${(error.params as { allowedValues: string[] }).allowedValues.join(', ')}` : ''
  const reason = describe[name]?.(value) ?? `${error?.message ?? 'is invalid'}${allowed}`
  const mask = name === 'CORS_ORIGINS' ? maskList : maskPassword
  const shown = name === 'WEBHOOK_ENCRYPTION_KEY' ? '***' : urlVariables.has(name) && !value.startsWith('sqlite:') ? mask(value) : value
  return `Invalid configuration: ${name} ${reason} (got ${JSON.stringify(shown)})`
}

/**
 * PUBLIC_BASE_URL when it is not given: the address this instance listens on. A wildcard HOST
 * (every interface) is reached from this machine at the loopback address; an IPv6 address needs
 * its brackets in a URL.
 */
export function defaultPublicBaseUrl (host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${isIP(reachable) === 6 ? `[${reachable}]` : reachable}:${port}`
}

/** Reads and validates the configuration; throws ConfigError with a one-line message. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset, as shells and .env files commonly leave them.
  const given: Record<string, string> = {}
  for (const name of variables) {
    const value = env[name]
    if (value !== undefined && value !== '') given[name] = value
  }
  // ajv's coercion reads text as JavaScript does: 0x10 would be 16 and 1e3 1000.
  for (const name of integerVariables) {
    const value = given[name]
    if (value !== undefined && !/^(0|[1-9]\d*)$/.test(value)) {
      throw new ConfigError(`Invalid configuration: ${name} must be a whole number in plain decimal digits (got ${JSON.stringify(value)})`)
    }
  }
  let v: Env
  try {
    v = envSchema<Env>({ schema, data: given, env: false, ajv })
  } catch (error) {
    throw new ConfigError(explain((error as { errors?: ErrorObject[] }).errors?.[0], given))
  }
  if (v.METRICS_PORT !== undefined && v.METRICS_PORT !== 0 && v.METRICS_PORT === v.PORT) {
    throw new ConfigError(`Invalid configuration: METRICS_PORT must differ from PORT: metrics are never served on the API port (got ${JSON.stringify(given.METRICS_PORT)})`)
  }
  return {
    nodeEnv: v.NODE_ENV,
    port: v.PORT,
    host: v.HOST,
    databaseUrl: v.DATABASE_URL,
    databasePoolMax: v.DATABASE_POOL_MAX,
    databaseTimeoutMs: v.DATABASE_TIMEOUT_MS,
    redisUrl: v.REDIS_URL,
    redisKeyPrefix: v.REDIS_KEY_PREFIX,
    redisCommandTimeoutMs: v.REDIS_COMMAND_TIMEOUT_MS,
    logLevel: v.LOG_LEVEL,
    publicBaseUrl: v.PUBLIC_BASE_URL ?? defaultPublicBaseUrl(v.HOST, v.PORT),
    seed: v.SEED === 'true',
    rateLimitBanAfter: v.RATE_LIMIT_BAN_AFTER,
    rateLimitBanSeconds: v.RATE_LIMIT_BAN_SECONDS,
    trustProxy: v.TRUST_PROXY === 'true' ? true : v.TRUST_PROXY === 'false' ? false : v.TRUST_PROXY,
    bodyLimit: v.BODY_LIMIT,
    corsOrigins: v.CORS_ORIGINS === undefined ? undefined : v.CORS_ORIGINS.trim() === '*' ? '*' : corsOriginList(v.CORS_ORIGINS),
    metricsPort: v.METRICS_PORT,
    metricsHost: v.METRICS_HOST,
    docsPersistAuthorization: v.DOCS_PERSIST_AUTHORIZATION === 'true',
    requestTimeoutMs: v.REQUEST_TIMEOUT_MS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    webhookTimeoutMs: v.WEBHOOK_TIMEOUT_MS,
    webhookRetrySchedule: durationList(v.WEBHOOK_RETRY_SCHEDULE)!,
    webhookAllowPrivate: v.WEBHOOK_ALLOW_PRIVATE === 'true',
    webhookEncryptionKey: v.WEBHOOK_ENCRYPTION_KEY === undefined ? undefined : encryptionKey(v.WEBHOOK_ENCRYPTION_KEY)
  }
}
