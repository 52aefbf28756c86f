import { handlers } from '../../handlers/index.js'
import { loadDocument, type OperationInfo } from '../../src/contract/document.js'
import { isNotImplemented } from '../../src/contract/not-implemented.js'

/**
 * The API surface as openapi.yaml describes it, for tests that go over every operation, path,
 * method or error code: read from the document, never written out in a test, so that adding an
 * operation or a code breaks no test that is not about it.
 */
export const apiDocument = await loadDocument()
export const API_PREFIX = '/v1'

type Json = Record<string, unknown>

/** Every operation, in the document's order. */
export const operations: readonly OperationInfo[] = [...apiDocument.operations.values()]

/** The error codes of the Error schema. */
export const errorCodes: readonly string[] = (((apiDocument.resolved.components as Json).schemas as Record<string, Json>)
  .Error!.properties as Record<string, Json>).code!.enum as string[]

/** Each path template of the document with its methods, HEAD added where there is GET (what Allow lists). */
export function methodsByPath (): Map<string, string[]> {
  const paths = new Map<string, string[]>()
  for (const op of operations) {
    const methods = paths.get(op.path) ?? []
    methods.push(op.method)
    if (op.method === 'GET' && !methods.includes('HEAD')) methods.push('HEAD')
    paths.set(op.path, methods)
  }
  return paths
}

/** Every method of the document (HEAD with GET). */
export const documentMethods = (): string[] => [...new Set([...methodsByPath().values()].flat())]

/** A value a schema accepts, from its first example, default, enum or lower bound. */
export function sampleValue (schema: Json | undefined, example?: unknown): unknown {
  if (example !== undefined) return example
  if (schema === undefined) return 'x'
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.enum)) return schema.enum[0]
  switch (schema.type) {
    case 'integer': case 'number': return typeof schema.minimum === 'number' ? Math.max(schema.minimum, 1) : 1
    case 'boolean': return true
    case 'array': return [sampleValue(schema.items as Json | undefined)]
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Json>
      return Object.fromEntries(((schema.required ?? []) as string[]).map((name) => [name, sampleValue(properties[name])]))
    }
    default: return schema.format === 'date-time' ? '2026-01-01T00:00:00.000Z' : 'x'
  }
}

/** The path of the operation under /v1 with its path parameters filled from their examples. */
export function sampleUrl (op: OperationInfo): string {
  const parameters = (op.definition.parameters ?? []) as Json[]
  return API_PREFIX + op.path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const parameter = parameters.find((p) => p.in === 'path' && p.name === name)
    return encodeURIComponent(String(sampleValue(parameter?.schema as Json | undefined, parameter?.example)))
  })
}

/** A request the operation's validation accepts: its required headers and a body from its schema. */
export function sampleRequest (op: OperationInfo): { method: string, url: string, headers: Record<string, string>, payload?: Record<string, unknown> } {
  const headers: Record<string, string> = {}
  for (const parameter of (op.definition.parameters ?? []) as Json[]) {
    if (parameter.in === 'header' && parameter.required === true) headers[String(parameter.name).toLowerCase()] = String(sampleValue(parameter.schema as Json | undefined, parameter.example))
  }
  const media = ((op.definition.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.['application/json']
  if (media === undefined) return { method: op.method, url: sampleUrl(op), headers }
  headers['content-type'] = 'application/json'
  return { method: op.method, url: sampleUrl(op), headers, payload: sampleValue(media.schema as Json | undefined, media.example) as Record<string, unknown> }
}

/** Whether the operation's handler in handlers/index.ts is still the generated stub (answering 501). */
export const isStub = (operationId: string): boolean => isNotImplemented((handlers as Record<string, unknown>)[operationId])
