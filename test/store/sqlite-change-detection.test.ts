import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { listText } from '../../src/contract/json-list.js'
import { apiKeysRepository, generateApiKey } from '../../src/repositories/api-keys.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import type { Store } from '../../src/store/types.js'
import { tempDir } from '../helpers/app.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { ALL_SCOPES } from '../helpers/contract.js'

// The SQLite store reuses the inventory list text and key lookups while the database is
// unchanged. These tests write through OTHER connections to the same file (as the keys CLI,
// db:seed or a second server process do) and expect the next read to see the write: at once
// when the writer is a store of this process, from the next event-loop turn when it is not.
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

async function twoConnections (t: Test) {
  const file = join(tempDir(t), 'shared.db')
  const server = createSqliteStore(file)
  const other = createSqliteStore(file)
  t.teardown(() => Promise.all([server.close(), other.close()]))
  await server.migrate()
  await server.importCatalogue({ pets: [1, 2].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })), inventory: [{ petId: 1, quantity: 5 }, { petId: 2, quantity: 0 }] })
  return { file, server, other }
}
type Item = { petId: number, quantity: number, status: string }
const list = async (store: Store) => JSON.parse(listText(await store.inventory.listJson())) as Item[]

t.test('a write committed by another connection is in the next list', async (t) => {
  const { server, other } = await twoConnections(t)
  t.same((await list(server))[0], { petId: 1, quantity: 5, status: 'available' })
  t.equal(await server.inventory.listJson(), await server.inventory.listJson(), 'unchanged: the same version')

  await other.inventory.update(1, 7)
  t.same((await list(server))[0], { petId: 1, quantity: 7, status: 'available' }, 'a PATCH through another connection')
  await other.importCatalogue({ orders: [{ id: 1, petId: 1, quantity: 7, shipDate: '2026-12-01T12:00:00.000Z', status: 'placed', complete: false }] })
  t.same((await list(server))[0], { petId: 1, quantity: 7, status: 'pending' }, 'an order imported by another connection (db:seed)')
  await addSyntheticPets(other, 2)
  t.equal((await list(server)).length, 4, 'pets added by another connection')
})

t.test('a pet read again after a write shows it: by this store, another store, or plain SQL', async (t) => {
  const { file, server, other } = await twoConnections(t)
  t.equal((await petsRepository(server).get(1))?.status, 'available')
  t.equal(await petsRepository(server).get(1), await petsRepository(server).get(1), 'unchanged: the same object, read once')
  t.ok(Object.isFrozen(await petsRepository(server).get(1)), 'which no caller can change')

  await server.inventory.update(1, 0)
  t.equal((await petsRepository(server).get(1))?.status, 'sold', 'a PATCH through this store')
  await other.inventory.update(1, 3)
  t.equal((await petsRepository(server).get(1))?.status, 'available', 'a PATCH through another store')
  await other.importCatalogue({ pets: [{ id: 1, name: 'Renamed', photoUrls: [] }] })
  t.equal((await petsRepository(server).get(1))?.name, 'Renamed', 'a pet re-imported by another store (db:seed)')
  t.equal(await petsRepository(server).get(3), undefined, 'an unknown pet')
  await addSyntheticPets(other, 1)
  t.equal((await petsRepository(server).get(3))?.name, 'Pet 3', 'and then created by another store')

  const raw = new Database(file)
  t.teardown(() => raw.close())
  raw.prepare('UPDATE inventory SET quantity = 0 WHERE pet_id = 1').run()
  await nextTurn()
  t.equal((await petsRepository(server).get(1))?.status, 'sold', 'plain SQL on another connection, from the next turn')
})

t.test('writes from outside the store API (plain SQL on another connection) are seen too', async (t) => {
  const { file, server } = await twoConnections(t)
  await list(server)
  const raw = new Database(file)
  t.teardown(() => raw.close())
  raw.prepare('UPDATE inventory SET quantity = 0 WHERE pet_id = 1').run()
  await nextTurn()
  t.same((await list(server))[0], { petId: 1, quantity: 0, status: 'sold' }, 'seen from the next turn')
})

t.test('a key revoked through another connection stops working at the next lookup', async (t) => {
  const { server, other } = await twoConnections(t)
  const key = generateApiKey()
  await apiKeysRepository(other).create({ id: key.id, name: 'k', plan: 'free', keyHash: key.hash, perMinute: null, perDay: null, scopes: ALL_SCOPES })
  t.equal((await apiKeysRepository(server).findActive(key.hash))?.id, key.id, 'a key created by another connection (the keys CLI) is found')
  t.equal((await apiKeysRepository(server).findActive(key.hash))?.id, key.id, 'and found again')
  await apiKeysRepository(other).revoke(key.id)
  t.equal(await apiKeysRepository(server).findActive(key.hash), undefined, 'revoked elsewhere: gone at once')

  const second = generateApiKey()
  await apiKeysRepository(server).create({ id: second.id, name: 'k2', plan: 'pro', keyHash: second.hash, perMinute: null, perDay: null, scopes: ALL_SCOPES })
  t.equal((await apiKeysRepository(server).findActive(second.hash))?.plan, 'pro')
  await apiKeysRepository(server).revoke(second.id)
  t.equal(await apiKeysRepository(server).findActive(second.hash), undefined, 'revoked through the same store: gone at once')
})

t.test('a key lookup is answered in the same call, without a promise, and is as current as an awaited one', async (t) => {
  const { server, other } = await twoConnections(t)
  const key = generateApiKey()
  await apiKeysRepository(other).create({ id: key.id, name: 'k', plan: 'free', keyHash: key.hash, perMinute: null, perDay: null, scopes: ALL_SCOPES })
  await nextTurn()
  const found = apiKeysRepository(server).findActive(key.hash)
  t.notOk(found instanceof Promise, 'not a promise')
  t.equal((found as Awaited<typeof found>)?.id, key.id, 'the key another connection created')
  await apiKeysRepository(other).revoke(key.id)
  await nextTurn()
  t.equal(apiKeysRepository(server).findActive(key.hash), undefined, 'revoked elsewhere: gone from the next turn, in the same call too')
})

t.test('a write through the same store is in its next list', async (t) => {
  const { server } = await twoConnections(t)
  await list(server)
  await server.inventory.update(2, 3)
  t.same((await list(server))[1], { petId: 2, quantity: 3, status: 'available' })
})

t.test('a read that waited for this store\'s write leaves no snapshot behind for the requests of the next turn', async (t) => {
  const { file, server } = await twoConnections(t)
  const raw = new Database(file)
  t.teardown(() => raw.close())
  // A connected pair of sockets: bytes written to one are read by the other in the next poll
  // phase of the event loop, where requests are handled.
  const listener = createServer()
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  const accepted = new Promise<Socket>((resolve) => listener.once('connection', resolve))
  const client = connect((listener.address() as AddressInfo).port, '127.0.0.1')
  const peer = await accepted
  t.teardown(() => { client.destroy(); peer.destroy(); listener.close() })

  // The read waits for the PATCH's group commit (setImmediate), so it runs after the turn's I/O.
  const [, item] = await Promise.all([server.inventory.update(1, 3), petsRepository(server).get(1)])
  t.equal(item?.status, 'available')
  raw.prepare('UPDATE inventory SET quantity = 0 WHERE pet_id = 1').run()
  const seen = new Promise<[string | undefined, unknown]>((resolve) => {
    peer.once('data', () => { void Promise.all([petsRepository(server).get(1).then((pet) => pet?.status), list(server).then((items) => items[0])]).then(resolve) })
  })
  client.write('next request')
  const [status, entry] = await seen
  t.equal(status, 'sold', 'a commit made before the request arrived is seen')
  t.same(entry, { petId: 1, quantity: 0, status: 'sold' }, 'by the list too')
})
