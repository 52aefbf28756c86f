import { Validator } from '@seriousme/openapi-schema-validator'

/**
 * fastify-openapi-glue checks openapi.yaml against the OpenAPI meta-schema at each registration,
 * with a new Validator (@seriousme/openapi-schema-validator), which compiles that meta-schema with
 * a new ajv every time: about 0.14 s of CPU per app. A server registers the glue once, so src/
 * leaves it alone; a test process builds dozens of apps, so here each version's compiled
 * meta-schema is kept for the process. The document is still validated at every registration
 * (test/app/glue-validation.test.ts).
 */
type GetAjvValidator = (this: Validator, version: string) => unknown
const prototype = Validator.prototype as unknown as { getAjvValidator: GetAjvValidator }
const compileMetaSchema = prototype.getAjvValidator
const metaSchemas = new Map<string, unknown>()

/** How many times this process compiled a meta-schema. */
export let metaSchemaCompilations = 0

prototype.getAjvValidator = function (version) {
  let validate = metaSchemas.get(version)
  if (validate === undefined) {
    validate = compileMetaSchema.call(this, version)
    metaSchemaCompilations++
    metaSchemas.set(version, validate)
  }
  return validate
}
