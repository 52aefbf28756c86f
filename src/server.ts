import { once } from 'node:events'
import { closeSync } from 'node:fs'
import type { Server as HttpServer } from 'node:http'
import { createServer, Server as NetServer, type Socket } from 'node:net'
import { isatty } from 'node:tty'
import closeWithGrace from 'close-with-grace'
import { type Config, ConfigError, defaultPublicBaseUrl, loadConfig } from './config.js'

/** One line on stderr saying what failed and what to check; the JSON log line carries the details. */
function startupFailed (line: string): never {
  console.error(`Pet Store API could not start: ${line}`)
  process.exit(1)
}

const isStorageError = (error: unknown) => {
  const { name, code } = error as { name?: unknown, code?: unknown }
  return name === 'StoreUnavailableError' || name === 'SqliteError' || name === 'DatabaseError' || name === 'ForeignDatabaseError' ||
    (typeof code === 'string' && /^(SQLITE_|ECONNREFUSED|ENOTFOUND|EACCES|ENOENT|3D000|28)/.test(code))
}

/**
 * Node restores the terminal's settings of stdin, stdout and stderr on exit and aborts when that
 * fails, which it does once the terminal has gone (hang-up: EIO): the process would then crash
 * instead of exiting with its status. A descriptor that was a terminal and no longer is one is
 * closed just before exit, so Node skips it.
 */
function releaseLostTerminal () {
  const wasTerminal = [0, 1, 2].map((fd) => isatty(fd))
  if (!wasTerminal.includes(true)) return
  process.on('exit', () => {
    for (const fd of [0, 1, 2]) {
      if (!wasTerminal[fd] || isatty(fd)) continue
      try { closeSync(fd) } catch { /* already closed */ }
    }
  })
}

/**
 * PORT=0: the port is chosen now, before the app is built, because the document's `servers`, the
 * `Link` headers and the docs page's policy are made from PUBLIC_BASE_URL, which defaults to
 * http://HOST:PORT. The port is taken from a listener the system gives a free one, closed again
 * just before the server listens on it.
 */
async function choosePort (config: Config): Promise<Config> {
  if (config.port !== 0) return config
  const probe = createServer()
  probe.listen(0, config.host)
  await once(probe, 'listening')
  const { port } = probe.address() as { port: number }
  probe.close()
  await once(probe, 'close')
  const publicBaseUrl = config.publicBaseUrl === defaultPublicBaseUrl(config.host, 0) ? defaultPublicBaseUrl(config.host, port) : config.publicBaseUrl
  return { ...config, port, publicBaseUrl }
}

/**
 * The first step of a drain: stop accepting connections without dropping any whose request is
 * already on its way. Two things would reset such a request. The kernel resets every connection
 * still waiting in the listening socket's backlog when that socket closes, and under load many
 * wait there: Node (libuv) accepts one connection per turn of the event loop. So the listener
 * stays open, serving as usual, until a turn has passed without a connection to accept (at most
 * `limitMs`), and is closed in that same turn; the answers so far keep their connections, so no
 * client is sent back to reconnect meanwhile.
 */
function stopAccepting (server: HttpServer, limitMs: number): Promise<void> {
  if (!server.listening) return Promise.resolve()
  const deadline = performance.now() + limitMs
  let accepted = true
  const onConnection = () => { accepted = true }
  server.on('connection', onConnection)
  return new Promise<void>((resolve) => {
    const turn = () => {
      if (accepted && performance.now() < deadline) {
        accepted = false
        setImmediate(turn)
        return
      }
      server.off('connection', onConnection)
      // net.Server's close: only the listener. http.Server's would also end every connection with
      // no request in progress at once, which is the other way to reset one (see connectionsGrace).
      NetServer.prototype.close.call(server)
      resolve()
    }
    setImmediate(turn)
  })
}

/** The server's open connections: Node keeps its own list internal. */
function openConnections (server: HttpServer): Set<Socket> {
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  return sockets
}

/**
 * The second step, while Fastify's close has begun answering with `Connection: close` (Fastify
 * does so while closing, http-protocol.ts for answers begun before): the open connections are
 * served as usual until they fall silent, before Node's server.close() ends those with no request
 * in progress. A keep-alive client may have sent its next request already (on its way, or unread
 * in the socket) on a connection Node counts as idle: it gets its answer, then its connection
 * ends, instead of a reset. So the grace lasts until no connection has read or written a byte for
 * `quietMs`, or for `graceMs` at most, and its end is decided after the event loop's poll phase
 * (setImmediate), which has read whatever was waiting in the sockets. Node also counts as idle a
 * connection whose answer has been ended while part of it still waits in the process to be
 * written (a large list to a slow reader), and destroying it would cut that answer short: so the
 * grace also lasts until no connection has bytes waiting. Resolves when no connection is left,
 * or then.
 */
function connectionsGrace (sockets: Set<Socket>, quietMs: number, graceMs: number): Promise<void> {
  const start = performance.now()
  let lastActivity = start
  const seen = new WeakMap<Socket, number>()
  return new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now()
      let writing = false
      for (const socket of sockets) {
        const bytes = socket.bytesRead + socket.bytesWritten
        if (seen.get(socket) !== bytes) {
          seen.set(socket, bytes)
          lastActivity = now
        }
        if (socket.writableLength > 0) writing = true
      }
      if (sockets.size > 0 && (writing || (now - lastActivity < quietMs && now - start < graceMs))) return
      clearInterval(timer)
      setImmediate(resolve)
    }, 10)
  })
}

/** Reads the configuration, builds and registers the app, listens, and drains on SIGTERM/SIGINT. */
async function main () {
  releaseLostTerminal()
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message)
      process.exit(1)
    }
    throw error
  }
  // The app's modules are loaded once the configuration is known to be good: a mistyped variable
  // is reported in a fraction of a second, without loading Fastify, the plugins and the drivers.
  const [{ default: Fastify }, { default: app, serverOptions }, { databaseFailure, ensureDemoKey, oneCoreAdvice }] =
    await Promise.all([import('fastify'), import('./app.js'), import('./startup.js')])

  try {
    config = await choosePort(config)
  } catch (error) {
    startupFailed(`cannot listen on ${config.host}: ${(error as Error).message} (check HOST)`)
  }
  const server = Fastify(serverOptions(config))
  const { shutdownTimeoutMs } = config
  // Once SIGTERM comes, the listener waits for its backlog to empty for at most a quarter of
  // SHUTDOWN_TIMEOUT_MS; idle connections are closed once the connections have been silent for a
  // quarter of a second, or after a second (each at most that quarter of SHUTDOWN_TIMEOUT_MS).
  const backlogMs = Math.floor(shutdownTimeoutMs / 4)
  const quietMs = Math.min(250, backlogMs)
  const graceMs = Math.min(1000, backlogMs)
  let grace = Promise.resolve()
  let connections = new Set<Socket>()
  try {
    await server.register(app, { config })
    // Fastify's close runs this after it has begun answering with Connection: close.
    server.addHook('preClose', () => grace)
    connections = openConnections(server.server)
    await server.ready()
  } catch (error) {
    server.log.error({ err: error }, 'start-up failed')
    startupFailed(isStorageError(error) ? databaseFailure(error, config.databaseUrl) : (error as Error).message)
  }
  // A native fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) must end the process at once: with a
  // JavaScript listener the kernel returns to the faulting instruction, which faults again forever.
  // SIGABRT and SIGTRAP come from abort() and debuggers; their default action is the right one too.
  const fatal = ['SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGABRT', 'SIGTRAP'] as const
  closeWithGrace({ delay: shutdownTimeoutMs, skip: [...fatal] }, async ({ signal, err }) => {
    if (err) server.log.error({ err }, 'closing after an uncaught error')
    else server.log.info({ signal }, 'draining in-flight requests, then closing')
    // The listener closes once its backlog is empty (stopAccepting); the open connections are
    // served for the grace (connectionsGrace), then the idle ones end; requests under way get
    // three quarters of SHUTDOWN_TIMEOUT_MS. A client that is still sending (or not reading) then
    // loses its connection, unanswered, so storage closes and the process exits 0 in time.
    const force = setTimeout(() => {
      server.log.warn({ shutdownTimeoutMs }, 'closing the connections still open after three quarters of SHUTDOWN_TIMEOUT_MS')
      server.server.closeAllConnections()
    }, Math.floor(shutdownTimeoutMs * 0.75))
    try {
      await stopAccepting(server.server, backlogMs)
      grace = connectionsGrace(connections, quietMs, graceMs)
      await server.close()
    } finally {
      clearTimeout(force)
    }
  })

  try {
    await server.listen({ port: config.port, host: config.host })
  } catch (error) {
    server.log.error({ err: error }, 'listen failed')
    const code = (error as { code?: unknown }).code
    const at = `${config.host}:${config.port}`
    startupFailed(code === 'EADDRINUSE'
      ? `${at} is already in use: stop the other process or set PORT (or HOST)`
      : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
        ? `${at}: HOST is not an address of this machine`
        : `cannot listen on ${at}: ${(error as Error).message}`)
  }
  if (config.metricsPort !== undefined && server.metrics !== null) {
    const at = `${config.metricsHost}:${config.metricsPort}`
    try {
      const address = await server.metrics.listen(config.metricsHost, config.metricsPort)
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
      server.log.info({ metrics: `http://${host}:${address.port}/metrics` }, `metrics listening at http://${host}:${address.port}/metrics`)
    } catch (error) {
      server.log.error({ err: error }, 'metrics listen failed')
      await server.close()
      const code = (error as { code?: unknown }).code
      startupFailed(code === 'EADDRINUSE'
        ? `${at} (the metrics listener) is already in use: stop the other process or set METRICS_PORT (or METRICS_HOST)`
        : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
          ? `${at}: METRICS_HOST is not an address of this machine`
          : `cannot listen on ${at} for metrics: ${(error as Error).message}`)
    }
  }
  const advice = oneCoreAdvice()
  if (advice !== undefined) server.log.info({ cores: 1 }, advice)
  const docsUrl = `${config.publicBaseUrl}/docs`
  const demoKey = await ensureDemoKey(server.store, config, server.apiDocument.scopes)
  if (demoKey) {
    server.log.info({ docs: docsUrl, demoApiKey: demoKey }, `Pet Store API ready. Docs: ${docsUrl} — demo API key (shown once): ${demoKey}`)
  } else {
    server.log.info({ docs: docsUrl }, `Pet Store API ready. Docs: ${docsUrl}`)
  }
}

await main()
