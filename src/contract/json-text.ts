import { ServerResponse } from 'node:http'
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
  private pushed = false

  constructor (readonly list: JsonListVersion) {
    super()
  }

  override _read (): void {
    if (!this.pushed) {
      this.pushed = true
      for (const part of this.list.parts) this.push(part)
    }
    this.push(null)
  }

  /**
   * Fastify sends a stream body with `pipe(response)`. Readable's own pipe waits for 'drain'
   * after every write the socket buffers, so a body of 100 parts (100,000 entries, 5 MB) went out
   * as some 100 writes spread over as many event-loop turns: 4.0 ms of server CPU per GET against
   * 2.2 ms for the same bytes as one Buffer. The parts are in memory already, so waiting gains
   * nothing: they are written at once, Node's response corks the socket for the tick, and they
   * leave in one writev; libuv sends the rest as the socket drains, with no JavaScript in between.
   * Any other destination, or a stream already read from, gets Readable's own pipe.
   */
  override pipe<T extends NodeJS.WritableStream> (destination: T, options?: { end?: boolean }): T {
    if (this.pushed || !(destination instanceof ServerResponse)) return super.pipe(destination, options)
    this.pushed = true
    for (const part of this.list.parts) destination.write(part)
    if (options?.end !== false) destination.end()
    // Ends this stream too, as a pipe that had read it all would (Fastify waits for its end).
    this.push(null)
    this.resume()
    return destination
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
