import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { startLatencyProxy } from '../helpers/latency-proxy.js'
import { createTestSchema, POSTGRES } from '../helpers/postgres.js'

// A partner's gateway: many valid keys behind one client address, sent to an instance that has
// just started and knows none of them. Checking them is the service's own waiting: whatever it
// costs, no valid key may be refused for it with 429, counted against the address, or banned.

const KEYS = 300
const REQUESTS_PER_KEY = 3

for (const hopMs of [0, 5]) {
  t.test(`a cold instance serves ${KEYS} valid keys × ${REQUESTS_PER_KEY} from one address (${hopMs} ms per database hop)`, async (t) => {
    const schema = await createTestSchema(t)
    const port = hopMs === 0 ? undefined : (await startLatencyProxy(t, POSTGRES.port, hopMs, POSTGRES.host)).port
    const env = { DATABASE_URL: schema.url(port), DATABASE_POOL_MAX: '10', SEED: 'false' }
    const issuer = await buildTestApp(t, { env })
    const keys = await Promise.all(Array.from({ length: KEYS }, () => issuer.createKey('pro')))
    const cold = await buildTestApp(t, { env })

    const answers = await Promise.all(keys.flatMap((key) => Array.from({ length: REQUESTS_PER_KEY }, () =>
      cold.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${key}` } }))))
    const byStatus = new Map<number, number>()
    for (const answer of answers) byStatus.set(answer.statusCode, (byStatus.get(answer.statusCode) ?? 0) + 1)
    t.same(Object.fromEntries(byStatus), { 200: KEYS * REQUESTS_PER_KEY }, 'every request is served')
    t.equal(answers.filter((answer) => answer.statusCode === 429).length, 0, 'none is refused as rate limited or banned')

    // The address itself was never counted for what the service waited on: a request without a
    // key is counted from the address's first request, with the whole Free allowance left.
    const anonymous = await cold.request({ method: 'GET', url: '/v1/inventory' })
    t.equal(anonymous.statusCode, 401)
    t.equal(anonymous.headers['x-ratelimit-remaining'], '59', 'the address has used one request of its 60: this one')
    // And every key still works a moment later.
    const again = await Promise.all(keys.map((key) => cold.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${key}` } })))
    t.same([...new Set(again.map((answer) => answer.statusCode))], [200], 'no key is banned')
  })
}
