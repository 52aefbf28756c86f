/**
 * /readyz reuses a check result for up to one second, and concurrent calls share one check
 * (issue 13, item 7): the storage's ping is counted through a wrapped store, and the second is
 * measured on a clock the test moves.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { READINESS_REUSE_MS } from '../../src/routes/health.js'
import { createStore } from '../../src/store/create-store.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

t.test('/readyz asks the storage at most once a second, however often it is called', async (t) => {
  const inner = await createStore(`sqlite:${join(tempDir(t), 'ready.db')}`)
  let pings = 0
  let failing = false
  const store = new Proxy(inner, {
    get (target, property, receiver) {
      if (property === 'ping') {
        return async () => {
          pings++
          await sleep(50) // long enough for the concurrent calls below to arrive while it runs
          if (failing) throw new Error('storage is down (test)')
        }
      }
      const value = Reflect.get(target, property, receiver) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  let clock = 0
  const api = await buildTestApp(t, { store, monotonicNow: () => clock })
  const readyz = () => api.request({ method: 'GET', url: '/readyz' })

  const concurrent = await Promise.all(Array.from({ length: 20 }, readyz))
  t.ok(concurrent.every((res) => res.statusCode === 200), '20 concurrent calls: all 200')
  t.equal(pings, 1, 'one check between them')

  for (const at of [0, 500, READINESS_REUSE_MS - 1]) {
    clock = at
    t.equal((await readyz()).statusCode, 200)
  }
  t.equal(pings, 1, 'calls within the second after the result reuse it')

  clock = READINESS_REUSE_MS
  t.equal((await readyz()).statusCode, 200)
  t.equal(pings, 2, 'a second later the storage is asked again')

  failing = true
  clock += READINESS_REUSE_MS
  const down = await Promise.all(Array.from({ length: 5 }, readyz))
  for (const res of down) expectError(t, res, 503, 'service_unavailable', 'storage down')
  t.equal(pings, 3, 'a failed check is shared and reused too')

  failing = false
  clock += READINESS_REUSE_MS - 1
  expectError(t, await readyz(), 503, 'service_unavailable', 'right after the storage is back: the failure is still reused')
  t.equal(pings, 3)
  clock += 1
  t.equal((await readyz()).statusCode, 200, 'ready again a second after the failed check')
  t.equal(pings, 4)
})
