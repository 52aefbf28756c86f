import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ApiDocument } from '../../contract/document.js'

/**
 * Response headers a page on another origin may read (openapi.yaml's introduction lists them):
 * every response header the document declares but Allow and WWW-Authenticate, whose news the
 * Error body carries. Location and Idempotent-Replayed are placeOrder's.
 */
export const EXPOSED_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After',
  'X-Request-Id', 'ETag', 'Deprecation', 'Sunset', 'Link', 'Location', 'Idempotent-Replayed']

/** How long a browser may reuse a preflight's answer. */
export const PREFLIGHT_MAX_AGE_SECONDS = 600

type Json = Record<string, unknown>

/**
 * The methods and request headers the document's operations use, which is what a page may send:
 * each operation's method (HEAD with GET), the header of its security scheme, Content-Type when
 * it takes a body, its header parameters; and X-Request-Id, which every request may carry.
 */
export function corsRequestRules (document: ApiDocument): { methods: string[], headers: string[] } {
  const methods = new Set<string>()
  const headers = new Set<string>()
  const schemes = ((document.resolved.components as Json | undefined)?.securitySchemes ?? {}) as Record<string, Json>
  for (const op of document.operations.values()) {
    methods.add(op.method)
    if (op.method === 'GET') methods.add('HEAD')
    const definition = op.definition
    const security = (definition.security ?? document.resolved.security ?? []) as Json[]
    for (const name of security.flatMap((requirement) => Object.keys(requirement))) {
      const scheme = schemes[name]
      if (scheme?.type === 'http' || scheme?.type === 'oauth2' || scheme?.type === 'openIdConnect') headers.add('Authorization')
      if (scheme?.type === 'apiKey' && scheme.in === 'header') headers.add(String(scheme.name))
    }
    if (definition.requestBody !== undefined) headers.add('Content-Type')
    for (const parameter of (definition.parameters ?? []) as Json[]) {
      if (parameter.in === 'header') headers.add(String(parameter.name))
    }
  }
  headers.add('X-Request-Id')
  return { methods: [...methods], headers: [...headers] }
}

export interface CorsOptions {
  /** CORS_ORIGINS: '*' or the allowed origins. */
  origins: '*' | readonly string[]
  document: ApiDocument
}

/** An OPTIONS request from a page, asking whether it may send another method. */
export const isPreflight = (request: FastifyRequest) =>
  request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined

/** Whether CORS_ORIGINS lets a page of `origin` in. */
export function originCheck (origins: CorsOptions['origins']): (origin: string | undefined) => boolean {
  return (origin) => origin !== undefined && (origins === '*' || origins.includes(origin))
}

/**
 * @fastify/cors, answering in its own onRequest hook: registered at the root, that hook runs
 * before the /v1 scope's authentication, so a preflight (which never carries the key) is answered
 * 204 without being authenticated or counted. A request from an origin not in the list gets no
 * CORS header at all (the library would still send Access-Control-Expose-Headers, and the
 * preflight headers, without Access-Control-Allow-Origin); its preflight is answered by
 * src/plugins/app/cors-preflights.ts. Other OPTIONS requests go on to their route (405 with
 * Allow under /v1, after authentication).
 */
async function cors (app: FastifyInstance, options: CorsOptions) {
  const { methods, headers } = corsRequestRules(options.document)
  const origins = options.origins
  const allowed = originCheck(origins)
  const common: FastifyCorsOptions = {
    origin: origins === '*' ? '*' : [...origins],
    methods,
    allowedHeaders: headers,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS
  }
  const preflight: FastifyCorsOptions = { ...common, preflight: true }
  const simple: FastifyCorsOptions = { ...common, preflight: false }
  const off: FastifyCorsOptions = { origin: false }

  await app.register(fastifyCors, {
    delegator: (request: FastifyRequest, callback: (error: Error | null, options?: FastifyCorsOptions) => void) => {
      // A request refused for breaking HTTP's rules is answered under /v1 as it is, without CORS.
      callback(null, !allowed(request.headers.origin) || request.protocolError !== null ? off : isPreflight(request) ? preflight : simple)
    }
  })
}

export default fp(cors, { name: 'cors' })
