import { createHash } from 'node:crypto'
import { endsChunk } from '../../src/contract/json-list.js'

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest()

/** The tag of a body that is not a kept list: the SHA-256 of its bytes. */
export const bytesTag = (body: Buffer | string) => `"${sha256(body).toString('base64url')}"`

/**
 * The tag of a list body of the SQLite store (a JsonList version), worked out from the body alone,
 * independently of JsonList's bookkeeping: the elements are cut into chunks after each element
 * whose key endsChunk() picks, and the tag is the SHA-256 of the chunks' SHA-256 digests (each of
 * the chunk's element texts joined by ','). Throws when the body is not the compact array of its
 * elements this presumes.
 */
export function listTag (body: Buffer | string, keyOf: (element: never) => number, chunkSize?: number): string {
  const text = body.toString()
  const elements = JSON.parse(text) as never[]
  const texts = elements.map((element) => JSON.stringify(element))
  if (`[${texts.join(',')}]` !== text) throw new Error('not a compact JSON array of compact elements')
  const keys = elements.map(keyOf)
  const digests: Buffer[] = []
  let from = 0
  texts.forEach((_, i) => {
    if (i < texts.length - 1 && !endsChunk(keys[i]!, chunkSize)) return
    digests.push(sha256(texts.slice(from, i + 1).join(',')))
    from = i + 1
  })
  return `"${sha256(Buffer.concat(digests)).toString('base64url')}"`
}
