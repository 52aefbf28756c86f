import t from 'tap'
import type { Order } from '../../src/store/types.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { placeOrder, roomyHeaders, setStock } from '../helpers/orders.js'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'

const orders: Order[] = [
  { id: 100, petId: 2, quantity: 1, shipDate: '2026-12-03T08:00:00.000Z', status: 'delivered', complete: true },
  { id: 3, petId: 1, quantity: 4, shipDate: '2026-12-01T10:30:00.000Z', status: 'placed', complete: false },
  { id: Number.MAX_SAFE_INTEGER, petId: 1, quantity: 2147483647, shipDate: '2027-01-15T23:59:59.000Z', status: 'approved', complete: false },
  { id: 12, petId: 2, quantity: 2, shipDate: '2026-12-02T09:15:00.000Z', status: 'approved', complete: false },
  { id: 7, petId: 1, quantity: 1, shipDate: '2026-11-30T16:45:00.000Z', status: 'delivered', complete: true }
]

t.test('an empty store lists no orders', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  t.same(res.json(), [])
})

t.test('listOrders returns every order, ordered by id, in the classic Petstore shape', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  await api.store.importCatalogue({ pets: [{ id: 1, name: 'A', photoUrls: [] }, { id: 2, name: 'B', photoUrls: [] }], orders })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  const sorted = [...orders].sort((a, b) => a.id - b.id)
  t.strictSame(res.json(), sorted, 'every order exactly as stored (complete a boolean, shipDate an ISO date-time), ascending by id')
})

t.test('the demo catalogue has orders of every status', async (t) => {
  const api = await buildTestApp(t)
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  const list = res.json() as Order[]
  t.equal(list.length, demoCatalogue.orders!.length)
  t.same([...new Set(list.map((o) => o.status))].sort(), ['approved', 'delivered', 'placed'])
  t.same(list.map((o) => o.id), [...list.map((o) => o.id)].sort((a, b) => a - b), 'ascending ids')
})

/** The target of a `Link: <…>; rel="next"` header, or undefined without one. */
function nextOf (link: unknown): string | undefined {
  if (link === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link))
  if (match === null) throw new Error(`not a Link with rel="next": ${String(link)}`)
  return match[1]
}

/** Follows the next links from `url` to the last page; each page's orders, in order. */
async function allPages (api: TestApp, headers: Record<string, string>, url: string): Promise<{ pages: Order[][], links: string[] }> {
  const pages: Order[][] = []
  const links: string[] = []
  for (let next: string | undefined = url; next !== undefined;) {
    if (pages.length > 200) throw new Error('more than 200 pages: the links go round')
    const res = await api.request({ method: 'GET', url: next, headers })
    if (res.statusCode !== 200) throw new Error(`GET ${next} answered ${res.statusCode}: ${res.body}`)
    pages.push(res.json())
    next = nextOf(res.headers.link)
    if (next !== undefined) links.push(next)
  }
  return { pages, links }
}

/** Places `count` orders of 1 for pet 10 (its stock raised to cover them); their ids. */
async function placeMany (api: TestApp, headers: Record<string, string>, count: number): Promise<number[]> {
  await setStock(api, headers, 10, 1000)
  const ids: number[] = []
  for (let i = 0; i < count; i++) {
    const res = await placeOrder(api, headers, { petId: 10, quantity: 1 })
    if (res.statusCode !== 201) throw new Error(`placeOrder answered ${res.statusCode}: ${res.body}`)
    ids.push((res.json() as Order).id)
  }
  return ids
}

t.test('paging: limit orders a page, a Link to the next page while more follow, none on the last', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await placeMany(api, headers, 13 - demoCatalogue.orders!.length) // 13 orders with the demo's
  const whole = await api.request({ method: 'GET', url: '/v1/store/orders', headers })
  t.equal(whole.headers.link, undefined, '13 orders fit the default page of 100: no Link')
  const every = whole.json() as Order[]
  t.equal(every.length, 13)

  const { pages, links } = await allPages(api, headers, '/v1/store/orders?limit=5')
  t.same(pages.map((p) => p.length), [5, 5, 3], 'pages of 5, 5 and 3')
  t.strictSame(pages.flat(), every, 'together, every order once, ordered by id')
  for (const link of links) {
    const url = new URL(link, 'http://localhost')
    t.equal(url.pathname, '/v1/store/orders', `${link}: the same operation`)
    t.equal(url.searchParams.get('limit'), '5', `${link}: the same limit`)
    t.match(url.searchParams.get('cursor'), /^[A-Za-z0-9_-]{1,64}$/, `${link}: a cursor`)
  }

  const exact = await allPages(api, headers, '/v1/store/orders?limit=13')
  t.same(exact.pages.map((p) => p.length), [13], 'a last page that is exactly full has no Link')
  const twelve = await allPages(api, headers, '/v1/store/orders?limit=12')
  t.same(twelve.pages.map((p) => p.length), [12, 1])
  const ones = await allPages(api, headers, '/v1/store/orders?limit=1')
  t.strictSame(ones.pages.flat(), every, 'one by one, the same orders')
})

t.test('paging: the default limit is 100', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await placeMany(api, headers, 101 - demoCatalogue.orders!.length) // 101 orders with the demo's
  const { pages } = await allPages(api, headers, '/v1/store/orders')
  t.same(pages.map((p) => p.length), [100, 1])
  const ids = pages.flat().map((o) => o.id)
  t.same(ids, [...ids].sort((a, b) => a - b), 'ascending ids')
  t.equal(new Set(ids).size, 101, 'each once')
})

t.test('filters: status (repeated) and petId, kept by the next links', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const placed = await placeMany(api, headers, 5)
  t.equal((await api.request({ method: 'PATCH', url: `/v1/store/orders/${placed[1]!}`, headers, payload: { status: 'approved' } })).statusCode, 200)
  t.equal((await api.request({ method: 'PATCH', url: `/v1/store/orders/${placed[2]!}`, headers, payload: { status: 'delivered' } })).statusCode, 200)
  const every = (await api.request({ method: 'GET', url: '/v1/store/orders', headers })).json() as Order[]

  const open = await allPages(api, headers, '/v1/store/orders?status=placed&status=approved&limit=2')
  t.strictSame(open.pages.flat(), every.filter((o) => o.status !== 'delivered'), 'the open orders, by id')
  t.ok(open.pages.length > 1, 'over several pages')
  for (const link of open.links) {
    const query = new URL(link, 'http://localhost').searchParams
    t.same(query.getAll('status').sort(), ['approved', 'placed'], `${link}: both statuses`)
    t.equal(query.get('limit'), '2', `${link}: the limit`)
  }

  const delivered = await allPages(api, headers, '/v1/store/orders?status=delivered')
  t.strictSame(delivered.pages.flat(), every.filter((o) => o.status === 'delivered'), 'one status')

  const pet10 = await allPages(api, headers, '/v1/store/orders?petId=10&limit=2')
  t.strictSame(pet10.pages.flat(), every.filter((o) => o.petId === 10), 'one pet')
  for (const link of pet10.links) t.equal(new URL(link, 'http://localhost').searchParams.get('petId'), '10', `${link}: the pet`)

  const both = await allPages(api, headers, '/v1/store/orders?petId=10&status=approved')
  t.strictSame(both.pages.flat(), every.filter((o) => o.petId === 10 && o.status === 'approved'), 'both filters at once')
  const none = await api.request({ method: 'GET', url: '/v1/store/orders?petId=4', headers }) // a demo pet without orders
  t.same(none.json(), [], 'no order matches: an empty array')
  t.equal(none.headers.link, undefined)
})

t.test('paging is stable while orders are placed and cancelled between pages', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const ids = await placeMany(api, headers, 6) // after the demo's orders
  const before = ((await api.request({ method: 'GET', url: '/v1/store/orders', headers })).json() as Order[]).map((o) => o.id)

  const first = await api.request({ method: 'GET', url: '/v1/store/orders?limit=4', headers })
  const seen = (first.json() as Order[]).map((o) => o.id)
  const seenCancelled = seen[1]!
  const unseenCancelled = ids[3]!
  t.notOk(seen.includes(unseenCancelled), 'an order of a later page')
  for (const id of [seenCancelled, unseenCancelled]) {
    t.equal((await api.request({ method: 'DELETE', url: `/v1/store/orders/${id}`, headers })).statusCode, 204, `order ${id} cancelled between pages`)
  }
  const added = await placeMany(api, headers, 3)

  let next = nextOf(first.headers.link)
  const listed = [...seen]
  while (next !== undefined) {
    const res = await api.request({ method: 'GET', url: next, headers })
    t.equal(res.statusCode, 200)
    listed.push(...(res.json() as Order[]).map((o) => o.id))
    next = nextOf(res.headers.link)
  }
  const throughout = before.filter((id) => id !== seenCancelled && id !== unseenCancelled)
  t.equal(new Set(listed).size, listed.length, 'no order listed twice')
  t.same(throughout.filter((id) => !listed.includes(id)), [], 'no order that existed throughout is skipped')
  t.notOk(listed.includes(unseenCancelled), 'an order cancelled before its page is not listed')
  t.same(listed, [...listed].sort((a, b) => a - b), 'ascending ids across pages')
  t.same(added.filter((id) => !listed.includes(id)), [], 'orders placed meanwhile come on a later page')
})

t.test('bad paging parameters are 400 invalid_request naming the parameter', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const body = expectError(t, await api.request({ method: 'GET', url: '/v1/store/orders?cursor=not-a-cursor', headers }), 400, 'invalid_request')
  t.equal(body.message, 'querystring/cursor is not a cursor this service gave for this list: send back the one of a Link header, with the same filters')
  const bad = ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=2&limit=3', 'cursor=', `cursor=${'A'.repeat(65)}`, 'cursor=AAAA%3D',
    'status=shipped', 'petId=0', 'petId=abc', 'petId=1&petId=2', 'page=2']
  for (const query of bad) {
    const res = await api.request({ method: 'GET', url: `/v1/store/orders?${query}`, headers })
    const error = expectError(t, res, 400, 'invalid_request', query)
    const name = query.split('=')[0]!
    t.match(error.message, name, `${query}: ${error.message}`)
  }
})

t.test('a cursor is tamper-evident: edited, forged or from other filters is 400; valid across instances and restarts', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const first = await api.request({ method: 'GET', url: '/v1/store/orders?limit=1', headers })
  const next = nextOf(first.headers.link)!
  const cursor = new URL(next, 'http://x').searchParams.get('cursor')!
  t.equal((await api.request({ method: 'GET', url: next, headers })).statusCode, 200, 'the cursor the service gave works')
  t.equal((await api.request({ method: 'GET', url: `/v1/store/orders?limit=5&cursor=${cursor}`, headers })).statusCode, 200, 'with another limit too')
  // Each character changed in turn (a cursor is base64url): none of the edits is accepted.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  let refused = 0
  for (let i = 0; i < cursor.length; i++) {
    const changed = cursor.slice(0, i) + alphabet[(alphabet.indexOf(cursor[i]!) + 1) % 64] + cursor.slice(i + 1)
    const res = await api.request({ method: 'GET', url: `/v1/store/orders?limit=1&cursor=${changed}`, headers })
    if (res.statusCode === 400 && res.json().code === 'invalid_request') refused++
  }
  t.equal(refused, cursor.length, `every one-character edit of the ${cursor.length} is 400`)
  expectError(t, await api.request({ method: 'GET', url: `/v1/store/orders?limit=1&status=placed&cursor=${cursor}`, headers }), 400, 'invalid_request', 'the cursor under other filters')
  expectError(t, await api.request({ method: 'GET', url: `/v1/store/orders?limit=1&cursor=${'A'.repeat(cursor.length)}`, headers }), 400, 'invalid_request', 'one made up')

  // Another instance on the same database (a restart is the same: the key is the database's).
  const other = await buildTestApp(t, { env: { DATABASE_URL: api.config.databaseUrl } })
  t.equal((await other.request({ method: 'GET', url: next, headers })).statusCode, 200, 'another instance on the same database accepts it')
  const elsewhere = await buildTestApp(t)
  expectError(t, await elsewhere.request({ method: 'GET', url: next, headers: await roomyHeaders(elsewhere) }), 400, 'invalid_request', 'a service on another database refuses it')
})
