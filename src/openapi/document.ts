import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { openapiPath } from '../paths.js'

type Json = Record<string, unknown>

export interface OperationInfo {
  operationId: string
  method: string
  /** OpenAPI path template, e.g. /inventory/{petId} */
  path: string
  deprecated: boolean
  deprecatedAt: Date | undefined
  sunset: Date | undefined
  stability: string | undefined
  /** requestBody.required: Fastify validates a body only when one arrived, so this is enforced apart. */
  bodyRequired: boolean
}

export interface PlanLimits {
  perMinute: number
  perDay: number
}

/** openapi.yaml, parsed once, with the facts the code reads from it. */
export interface ApiDocument {
  /** The document exactly as written in openapi.yaml. */
  readonly spec: Json
  readonly operations: ReadonlyMap<string, OperationInfo>
  /** Fixed plan limits from info.x-rate-limit-plans; `enterprise` is absent: its limits are per key. */
  readonly plans: Readonly<Record<string, PlanLimits>>
  readonly planNames: readonly string[]
}

const httpMethods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** Follows local `$ref`s (`#/components/...`) to the node they name. */
function resolveLocal (spec: Json, node: unknown): Json | undefined {
  let current = node as Json | undefined
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 20; hops++) {
    const ref = current.$ref as string
    current = ref.startsWith('#/') ? ref.slice(2).split('/').reduce<unknown>((at, key) => (at as Json | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec) as Json | undefined : undefined
  }
  return current
}

function parseDate (value: unknown, where: string): Date | undefined {
  if (value === undefined) return undefined
  const date = new Date(String(value))
  if (Number.isNaN(date.getTime())) throw new Error(`openapi.yaml: ${where} is not a date: ${String(value)}`)
  return date
}

export function loadDocument (path: string = openapiPath): ApiDocument {
  const spec = parseYaml(readFileSync(path, 'utf8')) as Json
  const operations = new Map<string, OperationInfo>()
  for (const [urlPath, item] of Object.entries((spec.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!httpMethods.has(method)) continue
      const operation = op as Json
      const operationId = String(operation.operationId)
      operations.set(operationId, {
        operationId,
        method: method.toUpperCase(),
        path: urlPath,
        deprecated: operation.deprecated === true,
        deprecatedAt: parseDate(operation['x-deprecated-at'], `${operationId} x-deprecated-at`),
        sunset: parseDate(operation['x-sunset'], `${operationId} x-sunset`),
        stability: operation['x-stability'] as string | undefined,
        bodyRequired: resolveLocal(spec, operation.requestBody)?.required === true
      })
    }
  }
  const info = spec.info as Json
  const plans: Record<string, PlanLimits> = {}
  const planNames: string[] = []
  for (const [name, limits] of Object.entries((info['x-rate-limit-plans'] ?? {}) as Record<string, Json>)) {
    planNames.push(name)
    if (Number.isInteger(limits.perMinute) && Number.isInteger(limits.perDay)) {
      plans[name] = { perMinute: limits.perMinute as number, perDay: limits.perDay as number }
    }
  }
  return { spec, operations, plans, planNames }
}

/**
 * The document as this instance serves it: the running-instance server's `baseUrl` variable
 * defaults to PUBLIC_BASE_URL, so "Try it out" on the docs page calls the server that serves it.
 */
export function documentForServing (doc: ApiDocument, publicBaseUrl: string): Json {
  const served = structuredClone(doc.spec)
  for (const server of (served.servers ?? []) as Json[]) {
    const variables = server.variables as Record<string, Json> | undefined
    if (variables?.baseUrl) variables.baseUrl.default = publicBaseUrl
  }
  return served
}
