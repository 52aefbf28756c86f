/**
 * Secrets stay out of logs (issue 13, item 6): the service's own logger options (serverOptions)
 * at trace level, every line captured, while requests carry keys in every place a client might
 * put one, valid and invalid.
 */
import t from 'tap'
import app from '../../src/app.js'
import { maskKeys } from '../../src/logger.js'
import { issueApiKey } from '../../src/repositories/api-keys.js'
import { serverLoggingToCapture } from '../helpers/log-capture.js'
import { ALL_SCOPES } from '../helpers/contract.js'

t.test('no key material in any log line, whatever the request; the authorization header is censored where headers are logged', async (t) => {
  const { server, config, texts: lines } = serverLoggingToCapture(t, 'trace')
  // Code that logs a request's headers, as a debugging session might add.
  server.addHook('onRequest', async (request) => { request.log.info({ headers: request.headers }, 'headers seen') })
  server.addHook('onError', async (request, _reply, error) => { request.log.info({ req: request, err: error, request: { headers: request.headers } }, 'failed') })
  await server.register(app, { config })
  await server.ready()

  const valid = (await issueApiKey(server.store, { name: 'logged', plan: 'free', scopes: ALL_SCOPES })).secret
  const unknown = `psk_${'Q'.repeat(43)}`
  const requests: { url: string, headers?: Record<string, string> }[] = [
    { url: '/v1/inventory', headers: { authorization: `Bearer ${valid}` } },
    { url: '/v1/inventory', headers: { authorization: `Bearer ${unknown}` } },
    { url: '/v1/inventory', headers: { authorization: `bearer ${valid}` } },
    { url: '/v1/inventory', headers: { authorization: `Basic ${Buffer.from(`user:${valid}`).toString('base64')}` } },
    { url: '/v1/inventory', headers: { authorization: valid } },
    { url: '/v1/inventory', headers: { 'x-api-key': valid, 'proxy-authorization': `Bearer ${valid}` } },
    { url: `/v1/inventory?access_token=${valid}` },
    { url: `/v1/inventory?api_key=${valid}&x=1` },
    { url: `/v1/${valid}`, headers: { authorization: `Bearer ${valid}` } },
    { url: `/v1/pets/${valid}`, headers: { authorization: `Bearer ${valid}` } },
    { url: `/v1/%zz${valid}` },
    { url: `/docs?key=${valid}` }
  ]
  const statuses = []
  for (const request of requests) statuses.push((await server.inject({ method: 'GET', ...request })).statusCode)
  t.same(statuses, [200, 401, 200, 401, 401, 401, 401, 401, 404, 400, 400, 200], 'the requests were answered (a valid key, an unknown one, keys in headers, query and path)')

  const text = lines.join('\n')
  t.ok(lines.length > requests.length * 3, `${lines.length} lines logged at trace level`)
  for (const [name, secret] of [['the valid key', valid], ['the unknown key', unknown]] as const) {
    t.notOk(text.includes(secret.slice(4, 20)), `${name} does not appear, not even in part`)
  }
  t.notOk(text.includes(Buffer.from(`user:${valid}`).toString('base64')), 'nor the Basic credentials that hold it')

  const headerLines = lines.map((line) => JSON.parse(line) as { msg: string, headers?: Record<string, unknown> }).filter((l) => l.msg === 'headers seen')
  t.equal(headerLines.length, requests.length - 1, 'every routed request\'s headers were logged (the undecodable URL is refused before routing)')
  const sent = headerLines.filter((l) => l.headers?.authorization !== undefined)
  t.ok(sent.length >= 6 && sent.every((l) => l.headers?.authorization === '[redacted]'), 'Authorization is censored wherever it was sent')
  t.ok(headerLines.some((l) => l.headers?.['x-api-key'] === '[redacted]' && l.headers['proxy-authorization'] === '[redacted]'), 'so are X-Api-Key and Proxy-Authorization')
  t.ok(headerLines.every((l) => typeof l.headers?.['user-agent'] === 'string'), 'other headers are kept')
  t.ok(lines.some((line) => line.includes('"url":"/v1/inventory?access_token=[redacted]"')), 'a key sent as a query parameter is masked in the logged URL')
  t.ok(lines.some((line) => line.includes('/v1/psk_[redacted]')), 'so is one pasted into the path')
})

t.test('key material is masked wherever a client puts it: any header, a percent-encoded query, the request id, a message', async (t) => {
  const { server, config, texts: lines } = serverLoggingToCapture(t, 'trace')
  // Code that logs a request's headers and its URL in the message, as a debugging session might add.
  server.addHook('onRequest', async (request) => { request.log.info({ headers: request.headers }, `seen ${request.url}`) })
  await server.register(app, { config })
  await server.ready()

  const valid = (await issueApiKey(server.store, { name: 'logged', plan: 'free', scopes: ALL_SCOPES })).secret
  const body = valid.slice(4)
  const answers = await Promise.all([
    server.inject({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${valid}`, 'x-partner-key': valid, 'x-note': `token ${valid}` } }),
    server.inject({ method: 'GET', url: `/v1/inventory?x=psk%5F${body}`, headers: { authorization: `Bearer ${valid}` } }),
    server.inject({ method: 'GET', url: `/docs?x=psk%5f${body}&y=%70sk_${body}` }),
    server.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': valid } }),
    server.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-7.a:1' } })
  ])
  t.same(answers.map((res) => res.statusCode), [200, 400, 200, 200, 200], 'answered (an unknown query parameter is 400)')
  const givenKeyAsId = answers[3]!.headers['x-request-id']
  t.match(givenKeyAsId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'an X-Request-Id that is a key is replaced by a fresh id')
  t.equal(answers[4]!.headers['x-request-id'], 'trace-7.a:1', 'another X-Request-Id is kept')

  const text = lines.join('\n')
  t.notOk(text.includes(body.slice(0, 16)), 'no part of the key in any line, in a header, a query (percent-encoded too), an id or a message')
  t.ok(lines.some((line) => line.includes('"x-partner-key":"psk_[redacted]"')), 'a header of any name is masked')
  t.ok(lines.some((line) => line.includes('x=psk%5F[redacted]')), 'a percent-encoded key in the query is masked')
  t.ok(lines.every((line) => { JSON.parse(line); return true }), 'every line is still JSON')

  // A driver's message that quotes the address it was given, say.
  server.log.error({ err: new Error('cannot reach redis://s3cret-a@cache.internal:6379/2') }, 'dependency failed: postgres://app:s3cret-b@db.internal/petstore')
  const last = lines.at(-1)!
  t.notMatch(last, /s3cret/, 'credentials in an address are masked in messages and errors (stacks included)')
  t.match(last, 'redis://***@cache.internal:6379/2')
  t.match(last, 'postgres://app:***@db.internal/petstore')

  // A webhook signing secret, were code to log one.
  server.log.info({ endpoint: { secret: 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LWJ5dGVz' }, note: 'secret whsec_c2VjcmV0LXNpZ25pbmcta2V5LWJ5dGVz' }, 'created')
  t.notMatch(lines.at(-1)!, /c2VjcmV0/, 'a webhook secret is masked in any field')
})

t.test('maskKeys: keys, Bearer credentials and credential parameters; other text untouched', async (t) => {
  t.equal(maskKeys('GET /v1/inventory?limit=5'), 'GET /v1/inventory?limit=5')
  t.equal(maskKeys('/x/psk_AbC-_9?y=psk_Z'), '/x/psk_[redacted]?y=psk_[redacted]')
  t.equal(maskKeys('Authorization: Bearer abc.def'), 'Authorization: Bearer [redacted]')
  t.equal(maskKeys('/v1?token=abc&api_key=def&apikey=g&access_token=h#f'), '/v1?token=[redacted]&api_key=[redacted]&apikey=[redacted]&access_token=[redacted]#f')
  t.equal(maskKeys('monkey=banana'), 'monkey=banana', 'a word ending in key is not a key parameter')
  t.equal(maskKeys('rotated: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/1='), 'rotated: whsec_[redacted]', 'a webhook signing secret (base64)')
  t.equal(maskKeys('/v1?x=psk%5FAbC%2D9&y=%70sk%5fZ'), '/v1?x=psk%5F[redacted]&y=%70sk%5f[redacted]', 'percent-encoded, any letter of the prefix')
})
