/**
 * fastify-openapi-glue validates the document against the OpenAPI meta-schema at every
 * registration; the test helpers keep the compiled meta-schema for the process
 * (test/helpers/glue-validator.ts). Both halves here: compiled once, and still validating.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { loadDocument } from '../../src/contract/document.js'
import { openapiPath } from '../../src/contract/paths.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { metaSchemaCompilations } from '../helpers/glue-validator.js'

t.test('two apps in one process: the OpenAPI meta-schema is compiled once', async (t) => {
  await buildTestApp(t)
  await buildTestApp(t)
  t.equal(metaSchemaCompilations, 1, 'compiled for the first, kept for the second') // a live binding
})

t.test('with the kept meta-schema, a document it refuses still stops the app from starting', async (t) => {
  await buildTestApp(t) // the meta-schema compiled and kept
  type Spec = { paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>> }
  const spec = parseYaml(readFileSync(openapiPath, 'utf8')) as Spec
  // A response without its description, which OpenAPI 3 requires; nothing else reads it.
  const [firstPath] = Object.keys(spec.paths)
  const operation = Object.values(spec.paths[firstPath!]!).find((value) => typeof value === 'object' && value !== null && 'responses' in value)!
  const [status] = Object.keys(operation.responses)
  delete operation.responses[status!]!.description
  const file = join(tempDir(t), 'openapi.yaml')
  writeFileSync(file, toYaml(spec))
  const broken = await loadDocument(file)
  await t.rejects(buildTestApp(t, { document: broken }), /valid specification/, 'the glue refuses it')
})
