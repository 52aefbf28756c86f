import { isIP } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

/** The bucket of a request whose peer address is gone (the socket closed before it was read). */
const UNKNOWN_ADDRESS = 'unknown'

/**
 * The address a request is counted under when it has no valid key: Fastify's `request.ip` (the
 * nearest address not trusted by TRUST_PROXY), IPv4-mapped IPv6 as IPv4, other IPv6 addresses
 * by their /64 (one subscriber usually holds a whole /64).
 *
 * proxy-addr hands back the entry in front of the last trusted hop as it is, whatever it holds.
 * A value that is not an IP address is not used: the request is counted under the nearest hop
 * that reported it, the trusted proxy that passed the value on (with no trust configured, that
 * is the socket's peer). So invented values can neither pick a bucket nor make new ones.
 */
export function clientAddress (request: FastifyRequest): string {
  const ip = request.ip
  if (typeof ip === 'string' && isIP(ip) !== 0) return normalizeIP(ip)
  const hops = request.ips ?? []
  for (let i = hops.length - 2; i >= 0; i--) {
    const hop = hops[i]
    if (hop !== undefined && isIP(hop) !== 0) return normalizeIP(hop)
  }
  return UNKNOWN_ADDRESS
}
