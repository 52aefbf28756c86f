/**
 * Each request's logger (src/logger.ts, Fastify's childLoggerFactory) binds the request id, and
 * writes exactly the lines pino's own child would; the child itself is only built when the
 * request first logs at an enabled level.
 */
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { requestLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/app.js'
import { checkResponse } from '../helpers/contract.js'
import { logCapture, serverLoggingToCapture } from '../helpers/log-capture.js'

t.test('through the service: a line at an enabled level carries the request id and is redacted; below the level nothing is written', async (t) => {
  const { server, config, lines } = serverLoggingToCapture(t, 'warn')
  server.addHook('onRequest', async (request) => {
    request.log.info('below the level')
    if (request.headers['x-log'] === 'yes') request.log.warn({ headers: request.headers }, 'logged on purpose')
  })
  await server.register(app, { config })
  await server.ready()

  for (const headers of [{ 'x-request-id': 'quiet-1' }, { 'x-request-id': 'loud-1', 'x-log': 'yes', authorization: 'Bearer psk_secret' }]) {
    const res = await server.inject({ url: '/healthz', headers })
    checkResponse('GET', '/healthz', res)
    t.equal(res.statusCode, 200, `answered (${headers['x-request-id']})`)
  }
  const ours = lines.filter((l) => l.reqId === 'quiet-1' || l.reqId === 'loud-1')
  t.same(ours.map((l) => [l.reqId, l.msg]), [['loud-1', 'logged on purpose']], 'one line, from the request that logged at warn, with its request id')
  t.equal((ours[0]?.headers as Record<string, unknown> | undefined)?.authorization, '[redacted]', 'the logged headers are redacted as before')
})

t.test('the child is built on the first line at an enabled level, once, with the bindings and options Fastify gave', async (t) => {
  const { lines, stream } = logCapture()
  type Logger = Parameters<typeof requestLogger>[0]
  const logger = Fastify({ logger: { level: 'warn', stream } }).log as unknown as Logger
  // Counts the children asked of it (an own `child` on the logger itself would be inherited by
  // pino's children, whose children would then be built from the logger instead).
  let children = 0
  const parent = Object.create(logger as object) as Logger
  parent.child = (...args: Parameters<Logger['child']>) => { children++; return logger.child(...args) }

  const log = requestLogger.call(Fastify(), parent, { reqId: 'r1' }, {}, undefined as never)
  log.info('not enabled')
  log.debug('not enabled')
  t.equal(children, 0, 'no child for lines below the level')
  t.equal(log.level, 'warn', 'the level is the parent\'s')
  log.warn('first')
  log.error({ detail: 1 }, 'second')
  t.equal(children, 1, 'one child, built by the first enabled line')
  t.same(lines.map((l) => [l.reqId, l.msg, l.detail]), [['r1', 'first', undefined], ['r1', 'second', 1]], 'both lines carry the bindings')

  const verbose = requestLogger.call(Fastify(), parent, { reqId: 'r2' }, { level: 'debug' }, undefined as never)
  t.equal(verbose.level, 'debug', 'a route\'s own level (Fastify\'s logLevel) is kept')
  verbose.debug('route level')
  verbose.trace('still below')
  t.same(lines.slice(2).map((l) => [l.reqId, l.msg]), [['r2', 'route level']], 'lines at the route\'s level are written, below it they are not')

  const grand = verbose.child({ part: 'x' })
  grand.info('from a grandchild')
  const last = lines.at(-1)
  t.same([last?.reqId, last?.part, last?.msg], ['r2', 'x', 'from a grandchild'], 'a child of the request logger keeps the request id')
})

t.test('with logging off (Fastify\'s own logger, not pino) requests are answered as before', async (t) => {
  const config = loadConfig({ DATABASE_URL: `sqlite:${join(tempDir(t), 'quiet.db')}` })
  const server = Fastify({ ...serverOptions(config), logger: false })
  t.teardown(() => server.close())
  server.addHook('onRequest', async (request) => { request.log.warn('goes nowhere') })
  await server.register(app, { config })
  const res = await server.inject({ url: '/healthz' })
  checkResponse('GET', '/healthz', res)
  t.equal(res.statusCode, 200, 'answered; the request logger of a logger that is not pino is Fastify\'s own child')
})
