/**
 * An answered change gets its events delivered even when the server dies with SIGKILL the moment
 * it answers (openapi.yaml, Webhooks: "restarts and crashes included"). A real server process, an
 * endpoint subscribed to a receiver that holds every request unanswered, so nothing can be
 * delivered before the kill: one change whose delivery is under way (leased by the process that
 * dies), then two more, and SIGKILL as soon as their answers arrive. A new process on the same
 * database delivers each recorded event, with the same webhook-id, once the receiver answers.
 */
import t, { type Test } from 'tap'
import { keyInDatabase } from '../helpers/keys.js'
import { processClient } from '../helpers/process-client.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { bodyOf, countById, deliveryLog, onBothEngines, type Outbox, pendingDeliveries, QUICK_WEBHOOKS, recordedEventIds, subscribe, until, webhookId } from '../helpers/webhook-processes.js'

async function killedAfterAnswer (t: Test, databaseUrl: string, outbox: Outbox): Promise<void> {
  const env = { DATABASE_URL: databaseUrl, ...QUICK_WEBHOOKS }
  const { secret } = await keyInDatabase(databaseUrl, 'webhooks crash')
  const answered = new Set<string>()
  let holding = true
  const receiver = await startReceiver(t, (request) => {
    if (holding) return { hang: true }
    answered.add(webhookId(request))
    return { status: 204 }
  })

  const first = await startServer(t, env)
  let api = processClient(first.baseUrl, secret)
  const endpoint = await subscribe(api, receiver.url)
  t.equal((await api.request('PATCH', '/v1/inventory/1', { quantity: 31 })).status, 200)
  const held = webhookId((await receiver.until(1))[0]!)
  // The demo catalogue's pet 10 has 25 units and no open order: the order leaves it available.
  const [patched, placed] = await Promise.all([
    api.request('PATCH', '/v1/inventory/2', { quantity: 32 }),
    api.request('POST', '/v1/store/orders', { petId: 10, quantity: 1 })
  ])
  first.child.kill('SIGKILL')
  t.equal(patched.status, 200)
  t.equal(placed.status, 201)
  api.close()
  t.equal(await first.exited(), 'SIGKILL', 'the server was killed right after its last answers')
  const orderId = placed.json<{ id: number }>().id

  const recorded = await recordedEventIds(outbox)
  t.equal(recorded.length, 3, 'three events recorded with the changes: two inventory.updated, one order.placed')
  t.ok(recorded.includes(held), 'the event whose delivery was under way is one of them')

  holding = false
  const restartedAt = Date.now()
  const second = await startServer(t, env)
  api = processClient(second.baseUrl, secret)
  t.teardown(() => api.close())
  const delivered = await until(() => recorded.every((id) => answered.has(id)), 30_000)
  t.ok(delivered, `every recorded event delivered after the restart (the last ${Date.now() - restartedAt} ms after it)`)
  const counts = countById(receiver.received)
  t.same([...counts.keys()].sort(), [...recorded].sort(), 'the receiver got those events and no others')
  t.ok(answered.has(held), 'the held one came again with the same webhook-id, taken over once its lease ran out')
  t.comment(`requests per webhook-id: ${[...counts.values()].join(', ')} (the held one arrived twice: at least once)`)

  const bodies = receiver.received.filter((r) => answered.has(webhookId(r))).map(bodyOf)
  t.match(bodies.find((b) => b.type === 'inventory.updated' && b.data.petId === 1), { data: { quantity: 31 } }, 'pet 1\'s PATCH')
  t.match(bodies.find((b) => b.type === 'inventory.updated' && b.data.petId === 2), { data: { quantity: 32 } }, 'pet 2\'s PATCH, answered just before the kill')
  t.match(bodies.find((b) => b.type === 'order.placed'), { data: { id: orderId, petId: 10, quantity: 1 } }, 'the order placed just before the kill')

  // The receiver has answered; the attempts are logged once the server has read those answers.
  t.ok(await until(async () => (await pendingDeliveries(outbox)) === 0, 10_000), 'every delivery settled')
  const log = await deliveryLog(api, endpoint.id)
  for (const id of recorded) {
    t.ok(log.some((attempt) => attempt.eventId === id && attempt.statusCode === 204 && attempt.nextAttemptAt === null), `${id}: the log shows it delivered`)
  }
  t.equal(await second.stop('SIGTERM'), 0, 'the second server stops cleanly')
}

await onBothEngines(t, 'events of changes answered just before kill -9 are delivered after the restart', killedAfterAnswer)

