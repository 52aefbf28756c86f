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

// A style sheet served with Swagger UI's own (the page's policy allows no inline style), so that an
// expanded operation reads in one screen or two: the plans table of the introduction as wide as its
// figures, which it aligns to the right; no Links column (no response has links); the inputs of the
// parameters only under "Try it out" (outside it they are disabled and empty, the example is shown
// above them); tighter rows and section headers. An error response reads in three lines: its
// description, its example on one line (the schema is always Error, under Schemas; the media type is
// always JSON, so no choice is shown but the choice of examples when there are several), and the
// names of its headers (their rules are in the introduction). Swagger UI styles an example inline,
// so only !important overrides its spacing and line breaks.
const ERROR = '.swagger-ui tr.response:not([data-code^="2"])'
const THEME_CSS = `.swagger-ui .info .description table { width: auto; margin: 0 0 1em; }
.swagger-ui .info .description th, .swagger-ui .info .description td { padding: 6px 32px 6px 0; }
.swagger-ui .info .description td + td, .swagger-ui .info .description th + th { text-align: right; }
.swagger-ui .responses-table .response-col_links { display: none; }
.swagger-ui .opblock-body .parameters-col_description :is(input, select, textarea)[disabled] { display: none; }
.swagger-ui .opblock-body table.parameters tbody tr td { padding-top: 6px; padding-bottom: 6px; }
.swagger-ui .opblock-body .parameters-col_description .renderedMarkdown p { margin: 0; }
.swagger-ui .opblock .opblock-section-header { min-height: 0; padding: 4px 20px; }
.swagger-ui .opblock-body .opblock-section .table-container thead { display: none; }
.swagger-ui .opblock-body .opblock-section .table-container td { padding: 2px 20px 2px 0; }
.swagger-ui .opblock .opblock-description-wrapper { padding: 8px 20px; margin-bottom: 0; }
.swagger-ui .opblock-body .opblock-section .table-container { padding: 8px 20px; }
.swagger-ui .opblock-body .execute-wrapper:empty { display: none; }
.swagger-ui .opblock-body .responses-inner { padding: 8px 20px; }
.swagger-ui .opblock-body .parameters-col_name :is(.parameter__type, .parameter__in) { display: inline; padding: 0 0.5em 0 0; }
.swagger-ui .opblock-body .response-controls { padding-top: 4px; }
.swagger-ui .opblock-body .response-control-media-type { display: flex; align-items: center; gap: 0.5em; margin: 0; }
.swagger-ui .opblock-body .response-control-media-type .response-control-media-type__title,
.swagger-ui .opblock-body .response-control-examples .response-control-examples__title,
.swagger-ui .opblock-body .response-control-examples .examples-select { margin: 0; }
.swagger-ui .opblock-body :is(.content-type-wrapper, .response-control-examples) select { padding-top: 2px; padding-bottom: 2px; }
.swagger-ui .opblock-body .model-example { margin-top: 4px; }
.swagger-ui .opblock-body .model-example .tab { margin: 4px 0; }
.swagger-ui tr.response[data-code^="2"] .headers-wrapper .headers__title { margin: 4px 0 2px; }
.swagger-ui tr.response[data-code^="2"] .headers th { padding: 2px 0; }
.swagger-ui tr.response[data-code^="2"] .headers td:first-child { white-space: nowrap; padding-right: 1em; }
.swagger-ui tr.response[data-code^="2"] .headers td { padding-top: 2px; padding-bottom: 2px; }
.swagger-ui tr.response[data-code^="2"] .headers p { margin: 0; }
.swagger-ui tr.response td { padding-top: 4px; padding-bottom: 4px; }
${ERROR} .response-col_description__inner p { margin: 0; }
${ERROR} .response-control-media-type, ${ERROR} .model-example .tab, ${ERROR} .headers thead,
${ERROR} .headers td:nth-child(n+2) { display: none; }
${ERROR} .response-controls { display: block; padding: 0; }
${ERROR} .response-control-examples { display: flex; align-items: center; gap: 0.5em; margin: 2px 0; }
${ERROR} .model-example { margin: 2px 0 0; }
${ERROR} .highlight-code .microlight { min-height: 0; margin: 0; padding: 2px 0.5em !important; }
${ERROR} .highlight-code pre code { white-space: normal !important; }
${ERROR} .headers-wrapper { display: block; margin: 2px 0 0; font-size: 12px; }
${ERROR} .headers-wrapper .headers__title { display: inline; margin: 0 0.5em 0 0; font-size: 12px; }
${ERROR} .headers, ${ERROR} .headers tbody, ${ERROR} .headers tr { display: inline; }
${ERROR} .headers td:first-child { display: inline; padding: 0; font-size: 12px; }
${ERROR} .headers tr:not(:last-child) td:first-child::after { content: ", "; }
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
