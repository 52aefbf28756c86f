import { writeSync } from 'node:fs'
import { Writable } from 'node:stream'
import type { FastifyLoggerOptions, FastifyRequest } from 'fastify'
import type { LoggerOptions as PinoOptions } from 'pino'
import pretty from 'pino-pretty'
import type { Config } from './config.js'
import { requestAddress } from './rate-limit/client-address.js'

export type LoggerOptions = FastifyLoggerOptions & Pick<PinoOptions, 'redact' | 'formatters'>

const REDACTED = '[redacted]'
// API keys (psk_…), and whatever follows Bearer or a credential-named query parameter.
const KEY_MATERIAL = /psk_[\w-]+|(\bbearer\s+)[^\s,;"']+|(\b(?:access_token|api_?key|token|key)=)[^&#\s]*/gi

/** The text with anything that could be an API key replaced. */
export function maskKeys (text: string): string {
  return text.replace(KEY_MATERIAL, (_match, bearer?: string, parameter?: string) =>
    bearer !== undefined ? bearer + REDACTED : parameter !== undefined ? parameter + REDACTED : `psk_${REDACTED}`)
}

const credentialHeaders = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key']

/**
 * No API key reaches the log. Headers that carry credentials are censored wherever a header set
 * is logged; URLs (a key sent as a query parameter, or pasted into the path) and the text fields
 * of every line are masked. `demoApiKey` is exempt: the server prints the demo key once, on
 * purpose (src/server.ts).
 */
const secretsKept = {
  redact: {
    // A header set logged on its own, or as part of an object (req.headers, err.headers …).
    paths: ['authorization', 'secret', ...['headers', '*.headers'].flatMap((at) => credentialHeaders.map((name) => `${at}[${JSON.stringify(name)}]`))],
    censor: REDACTED
  },
  serializers: {
    // Fastify's own request fields, with the URL masked, and the address the rate limits use
    // (never an X-Forwarded-For value that is not an IP address).
    req: (request: FastifyRequest) => {
      const version = request.headers['accept-version']
      const remoteAddress = requestAddress(request)
      const remotePort = request.socket?.remotePort
      return {
        method: request.method,
        url: maskKeys(request.url),
        ...(typeof version === 'string' ? { version } : {}),
        host: request.host,
        ...(remoteAddress === undefined ? {} : { remoteAddress }),
        ...(remotePort === undefined ? {} : { remotePort })
      }
    }
  },
  formatters: {
    // A copy, when something is masked: the caller's object is left as it was.
    log: (fields: Record<string, unknown>) => {
      let masked: Record<string, unknown> | undefined
      for (const [name, value] of Object.entries(fields)) {
        if (typeof value !== 'string' || name === 'demoApiKey') continue
        const text = maskKeys(value)
        if (text !== value) (masked ??= { ...fields })[name] = text
      }
      return masked ?? fields
    }
  }
} satisfies Pick<LoggerOptions, 'redact' | 'serializers' | 'formatters'>

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
