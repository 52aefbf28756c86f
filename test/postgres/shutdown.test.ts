import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t from 'tap'
import { adminQuery, createTestSchema, POSTGRES } from '../helpers/postgres.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'
import { keyInDatabase } from '../helpers/keys.js'
import { checkDrainUnderLoad } from '../helpers/drain-under-load.js'

const patch = (server: ServerProcess, key: string, petId: number, quantity: number) =>
  fetch(`${server.baseUrl}/v1/inventory/${petId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity })
  })

const connectionsOf = async (applicationName: string) =>
  (await adminQuery<{ n: number }>('SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [applicationName]))[0]!.n

t.test('SIGTERM drains an in-flight request, then closes the pool and exits 0', async (t) => {
  const schema = await createTestSchema(t)
  const key = (await keyInDatabase(schema.url(), 'shutdown test')).secret
  const applicationName = `petstore-drain-${schema.schema}`
  const server = await startServer(t, { DATABASE_URL: schema.url(undefined, { application_name: applicationName }), DATABASE_TIMEOUT_MS: '20000' })
  t.ok(await connectionsOf(applicationName) > 0, 'the instance holds pooled connections')

  // Hold the row, so the PATCH is still in flight when the signal arrives.
  const locker = new pg.Client({ ...POSTGRES, options: `-c search_path=${schema.schema}` })
  await locker.connect()
  t.teardown(() => locker.end())
  await locker.query('BEGIN')
  await locker.query('SELECT 1 FROM inventory WHERE pet_id = 1 FOR UPDATE')
  const inflight = patch(server, key, 1, 77)
  while ((await adminQuery('SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = $2', [applicationName, 'Lock'])).length === 0) {
    await sleep(20)
  }

  const stopped = server.stop('SIGTERM')
  await sleep(300)
  t.equal(server.child.exitCode, null, 'still running while the request is in flight')
  await locker.query('ROLLBACK')

  const res = await inflight
  t.equal(res.status, 200, 'the in-flight request is answered')
  t.same(await res.json(), { petId: 1, quantity: 77, status: 'available' })
  t.equal(await stopped, 0, 'then the process exits with 0')
  t.ok(server.logs.some((entry) => String(entry.msg).startsWith('draining in-flight requests')), 'it logged the drain')
  t.equal(await connectionsOf(applicationName), 0, 'no database connection is left')
  t.same(await adminQuery(`SELECT quantity FROM ${schema.schema}.inventory WHERE pet_id = 1`), [{ quantity: 77 }], 'the acknowledged write is committed')
})

t.test('SIGTERM under load on 200 keep-alive connections, 10 more connecting: every request answered, none reset, exit 0 in time', async (t) => {
  const schema = await createTestSchema(t)
  await checkDrainUnderLoad(t, {
    databaseUrl: schema.url(),
    shutdownTimeoutMs: 5000,
    // pg returns a BIGINT (pet_id) as a string.
    stored: async () => new Map((await adminQuery<{ pet_id: string, quantity: number }>(`SELECT pet_id, quantity FROM ${schema.schema}.inventory`))
      .map((row) => [Number(row.pet_id), row.quantity]))
  })
})
