/**
 * SIGTERM under keep-alive load, on SQLite (test/postgres/shutdown.test.ts runs the same on
 * PostgreSQL): every request that reached a connection is answered, none is reset, and the
 * process exits 0 within SHUTDOWN_TIMEOUT_MS with every acknowledged write stored.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { checkDrainUnderLoad } from '../helpers/drain-under-load.js'

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
