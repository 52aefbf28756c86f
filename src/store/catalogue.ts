import { readFile } from 'node:fs/promises'
import type { ApiDocument } from '../contract/document.js'
import { createDocumentAjv, DOCUMENT_SCHEMA_ID } from '../contract/ajv.js'
import type { Catalogue } from './types.js'

const ref = (pointer: string) => ({ $ref: `${DOCUMENT_SCHEMA_ID}#/components/schemas/${pointer}` })

/** The import file's shape, built from the schemas of openapi.yaml rather than restating them. */
const catalogueSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    pets: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'name', 'photoUrls'],
        properties: {
          id: ref('Pet/properties/id'),
          name: ref('Pet/properties/name'),
          category: ref('Category'),
          photoUrls: ref('Pet/properties/photoUrls'),
          tags: ref('Pet/properties/tags')
        }
      }
    },
    inventory: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['petId', 'quantity'],
        properties: { petId: ref('InventoryItem/properties/petId'), quantity: ref('InventoryUpdate/properties/quantity') }
      }
    },
    orders: { type: 'array', items: ref('Order') }
  }
}

export class CatalogueError extends Error {
  override name = 'CatalogueError'
}

export function parseCatalogue (doc: ApiDocument, data: unknown): Catalogue {
  const validate = createDocumentAjv(doc.spec).compile<Catalogue>(catalogueSchema)
  if (!validate(data)) {
    const e = validate.errors?.[0]
    throw new CatalogueError(`catalogue${e?.instancePath ?? ''} ${e?.message ?? 'is invalid'}`)
  }
  return data
}

export async function readCatalogueFile (doc: ApiDocument, file: string): Promise<Catalogue> {
  let data: unknown
  try {
    data = JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    throw new CatalogueError(`cannot read ${file}: ${(error as Error).message}`)
  }
  return parseCatalogue(doc, data)
}
