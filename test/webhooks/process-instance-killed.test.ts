/**
 * Two server processes on one PostgreSQL schema take 2,000 changes, and one of them is killed
 * with SIGKILL halfway, while it holds deliveries under way (the receiver answers each after
 * 25 ms). No event is lost: every event recorded (webhook_events), those of the changes the dead
 * instance took before it died included, arrives; the survivor takes over the dead one's
 * deliveries once their leases run out. Some may arrive twice (at least once): they are counted.
 */
import t from 'tap'
import { eventKey, sendChanges } from '../helpers/webhook-changes.js'
import { bodyOf, countById, pendingDeliveries, postgresSkip, recordedEventIds, twoPostgresInstances, until } from '../helpers/webhook-processes.js'

const CHANGES = 2000

t.test('one of two PostgreSQL instances killed mid-run: no event of 2,000 changes lost', { skip: await postgresSkip }, async (t) => {
  const { outbox, servers, apis, receiver } = await twoPostgresInstances(t, 'instance killed', () => ({ status: 204, delayMs: 25 }))

  let killedAt: number | undefined
  let receivedAtKill = 0
  const started = Date.now()
  const outcome = await sendChanges(apis, CHANGES, 16, (acknowledged) => {
    if (acknowledged < CHANGES / 2 || killedAt !== undefined) return
    killedAt = Date.now()
    receivedAtKill = receiver.received.length
    servers[1]!.child.kill('SIGKILL')
  }, (instance) => instance === 0 || killedAt === undefined)
  t.equal(await servers[1]!.exited(), 'SIGKILL', `the second instance was killed after ${CHANGES / 2} acknowledged changes, ${receivedAtKill} webhook requests received by then`)
  t.equal(outcome.acknowledged.length + outcome.unanswered, CHANGES, `${outcome.acknowledged.length} changes acknowledged, ${outcome.unanswered} cut off by the kill (sent: ${outcome.sent.join(' and ')})`)

  const recorded = await recordedEventIds(outbox)
  t.ok(recorded.length >= outcome.acknowledged.length, `${recorded.length} events recorded`)
  const drained = await until(async () => (await pendingDeliveries(outbox)) === 0 && countById(receiver.received).size >= recorded.length, 60_000)
  t.ok(drained, `every delivery made (the last ${Date.now() - killedAt!} ms after the kill, ${Date.now() - started} ms after the first change)`)

  const counts = countById(receiver.received)
  const known = new Set(recorded)
  const twice = [...counts.values()].filter((n) => n > 1).length
  t.comment(`recorded ${recorded.length}, received ${receiver.received.length} requests for ${counts.size} events: ${twice} of them more than once`)
  t.same(recorded.filter((id) => !counts.has(id)), [], 'every recorded event was received: none lost')
  t.same([...counts.keys()].filter((id) => !known.has(id)), [], 'and nothing else')
  const keys = new Set(receiver.received.map((r) => eventKey(bodyOf(r))))
  t.same(outcome.acknowledged.filter((key) => !keys.has(key)), [], 'every acknowledged change\'s event is among them, with its data')
  t.equal(await servers[0]!.stop('SIGTERM'), 0, 'the survivor stops cleanly')
})
