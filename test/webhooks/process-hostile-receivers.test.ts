/**
 * Receivers that never answer, answer after the time limit, or answer 200 with 10 MB cannot
 * stall the service (openapi.yaml, Webhooks). A real server process takes the same mix of reads
 * and PATCHes twice: first with one well-behaved endpoint subscribed, then with the hostile ones
 * subscribed too, each PATCH making a delivery to every one. The latencies of both are reported;
 * what is asserted is behaviour: every request answered, the server's memory not grown by a
 * 10 MB answer, and each attempt ended as the log says it should (a time-out, or delivered with
 * the first KiB of the answer kept).
 */
import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { keyInDatabase } from '../helpers/keys.js'
import { type ProcessClient, processClient } from '../helpers/process-client.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { bodyOf, deliveryLog, onBothEngines, type Outbox, pendingDeliveries, QUICK_WEBHOOKS, subscribe, until } from '../helpers/webhook-processes.js'

const MB = 1024 * 1024
const REQUESTS = 400
const PATCH_EVERY = 10
const WORKERS = 8

/** The server's resident memory now, from /proc. */
function residentBytes (pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb ?? NaN) * 1024
}

interface LoadFigures { latencies: number[], statuses: number[], peakRss: number, patchedAt: Map<string, number> }

/** REQUESTS requests by WORKERS at a time: lists, and every PATCH_EVERY-th a PATCH to a quantity never set before. */
async function load (api: ProcessClient, pid: number, phase: number): Promise<LoadFigures> {
  const figures: LoadFigures = { latencies: [], statuses: [], peakRss: residentBytes(pid), patchedAt: new Map() }
  const sampler = setInterval(() => { figures.peakRss = Math.max(figures.peakRss, residentBytes(pid)) }, 20)
  let next = 0
  const worker = async () => {
    while (next < REQUESTS) {
      const i = next++
      const petId = (Math.floor(i / PATCH_EVERY) % 10) + 1
      const quantity = phase * 10_000 + i
      const started = performance.now()
      const res = i % PATCH_EVERY === 0 ? await api.request('PATCH', `/v1/inventory/${petId}`, { quantity }) : await api.request('GET', '/v1/inventory')
      figures.latencies.push(performance.now() - started)
      figures.statuses.push(res.status)
      if (i % PATCH_EVERY === 0) figures.patchedAt.set(`${petId} ${quantity}`, Date.now())
    }
  }
  try {
    await Promise.all(Array.from({ length: WORKERS }, worker))
  } finally {
    clearInterval(sampler)
  }
  return figures
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
const describe = (values: number[]) => `median ${percentile(values, 0.5).toFixed(1)}, p99 ${percentile(values, 0.99).toFixed(1)}, max ${Math.max(...values).toFixed(1)} ms`

async function hostileReceivers (t: Test, databaseUrl: string, outbox: Outbox): Promise<void> {
  const { secret } = await keyInDatabase(databaseUrl, 'hostile receivers')
  // One retry: each failing event's attempts end within a few seconds.
  const server = await startServer(t, { DATABASE_URL: databaseUrl, ...QUICK_WEBHOOKS, WEBHOOK_RETRY_SCHEDULE: '500ms' })
  const pid = server.child.pid!
  const api = processClient(server.baseUrl, secret, WORKERS)
  t.teardown(() => api.close())

  const healthy = await startReceiver(t, () => ({ status: 204 }))
  const silent = await startReceiver(t, () => ({ hang: true }))
  const late = await startReceiver(t, () => ({ delayMs: 1500 }))
  const huge = Buffer.alloc(10 * MB, 'ten megabytes. ')
  const large = await startReceiver(t, () => ({ body: huge }))
  const patches = REQUESTS / PATCH_EVERY

  const events = ['inventory.updated']
  await subscribe(api, healthy.url, events)
  // Not measured: the first requests of a process pay for its compilation.
  await load(api, pid, 1)
  const without = await load(api, pid, 2)
  t.ok(without.statuses.every((s) => s === 200), `${REQUESTS} requests with one well-behaved endpoint: every one answered 200`)
  t.ok(await until(() => healthy.received.length >= 2 * patches, 15_000), 'and its events delivered')

  const silentEndpoint = await subscribe(api, silent.url, events)
  const lateEndpoint = await subscribe(api, late.url, events)
  const largeEndpoint = await subscribe(api, large.url, events)
  const withThem = await load(api, pid, 3)
  t.ok(withThem.statuses.every((s) => s === 200), `${REQUESTS} requests while the hostile receivers take deliveries: every one answered 200`)
  t.comment(`API latency, one well-behaved endpoint: ${describe(without.latencies)}`)
  t.comment(`API latency, a silent, a late and a 10 MB receiver subscribed too: ${describe(withThem.latencies)}`)

  t.ok(await until(async () => (await pendingDeliveries(outbox)) === 0, 60_000), 'every delivery ended: delivered, or given up after its retry')
  t.comment(`server resident memory at its peak: ${(without.peakRss / MB).toFixed(1)} MB, then ${(withThem.peakRss / MB).toFixed(1)} MB while ${large.received.length} answers of 10 MB were offered to it`)
  t.ok(withThem.peakRss - without.peakRss < 10 * MB, 'the peak grew by less than one 10 MB answer')

  // How long the well-behaved endpoint waited for its events: the hostile ones hold delivery slots.
  const lag = (phase: number, figures: LoadFigures) => healthy.received.map(bodyOf).filter((b) => Math.floor(Number(b.data.quantity) / 10_000) === phase)
    .map((b) => healthy.received.find((r) => bodyOf(r).id === b.id)!.at - figures.patchedAt.get(`${String(b.data.petId)} ${String(b.data.quantity)}`)!)
  t.comment(`the well-behaved endpoint got each event after its PATCH's answer: alone ${describe(lag(2, without))}; beside the hostile ones ${describe(lag(3, withThem))}`)
  t.equal(healthy.received.length, 3 * patches, 'the well-behaved endpoint got every event once')

  const silentLog = await deliveryLog(api, silentEndpoint.id)
  t.equal(silentLog.length, 2 * patches, 'the silent receiver: each event attempted twice (the first attempt and its one retry)')
  t.ok(silentLog.every((a) => a.statusCode === null && a.error === 'timeout'), 'every attempt a time-out')
  const lateLog = await deliveryLog(api, lateEndpoint.id)
  t.equal(lateLog.length, 2 * patches, 'the late receiver: each event attempted twice')
  t.ok(lateLog.every((a) => a.statusCode === null && a.error === 'timeout'), 'every attempt a time-out, though an answer came after the limit')
  t.equal(late.received.length, 2 * patches, 'it did get every attempt')

  const largeLog = await deliveryLog(api, largeEndpoint.id)
  t.equal(largeLog.length, patches, 'the 10 MB receiver: one attempt per event')
  t.ok(largeLog.every((a) => a.statusCode === 200 && a.error === null && a.nextAttemptAt === null), 'each delivered (its status decides)')
  t.ok(largeLog.every((a) => a.responseBody === huge.subarray(0, 1024).toString()), 'the log keeps the first KiB of the answer, and no more')
  t.equal(await server.stop('SIGTERM'), 0, 'the server stops cleanly')
}

await onBothEngines(t, 'hostile receivers do not stall the service', hostileReceivers)

