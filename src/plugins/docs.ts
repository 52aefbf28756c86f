import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { stringify as toYaml } from 'yaml'
import { type ApiDocument, documentForServing } from '../openapi/document.js'
import { docsContentSecurityPolicy } from './security-headers.js'

export interface DocsOptions {
  document: ApiDocument
  publicBaseUrl: string
}

/**
 * The docs page (Swagger UI, assets served from this process) and the document itself, outside
 * /v1: no authentication, no rate limit.
 */
export default async function docs (app: FastifyInstance, options: DocsOptions) {
  const served = documentForServing(options.document, options.publicBaseUrl)
  const servedJson = JSON.stringify(served)
  const servedYaml = toYaml(served)

  await app.register(swagger, { mode: 'static', specification: { document: served as never } })
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
    staticCSP: docsContentSecurityPolicy((served.servers ?? []) as Parameters<typeof docsContentSecurityPolicy>[0])
  })

  const hidden = { schema: { hide: true } }
  app.get('/openapi.json', hidden, (_request, reply) => reply.type('application/json; charset=utf-8').send(servedJson))
  app.get('/openapi.yaml', hidden, (_request, reply) => reply.type('application/yaml; charset=utf-8').send(servedYaml))
}
