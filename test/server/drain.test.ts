/**
 * SIGTERM under keep-alive load, on SQLite (test/postgres/shutdown.test.ts runs the same on
 * PostgreSQL): every request that reached a connection is answered, none is reset, and the
 * process exits 0 within SHUTDOWN_TIMEOUT_MS with every acknowledged write stored. And an answer
 * still being written to a slow reader when the drain closes idle connections arrives whole.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { migrateDatabase, runCliInProcess } from '../helpers/cli.js'
import { checkDrainUnderLoad } from '../helpers/drain-under-load.js'
import { keyInDatabase } from '../helpers/keys.js'
import { parseResponses, rawConnection } from '../helpers/raw-http.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'

/** Resolves once a log line of the server matches. */
async function logLine (server: ServerProcess, test: (entry: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!server.logs.some(test)) {
    if (performance.now() > deadline) throw new Error('log line not seen')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

t.test('SIGTERM under load on 200 keep-alive connections, 10 more connecting: every request answered, none reset, exit 0 in time', async (t) => {
  const file = join(tempDir(t), 'drain.db')
  await checkDrainUnderLoad(t, {
    databaseUrl: `sqlite:${file}`,
    shutdownTimeoutMs: 5000,
    stored: async () => {
      const db = new Database(file, { readonly: true })
      try {
        return new Map((db.prepare('SELECT pet_id, quantity FROM inventory').all() as { pet_id: number, quantity: number }[]).map((row) => [row.pet_id, row.quantity]))
      } finally {
        db.close()
      }
    }
  })
})

t.test('an answer still being written when the idle connections close is delivered in full', async (t) => {
  // 150,000 entries: a list of about 6.7 MB, more than the kernel's buffers on both sides hold,
  // so part of it waits in the server process while the client does not read.
  const databaseUrl = `sqlite:${join(tempDir(t), 'large.db')}`
  await migrateDatabase(databaseUrl)
  t.equal((await runCliInProcess('db', ['seed', '--synthetic', '150000'], { DATABASE_URL: databaseUrl })).code, 0)
  const { secret } = await keyInDatabase(databaseUrl, 'slow reader')
  const server = await startServer(t, { DATABASE_URL: databaseUrl, SEED: 'false', NODE_ENV: 'production', SHUTDOWN_TIMEOUT_MS: '8000' })
  const reader = await rawConnection(server.port)
  reader.socket.pause()
  reader.socket.write(`GET /v1/inventory HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\n\r\n`)
  await logLine(server, (l) => l.msg === 'incoming request')
  // The list is rendered and handed to the socket at once; most of it then waits for the reader.
  await new Promise((resolve) => setTimeout(resolve, 1000))

  server.child.kill('SIGTERM')
  // Past the second of grace, after which the connections with no request in progress close.
  await new Promise((resolve) => setTimeout(resolve, 2000))
  reader.socket.resume()
  await reader.closed
  const { responses, rest } = parseResponses(reader.received())
  t.equal(responses.length, 1, 'the answer arrived whole')
  t.equal(rest.length, 0, 'and nothing else')
  t.equal((JSON.parse(responses[0]?.body.toString() ?? '[]') as unknown[]).length, 150_000, 'every entry of the list')
  t.equal(await server.exited(), 0, 'then the process exits 0')
})
