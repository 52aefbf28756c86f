import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { openapiPath } from '../../src/contract/paths.js'

interface SpecOperation { operationId: string, 'x-sunset'?: string }

/**
 * openapi.yaml as the file says it, parsed here rather than through the app's own loader, so a
 * fault in that loader cannot agree with itself in a test.
 */
export const specFile = parseYaml(readFileSync(openapiPath, 'utf8')) as {
  servers: { url: string }[]
  paths: Record<string, Record<string, SpecOperation>>
}

/** The `x-sunset` of an operation, in milliseconds since the epoch. */
export function sunsetOf (operationId: string): number {
  const operation = Object.values(specFile.paths).flatMap((item) => Object.values(item)).find((op) => op.operationId === operationId)
  const sunset = Date.parse(operation?.['x-sunset'] ?? '')
  if (!Number.isFinite(sunset)) throw new Error(`openapi.yaml gives ${operationId} no x-sunset date`)
  return sunset
}
