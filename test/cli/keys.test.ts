import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { expectUnauthorized } from '../helpers/assertions.js'
import { migrateDatabase, runCli, runCliInProcess } from '../helpers/cli.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { document } from '../helpers/contract.js'

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
type Created = { id: string, key: string, plan: string, name: string }

// Most commands run in this process (runCliInProcess); the bin itself, as a process, is run by
// the tests of a bad DATABASE_URL, a relative path to a missing database, and --help.

/** A migrated database of its own (keys never creates one). */
async function database (t: Parameters<typeof tempDir>[0]) {
  const url = `sqlite:${join(tempDir(t), 'keys.db')}`
  await migrateDatabase(url)
  return { url, keys: (...args: string[]) => runCliInProcess('keys', args, { DATABASE_URL: url }) }
}

t.test('keys create --json prints exactly one JSON object, and the key works at once', async (t) => {
  const db = await database(t)
  const res = await db.keys('create', '--plan', 'pro', '--name', 'Partner A', '--json')
  t.equal(res.code, 0, 'exit 0')
  t.equal(res.stderr, '', 'nothing on stderr')
  t.equal(res.stdout.split('\n').filter((l) => l !== '').length, 1, 'one line on stdout')
  const created = JSON.parse(res.stdout) as Created
  t.same(Object.keys(created).sort(), ['id', 'key', 'name', 'plan'], 'exactly {id, key, plan, name}')
  t.match(created, { plan: 'pro', name: 'Partner A' })
  t.match(created.key, /^psk_[A-Za-z0-9_-]{43}$/, 'psk_ + base64url of 32 bytes')
  t.type(created.id, 'string')
  t.not(created.id, created.key, 'the id is not the secret')

  // An app on the same database accepts it (the server opens the file the CLI wrote).
  const api = await buildTestApp(t, { env: { DATABASE_URL: db.url } })
  const ok = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${created.key}` } })
  t.equal(ok.statusCode, 200, 'the new key is accepted')
  t.match(await apiKeysRepository(api.store).list(), [{ id: created.id, plan: 'pro', name: 'Partner A', perMinute: null, perDay: null, revokedAt: null }])

  const enterprise = await db.keys('create', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '2000000', '--json')
  t.equal(enterprise.code, 0, 'an enterprise key with its own limits')
  const ent = JSON.parse(enterprise.stdout) as Created
  t.match(ent, { plan: 'enterprise', name: 'enterprise key' }, 'a default name')
  t.match((await apiKeysRepository(api.store).list()).find((k) => k.id === ent.id), { perMinute: 5000, perDay: 2000000 }, 'its limits are stored')

  const text = await db.keys('create', '--plan', 'business')
  t.equal(text.code, 0, 'without --json')
  const secret = /psk_[A-Za-z0-9_-]{43}/.exec(text.stdout)?.[0]
  t.ok(secret, 'the text output shows the key once')
  t.equal((await api.request({ method: 'GET', url: '/v1/store/orders', headers: { authorization: `Bearer ${secret}` } })).statusCode, 200, 'and it works')
})

t.test('keys list (text and --json) never prints a secret or a hash', async (t) => {
  const db = await database(t)
  const created: Created[] = []
  for (const args of [['--plan', 'free', '--name', 'alpha'], ['--plan', 'enterprise', '--name', 'beta', '--per-minute', '10', '--per-day', '100']]) {
    created.push(JSON.parse((await db.keys('create', ...args, '--json')).stdout) as Created)
  }
  t.equal((await db.keys('revoke', created[0]!.id)).code, 0)
  const secrets = created.flatMap((c) => [c.key, c.key.slice(4), sha256(c.key)])

  const text = await db.keys('list')
  t.equal(text.code, 0)
  for (const c of created) t.match(text.stdout, c.id, `lists ${c.id}`)
  t.match(text.stdout, /alpha.*free.*revoked/, 'the revoked key is shown as revoked')
  t.match(text.stdout, /beta.*enterprise.*10\/min 100\/day.*active/, 'the enterprise key with its limits, active')

  const json = await db.keys('list', '--json')
  t.equal(json.code, 0)
  const list = JSON.parse(json.stdout) as Record<string, unknown>[]
  t.equal(list.length, 2)
  t.match(list, [{ id: created[0]!.id, name: 'alpha', plan: 'free' }, { id: created[1]!.id, name: 'beta', plan: 'enterprise', perMinute: 10, perDay: 100, revokedAt: null }])
  t.type(list[0]!.revokedAt, 'string', 'revokedAt is set on the revoked key')
  for (const entry of list) t.notOk(Object.keys(entry).some((k) => /key|hash|secret/i.test(k)), `no secret-like field in ${Object.keys(entry).join(', ')}`)

  const printed = [text.stdout, json.stdout, text.stderr, json.stderr]
  t.equal(secrets.length, 6, 'two keys: each as printed, without its prefix, and its SHA-256')
  t.same(secrets.filter((secret) => printed.some((out) => out.includes(secret))), [], 'no secret or hash in any output')

})

t.test('keys revoke makes the key fail at once against a running app on that database', async (t) => {
  const db = await database(t)
  const victim = JSON.parse((await db.keys('create', '--plan', 'free', '--json')).stdout) as Created
  const other = JSON.parse((await db.keys('create', '--plan', 'free', '--json')).stdout) as Created
  const api = await buildTestApp(t, { env: { DATABASE_URL: db.url } })
  const call = (key: string) => api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${key}` } })
  t.equal((await call(victim.key)).statusCode, 200, 'accepted before')

  const revoked = await db.keys('revoke', victim.id)
  t.equal(revoked.code, 0, 'exit 0')
  t.match(revoked.stdout, victim.id, 'names the key')
  t.notMatch(revoked.stdout, victim.key)
  expectUnauthorized(t, await call(victim.key), 'the very next request')
  t.equal((await call(other.key)).statusCode, 200, 'other keys are untouched')
})

t.test('bad usage: non-zero exit, a one-line error, nothing created', async (t) => {
  const db = await database(t)
  const cases: [string[], RegExp][] = [
    [['create', '--plan', 'gold'], /--plan must be one of free, pro, business, enterprise/],
    [['create', '--plan', 'enterprise'], /enterprise key needs its own --per-minute and --per-day/],
    [['create', '--plan', 'enterprise', '--per-minute', '0', '--per-day', '10'], /--per-minute must be a whole number/],
    [['create', '--plan', 'free', '--per-minute', '5', '--per-day', '100'], /only for enterprise/],
    [['create', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '100'], /^error: --per-day \(100\) is below --per-minute \(5000\): the daily limit must be at least the per-minute one$/],
    [['create', '--plan', 'free', '--colour', 'red'], /colour/],
    [['frobnicate'], /unknown command frobnicate/],
    [['revoke', 'key_0000000000000000'], /no key with id key_0000000000000000/]
  ]
  for (const [args, message] of cases) {
    const label = `keys ${args.join(' ')}`.trim()
    const res = await db.keys(...args)
    t.not(res.code, 0, `${label}: non-zero exit`)
    t.equal(res.stdout, '', `${label}: nothing on stdout`)
    const first = res.stderr.split('\n')[0]!
    t.match(first, /^error: /, `${label}: starts with error:`)
    t.match(first, message, `${label}: ${first}`)
    t.notMatch(res.stderr, /\bat .+:\d+:\d+|node:internal/, `${label}: no stack trace`)
  }
  t.same(JSON.parse((await db.keys('list', '--json')).stdout), [], 'no key was created by any of them (an empty list is [])')
  const equal = await db.keys('create', '--plan', 'enterprise', '--per-minute', '100', '--per-day', '100', '--json')
  t.equal(equal.code, 0, `a daily limit equal to the per-minute one is accepted ${equal.stderr}`)

  // In a process of its own: the bin's exit status and its real stderr.
  const badUrl = await runCli('keys', ['list'], { DATABASE_URL: 'mysql://x' })
  t.not(badUrl.code, 0, 'a bad DATABASE_URL: non-zero exit')
  t.equal(badUrl.stderr.trim().split('\n').length, 1, 'one line')
  t.match(badUrl.stderr, /DATABASE_URL/, 'naming the variable')
})

t.test('revoking a revoked key says it already was, and when; nothing changes', async (t) => {
  const db = await database(t)
  const key = JSON.parse((await db.keys('create', '--plan', 'free', '--name', 'twice', '--json')).stdout) as Created
  const first = await db.keys('revoke', key.id)
  t.equal(first.code, 0)
  const revokedAt = /at (\S+)\. It is refused/.exec(first.stdout)?.[1]
  t.ok(revokedAt, `the first revocation gives its time: ${first.stdout}`)

  const second = await db.keys('revoke', key.id)
  t.equal(second.code, 0, 'exit 0: the key is revoked, as asked')
  t.equal(second.stderr, '')
  t.equal(second.stdout, `${key.id} ("twice") was already revoked at ${revokedAt}; nothing changed.\n`)
  const listed = JSON.parse((await db.keys('list', '--json')).stdout) as { id: string, revokedAt: string }[]
  t.equal(listed[0]!.revokedAt, revokedAt, 'the first revocation time is kept')
})

t.test('keys never creates a database: exit 1, one line naming the path and db:migrate', async (t) => {
  const dir = join(tempDir(t), 'not', 'there')
  const file = join(dir, 'petstore.db')
  const expected = `error: no database at ${file} (DATABASE_URL=sqlite:${file}): run npm run db:migrate (or start the server) first, or check DATABASE_URL and the working directory\n`
  for (const args of [['create', '--plan', 'free'], ['list'], ['list', '--json'], ['revoke', 'key_0000000000000000']]) {
    const label = `keys ${args.join(' ')}`
    const res = await runCliInProcess('keys', args, { DATABASE_URL: `sqlite:${file}` })
    t.equal(res.code, 1, `${label}: exit 1`)
    t.equal(res.stdout, '', `${label}: nothing on stdout`)
    t.equal(res.stderr, expected, `${label}: the one line`)
  }
  t.notOk(existsSync(dir), 'neither the file nor its directory was created')

  // A relative path is resolved against the working directory, and the line shows where it looked:
  // the process's own (the project directory), so this one runs the bin as a process.
  const relative = `./no-such-dir-${randomBytes(4).toString('hex')}/petstore.db`
  const res = await runCli('keys', ['list'], { DATABASE_URL: `sqlite:${relative}` })
  t.equal(res.code, 1)
  t.match(res.stderr, `error: no database at ${join(projectRoot, relative)} (DATABASE_URL=sqlite:${relative})`, 'names the resolved path')
  t.notOk(existsSync(join(projectRoot, relative)), 'nothing created in the working directory')
})

t.test('keys --help and -h print the usage on stdout and exit 0', async (t) => {
  // No database and a DATABASE_URL that would be refused: help needs neither. Two of them run the
  // bin as a process (its exit status, its real stdout), the other two run in this process.
  const cases: [string[], typeof runCli][] = [[['--help'], runCli], [['-h'], runCliInProcess], [['create', '--help'], runCliInProcess], [['revoke', '-h'], runCli]]
  for (const [args, run] of cases) {
    const res = await run('keys', args, { DATABASE_URL: 'mysql://x' })
    const label = `keys ${args.join(' ')}`
    t.equal(res.code, 0, `${label}: exit 0`)
    t.equal(res.stderr, '', `${label}: nothing on stderr`)
    t.match(res.stdout, /^Usage:\n {2}keys create --plan PLAN \[--name NAME\] \[--per-minute N --per-day N\] \[--scopes A,B\] \[--json\]\n {2}keys list \[--json\]\n {2}keys revoke ID\n {2}keys update ID --scopes A,B\n/, `${label}: the usage`)
    t.match(res.stdout, /PLAN is one of free, pro, business, enterprise/, `${label}: the plans`)
  }
})

t.test('keys create --scopes, keys list and keys update: what a key may do, applied from its next request', async (t) => {
  const db = await database(t)
  const { scopes } = document
  const reader = JSON.parse((await db.keys('create', '--plan', 'pro', '--name', 'dashboard', '--scopes', 'inventory:read, orders:read', '--json')).stdout) as Created
  const everything = JSON.parse((await db.keys('create', '--plan', 'pro', '--name', 'all', '--json')).stdout) as Created
  const api = await buildTestApp(t, { env: { DATABASE_URL: db.url } })
  const stored = await apiKeysRepository(api.store).list()
  t.same(stored.find((k) => k.id === reader.id)?.scopes, ['inventory:read', 'orders:read'], 'the scopes given, in the document\'s order')
  t.same(stored.find((k) => k.id === everything.id)?.scopes, scopes, 'without --scopes: every scope of openapi.yaml')

  const listed = await db.keys('list')
  t.match(listed.stdout, /SCOPES/, 'keys list has a SCOPES column')
  t.match(listed.stdout, new RegExp(`${reader.id} .*inventory:read,orders:read`), 'with each key\'s scopes')
  const listedJson = JSON.parse((await db.keys('list', '--json')).stdout) as { id: string, scopes: string[] }[]
  t.same(listedJson.find((k) => k.id === reader.id)?.scopes, ['inventory:read', 'orders:read'], 'and in --json')

  const patch = (key: string) => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: { quantity: 3 } })
  t.equal((await patch(reader.key)).statusCode, 403, 'a read-only key cannot set stock')
  const updated = await db.keys('update', reader.id, '--scopes', 'inventory:read,inventory:write')
  t.equal(updated.code, 0, `keys update exits 0 (${updated.stderr})`)
  t.match(updated.stdout, /now holds inventory:read, inventory:write/)
  t.equal((await patch(reader.key)).statusCode, 200, 'its next request has the new scope')
  const orders = await api.request({ method: 'GET', url: '/v1/store/orders', headers: { authorization: `Bearer ${reader.key}` } })
  t.equal(orders.statusCode, 403, 'and no longer the one it lost')
})

t.test('keys create and update refuse an unknown or empty scope list with one line and exit 2, and change nothing', async (t) => {
  const db = await database(t)
  const before = JSON.parse((await db.keys('list', '--json')).stdout) as unknown[]
  for (const scopes of ['inventory:read,orders:delete', 'admin', '', ' , ']) {
    const res = await db.keys('create', '--plan', 'free', '--scopes', scopes)
    t.equal(res.code, 2, `--scopes ${JSON.stringify(scopes)}: exit 2`)
    t.equal(res.stderr.trim().split('\n').length, 1, 'one line on stderr')
    t.match(res.stderr, /--scopes/, `it names the option (${res.stderr.trim()})`)
  }
  t.same(JSON.parse((await db.keys('list', '--json')).stdout), before, 'no key was made')
  const key = JSON.parse((await db.keys('create', '--plan', 'free', '--json')).stdout) as Created
  const bad = await db.keys('update', key.id, '--scopes', 'orders:read,everything')
  t.equal(bad.code, 2, 'update with an unknown scope: exit 2')
  t.match(bad.stderr, /unknown scope everything/)
  t.equal((await db.keys('update', key.id)).code, 2, 'update without --scopes: exit 2')
  t.equal((await db.keys('update', 'key_missing', '--scopes', 'orders:read')).code, 1, 'an unknown key id: exit 1')
  const after = (JSON.parse((await db.keys('list', '--json')).stdout) as { id: string, scopes: string[] }[]).find((k) => k.id === key.id)
  t.same(after?.scopes, document.scopes, 'its scopes are unchanged')
})
