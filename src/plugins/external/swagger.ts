import swagger from '@fastify/swagger'
import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { docsContentSecurityPolicy } from './security-headers.js'

export interface SwaggerOptions {
  /** The document as this instance serves it (documentForServing). */
  served: Record<string, unknown>
  /** Swagger UI keeps a key pasted into Authorize in the browser's storage (DOCS_PERSIST_AUTHORIZATION). */
  persistAuthorization: boolean
}

// A style sheet served with Swagger UI's own (the page's policy allows no inline style): the
// plans table of the introduction as wide as its figures, which it aligns to the right; an error
// response's headers one line each, without the type column (the operation's 2xx shows the types,
// the introduction the rules), its example without the media type choice (there is one: JSON)
// and the Schema tab (it is always the Error schema, under Schemas), tighter.
const THEME_CSS = `.swagger-ui .info .description table { width: auto; margin: 0 0 1em; }
.swagger-ui .info .description th, .swagger-ui .info .description td { padding: 6px 32px 6px 0; }
.swagger-ui .info .description td + td, .swagger-ui .info .description th + th { text-align: right; }
.swagger-ui tr.response:not([data-code^="2"]) .response-controls,
.swagger-ui tr.response:not([data-code^="2"]) .model-example .tab,
.swagger-ui tr.response:not([data-code^="2"]) .headers thead,
.swagger-ui tr.response:not([data-code^="2"]) .headers td:nth-child(3) { display: none; }
.swagger-ui tr.response:not([data-code^="2"]) .headers td { padding: 0 1em 0 0; }
.swagger-ui tr.response:not([data-code^="2"]) .headers p { margin: 0; }
.swagger-ui tr.response:not([data-code^="2"]) td { padding-top: 4px; padding-bottom: 4px; }
.swagger-ui tr.response:not([data-code^="2"]) .response-col_description__inner p { margin: 0 0 4px; }
.swagger-ui tr.response:not([data-code^="2"]) .highlight-code pre { margin: 0; }
.swagger-ui tr.response:not([data-code^="2"]) .headers-wrapper .headers__title { margin: 0.5em 0 0; }
`

/** The docs page: Swagger UI with its assets served from this process, outside /v1 (no key, no limit). */
async function docs (app: FastifyInstance, options: SwaggerOptions) {
  const info = options.served.info as { title?: string } | undefined
  await app.register(swagger, { mode: 'static', specification: { document: options.served as never } })
  // @fastify/swagger-ui passes uiConfig to Swagger UI as given; its type lacks requestSnippetsEnabled.
  const uiConfig: NonNullable<FastifySwaggerUiOptions['uiConfig']> & { requestSnippetsEnabled: boolean } = {
    // Swagger UI's own layout without the standalone top bar (an "explore" box that loads any
    // URL, which a reader of this API's page has no use for).
    layout: 'BaseLayout',
    deepLinking: true,
    persistAuthorization: options.persistAuthorization,
    showExtensions: true,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    // A ready curl command under each operation (Swagger UI's request snippets).
    requestSnippetsEnabled: true,
    requestSnippets: { defaultExpanded: true, languagesMask: ['curl_bash'] }
  }
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig,
    theme: { title: info?.title ?? 'API documentation', css: [{ filename: 'petstore.css', content: THEME_CSS }] },
    // Replaces the API's deny-all policy (security-headers.ts) on the docs page and its assets.
    staticCSP: docsContentSecurityPolicy((options.served.servers ?? []) as Parameters<typeof docsContentSecurityPolicy>[0])
  })
}

export default fp(docs, { name: 'swagger' })
