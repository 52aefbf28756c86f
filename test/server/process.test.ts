import t from 'tap'
import { join } from 'node:path'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

t.test('a first start seeds the demo catalogue and prints one demo key; a restart keeps acknowledged writes', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'p.db')}`
  const first = await startServer(t, { DATABASE_URL: databaseUrl })
  t.match(first.demoKey, /^psk_[A-Za-z0-9_-]{43}$/, 'the demo key is printed once at first start')
  const headers = { authorization: `Bearer ${first.demoKey}`, 'content-type': 'application/json' }
  const patched = await fetch(`${first.baseUrl}/v1/inventory/2`, { method: 'PATCH', headers, body: JSON.stringify({ quantity: 42 }) })
  t.equal(patched.status, 200)
  t.equal(await first.stop('SIGKILL'), 'SIGKILL', 'killed with -9 right after the acknowledgement')

  const second = await startServer(t, { DATABASE_URL: databaseUrl })
  t.equal(second.demoKey, undefined, 'no second demo key: one already exists')
  const list = await fetch(`${second.baseUrl}/v1/inventory`, { headers })
  const items = await list.json() as { petId: number, quantity: number }[]
  t.equal(items.find((i) => i.petId === 2)?.quantity, 42, 'the acknowledged write survived kill -9')
  t.equal(items.length, 10, 'the demo catalogue was not loaded twice')
  t.equal(await second.stop('SIGTERM'), 0, 'SIGTERM closes cleanly with exit code 0')
})
