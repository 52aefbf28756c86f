import { writeSync } from 'node:fs'
import { Writable } from 'node:stream'
import type { FastifyBaseLogger, FastifyLoggerOptions, FastifyRequest } from 'fastify'
import type { Bindings, ChildLoggerOptions, FastifyChildLoggerFactory } from 'fastify/types/logger.js'
import type { Logger, LoggerOptions as PinoOptions } from 'pino'
import pretty from 'pino-pretty'
import { type Config, maskCredentials } from './config.js'
import { requestAddress } from './rate-limit/client-address.js'

export type LoggerOptions = FastifyLoggerOptions & Pick<PinoOptions, 'redact' | 'hooks'>

const REDACTED = '[redacted]'
// API keys (psk_…, also percent-encoded, as in a query string: psk%5F…), webhook signing secrets
// (whsec_…), and whatever follows Bearer or a credential-named query parameter. Written to run on
// JSON text too: a match never takes a quote or a backslash.
const KEY_MATERIAL = /((?:p|%70)(?:s|%73)(?:k|%6b)(?:_|%5f)|whsec_)(?:[\w+/=-]|%[0-9a-f]{2})+|(\bbearer\s+)[^\s,;"'\\]+|(\b(?:access(?:_|%5f)token|api(?:_|%5f)?key|token|key)=)[^&#\s"\\]*/gi

/** The text with anything that could be an API key replaced; `keep` (the demo key of the start-up line) is left. */
export function maskKeys (text: string, keep?: string): string {
  return text.replace(KEY_MATERIAL, (match, prefix?: string, bearer?: string, parameter?: string) =>
    match === keep ? match : `${prefix ?? bearer ?? parameter ?? ''}${REDACTED}`)
}

/** Whether the text holds something maskKeys would replace (a request id that does is not used as one). */
export const holdsKeyMaterial = (text: string): boolean => maskKeys(text) !== text

/** The one field that may hold a key: the demo key, printed once at a first start (src/server.ts). */
const DEMO_KEY = /"demoApiKey":"(psk_[\w-]+)"/

/** Where KEY_MATERIAL could match at all; most lines hold none of these, and skip it (0.6 µs a line). */
const MAYBE_KEY = /ps|%|=|bearer|whsec/i

/**
 * A line as written, with every API key and every credential in an address masked, wherever it
 * is: a header of any name, the URL, a message, an error. Run on the JSON text, so no field can
 * be missed, however deep.
 */
function maskLine (line: string): string {
  return maskCredentials(MAYBE_KEY.test(line) ? maskKeys(line, DEMO_KEY.exec(line)?.[1]) : line)
}

const credentialHeaders = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key']

/**
 * No API key or credential reaches the log. Headers that carry credentials are censored whole
 * wherever a header set is logged (Basic credentials hide a key in base64); every line is then
 * masked as written (maskLine). `demoApiKey` is exempt: the server prints the demo key once, on
 * purpose (src/server.ts).
 */
const secretsKept = {
  redact: {
    // A header set logged on its own, or as part of an object (req.headers, err.headers …).
    paths: ['authorization', 'secret', ...['headers', '*.headers'].flatMap((at) => credentialHeaders.map((name) => `${at}[${JSON.stringify(name)}]`))],
    censor: REDACTED
  },
  serializers: {
    // Fastify's own request fields, and the address the rate limits use (never an
    // X-Forwarded-For value that is not an IP address).
    req: (request: FastifyRequest) => {
      const version = request.headers['accept-version']
      const remoteAddress = requestAddress(request)
      const remotePort = request.socket?.remotePort
      return {
        method: request.method,
        url: request.url,
        ...(typeof version === 'string' ? { version } : {}),
        host: request.host,
        ...(remoteAddress === undefined ? {} : { remoteAddress }),
        ...(remotePort === undefined ? {} : { remotePort })
      }
    }
  },
  // pino's hook for the line as written, before any stream (the pretty-printer included).
  hooks: { streamWrite: maskLine }
} satisfies Pick<LoggerOptions, 'redact' | 'serializers' | 'hooks'>

/**
 * Standard output for a person's terminal, written synchronously. Once the terminal has gone
 * (hang-up: EIO; a closed pipe: EPIPE) the lines are dropped: nothing is left to read them, and
 * the process must still answer and shut down normally.
 */
function terminalOutput (): Writable {
  let gone = false
  return new Writable({
    write (chunk: Buffer, _encoding, callback) {
      if (!gone) {
        try {
          writeSync(1, chunk)
        } catch (error) {
          // EAGAIN: a terminal that is not keeping up loses this line, never the process.
          if ((error as { code?: unknown }).code !== 'EAGAIN') gone = true
        }
      }
      callback()
    }
  })
}

/**
 * Fastify's logger options: JSON lines, except for a person reading a terminal outside
 * production, who gets them pretty-printed by pino-pretty; secrets kept out either way. The
 * pretty-printer runs on the main thread (not as a pino transport in a worker) so that a
 * terminal that goes away cannot leave a worker holding the exit for seconds.
 */
export function loggerOptions (config: Pick<Config, 'logLevel' | 'nodeEnv'>, stdoutIsTty = process.stdout.isTTY === true): LoggerOptions {
  if (config.nodeEnv === 'production' || !stdoutIsTty) return { level: config.logLevel, ...secretsKept }
  return {
    level: config.logLevel,
    ...secretsKept,
    stream: pretty({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', colorize: true, destination: terminalOutput() })
  }
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger that becomes pino's child (with the request id bound) only when the request
 * first logs at a level that is enabled. pino builds a child at once, and with `redact` set it
 * serialises and redacts the bindings there: about 3 % of the CPU of a GET /v1/inventory, paid by
 * every request although at LOG_LEVEL=warn almost none ever logs. A line that is written is the
 * one the eager child would have written.
 */
class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined

  constructor (
    private readonly parent: Logger,
    private readonly childBindings: Bindings,
    private readonly childOptions: ChildLoggerOptions
  ) {}

  private get child_ (): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.childBindings, this.childOptions))
  }

  private enabled (level: Level): boolean {
    if (this.#child !== undefined) return (this.#child as Logger).isLevelEnabled(level)
    const own = this.childOptions.level
    if (own === undefined) return this.parent.isLevelEnabled(level)
    const values = this.parent.levels.values
    return values[level]! >= (values[own] ?? Infinity)
  }

  get level (): string { return this.#child?.level ?? this.childOptions.level ?? this.parent.level }
  set level (level: string) { this.child_.level = level }

  fatal (...args: unknown[]): void { if (this.enabled('fatal')) (this.child_.fatal as (...a: unknown[]) => void)(...args) }
  error (...args: unknown[]): void { if (this.enabled('error')) (this.child_.error as (...a: unknown[]) => void)(...args) }
  warn (...args: unknown[]): void { if (this.enabled('warn')) (this.child_.warn as (...a: unknown[]) => void)(...args) }
  info (...args: unknown[]): void { if (this.enabled('info')) (this.child_.info as (...a: unknown[]) => void)(...args) }
  debug (...args: unknown[]): void { if (this.enabled('debug')) (this.child_.debug as (...a: unknown[]) => void)(...args) }
  trace (...args: unknown[]): void { if (this.enabled('trace')) (this.child_.trace as (...a: unknown[]) => void)(...args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.child_.child(bindings, options)
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, made lazily (see RequestLogger). */
export const requestLogger: FastifyChildLoggerFactory = (logger, bindings, options) =>
  // A logger that is not pino's (Fastify's own when logging is off, one a test passes in) gets its
  // child at once, as Fastify's default factory would give it.
  typeof (logger as Partial<Logger>).isLevelEnabled === 'function'
    ? new RequestLogger(logger as Logger, bindings, options)
    : logger.child(bindings, options)
