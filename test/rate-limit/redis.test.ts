/**
 * The shared store: instances on one Redis count together and share bans, the counts outlive an
 * instance, and an unreachable Redis is served through (fail open), reported by /readyz and
 * logged once per outage. The outage is a TCP proxy being cut, never the real Redis stopping.
 */
import { Writable } from 'node:stream'
import t from 'tap'
import { expectError } from '../helpers/assertions.js'
import { keepAliveTimers, startTcpProxy } from '../helpers/tcp-proxy.js'
import {
  bearer, limitedApp, limitHeaders, listInventory, minuteEnd, pause, REDIS, REDIS_SKIP, redisAvailable, redisPrefix, redisUrlThrough, seconds,
  sharedDatabaseFile, START, testClock
} from './helpers.js'

const redisUp = await redisAvailable()

/** A pino destination that keeps every log line, to count warnings. */
function logCollector () {
  const lines: { level: number, msg: string }[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number, msg: string })
      done()
    }
  })
  return { lines, logger: { level: 'info', stream } }
}

const WARN = 40
const outageWarnings = (lines: { level: number, msg: string }[]) => lines.filter((l) => l.level === WARN && /rate-limit store unreachable/.test(l.msg))

t.test('two instances on one Redis count together, exactly, and share bans', { skip: !redisUp && REDIS_SKIP }, async (t) => {
  const clock = testClock()
  const shared = { clock, prefix: redisPrefix(t), databaseFile: sharedDatabaseFile(t) }
  const a = await limitedApp(t, 'redis', shared)
  const b = await limitedApp(t, 'redis', shared)
  const auth = bearer(await a.createKey('free'))

  // Every request at once, alternating between the instances: Free's 60, and the 10 past the
  // limit that are tolerated before a ban.
  const results = await Promise.all(Array.from({ length: 70 }, (_, i) => listInventory(i % 2 === 0 ? a : b, auth)))
  const served = results.filter((r) => r.statusCode === 200)
  t.equal(served.length, 60, 'exactly 60 served between the two')
  t.same(served.map((r) => limitHeaders(r).remaining).sort((x, y) => x - y), Array.from({ length: 60 }, (_, i) => i), 'each Remaining from 59 to 0 exactly once')
  const servedBy = (parity: number) => results.filter((r, i) => i % 2 === parity && r.statusCode === 200).length
  t.ok(servedBy(0) > 0 && servedBy(1) > 0, `both instances served some (A ${servedBy(0)}, B ${servedBy(1)})`)
  const refused = results.filter((r) => r.statusCode !== 200)
  t.equal(refused.length, 10)
  for (const res of refused) expectError(t, res, 429, 'rate_limited')

  const banned = await listInventory(a, auth)
  expectError(t, banned, 429, 'api_key_banned', 'the next request, on A, starts the ban')
  const onB = await listInventory(b, auth)
  expectError(t, onB, 429, 'api_key_banned', 'and B refuses the key as well')
  t.equal(limitHeaders(onB).retryAfter, 900, 'for the 900 s of a ban')
  t.equal(limitHeaders(onB).reset, limitHeaders(banned).reset, 'the same ban end on both')
})

t.test('the counts and bans outlive an instance', { skip: !redisUp && REDIS_SKIP }, async (t) => {
  const clock = testClock()
  const shared = { clock, prefix: redisPrefix(t), databaseFile: sharedDatabaseFile(t) }
  const first = await limitedApp(t, 'redis', { ...shared, env: { RATE_LIMIT_BAN_AFTER: '1' } })
  const counted = bearer(await first.createKey('free'))
  const abusive = bearer(await first.createKey('enterprise', { perMinute: 1, perDay: 100 }))
  for (let i = 0; i < 30; i++) await listInventory(first, counted)
  for (let i = 0; i < 3; i++) await listInventory(first, abusive)
  expectError(t, await listInventory(first, abusive), 429, 'api_key_banned')
  await first.app.close()

  const second = await limitedApp(t, 'redis', { ...shared, env: { RATE_LIMIT_BAN_AFTER: '1' } })
  const res = await listInventory(second, counted)
  t.equal(res.statusCode, 200)
  t.equal(limitHeaders(res).remaining, 60 - 31, 'the new instance goes on from the count of the old one')
  expectError(t, await listInventory(second, abusive), 429, 'api_key_banned', 'and keeps the ban')
})

t.test('Redis unreachable: served without limits, one warning per outage, /readyz 503; counting resumes', { skip: !redisUp && REDIS_SKIP }, async (t) => {
  const clock = testClock()
  const proxy = await startTcpProxy(t, REDIS.port, REDIS.host)
  const { lines, logger } = logCollector()
  const api = await limitedApp(t, 'redis', { clock, logger, env: { REDIS_URL: redisUrlThrough(proxy.port), REDIS_COMMAND_TIMEOUT_MS: '200' } })
  const auth = bearer(await api.createKey('free'))
  const readyz = () => api.request({ method: 'GET', url: '/readyz' })

  for (let i = 1; i <= 3; i++) t.equal(limitHeaders(await listInventory(api, auth)).remaining, 60 - i)
  const ready = await readyz()
  t.equal(ready.statusCode, 200)
  t.equal(ready.json().checks['rate-limit-store'], 'ok', '/readyz checks the rate-limit store')

  proxy.cut()
  const during = []
  for (let i = 0; i < 80; i++) during.push(await listInventory(api, auth))
  t.ok(during.every((r) => r.statusCode === 200), `all ${during.length} requests served during the outage, past the limit`)
  t.same(limitHeaders(during.at(-1)!), { limit: 60, remaining: 60, reset: seconds(minuteEnd(START)), retryAfter: undefined }, 'headers still present: the whole allowance')
  // /readyz reuses its result for up to a second (issue 13): the outage shows within that.
  let notReady = await readyz()
  for (let waited = 0; waited < 3000 && notReady.statusCode === 200; waited += 100) {
    await pause(100)
    notReady = await readyz()
  }
  expectError(t, notReady, 503, 'service_unavailable')
  t.match(notReady.json().message, /rate-limit-store/, '/readyz names the rate-limit store')
  t.equal(outageWarnings(lines).length, 1, 'one warning for the whole outage')

  proxy.restore()
  for (let waited = 0; waited < 10_000 && (await readyz()).statusCode !== 200; waited += 100) await pause(100)
  t.equal((await readyz()).statusCode, 200, '/readyz is ready again once Redis is back')
  const after = await listInventory(api, auth)
  t.equal(limitHeaders(after).remaining, 60 - 4, 'counting resumes where it stopped (requests during the outage were not counted)')
  t.ok(lines.some((l) => /rate-limit store reachable again/.test(l.msg)), 'the recovery is logged')

  proxy.cut()
  await listInventory(api, auth)
  await listInventory(api, auth)
  t.equal(outageWarnings(lines).length, 2, 'a second outage warns again, once')
  proxy.restore()
})

/** Runs `request`, resolving with its answer and how long it took in ms. */
async function timed<T> (request: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const result = await request()
  return [result, performance.now() - start]
}

t.test('Redis black-holed (gone without a reset): noticed, served without waiting for it, counting back within 10 s of its return', { skip: !redisUp && REDIS_SKIP }, async (t) => {
  const proxy = await startTcpProxy(t, REDIS.port, REDIS.host)
  const { lines, logger } = logCollector()
  // A command time-out far above a request's own time here, so that waiting for Redis shows.
  const commandTimeoutMs = 1000
  const api = await limitedApp(t, 'redis', { clock: testClock(), logger, env: { REDIS_URL: redisUrlThrough(proxy.port), REDIS_COMMAND_TIMEOUT_MS: String(commandTimeoutMs) } })
  const auth = bearer(await api.createKey('free'))
  t.equal(limitHeaders(await listInventory(api, auth)).remaining, 59, 'counted before the outage')
  const timers = keepAliveTimers(proxy.port)
  t.ok(timers !== undefined && timers.length > 0 && timers.every((s) => s <= 10), `TCP keep-alive probes within 10 s of silence (${timers?.join(', ')} s)`,
    { skip: timers === undefined && 'ss (iproute2) is missing: the keep-alive timers cannot be read' })
  const opened = proxy.connections

  proxy.blackhole()
  const lost = performance.now()
  const during: number[] = []
  while (proxy.connections === opened && performance.now() - lost < 10_000) {
    const [res, ms] = await timed(() => listInventory(api, auth))
    if (res.statusCode !== 200) t.fail(`answered ${res.statusCode} during the outage`)
    during.push(ms)
    await pause(50)
  }
  const noticedMs = Math.round(performance.now() - lost)
  t.ok(proxy.connections > opened, 'the client gave its silent connection up and opened another')
  t.comment(`noticed ${noticedMs} ms after Redis went silent (${during.length} requests meanwhile, the slowest ${Math.round(Math.max(...during))} ms)`)
  const [afterNotice, ms] = await timed(() => listInventory(api, auth))
  t.equal(afterNotice.statusCode, 200, 'served (fail open)')
  t.equal(limitHeaders(afterNotice).remaining, 60, 'uncounted: the whole allowance')
  t.ok(ms < commandTimeoutMs, `once noticed, a request does not wait for the command time-out (${Math.round(ms)} ms)`)
  expectError(t, await api.request({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable')

  proxy.restore()
  const back = performance.now()
  let counted = false
  while (!counted && performance.now() - back < 10_000) {
    counted = limitHeaders(await listInventory(api, auth)).remaining < 60
    if (!counted) await pause(100)
  }
  const recoveredMs = Math.round(performance.now() - back)
  t.ok(counted, 'counting resumed within 10 s of Redis\'s return')
  t.comment(`counting resumed ${recoveredMs} ms after Redis came back`)
  let ready = await api.request({ method: 'GET', url: '/readyz' })
  for (let waited = 0; waited < 2000 && ready.statusCode !== 200; waited += 100) {
    await pause(100)
    ready = await api.request({ method: 'GET', url: '/readyz' })
  }
  t.equal(ready.statusCode, 200, '/readyz is ready again')
  t.equal(outageWarnings(lines).length, 1, 'one warning for the outage')
  t.ok(lines.some((l) => /rate-limit store reachable again/.test(l.msg)), 'and one line for the recovery')
})

t.test('Redis unreachable at start: the service starts, serves and reports not ready', { skip: !redisUp && REDIS_SKIP }, async (t) => {
  const proxy = await startTcpProxy(t, REDIS.port, REDIS.host)
  proxy.cut()
  const { lines, logger } = logCollector()
  const api = await limitedApp(t, 'redis', { clock: testClock(), logger, env: { REDIS_URL: redisUrlThrough(proxy.port), REDIS_COMMAND_TIMEOUT_MS: '100' } })
  const res = await listInventory(api, bearer(await api.createKey('free')))
  t.equal(res.statusCode, 200, 'served (fail open)')
  t.equal(limitHeaders(res).limit, 60, 'with the Free plan\'s headers')
  expectError(t, await api.request({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable')
  t.equal(outageWarnings(lines).length, 1, 'one warning')
  proxy.restore()
})

t.test('the memory store has no readiness check of its own', async (t) => {
  const api = await limitedApp(t, 'memory', { clock: testClock() })
  const res = await api.request({ method: 'GET', url: '/readyz' })
  t.equal(res.statusCode, 200)
  t.notOk('rate-limit-store' in res.json().checks, 'nothing to reach')
})
