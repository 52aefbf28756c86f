import { isIP } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

/** The bucket of a request whose peer address is gone (the socket closed before it was read). */
const UNKNOWN_ADDRESS = 'unknown'

/**
 * The client's address as TRUST_PROXY gives it (Fastify's `request.ip`: the nearest address not
 * trusted), as long as it is an IP address. proxy-addr hands back the entry in front of the last
 * trusted hop as it is, whatever it holds; a value that is not an IP address is not used, and the
 * nearest hop that reported it (the trusted proxy that passed it on) stands in. Undefined only
 * when the connection's own address is gone.
 */
export function requestAddress (request: FastifyRequest): string | undefined {
  const ip = request.ip as string | undefined
  if (typeof ip === 'string' && isIP(ip) !== 0) return ip
  const hops = request.ips ?? []
  for (let i = hops.length - 2; i >= 0; i--) {
    const hop = hops[i]
    if (hop !== undefined && isIP(hop) !== 0) return hop
  }
  return undefined
}

/**
 * The address a request is counted under when it has no valid key: requestAddress, with
 * IPv4-mapped IPv6 as IPv4 and other IPv6 addresses by their /64 (one subscriber usually holds a
 * whole /64). So invented X-Forwarded-For values can neither pick a bucket nor make new ones.
 */
export function clientAddress (request: FastifyRequest): string {
  const address = requestAddress(request)
  return address === undefined ? UNKNOWN_ADDRESS : normalizeIP(address)
}
