import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { docsContentSecurityPolicy } from './security-headers.js'

export interface SwaggerOptions {
  /** The document as this instance serves it (documentForServing). */
  served: Record<string, unknown>
}

/** The docs page: Swagger UI with its assets served from this process, outside /v1 (no key, no limit). */
async function docs (app: FastifyInstance, options: SwaggerOptions) {
  await app.register(swagger, { mode: 'static', specification: { document: options.served as never } })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: {
      deepLinking: true,
      persistAuthorization: true,
      showExtensions: true,
      displayRequestDuration: true,
      tryItOutEnabled: false
    },
    // Replaces the API's deny-all policy (security-headers.ts) on the docs page and its assets.
    staticCSP: docsContentSecurityPolicy((options.served.servers ?? []) as Parameters<typeof docsContentSecurityPolicy>[0])
  })
}

export default fp(docs, { name: 'swagger' })
