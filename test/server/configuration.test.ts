/**
 * Configuration seen from outside, with real processes: PORT=0 advertises the port it really
 * listens on, and the demo key is made only when NODE_ENV is unset, development or test.
 */
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

t.test('PORT=0: the document\'s servers, the Link header and the docs page\'s policy name the real port', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'port.db')}`, PORT: '0' })
  const origin = `http://127.0.0.1:${server.port}`
  t.not(server.port, 0, 'listening on a port the system chose')

  const document = await (await fetch(`${server.baseUrl}/openapi.json`)).json() as { servers: { url: string }[] }
  t.equal(document.servers[0]?.url, `${origin}/v1`, 'servers: this instance at its real port')
  t.notOk(JSON.stringify(document).includes('127.0.0.1:0'), 'no :0 anywhere in the document')

  const docs = await fetch(`${server.baseUrl}/docs/`)
  t.equal(docs.status, 200)
  t.match(docs.headers.get('content-security-policy'), `connect-src 'self' ${origin} `, 'the docs page may call the real port')

  const deprecated = await fetch(`${server.baseUrl}/v1/pets/1`, { headers: { authorization: `Bearer ${server.demoKey}` } })
  t.equal(deprecated.status, 200)
  t.match(deprecated.headers.get('link'), `<${origin}/docs#`, 'the deprecation Link names the real port')

  const ready = server.logs.find((l) => String(l.msg).startsWith('Pet Store API ready'))!
  t.match(ready.msg, `${origin}/docs`, 'and so does the start-up line')
  t.equal(await server.stop(), 0)
})

for (const [nodeEnv, demo] of [[undefined, true], ['development', true], ['test', true], ['prod', false], ['staging', false], ['production', false]] as const) {
  t.test(`NODE_ENV=${nodeEnv ?? '(unset)'}: ${demo ? 'a demo key' : 'no demo key'} on a first start`, async (t) => {
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'demo.db')}`, ...(nodeEnv === undefined ? {} : { NODE_ENV: nodeEnv }) })
    if (demo) t.match(server.demoKey, /^psk_/, 'the demo key is printed')
    else t.equal(server.demoKey, undefined, 'no demo key')
    t.equal(server.logs.some((l) => JSON.stringify(l).includes('psk_')), demo, demo ? 'it is in the log' : 'no key anywhere in the log')
    t.equal(await server.stop(), 0)
  })
}
