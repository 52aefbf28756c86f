import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'

/*
 * Addresses no webhook is sent to unless WEBHOOK_ALLOW_PRIVATE is set: this machine, private and
 * shared networks, link-local, documentation, benchmarking and multicast ranges, and the
 * unspecified address. A receiver on the public internet is never one of these; a request to
 * one would let an API key reach the service's own network.
 */
// Two lists: Node's BlockList matches an IPv4 address against an IPv6 rule as IPv4-mapped, so
// ::ffff:0:0/96 would refuse every IPv4 address.
const notPublicV4 = new BlockList()
const notPublicV6 = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) notPublicV4.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]
] as const) notPublicV6.addSubnet(network, prefix, 'ipv6')

/** Whether an address (IPv4 or IPv6, an IPv4-mapped one by its IPv4 part) is a public one. */
export function isPublicAddress (address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return isPublicAddress(mapped[1]!)
  // The same written in hex, as URL parsers write it ([::ffff:c0a8:104] for 192.168.1.4).
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (hex !== null) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)]
    return isPublicAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`)
  }
  const family = isIP(address)
  if (family === 0) return false
  return family === 4 ? !notPublicV4.check(address, 'ipv4') : !notPublicV6.check(address, 'ipv6')
}

/** Why an endpoint address is refused, or undefined when it may be used. */
export function urlProblem (text: string, allowPrivate: boolean): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be an absolute URL'
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return allowPrivate ? 'must be an http or https address' : 'must be an https address'
  if (url.username !== '' || url.password !== '') return 'must not carry user info (user:password@): put credentials in your receiver, not in the address'
  if (url.hash !== '') return 'must not have a fragment (#…)'
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) return `must be an https address of a public host: ${host} is in a private or reserved range`
  if (!allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) return `must be an https address of a public host: ${host} is this machine`
  return undefined
}

/**
 * dns.lookup for the connections that carry webhooks: an answer with an address that is not
 * public fails the connection (unless private addresses are allowed), so the check holds for the
 * address actually connected to, not only the one seen when the endpoint was registered.
 */
export function checkedLookup (allowPrivate: boolean): typeof dnsLookup {
  return ((hostname: string, options: object, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, [])
      const list = addresses as LookupAddress[]
      const refused = allowPrivate ? undefined : list.find((entry) => !isPublicAddress(entry.address))
      if (refused !== undefined) {
        return callback(Object.assign(new Error(`${hostname} resolves to ${refused.address}, which is not a public address`), { code: 'EADDRNOTPUBLIC' }), [])
      }
      if ((options as { all?: boolean }).all === true) return callback(null, list)
      const chosen = list[0]
      if (chosen === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), [])
      callback(null, chosen.address, chosen.family)
    })
  }) as typeof dnsLookup
}
