import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { startServer } from '../helpers/server-process.js'

// `npm run keys --` and `npm run db:…` run the compiled CLIs in dist/, as an installed package does.
const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { bin: { keys: string }, scripts: Record<string, string> }

t.test('the package bin and the npm scripts run the compiled command lines', async (t) => {
  t.equal(pkg.scripts.keys, `node ${pkg.bin.keys}`, '`npm run keys` runs the package\'s bin')

  const build = await run('npm', ['run', '-s', 'build'], {}, 300_000)
  t.equal(build.code, 0, `npm run build succeeds ${build.stdout}${build.stderr}`)
  t.match(readFileSync(join(projectRoot, pkg.bin.keys), 'utf8'), /^#!\/usr\/bin\/env node\n/, 'the bin starts with a node shebang')

  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'npm.db')}` }

  const migrate = await run('npm', ['run', '-s', 'db:migrate'], env)
  t.equal(migrate.code, 0, 'npm run db:migrate')
  t.match(migrate.stdout, /schema up to date/)

  const file = join(dir, 'catalogue.json')
  writeFileSync(file, JSON.stringify({ pets: [{ id: 4, name: 'Dot', photoUrls: [] }], inventory: [{ petId: 4, quantity: 6 }] }))
  const seed = await run('npm', ['run', '-s', 'db:seed', '--', file], env)
  t.equal(seed.code, 0, 'npm run db:seed -- FILE.json')
  t.match(seed.stdout, /imported 1 pets, 1 inventory entries, 0 orders/)
  const synthetic = await run('npm', ['run', '-s', 'db:seed', '--', '--synthetic', '3'], env)
  t.equal(synthetic.code, 0, 'npm run db:seed -- --synthetic N')
  const redeliver = await run('npm', ['run', '-s', 'db:redeliver', '--', '1', '--since', '1h'], env)
  t.match(redeliver, { code: 1, stderr: /no webhook endpoint 1/ }, 'npm run db:redeliver -- ENDPOINT_ID --since TIME reaches the command')

  const created = await run('npm', ['run', '-s', 'keys', '--', 'create', '--plan', 'free', '--name', 'via npm', '--json'], env)
  t.equal(created.code, 0, 'npm run keys -- create')
  const lines = created.stdout.trim().split('\n')
  t.equal(lines.length, 1, 'one line on stdout')
  const key = JSON.parse(lines[0]!) as { id: string, key: string }
  const list = await run('npm', ['run', '-s', 'keys', '--', 'list'], env)
  t.equal(list.code, 0, 'npm run keys -- list')
  t.match(list.stdout, key.id)
  t.notMatch(list.stdout, key.key.slice(4), 'no secret in the list')

  const api = await buildTestApp(t, { env })
  const items = (await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${key.key}` } })).json() as { petId: number, quantity: number }[]
  t.same(items.map((i) => i.petId), [4, 5, 6, 7], 'the seeded pet, then the synthetic ones after it')
  t.equal(items[0]!.quantity, 6)

  // What `npm start` runs once it has built: the compiled server, on a database of its own.
  t.equal(pkg.scripts.start, 'node dist/src/server.js')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'start', 'fresh.db')}` }, 60_000, join(projectRoot, 'dist', 'src', 'server.js'))
  t.match(server.demoKey, /^psk_/, 'a first start prints a demo key')
  const inventory = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${server.demoKey}` } })
  t.equal(inventory.status, 200, 'the API answers with it')
  t.ok(((await inventory.json()) as unknown[]).length > 0, 'on the demo catalogue')
  t.equal((await fetch(`${server.baseUrl}/docs`)).status, 200, 'the docs page answers')
  t.equal(await server.stop(), 0)
})
