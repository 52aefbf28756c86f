import type { Ajv, Options } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

/**
 * The one way this project builds ajv: JSON Schema 2020-12 (the dialect of OpenAPI 3.1's schemas),
 * no type coercion, nothing removed, no defaults filled in, so a value is either valid as sent or
 * rejected. int64 means "an integer JavaScript holds exactly"; every format is checked.
 */
export function createAjv (options: Options = {}): Ajv {
  const ajv = new Ajv2020({
    strict: false, // openapi.yaml carries OpenAPI keywords (discriminator, xml, x-…) ajv does not know
    allErrors: false,
    coerceTypes: false,
    removeAdditional: false,
    useDefaults: false,
    ...options
  })
  addFormats.default(ajv)
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) })
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
  return ajv
}

export const DOCUMENT_SCHEMA_ID = 'openapi.json'

/** An ajv holding openapi.yaml as a schema, so `openapi.json#/components/...` references resolve. */
export function createDocumentAjv (spec: Record<string, unknown>): Ajv {
  const ajv = createAjv()
  ajv.addSchema({ ...spec, $id: DOCUMENT_SCHEMA_ID })
  return ajv
}
