import { Ajv } from 'ajv'

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
  trustProxy: boolean | number | string
  bodyLimit: number
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

// One schema for the whole environment; ajv coerces the text of each variable to its type.
const envSchema = {
  type: 'object',
  properties: {
    NODE_ENV: { type: 'string', default: 'development' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', pattern: '^\\S+$', default: '127.0.0.1' },
    DATABASE_URL: { type: 'string', pattern: '^(sqlite:.+|postgres(ql)?://.+)$', default: 'sqlite:./data/petstore.db' },
    DATABASE_POOL_MAX: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    DATABASE_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 5000 },
    REDIS_URL: { type: 'string', pattern: '^rediss?://.+' },
    REDIS_KEY_PREFIX: { type: 'string', minLength: 1, maxLength: 200, default: 'petstore:ratelimit:' },
    REDIS_COMMAND_TIMEOUT_MS: { type: 'integer', minimum: 10, maximum: 60000, default: 500 },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    PUBLIC_BASE_URL: { type: 'string', pattern: '^https?://[^/]+(/.*[^/])?$', default: 'http://127.0.0.1:3000' },
    SEED: { type: 'string', enum: ['true', 'false'], default: 'true' },
    RATE_LIMIT_BAN_AFTER: { type: 'integer', minimum: 1, maximum: 1000000, default: 10 },
    RATE_LIMIT_BAN_SECONDS: { type: 'integer', minimum: 1, maximum: 31536000, default: 900 },
    TRUST_PROXY: { type: 'string', minLength: 1, default: 'false' },
    BODY_LIMIT: { type: 'integer', minimum: 64, maximum: 104857600, default: 16384 }
  }
} as const

const describe: Record<string, string> = {
  HOST: 'must be an address or host name without spaces',
  DATABASE_URL: 'must be sqlite:PATH or postgres://…',
  REDIS_URL: 'must be redis://… or rediss://…',
  PUBLIC_BASE_URL: 'must be an http(s) address without a trailing slash'
}

const validate = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: false }).compile(envSchema)

/** Reads and validates the configuration; throws ConfigError with a one-line message. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, string | number | undefined> = {}
  for (const name of Object.keys(envSchema.properties)) {
    const value = env[name]
    // An empty variable counts as unset, as shells and .env files commonly leave them.
    if (value !== undefined && value !== '') raw[name] = value
  }
  if (!validate(raw)) {
    const error = validate.errors?.[0]
    const name = error?.instancePath.slice(1) ?? 'environment'
    const allowed = error?.keyword === 'enum' ? `: ${(error.params as { allowedValues: string[] }).allowedValues.join(', ')}` : ''
    const reason = describe[name] ?? `${error?.message ?? 'is invalid'}${allowed}`
    throw new ConfigError(`Invalid configuration: ${name} ${reason} (got ${JSON.stringify(env[name])})`)
  }
  const v = raw as Record<string, string | number>
  return {
    nodeEnv: String(v.NODE_ENV),
    port: Number(v.PORT),
    host: String(v.HOST),
    databaseUrl: String(v.DATABASE_URL),
    databasePoolMax: Number(v.DATABASE_POOL_MAX),
    databaseTimeoutMs: Number(v.DATABASE_TIMEOUT_MS),
    redisUrl: v.REDIS_URL === undefined ? undefined : String(v.REDIS_URL),
    redisKeyPrefix: String(v.REDIS_KEY_PREFIX),
    redisCommandTimeoutMs: Number(v.REDIS_COMMAND_TIMEOUT_MS),
    logLevel: v.LOG_LEVEL as Config['logLevel'],
    publicBaseUrl: String(v.PUBLIC_BASE_URL),
    seed: v.SEED === 'true',
    rateLimitBanAfter: Number(v.RATE_LIMIT_BAN_AFTER),
    rateLimitBanSeconds: Number(v.RATE_LIMIT_BAN_SECONDS),
    trustProxy: parseTrustProxy(String(v.TRUST_PROXY)),
    bodyLimit: Number(v.BODY_LIMIT)
  }
}

/** TRUST_PROXY: true/false, a hop count, or a comma-separated list of addresses/CIDRs (as Fastify takes it). */
function parseTrustProxy (text: string): boolean | number | string {
  if (text === 'true') return true
  if (text === 'false') return false
  if (/^\d+$/.test(text)) return Number(text)
  if (/^[0-9a-fA-F:.,/\s]+$/.test(text)) return text
  throw new ConfigError(`Invalid configuration: TRUST_PROXY must be true, false, a hop count or a list of addresses (got ${JSON.stringify(text)})`)
}
