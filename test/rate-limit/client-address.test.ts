/**
 * Which address a request without a valid key is counted under (issue 13, item 1), through
 * app.inject with a chosen peer address and X-Forwarded-For. The bucket a request landed in is
 * read from X-RateLimit-Remaining: requests in one bucket count down together.
 */
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { loggerOptions } from '../../src/logger.js'
import { document } from '../helpers/contract.js'
import { limitedApp, limitHeaders, listInventory, testClock } from './helpers.js'

const free = document.plans.free!

/** An app on the memory store with TRUST_PROXY as given, and a way to send from a peer with X-Forwarded-For. */
async function proxiedApp (t: Test, trustProxy: string) {
  const api = await limitedApp(t, 'memory', { clock: testClock(), env: { TRUST_PROXY: trustProxy } })
  /** The Remaining a request without a key gets: one less than its bucket had. */
  const remaining = async (remoteAddress: string, forwardedFor?: string) => {
    const headers: Record<string, string> = forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }
    const res = await listInventory(api, headers, { remoteAddress })
    t.equal(res.statusCode, 401, 'no key: 401')
    return limitHeaders(res).remaining
  }
  return { api, remaining }
}

t.test('behind a trusted proxy: the nearest untrusted address, never one the client wrote in front of it', async (t) => {
  const { remaining } = await proxiedApp(t, '10.0.0.5')
  const proxy = '10.0.0.5'

  t.equal(await remaining(proxy, '203.0.113.1'), free.perMinute - 1, 'client 203.0.113.1: its own bucket')
  t.equal(await remaining(proxy, '203.0.113.2'), free.perMinute - 1, 'client 203.0.113.2: another bucket')
  t.equal(await remaining(proxy, '198.51.100.99, 203.0.113.1'), free.perMinute - 2, 'a spoofed entry in front of the proxy\'s is ignored')
  t.equal(await remaining(proxy, '203.0.113.2, 203.0.113.1'), free.perMinute - 3, 'so is the address of another client')
  t.equal(await remaining(proxy, '203.0.113.1 , 10.0.0.5 ,203.0.113.2'), free.perMinute - 2,
    'an entry that names the proxy itself is not trusted when the proxy did not send it: 203.0.113.2 is the nearest untrusted')
  t.equal(await remaining('203.0.113.1', '198.51.100.7'), free.perMinute - 4, 'from an untrusted peer X-Forwarded-For is ignored: counted under the peer')
  t.equal(await remaining(proxy), free.perMinute - 1, 'the proxy without X-Forwarded-For: counted under its own address')
})

t.test('a value that is not an IP address is never used as one', async (t) => {
  const { remaining } = await proxiedApp(t, '10.0.0.5')
  const proxy = '10.0.0.5'
  const invented = [
    'x'.repeat(3000), 'unknown', '_hidden', '127.1', '2130706433', '203.0.113.1:4711', '[2001:db8::1]:80',
    '2001:db8::1/64', '203.0.113.256', '', 'for=203.0.113.1', '203.0.113.1\tx'
  ]
  let expected = free.perMinute
  for (const value of invented) {
    t.equal(await remaining(proxy, value), --expected, `${JSON.stringify(value.length > 20 ? `${value.slice(0, 20)}…` : value)}: counted under the proxy that passed it on`)
  }
  t.equal(await remaining(proxy, '203.0.113.9, junk'), --expected, 'junk behind a real address: the proxy reported the junk, so its bucket')
  t.equal(await remaining(proxy), --expected, 'one bucket for all of them: the proxy\'s own')
  t.equal(await remaining(proxy, '203.0.113.9'), free.perMinute - 1, 'a real address still gets its own')

  const everyone = await proxiedApp(t, 'true')
  t.equal(await everyone.remaining('10.0.0.5', 'junk, 203.0.113.4'), free.perMinute - 1, 'TRUST_PROXY=true: junk at the far end is not used…')
  t.equal(await everyone.remaining('10.0.0.5', '203.0.113.4'), free.perMinute - 2, '…the hop that reported it is')
})

t.test('the logs name the same address: never a value that is not an IP address', async (t) => {
  const lines: { msg: string, req?: { remoteAddress?: string } }[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { msg: string })
      done()
    }
  })
  // The service's own logger options (its request serializer), written to this stream.
  const logger = { ...loggerOptions({ logLevel: 'info', nodeEnv: 'test' }, false), stream }
  const api = await limitedApp(t, 'memory', { clock: testClock(), env: { TRUST_PROXY: '10.0.0.5' }, logger })
  for (const forwardedFor of ['x'.repeat(3000), '203.0.113.9, junk', '203.0.113.1']) {
    await listInventory(api, { 'x-forwarded-for': forwardedFor }, { remoteAddress: '10.0.0.5' })
  }
  const logged = lines.filter((line) => line.msg === 'incoming request').map((line) => line.req?.remoteAddress)
  t.same(logged, ['10.0.0.5', '10.0.0.5', '203.0.113.1'], 'junk is logged as the proxy that passed it on; a real client address as itself')
})

t.test('IPv6 clients are counted per /64; IPv4-mapped addresses as IPv4', async (t) => {
  const { remaining } = await proxiedApp(t, '10.0.0.5')
  t.equal(await remaining('2001:db8:1:2::1'), free.perMinute - 1, '2001:db8:1:2::1')
  t.equal(await remaining('2001:db8:1:2:ffff:ffff:ffff:ffff'), free.perMinute - 2, 'another address of the same /64')
  t.equal(await remaining('2001:DB8:1:2:0:0:0:9'), free.perMinute - 3, 'written in capitals and in full')
  t.equal(await remaining('2001:db8:1:3::1'), free.perMinute - 1, 'the next /64 is another client')
  t.equal(await remaining('10.0.0.5', '2001:db8:1:2::abcd'), free.perMinute - 4, 'the same /64 forwarded by the proxy')

  t.equal(await remaining('203.0.113.7'), free.perMinute - 1, '203.0.113.7')
  t.equal(await remaining('::ffff:203.0.113.7'), free.perMinute - 2, 'IPv4-mapped ::ffff:203.0.113.7 (a dual-stack socket) is the same client')
  t.equal(await remaining('10.0.0.5', '::ffff:cb00:7107'), free.perMinute - 3, 'so is its hexadecimal form, forwarded')
  t.equal(await remaining('::ffff:10.0.0.5', '203.0.113.50'), free.perMinute - 1, 'a proxy seen through a dual-stack socket is still trusted')
})

t.test('TRUST_PROXY=false (the default): X-Forwarded-For is ignored', async (t) => {
  const { remaining } = await proxiedApp(t, 'false')
  t.equal(await remaining('10.0.0.5', '203.0.113.1'), free.perMinute - 1)
  t.equal(await remaining('10.0.0.5', '203.0.113.2'), free.perMinute - 2, 'every request from the peer shares its bucket, whatever it claims')
})
