import type { FastifyLoggerOptions } from 'fastify'
import type { TransportSingleOptions } from 'pino'
import type { Config } from './config.js'

export type LoggerOptions = FastifyLoggerOptions & { transport?: TransportSingleOptions }

/**
 * Fastify's logger options: JSON lines, except for a person reading a terminal outside
 * production, who gets them pretty-printed by pino-pretty (in pino's transport thread).
 */
export function loggerOptions (config: Pick<Config, 'logLevel' | 'nodeEnv'>, stdoutIsTty = process.stdout.isTTY === true): LoggerOptions {
  if (config.nodeEnv === 'production' || !stdoutIsTty) return { level: config.logLevel }
  return {
    level: config.logLevel,
    transport: {
      target: 'pino-pretty',
      options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', colorize: true }
    }
  }
}
