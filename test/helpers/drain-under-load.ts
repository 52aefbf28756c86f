import type { Test } from 'tap'
import { migrateDatabase, runCliInProcess } from './cli.js'
import { keepAliveLoad } from './keep-alive-load.js'
import { keyInDatabase } from './keys.js'
import { startServer } from './server-process.js'

export interface DrainUnderLoad {
  databaseUrl: string
  shutdownTimeoutMs: number
  /** The quantity stored for each pet once the server has exited: pet id → quantity. */
  stored: () => Promise<Map<number, number>>
  /** Keep-alive clients busy when the signal comes. */
  connections?: number
  /** Clients that connect the moment the signal is sent. */
  arriving?: number
}

/**
 * A server process under keep-alive load receives SIGTERM, and the test checks what became of
 * every request. `connections` clients (raw sockets, keepAliveLoad) each PATCH a pet of their own
 * and GET the inventory list in turn, back to back, and go on until their connection is closed and
 * a new one is refused; `arriving` more connect as the signal is sent, so their connections wait
 * in the listening socket's backlog. Every request written must be answered 200, none reset or
 * left without an answer, the process must exit 0 within SHUTDOWN_TIMEOUT_MS, and each pet must
 * hold the quantity of its last acknowledged PATCH.
 */
export async function checkDrainUnderLoad (t: Test, options: DrainUnderLoad): Promise<void> {
  const { databaseUrl, shutdownTimeoutMs, connections = 200, arriving = 10 } = options
  await migrateDatabase(databaseUrl)
  const seeded = await runCliInProcess('db', ['seed', '--synthetic', String(connections + arriving)], { DATABASE_URL: databaseUrl })
  if (seeded.code !== 0) throw new Error(`db seed failed: ${seeded.stderr}`)
  const { secret } = await keyInDatabase(databaseUrl, 'drain under load')
  const server = await startServer(t, { DATABASE_URL: databaseUrl, SEED: 'false', NODE_ENV: 'production', SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) })

  const common = `Host: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\n`
  const acknowledged = new Map<number, number>()
  const answeredConnections = new Set<number>()
  let signalled = false
  let answeredAfterSignal = 0
  const load = keepAliveLoad({
    port: server.port,
    connections,
    request: (connection, n) => {
      if (n % 2 === 1) return `GET /v1/inventory HTTP/1.1\r\n${common}\r\n`
      const body = JSON.stringify({ quantity: n })
      return `PATCH /v1/inventory/${connection + 1} HTTP/1.1\r\n${common}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    },
    onAnswer: (connection, n, response) => {
      answeredConnections.add(connection)
      if (signalled) answeredAfterSignal++
      if (n % 2 === 0 && response.status === 200) acknowledged.set(connection + 1, n)
    }
  })
  // The load is steady when the signal comes: every connection has been accepted and answered,
  // and each a few times on average.
  await load.answered(connections * 4)
  while (answeredConnections.size < connections) await load.answered(load.report.answered + 1)
  signalled = true
  const signalledAt = performance.now()
  const exited = server.stop('SIGTERM')
  await load.add(arriving)
  const report = await load.done()
  const exitCode = await exited
  const drainMs = performance.now() - signalledAt

  t.comment(`${JSON.stringify(report)}; ${answeredAfterSignal} answered after SIGTERM; exit after ${Math.round(drainMs)} ms`)
  t.ok(answeredAfterSignal > 0, 'requests were still arriving when the signal came')
  t.equal(report.resets, 0, 'no request was reset')
  t.equal(report.unanswered, 0, 'no request was left without an answer')
  t.equal(report.unsolicited, 0, 'no response that no request asked for')
  t.equal(report.answered, report.sent, 'every request written was answered')
  t.same(Object.keys(report.statuses), ['200'], 'all of them 200')
  t.equal(exitCode, 0, 'exit 0')
  t.ok(drainMs < shutdownTimeoutMs, 'within SHUTDOWN_TIMEOUT_MS')
  const stored = await options.stored()
  const lost = [...acknowledged].filter(([petId, quantity]) => stored.get(petId) !== quantity)
  t.same(lost, [], 'each pet holds the quantity of its last acknowledged PATCH')
}
