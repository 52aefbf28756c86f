/**
 * Two server processes on one PostgreSQL schema deliver the events of 2,000 changes spread over
 * both, to one receiver: every event recorded (webhook_events) arrives, every acknowledged change's
 * event among them, and with no fault none arrives twice: each delivery is leased to one instance
 * at a time (openapi.yaml, Webhooks; docs/operations.md, several instances).
 */
import t from 'tap'
import { eventKey, sendChanges } from '../helpers/webhook-changes.js'
import { bodyOf, countById, pendingDeliveries, postgresSkip, recordedEventIds, twoPostgresInstances, until } from '../helpers/webhook-processes.js'

const CHANGES = 2000

t.test('two PostgreSQL instances deliver the events of 2,000 changes once each', { skip: await postgresSkip }, async (t) => {
  const { outbox, servers, apis, receiver } = await twoPostgresInstances(t, 'two instances', () => ({ status: 204 }))

  const started = Date.now()
  const outcome = await sendChanges(apis, CHANGES, 16)
  const answeredIn = Date.now() - started
  t.equal(outcome.acknowledged.length, CHANGES, `${CHANGES} changes acknowledged (${outcome.sent.join(' and ')} by the two instances, in ${answeredIn} ms)`)

  const recorded = await recordedEventIds(outbox)
  t.equal(recorded.length, CHANGES, 'one event recorded per change')
  const drained = await until(async () => (await pendingDeliveries(outbox)) === 0 && countById(receiver.received).size >= recorded.length, 60_000)
  t.ok(drained, `every delivery made (the last ${Date.now() - started} ms after the first change)`)

  const counts = countById(receiver.received)
  const missing = recorded.filter((id) => !counts.has(id))
  const extra = [...counts.keys()].filter((id) => !new Set(recorded).has(id))
  const twice = [...counts.values()].filter((n) => n > 1).length
  t.comment(`recorded ${recorded.length}, received ${receiver.received.length} requests for ${counts.size} events, ${twice} of them more than once`)
  t.same(missing, [], 'every recorded event was received')
  t.same(extra, [], 'and nothing else')
  t.equal(twice, 0, 'none twice')
  const keys = new Set(receiver.received.map((r) => eventKey(bodyOf(r))))
  t.same(outcome.acknowledged.filter((key) => !keys.has(key)), [], 'every acknowledged change\'s event is among them, with its data')
  for (const server of servers) t.equal(await server.stop('SIGTERM'), 0, 'an instance stops cleanly')
})
