/**
 * A rolling restart behind the documented nginx configuration: Debian's nginx with
 * docs/nginx/petstore-proxy.conf included as it is, and the upstream block its comments give,
 * in front of two instances on one PostgreSQL schema. Under continuous keep-alive load through
 * nginx (PATCHes, GETs of the list, and orders placed without Idempotency-Key, which nginx never
 * sends twice), instance A is restarted, then B as soon as A is ready again: every request must
 * be answered 2xx.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { migrateDatabase, runCliInProcess } from '../helpers/cli.js'
import { keepAliveLoad } from '../helpers/keep-alive-load.js'
import { keyInDatabase } from '../helpers/keys.js'
import { documentedUpstream, NGINX_SKIP, nginxBinary, startNginx, upstreamFor } from '../helpers/nginx.js'
import { freePort } from '../helpers/ports.js'
import { createTestSchema } from '../helpers/postgres.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'

const clients = 16

t.test('docs/operations.md shows the upstream block of docs/nginx/petstore-proxy.conf', async (t) => {
  const operations = readFileSync(join(projectRoot, 'docs', 'operations.md'), 'utf8')
  t.ok(operations.includes(documentedUpstream()), 'the same block, line for line')
})

t.test('a rolling restart of two instances behind the documented nginx: every request answered 2xx', {
  skip: nginxBinary === undefined && process.env.CI !== 'true' ? NGINX_SKIP : false
}, async (t) => {
  if (nginxBinary === undefined) return t.fail(NGINX_SKIP)
  const schema = await createTestSchema(t)
  const databaseUrl = schema.url()
  await migrateDatabase(databaseUrl)
  t.equal((await runCliInProcess('db', ['seed', '--synthetic', String(clients + 1)], { DATABASE_URL: databaseUrl })).code, 0)
  const { secret } = await keyInDatabase(databaseUrl, 'rolling restart')
  const ports = [await freePort(), await freePort()] as const
  const start = (port: number) => startServer(t, { DATABASE_URL: databaseUrl, PORT: String(port), SEED: 'false', NODE_ENV: 'production', TRUST_PROXY: '127.0.0.1' })
  let a = await start(ports[0])
  let b = await start(ports[1])
  const nginx = await startNginx(t, nginxBinary, upstreamFor([...ports]))
  const proxied = `http://127.0.0.1:${nginx.port}`
  const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }
  const orderPet = clients + 1
  const stocked = await fetch(`${proxied}/v1/inventory/${orderPet}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ quantity: 1_000_000 }) })
  t.equal(stocked.status, 200, 'a pet with stock enough for every order the load places')

  const common = `Host: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\n`
  const json = (body: unknown) => { const text = JSON.stringify(body); return `Content-Type: application/json\r\nContent-Length: ${text.length}\r\n\r\n${text}` }
  const load = keepAliveLoad({
    port: nginx.port,
    connections: clients,
    request: (connection, n) => n % 3 === 0
      ? `PATCH /v1/inventory/${connection + 1} HTTP/1.1\r\n${common}${json({ quantity: n })}`
      : n % 3 === 1
        ? `GET /v1/inventory HTTP/1.1\r\n${common}\r\n`
        : `POST /v1/store/orders HTTP/1.1\r\n${common}${json({ petId: orderPet, quantity: 1 })}`
  })
  await load.answered(clients * 10)

  const restart = async (name: string, server: ServerProcess, port: number): Promise<ServerProcess> => {
    const answeredBefore = load.report.answered
    t.equal(await server.stop('SIGTERM'), 0, `${name} drains and exits 0 under load`)
    const next = await start(port)
    const ready = await fetch(`${next.baseUrl}/readyz`)
    t.equal(ready.status, 200, `${name} is ready again`)
    await ready.arrayBuffer()
    t.comment(`${load.report.answered - answeredBefore} answers through nginx while ${name} restarted`)
    return next
  }
  a = await restart('A', a, ports[0])
  b = await restart('B', b, ports[1])
  await load.answered(load.report.answered + clients * 10)
  const report = await load.stop()

  t.comment(JSON.stringify(report))
  const statuses = Object.keys(report.statuses).sort()
  t.same(statuses, ['200', '201'], 'every answer 200 (PATCH, GET) or 201 (order placed)')
  t.equal(report.resets + report.unanswered, 0, 'no connection to nginx failed')
  t.equal(report.answered, report.sent, 'every request answered')
  const served = (server: ServerProcess) => server.logs.filter((line) => line.msg === 'incoming request').length
  t.ok(served(a) > 0 && served(b) > 0, `both restarted instances served requests (${served(a)} and ${served(b)})`)
  t.notMatch(nginx.errors(), /no live upstreams/, 'nginx always had an instance to send to')
})
