import type { FastifySchema, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ResponseValidationError } from '../errors.js'
import { createAjv } from '../openapi/ajv.js'
import { JsonText } from './json-text.js'

type JsonSchema = Record<string, unknown> & { properties?: Record<string, { type?: unknown }> }

// Bodies are validated as sent (no coercion). Path, query and header values arrive as text:
// integers among them must be written in plain decimal and are converted before validation.
const ajv = createAjv()
const PLAIN_DECIMAL = /^-?(0|[1-9][0-9]*)$/

function textParameterValidator (schema: JsonSchema) {
  const validate = ajv.compile(schema)
  const integerNames = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name)

  const validator = (data: Record<string, unknown>): boolean => {
    for (const name of integerNames) {
      const text = data[name]
      if (typeof text !== 'string') continue
      if (!PLAIN_DECIMAL.test(text)) {
        validator.errors = [{
          instancePath: `/${name}`,
          schemaPath: `#/properties/${name}/type`,
          keyword: 'type',
          params: { type: 'integer' },
          message: 'must be an integer written in plain decimal'
        }] satisfies ErrorObject[]
        return false
      }
      data[name] = Number(text)
    }
    const valid = validate(data)
    validator.errors = validate.errors
    return valid
  }
  validator.errors = null as ValidateFunction['errors']
  return validator
}

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) => {
  const validator = httpPart === 'body' ? ajv.compile(schema as JsonSchema) : textParameterValidator(schema as JsonSchema)
  return validator as ReturnType<FastifySchemaCompiler<FastifySchema>>
}

/**
 * Every response body is checked against its schema in openapi.yaml before it is sent. A body
 * outside its schema is a bug: it becomes a 500, never a silently reshaped response.
 *
 * A body given as JsonText is checked by parsing that text, so what is validated is exactly what
 * is sent. The last text that passed is remembered: the same text again (a list nothing has
 * changed since) is neither parsed nor checked again, since identical text gets an identical
 * verdict. Comparing costs nothing when it is the same string and a memcmp when it is an equal copy.
 */
export const serializerCompiler: FastifySerializerCompiler<FastifySchema> = ({ schema, method, url, httpStatus }) => {
  const validate = ajv.compile(schema as JsonSchema)
  const check = (data: unknown) => {
    if (!validate(data)) {
      const detail = ajv.errorsText(validate.errors, { dataVar: 'response' })
      throw new ResponseValidationError(`${method} ${url} ${httpStatus}: ${detail}`)
    }
  }
  let lastValidText: string | undefined
  let lastValidBytes: Buffer | undefined
  return (data: unknown) => {
    if (data instanceof JsonText) {
      if (data.text !== lastValidText || lastValidBytes === undefined) {
        let parsed: unknown
        try {
          parsed = JSON.parse(data.text)
        } catch (error) {
          throw new ResponseValidationError(`${method} ${url} ${httpStatus}: response text is not JSON (${(error as Error).message})`)
        }
        check(parsed)
        lastValidText = data.text
        lastValidBytes = Buffer.from(data.text)
      }
      // The encoded bytes, kept with the text: a large list is then sent without encoding and
      // measuring it again per response. Fastify sends a Buffer payload as it is (its typings
      // only mention strings for a serializer's result).
      return lastValidBytes as unknown as string
    }
    check(data)
    return JSON.stringify(data)
  }
}
