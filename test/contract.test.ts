import type { Response as InjectResponse } from 'light-my-request'
import t from 'tap'
import { buildTestApp } from './helpers/app.js'
import { checkResponse, ContractError } from './helpers/contract.js'

// The contract every test's api.request applies (test/helpers/contract.ts) holds real responses
// to openapi.yaml; here each of its header rules is shown to refuse a response that breaks it.

/** A real response with its headers (and body) changed, as a service that broke the rule would send it. */
function altered (res: InjectResponse, change: { headers?: Record<string, string | undefined>, body?: string }): InjectResponse {
  const headers = { ...res.headers }
  for (const [name, value] of Object.entries(change.headers ?? {})) {
    if (value === undefined) delete headers[name]
    else headers[name] = value
  }
  return Object.assign(Object.create(Object.getPrototypeOf(res) as object) as InjectResponse, res, { headers, body: change.body ?? res.body })
}

t.test('the contract refuses a response that breaks a header rule of openapi.yaml, and passes the real one', async (t) => {
  const api = await buildTestApp(t)
  const auth = await api.authHeader()
  const refuses = (method: string, url: string, res: InjectResponse, why: RegExp, name: string) => {
    let error: unknown
    try { checkResponse(method, url, res) } catch (e) { error = e }
    t.ok(error instanceof ContractError, `${name}: refused`)
    t.match((error as Error | undefined)?.message, why, `${name}: says why`)
  }

  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...auth, 'x-request-id': 'trace-1.a' } })
  t.equal(list.headers['x-request-id'], 'trace-1.a', 'the real response passes, with the caller\'s id')
  refuses('GET', '/v1/inventory', altered(list, { headers: { 'x-request-id': undefined } }), /no X-Request-Id/, 'no X-Request-Id')
  refuses('GET', '/v1/inventory', altered(list, { headers: { 'x-request-id': 'another' } }), /not the trace-1\.a the request carried/, 'another id than the caller\'s')
  refuses('GET', '/v1/inventory', altered(list, { headers: { 'x-ratelimit-remaining': '-1' } }), /header X-RateLimit-Remaining: -1 does not match/, 'a header its schema refuses')
  refuses('GET', '/v1/inventory', altered(list, { headers: { deprecation: '@1' } }), /a Deprecation header, which openapi\.yaml does not declare/, 'Deprecation on an operation that is not deprecated')

  const unsafe = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...auth, 'x-request-id': 'has spaces' } })
  refuses('GET', '/v1/inventory', altered(unsafe, { headers: { 'x-request-id': 'has-no-spaces' } }), /not a fresh UUID/, 'an id the document does not keep, not replaced by a UUID')

  const head = await api.request({ method: 'HEAD', url: '/v1/inventory', headers: auth })
  t.equal(head.statusCode, 200, 'HEAD is answered like GET')
  refuses('HEAD', '/v1/inventory', altered(head, { body: '[]' }), /a HEAD response with a body/, 'a HEAD with a body')

  const notAllowed = await api.request({ method: 'DELETE', url: '/v1/inventory/1', headers: auth })
  t.equal(notAllowed.statusCode, 405)
  refuses('DELETE', '/v1/inventory/1', altered(notAllowed, { headers: { allow: 'PATCH, GET' } }), /Allow is PATCH, GET, not the methods of \/inventory\/\{petId\}: PATCH/, 'an Allow that is not the path\'s methods')
  refuses('DELETE', '/v1/inventory/1', altered(notAllowed, { headers: { 'x-ratelimit-limit': undefined } }), /missing header X-RateLimit-Limit/, 'a 405 without a header the path\'s 405 declares')

  const missingPet = await api.request({ method: 'GET', url: '/v1/pets/999', headers: auth })
  t.equal(missingPet.statusCode, 404, 'an error of the deprecated operation')
  for (const header of ['Deprecation', 'Sunset', 'Link']) {
    refuses('GET', '/v1/pets/999', altered(missingPet, { headers: { [header.toLowerCase()]: undefined } }), new RegExp(`missing header ${header}`), `its 404 without ${header}`)
  }
  refuses('GET', '/v1/pets/999', altered(missingPet, { headers: { sunset: '2027-06-30' } }), /header Sunset: 2027-06-30 does not match/, 'a Sunset that is not an HTTP-date')

  // Link on listOrders is declared `required: false` (sent while more pages follow): it may be
  // absent, but when present it must match its schema.
  const orders = await api.request({ method: 'GET', url: '/v1/store/orders', headers: auth })
  t.equal(orders.headers.link, undefined, 'a single page passes without Link')
  refuses('GET', '/v1/store/orders', altered(orders, { headers: { link: '</v1/store/orders?cursor=AAAAAAAAAAI>; rel="prev"' } }), /header Link: .* does not match/, 'a Link that is not rel="next"')
  refuses('GET', '/v1/store/orders', altered(orders, { headers: { etag: undefined } }), /missing header ETag/, 'the other headers are still required')

  const badUrl = await api.request({ method: 'GET', url: '/v1/pets/%E0%A4%A', headers: auth })
  t.equal(badUrl.statusCode, 400, 'a URL refused before routing passes without the route\'s headers')
  t.type(badUrl.headers['x-request-id'], 'string', 'but with its X-Request-Id')
  refuses('GET', '/v1/pets/%E0%A4%A', altered(badUrl, { headers: { 'x-request-id': undefined } }), /no X-Request-Id/, 'a URL refused before routing without X-Request-Id')
})
