import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'
import { replyHeadersStarter } from './reply-headers.js'

/**
 * The headers helmet would set for these options, computed once. @fastify/helmet builds the helmet
 * middleware again on every request (about 12 % of the CPU of a small request here), although
 * the headers never change.
 */
function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const response = {
    setHeader: (name: string, value: string | number) => { headers[name.toLowerCase()] = String(value) },
    removeHeader: (name: string) => { delete headers[name.toLowerCase()] }
  }
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, () => {})
  return headers
}

/**
 * Security headers on every response, as helmet sets them (HSTS, nosniff, frame options,
 * referrer policy, cross-origin policies). API responses are JSON that no browser should render,
 * frame or run anything from: their content-security-policy allows nothing. The docs page has a
 * policy of its own (docsContentSecurityPolicy), which the Swagger UI plugin sets on its routes.
 */
async function securityHeaders (app: FastifyInstance) {
  const headers = helmetHeaders({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"]
      }
    }
  })
  // The first headers of every reply: they start its header object (see reply-headers.ts).
  const startHeaders = replyHeadersStarter(headers)
  app.addHook('onRequest', (_request, reply, done) => {
    startHeaders(reply)
    done()
  })
}

interface ServerEntry { url: string, variables?: Record<string, { default?: string }> }

/**
 * The docs page's policy: Swagger UI runs only the scripts and styles this process serves (no
 * inline script or style: @fastify/swagger-ui 6 needs no hash or nonce for a script, and the one
 * inline style Swagger UI renders, in the logo of its top bar, is gone with the bar), images and
 * fonts from itself or data: URLs, and "Try it out" may call this origin and every server the
 * served document lists.
 * No upgrade-insecure-requests: it would turn "Try it out" against a plain-http instance into https.
 */
export function docsContentSecurityPolicy (servers: readonly ServerEntry[]): string {
  const origins = new Set<string>()
  for (const server of servers) {
    const url = server.url.replace(/\{([^}]+)\}/g, (_m, name: string) => server.variables?.[name]?.default ?? '')
    try {
      origins.add(new URL(url).origin)
    } catch { /* a relative server URL is this origin: 'self' covers it */ }
  }
  return [
    "default-src 'self'",
    "base-uri 'self'",
    `connect-src 'self' ${[...origins].join(' ')}`.trim(),
    "font-src 'self' data:",
    "form-action 'self'",
    "frame-ancestors 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "script-src 'self'",
    "script-src-attr 'none'",
    "style-src 'self'"
  ].join('; ')
}

export default fp(securityHeaders, { name: 'security-headers' })
