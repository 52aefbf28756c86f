import { Readable } from 'node:stream'
import type { JsonListVersion } from './json-list.js'

/**
 * A success body that is already JSON text (the database built it, without a JavaScript object
 * per row). The response serializer validates it against the operation's schema in openapi.yaml
 * like any other body — by parsing the very text that is sent — and then sends the text as it is.
 * `T` is the body the text stands for, so a handler can only return text of its own body type.
 *
 * The content may also be a version of a list kept as one text per element (a JsonListVersion):
 * its bytes are sent as they are, and the serializer, having checked an earlier version of the
 * same list, checks only the elements changed since.
 */
export class JsonText<T = unknown> {
  declare readonly body?: T
  /** The list version this body is, when it is one. */
  readonly list: JsonListVersion | undefined
  private decoded: string | undefined

  constructor (content: string | JsonListVersion) {
    if (typeof content === 'string') {
      this.decoded = content
      this.list = undefined
    } else {
      this.list = content
    }
  }

  get text (): string {
    this.decoded ??= this.list!.bytes.toString('utf8')
    return this.decoded
  }
}

/**
 * A list version's body as a stream of its parts (shared with the list's other versions, never
 * copied). `list` tells later stages what the stream is: its `digest` is an entity tag derived
 * from the body without reading it.
 */
export class JsonListStream extends Readable {
  constructor (readonly list: JsonListVersion) {
    super()
  }

  override _read (): void {
    for (const part of this.list.parts) this.push(part)
    this.push(null)
  }
}

const versionsOfBytes = new WeakMap<Buffer, JsonListVersion>()

/** Records that `bytes` is the body of `version` (the serializer sends a version's Buffer after its first stream). */
export function bytesOfList (version: JsonListVersion): Buffer {
  const { bytes } = version
  versionsOfBytes.set(bytes, version)
  return bytes
}

/**
 * The list version a serialized body is, when it is one (a JsonListStream, or the Buffer the
 * serializer sent in its place): later stages use its digest as the body's entity tag instead of
 * hashing the bytes, the same tag however the body was sent.
 */
export function listVersionOf (payload: unknown): JsonListVersion | undefined {
  if (payload instanceof JsonListStream) return payload.list
  return Buffer.isBuffer(payload) ? versionsOfBytes.get(payload) : undefined
}
