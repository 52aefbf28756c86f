import { readFileSync } from 'node:fs'
import $RefParser from '@apidevtools/json-schema-ref-parser'
import { CORE_SCHEMA, load as parseYaml } from 'js-yaml'
import { openapiPath } from './paths.js'

type Json = Record<string, unknown>

export interface OperationInfo {
  operationId: string
  method: string
  /** OpenAPI path template, e.g. /inventory/{petId} */
  path: string
  /** The operation object with every $ref resolved. */
  definition: Json
  deprecated: boolean
  deprecatedAt: Date | undefined
  sunset: Date | undefined
  stability: string | undefined
  /** requestBody.required: Fastify validates a body only when one arrived, so this is enforced apart. */
  bodyRequired: boolean
  /** Whether it declares any query parameter (the glue gives no query-string schema otherwise). */
  declaresQuery: boolean
  /** Swagger UI's deep link to the operation: #/<first tag>/<operationId> ("default" when untagged). */
  docsAnchor: string
  /** The scope of bearerAuth its security requirement names (every /v1 operation names one). */
  scope: string | undefined
}

export interface PlanLimits {
  perMinute: number
  perDay: number
}

/** openapi.yaml, parsed once, with the facts the code reads from it. */
export interface ApiDocument {
  /** The document exactly as written in openapi.yaml ($refs kept: it is what /openapi.json serves). */
  readonly spec: Json
  /** The same document with every $ref resolved (json-schema-ref-parser), for code that reads it. */
  readonly resolved: Json
  readonly operations: ReadonlyMap<string, OperationInfo>
  /** Fixed plan limits from info.x-rate-limit-plans; `enterprise` is absent: its limits are per key. */
  readonly plans: Readonly<Record<string, PlanLimits>>
  readonly planNames: readonly string[]
  /** The scopes an API key can hold: bearerAuth's x-scopes, in the document's order. */
  readonly scopes: readonly string[]
}

/** The one scope of bearerAuth an operation's own security requirement names, if it names one. */
export function scopeOf (operation: Json): string | undefined {
  const requirements = operation.security
  if (!Array.isArray(requirements) || requirements.length !== 1) return undefined
  const scopes = (requirements[0] as Json).bearerAuth
  return Array.isArray(scopes) && scopes.length === 1 && typeof scopes[0] === 'string' ? scopes[0] : undefined
}

/** bearerAuth's x-scopes: each scope with its meaning. */
const scopeMeanings = (spec: Json): Record<string, string> =>
  ((((spec.components as Json | undefined)?.securitySchemes as Json | undefined)?.bearerAuth as Json | undefined)?.['x-scopes'] ?? {}) as Record<string, string>

const httpMethods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

function parseDate (value: unknown, where: string): Date | undefined {
  if (value === undefined) return undefined
  const date = new Date(String(value))
  if (Number.isNaN(date.getTime())) throw new Error(`openapi.yaml: ${where} is not a date: ${String(value)}`)
  return date
}

/**
 * Reads openapi.yaml (or another document) and resolves its $refs; the one place that does. Every
 * process pays for it at start (the server, each CLI command, each test file), hence the lighter
 * libraries: js-yaml with YAML 1.2's core schema (as the `yaml` package reads it: a date stays
 * text) and json-schema-ref-parser, the dereferencing half of swagger-parser without its validator,
 * about 0.2 s of CPU against 0.55 s. The document's validity is checked by `npm run lint:openapi`.
 */
export async function loadDocument (path: string = openapiPath): Promise<ApiDocument> {
  const spec = parseYaml(readFileSync(path, 'utf8'), { schema: CORE_SCHEMA, filename: path }) as Json
  const resolved = await $RefParser.dereference(structuredClone(spec)) as Json
  const operations = new Map<string, OperationInfo>()
  for (const [urlPath, item] of Object.entries((resolved.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!httpMethods.has(method)) continue
      const operation = op as Json
      const operationId = String(operation.operationId)
      const tag = (operation.tags as string[] | undefined)?.[0] ?? 'default'
      operations.set(operationId, {
        operationId,
        method: method.toUpperCase(),
        path: urlPath,
        definition: operation,
        deprecated: operation.deprecated === true,
        deprecatedAt: parseDate(operation['x-deprecated-at'], `${operationId} x-deprecated-at`),
        sunset: parseDate(operation['x-sunset'], `${operationId} x-sunset`),
        stability: operation['x-stability'] as string | undefined,
        bodyRequired: (operation.requestBody as Json | undefined)?.required === true,
        declaresQuery: [...(item.parameters as Json[] ?? []), ...(operation.parameters as Json[] ?? [])].some((p) => p.in === 'query'),
        docsAnchor: `#/${encodeURIComponent(tag)}/${operationId}`,
        scope: scopeOf(operation)
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
  return { spec, resolved, operations, plans, planNames, scopes: Object.keys(scopeMeanings(spec)) }
}

/** Where documentForServing puts the table of scopes in bearerAuth's description (at the end when absent). */
export const SCOPES_MARKER = '<!-- x-scopes -->'

/** bearerAuth's x-scopes as a Markdown table: what the Authorize dialog of the docs page shows. */
export function scopesTable (meanings: Record<string, string>): string {
  return ['| Scope | Allows |', '|---|---|', ...Object.entries(meanings).map(([scope, meaning]) => `| \`${scope}\` | ${meaning} |`)].join('\n')
}

/** Where documentForServing puts the plans table in info.description (at the end when absent). */
export const PLANS_MARKER = '<!-- x-rate-limit-plans -->'

const planTitle = (name: string) => name.charAt(0).toUpperCase() + name.slice(1)
const planLimit = (value: unknown) => typeof value === 'number' ? value.toLocaleString('en-US') : 'per key'

/**
 * info.x-rate-limit-plans as a Markdown table: what the docs page shows (the one copy is the
 * extension). No column alignment: Markdown renders it as a style attribute, which the docs
 * page's content-security-policy blocks.
 */
export function plansTable (plans: Record<string, Json>): string {
  const rows = Object.entries(plans).map(([name, limits]) =>
    `| ${planTitle(name)} | ${planLimit(limits.perMinute)} | ${planLimit(limits.perDay)} |`)
  return ['| Plan | Requests per minute | Requests per day |', '|---|---|---|', ...rows].join('\n')
}

/** The operation's stability and deprecation, as Swagger UI shows them on its summary line. */
function summaryMarks (operation: Json): string[] {
  const marks: string[] = []
  if (typeof operation['x-stability'] === 'string') marks.push(operation['x-stability'])
  if (operation.deprecated === true) {
    const sunset = parseDate(operation['x-sunset'], `${String(operation.operationId)} x-sunset`)
    marks.push(sunset === undefined ? 'deprecated' : `deprecated, sunset ${sunset.toISOString().slice(0, 10)}`)
  }
  return marks
}

/**
 * The document as this instance serves it (/openapi.json, /openapi.yaml and the docs page):
 * - the server entry with the `{baseUrl}` variable becomes this instance's plain address
 *   (PUBLIC_BASE_URL), so "Try it out" calls the server that serves the page;
 * - info.description gets the plans table made from info.x-rate-limit-plans, at PLANS_MARKER;
 * - each operation's summary ends with its stability and deprecation (with the sunset date),
 *   which Swagger UI otherwise shows only in an expanded extensions table;
 * - each operation's description starts with the scope its security requirement names, and
 *   bearerAuth's description (the Authorize dialog) gets the table of x-scopes at SCOPES_MARKER.
 */
export function documentForServing (doc: ApiDocument, publicBaseUrl: string): Json {
  const served = structuredClone(doc.spec)
  for (const server of (served.servers ?? []) as Json[]) {
    const variables = server.variables as Record<string, Json> | undefined
    if (variables?.baseUrl === undefined) continue
    server.url = String(server.url).replaceAll('{baseUrl}', publicBaseUrl)
    delete variables.baseUrl
    if (Object.keys(variables).length === 0) delete server.variables
  }

  const info = served.info as Json
  const plans = info['x-rate-limit-plans'] as Record<string, Json> | undefined
  if (plans !== undefined) {
    const description = typeof info.description === 'string' ? info.description : ''
    const table = plansTable(plans)
    info.description = description.includes(PLANS_MARKER)
      ? description.replace(PLANS_MARKER, table)
      : `${description.trimEnd()}\n\n${table}\n`
  }

  const bearerAuth = ((served.components as Json | undefined)?.securitySchemes as Json | undefined)?.bearerAuth as Json | undefined
  if (bearerAuth !== undefined) {
    const description = typeof bearerAuth.description === 'string' ? bearerAuth.description : ''
    const table = scopesTable(scopeMeanings(served))
    bearerAuth.description = description.includes(SCOPES_MARKER)
      ? description.replace(SCOPES_MARKER, table)
      : `${description.trimEnd()}\n\n${table}\n`
  }

  for (const item of Object.values((served.paths ?? {}) as Record<string, Json>)) {
    for (const [method, value] of Object.entries(item)) {
      if (!httpMethods.has(method)) continue
      const operation = value as Json
      const scope = scopeOf(operation)
      if (scope !== undefined) {
        const description = typeof operation.description === 'string' ? operation.description : ''
        operation.description = `**Scope:** \`${scope}\`\n\n${description}`
      }
      const marks = summaryMarks(operation)
      if (marks.length === 0) continue
      const summary = typeof operation.summary === 'string' ? operation.summary : String(operation.operationId)
      operation.summary = [summary, ...marks].join(' · ')
    }
  }
  return served
}
