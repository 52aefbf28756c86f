/**
 * npm run lint:openapi — validates openapi.yaml against the OpenAPI 3.0 schema (swagger-parser),
 * then checks the project's own rules: every operation has an operationId, bearer security and an
 * Error body on each error response; deprecated operations carry x-deprecated-at and x-sunset.
 */
import SwaggerParser from '@apidevtools/swagger-parser'
import { openapiPath } from '../src/paths.js'

type Json = Record<string, unknown>
const problems: string[] = []

try {
  await SwaggerParser.validate(openapiPath)
} catch (error) {
  console.error(`openapi.yaml is not a valid OpenAPI document: ${(error as Error).message}`)
  process.exit(1)
}

const api = await SwaggerParser.dereference(openapiPath) as unknown as Json & { paths: Record<string, Record<string, Json>> }
const errorSchema = ((api.components as Json).schemas as Json).Error
let count = 0
for (const [path, item] of Object.entries(api.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (typeof op !== 'object' || op === null || !('responses' in op)) continue
    count++
    const where = `${method.toUpperCase()} ${path}`
    if (typeof op.operationId !== 'string') problems.push(`${where}: no operationId`)
    const security = (op.security ?? api.security) as Json[] | undefined
    if (!security?.some((s) => 'bearerAuth' in s)) problems.push(`${where}: no bearer security`)
    for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
      if (Number(status) < 400) continue
      const schema = ((response.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema
      if (schema !== errorSchema) problems.push(`${where}: response ${status} is not the Error body`)
    }
    if (op.deprecated === true && (op['x-deprecated-at'] === undefined || op['x-sunset'] === undefined)) {
      problems.push(`${where}: deprecated without x-deprecated-at and x-sunset`)
    }
    const stability = op['x-stability']
    if (stability !== undefined && stability !== 'experimental' && stability !== 'beta') problems.push(`${where}: x-stability must be experimental or beta`)
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`openapi.yaml: ${p}`)
  process.exit(1)
}
console.log(`openapi.yaml is valid OpenAPI ${String(api.openapi)}; ${count} operations follow the project's rules`)
