/**
 * A receiver's answer is kept in the delivery log as text, and PostgreSQL's text holds no NUL
 * character: an answer with a NUL byte in its first KiB must still be logged, or the attempt is
 * never settled, and the delivery is made again each time its lease runs out, forever. Here a
 * receiver answers 200 with one; the event is delivered once, on both engines alike.
 */
import t, { type Test } from 'tap'
import { keyInDatabase } from '../helpers/keys.js'
import { processClient } from '../helpers/process-client.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { deliveryLog, onBothEngines, type Outbox, pendingDeliveries, QUICK_WEBHOOKS, subscribe, until } from '../helpers/webhook-processes.js'

async function nulAnswer (t: Test, databaseUrl: string, outbox: Outbox): Promise<void> {
  const { secret } = await keyInDatabase(databaseUrl, 'nul answer')
  const server = await startServer(t, { DATABASE_URL: databaseUrl, ...QUICK_WEBHOOKS })
  const api = processClient(server.baseUrl, secret)
  t.teardown(() => api.close())
  const receiver = await startReceiver(t, () => ({ body: 'ok\u0000done' }))
  const endpoint = await subscribe(api, receiver.url, ['inventory.updated'])

  t.equal((await api.request('PATCH', '/v1/inventory/1', { quantity: 41 })).status, 200)
  // The lease (WEBHOOK_TIMEOUT_MS + 5 s) runs out within the wait: an unsettled attempt would be made again.
  const settled = await until(async () => (await pendingDeliveries(outbox)) === 0, 10_000)
  t.ok(settled, 'the delivery was settled')
  t.equal(receiver.received.length, 1, 'the event was sent once')
  const log = await deliveryLog(api, endpoint.id)
  t.match(log, [{ attempt: 1, statusCode: 200, error: null, nextAttemptAt: null, responseBody: 'ok\uFFFDdone' }], 'and logged delivered, the NUL shown as U+FFFD')
  t.notOk(server.logs.some((line) => line.msg === 'a webhook attempt could not be recorded; it will be made again'), 'no attempt went unrecorded')
}

await onBothEngines(t, 'an answer holding a NUL byte is logged', nulAnswer)

