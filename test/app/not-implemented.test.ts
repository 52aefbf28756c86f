import t from 'tap'
import { handlers } from '../../handlers/index.js'
import { isNotImplemented, notImplemented } from '../../src/http/not-implemented.js'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

t.test('a stub made by notImplemented answers 501 not_implemented naming its operation', async (t) => {
  const api = await buildTestApp(t, { handlers: { listOrders: notImplemented('listOrders') } })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  const body = expectError(t, res, 501, 'not_implemented')
  t.match(body.message, /\blistOrders\b/, 'the message names the operation')
  t.ok(res.headers['x-ratelimit-remaining'], 'counted and answered like any /v1 request')
})

t.test('isNotImplemented tells the stubs from written handlers', async (t) => {
  t.equal(isNotImplemented(notImplemented('listOrders')), true, 'a stub')
  for (const [id, handler] of Object.entries(handlers)) t.equal(isNotImplemented(handler), false, `${id} is implemented`)
  t.equal(isNotImplemented(async () => { throw new Error('not implemented') }), false, 'a function that merely throws is not a stub')
  t.equal(isNotImplemented(undefined), false, 'nor is a missing handler')
})
