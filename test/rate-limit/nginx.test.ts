/**
 * The documented nginx configuration, for real (issue 13, item 1): Debian's nginx, started here on
 * a loopback port with docs/nginx/petstore-proxy.conf included as it is, in front of two server
 * processes. The instances share their counters through Redis (a fresh key prefix), as a real
 * deployment behind a load balancer must: counted in each process's memory, a client's requests
 * would be split between two buckets by nginx's rotation, and no count would be exact.
 * Clients bind distinct loopback source addresses (127.0.0.2, 127.0.0.3) and write whatever they
 * like into X-Forwarded-For.
 */
import { request as httpRequest } from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { document } from '../helpers/contract.js'
import { keyInDatabase } from '../helpers/keys.js'
import { NGINX_SKIP, nginxBinary, startNginx } from '../helpers/nginx.js'
import { startServer, type ServerProcess } from '../helpers/server-process.js'
import { REDIS_SKIP, REDIS_URL, redisAvailable, redisPrefix, roomInThisMinute } from './helpers.js'

const free = document.plans.free!
const redisUp = await redisAvailable()

interface Answer { status: number, remaining: number }

/** GET /v1/inventory through nginx from a chosen loopback source address, with any X-Forwarded-For lines. */
function get (port: number, from: string, forwardedFor: string[] = [], headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      localAddress: from,
      path: '/v1/inventory',
      agent: false,
      headers: { ...headers, ...(forwardedFor.length > 0 ? { 'x-forwarded-for': forwardedFor } : {}) }
    }, (response) => {
      response.resume()
      response.on('end', () => resolve({ status: response.statusCode ?? 0, remaining: Number(response.headers['x-ratelimit-remaining']) }))
    })
    request.on('error', reject)
    request.end()
  })
}

const inventoryRequests = (instance: ServerProcess) =>
  instance.logs.filter((line) => line.msg === 'incoming request' && (line.req as { url?: string } | undefined)?.url === '/v1/inventory')
    .map((line) => (line.req as { remoteAddress: string }).remoteAddress)

t.test('behind the documented nginx: every client its own bucket, and spoofing X-Forwarded-For gains nothing', {
  skip: nginxBinary === undefined && process.env.CI !== 'true' ? NGINX_SKIP : !redisUp ? REDIS_SKIP : false
}, async (t) => {
  if (nginxBinary === undefined) return t.fail(NGINX_SKIP)
  const databaseUrl = `sqlite:${join(tempDir(t), 'proxied.db')}`
  const { secret } = await keyInDatabase(databaseUrl, 'proxied', 'pro')
  const env = { DATABASE_URL: databaseUrl, REDIS_URL, REDIS_KEY_PREFIX: redisPrefix(t), TRUST_PROXY: '127.0.0.1' }
  const one = await startServer(t, env)
  const two = await startServer(t, env)
  // Plain round robin over the two, so that each serves some of the requests below.
  const { port } = await startNginx(t, nginxBinary, `upstream petstore {\n${[one, two].map((instance) => `    server 127.0.0.1:${instance.port};`).join('\n')}\n    keepalive 8;\n}`)
  const A = '127.0.0.2'
  const B = '127.0.0.3'

  // About 70 counted requests follow, a few seconds on a loaded machine; all in one minute window.
  const waited = await roomInThisMinute(20_000)
  if (waited > 0) t.comment(`waited ${waited} ms for a fresh minute window`)
  const spoofs = [['203.0.113.1'], [B], ['127.0.0.1'], ['x'.repeat(3000)], ['198.51.100.1, 198.51.100.2'], ['203.0.113.9', '203.0.113.10'], []]
  for (const [i, spoof] of spoofs.entries()) {
    t.same(await get(port, A, spoof), { status: 401, remaining: free.perMinute - 1 - i }, `client A, X-Forwarded-For ${JSON.stringify(spoof).slice(0, 40)}: A's bucket`)
  }
  t.same(await get(port, B, [A]), { status: 401, remaining: free.perMinute - 1 }, 'client B claiming to be A: its own bucket')
  t.same(await get(port, B, ['203.0.113.1']), { status: 401, remaining: free.perMinute - 2 }, 'client B: still its own bucket')
  t.same(await get(port, A), { status: 401, remaining: free.perMinute - 1 - spoofs.length }, 'A\'s count was not touched by B')

  let used = spoofs.length + 1
  for (; used < free.perMinute; used++) await get(port, A, [`203.0.113.${used}`])
  const limited = await get(port, A, ['192.0.2.77'])
  t.same(limited, { status: 429, remaining: 0 }, `A is limited after ${free.perMinute} requests, whatever it writes into X-Forwarded-For`)
  t.same(await get(port, A, [B]), { status: 429, remaining: 0 }, 'claiming to be B does not help')
  t.same(await get(port, B, ['192.0.2.77']), { status: 401, remaining: free.perMinute - 3 }, 'B is not limited with A')
  // A limited address gets one lookup a second of a key its instance has not seen (issue 13, item 2).
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const withKey = await get(port, A, ['192.0.2.77'], { authorization: `Bearer ${secret}` })
  t.same(withKey, { status: 200, remaining: document.plans.pro!.perMinute - 1 }, 'a valid key from A is counted for the key')

  const seen = [...inventoryRequests(one), ...inventoryRequests(two)]
  t.ok(inventoryRequests(one).length > 0 && inventoryRequests(two).length > 0, `both instances served (${inventoryRequests(one).length} and ${inventoryRequests(two).length} requests)`)
  t.same([...new Set(seen)].sort(), [A, B], 'the instances saw exactly the two real client addresses, none that a client wrote')
})
