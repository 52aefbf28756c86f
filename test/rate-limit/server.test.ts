import t from 'tap'
import { startServer } from '../helpers/server-process.js'
import { REDIS_SKIP, REDIS_URL, redisAvailable, redisPrefix, sharedDatabaseFile } from './helpers.js'

t.test('two server processes on one Redis count one key together, over real HTTP', { skip: !await redisAvailable() && REDIS_SKIP }, async (t) => {
  const env = { DATABASE_URL: `sqlite:${sharedDatabaseFile(t)}`, REDIS_URL, REDIS_KEY_PREFIX: redisPrefix(t) }
  const first = await startServer(t, env)
  const second = await startServer(t, env)
  const headers = { authorization: `Bearer ${first.demoKey}` }

  const seen: { remaining: number, reset: number }[] = []
  for (let i = 0; i < 6; i++) {
    const res = await fetch(`${(i % 2 === 0 ? first : second).baseUrl}/v1/inventory`, { headers })
    t.equal(res.status, 200)
    t.equal(Number(res.headers.get('x-ratelimit-limit')), 60, 'the Free plan\'s 60 a minute')
    seen.push({ remaining: Number(res.headers.get('x-ratelimit-remaining')), reset: Number(res.headers.get('x-ratelimit-reset')) })
  }
  // The real clock may cross a minute between two requests; within one minute each request,
  // whichever process answers it, takes exactly one from the same count.
  const pairs = seen.slice(1).map((s, i) => [seen[i]!, s] as const).filter(([a, b]) => a.reset === b.reset)
  t.ok(pairs.length >= 4, 'most requests fell in one minute')
  for (const [a, b] of pairs) t.equal(b.remaining, a.remaining - 1, 'the other process counted on from the same number')

  t.equal(await first.stop('SIGTERM'), 0, 'SIGTERM closes cleanly, Redis connection included')
  t.equal(await second.stop('SIGTERM'), 0)
})
