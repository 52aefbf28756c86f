import { join } from 'node:path'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import { serverOptions } from '../../src/app.js'
import { type Config, loadConfig } from '../../src/config.js'
import { tempDir, type Teardown } from './app.js'

/** A pino destination that keeps every log line, as written (`texts`) and parsed (`lines`). */
export function logCapture (): { lines: Record<string, unknown>[], texts: string[], stream: Writable } {
  const lines: Record<string, unknown>[] = []
  const texts: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line.trim() === '') continue
        texts.push(line)
        lines.push(JSON.parse(line) as Record<string, unknown>)
      }
      done()
    }
  })
  return { lines, texts, stream }
}

/**
 * A Fastify server with the service's own options (serverOptions) at `logLevel`, logging into a
 * capture, with a config on a database of its own. The caller adds its hooks, then registers the
 * app with `config`.
 */
export function serverLoggingToCapture (t: Teardown, logLevel: string): { server: FastifyInstance, config: Config } & ReturnType<typeof logCapture> {
  const config = loadConfig({ DATABASE_URL: `sqlite:${join(tempDir(t), 'log.db')}`, LOG_LEVEL: logLevel })
  const capture = logCapture()
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: { ...options.logger as object, stream: capture.stream } })
  t.teardown(() => server.close())
  return { server, config, ...capture }
}
