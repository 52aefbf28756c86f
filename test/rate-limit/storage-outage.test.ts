import t from 'tap'
import { buildTestApp } from '../helpers/app.js'

t.test('while storage is down, failed key lookups answer 503 and are not counted against the address', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader('free')
  await api.store.close() // every key lookup now fails with StoreUnavailableError

  const statuses = new Map<number, number>()
  // More than the Free plan's 60 per minute from one address: counted, these would become 429s.
  for (let i = 0; i < 75; i++) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
    if (res.statusCode === 503) {
      t.equal(res.json().code, 'service_unavailable')
      t.equal(res.headers['x-ratelimit-remaining'], '60', 'uncounted: the whole allowance is shown')
    }
  }
  t.same(Object.fromEntries(statuses), { 503: 75 }, 'every request got 503, none 429')
})
