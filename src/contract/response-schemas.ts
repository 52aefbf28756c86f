import type { RouteOptions } from 'fastify'

const JSON_MEDIA_TYPE = 'application/json'

type ResponseDefinition = { content?: Record<string, { schema?: unknown }> }

/**
 * An onRoute hook for the routes fastify-openapi-glue makes: each response whose only media type
 * is application/json (every response of openapi.yaml) is given to Fastify as the schema of its
 * status, instead of the glue's `{ content: { 'application/json': { schema } } }`.
 *
 * Why: given media types, Fastify picks the serializer on every reply by parsing the reply's
 * Content-Type and looking up a media-type string it builds each time, about 1 µs of every answer
 * (bench/README.md, "Response schemas by status"); and a reply whose Content-Type names another
 * JSON type (application/problem+json, say) is sent without any check. By status, every answer of
 * that status is checked against openapi.yaml, whatever JSON type its handler set. A response
 * with other media types is left as the glue made it.
 */
export function responsesByStatus (routeOptions: RouteOptions): void {
  const responses = routeOptions.schema?.response as Record<string, ResponseDefinition> | undefined
  if (responses === undefined) return
  const byStatus: Record<string, unknown> = {}
  for (const [status, definition] of Object.entries(responses)) {
    const mediaTypes = Object.keys(definition.content ?? {})
    const schema = definition.content?.[JSON_MEDIA_TYPE]?.schema
    byStatus[status] = mediaTypes.length === 1 && schema !== undefined ? schema : definition
  }
  routeOptions.schema = { ...routeOptions.schema, response: byStatus }
}
