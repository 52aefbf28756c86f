import { createHash } from 'node:crypto'
import zlib from 'node:zlib'
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { JsonListVersion } from '../../contract/json-list.js'
import { listVersionOf } from '../../contract/json-text.js'
import { COMPRESSION_THRESHOLD, CONTENT_CODINGS, type ContentCoding, compressionOptions } from '../external/compress.js'

/** A body and what is derived from it: the hash its entity tags are made of, and its encodings. */
interface Representations {
  hash: string
  encoded: Partial<Record<ContentCoding, Promise<Buffer>>>
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g

/** zlib's output chunk for a body: the whole result in one step up to 1 MiB (zlib's default is 16 KiB). */
const chunkSizeFor = (bytes: Buffer) => Math.min(2 ** 20, Math.max(zlib.constants.Z_DEFAULT_CHUNK, bytes.length))

function encode (bytes: Buffer, coding: ContentCoding): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, result: Buffer) => { if (error === null) resolve(result); else reject(error) }
    const chunkSize = chunkSizeFor(bytes)
    // Called through the module object at each use (not bound once), so a test can count the calls.
    if (coding === 'br') zlib.brotliCompress(bytes, { ...compressionOptions.br, chunkSize }, done)
    else zlib.gzip(bytes, { ...compressionOptions.gzip, chunkSize }, done)
  })
}

/** The coding to send, as @fastify/compress would choose it (it reads `*` and x-gzip as gzip). */
function chooseCoding (request: FastifyRequest): ContentCoding | undefined {
  const accepted = request.headers['accept-encoding']
  if (accepted === undefined || request.headers['x-no-compression'] !== undefined) return undefined
  const header = accepted.toLowerCase().replace(/\*|x-gzip/g, 'gzip')
  return negotiate(header, [...CONTENT_CODINGS]) ?? undefined
}

/** If-None-Match against the current tag, by the weak comparison RFC 9110 §13.1.2 prescribes. */
function matches (ifNoneMatch: string | undefined, tag: string): boolean {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === '*') return true
  for (const [, opaque] of ifNoneMatch.matchAll(ENTITY_TAG)) if (opaque === tag) return true
  return false
}

function addVary (reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary')
  const fields = current === undefined ? [] : String(current).split(',').map((f) => f.trim())
  if (fields.some((f) => f === '*' || f.toLowerCase() === field.toLowerCase())) return
  reply.header('vary', [...fields, field].join(', '))
}

/**
 * Conditional GET and the encoded bodies of GET responses (openapi.yaml, "Headers on every
 * response"). Every 200 to a GET (and HEAD) with a JSON body gets a strong ETag derived from
 * the body alone (the SHA-256 of its bytes, or for a list version the tree digest JsonList keeps),
 * so equal bodies have equal tags on every instance; a body sent in a
 * content coding has a tag of its own (`"<hash>-br"`, `"<hash>-gzip"`), as RFC 9110 §8.8.3 asks of
 * strong validators. A request whose If-None-Match holds the current tag is answered 304 without a
 * body; it has been authenticated and counted like any other, and keeps its rate-limit headers.
 *
 * A body that arrives as a Buffer is the one the response serializer keeps while the text is
 * unchanged (src/contract/validation.ts: an unchanged list is the same Buffer, request after
 * request), so its hash and encodings are kept with it, in a WeakMap keyed by that Buffer: an
 * unchanged list is neither hashed nor compressed again, and they go when the list changes and
 * the Buffer is dropped. Such a Buffer is never written to once sent. Bodies sent as strings are
 * hashed, and encoded, per response.
 *
 * The encoding is done here rather than by @fastify/compress because the tag depends on it and the
 * encoded bytes are cached; that plugin's hook (a route hook, so it runs after this one) passes a
 * body that already has a Content-Encoding through, and chooses the same coding for the rest.
 */
async function conditionalRequests (app: FastifyInstance) {
  const cache = new WeakMap<Buffer, Representations>()
  // A list version (src/contract/json-list.ts), sent as a stream of its parts or as one Buffer: its
  // hash is the digest the list keeps (only the chunks that changed are hashed again); its bytes
  // are only put together when a coding needs them.
  const lists = new WeakMap<JsonListVersion, Representations>()

  const representationsOf = (payload: string | Buffer): { bytes: Buffer, entry: Representations } => {
    const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload
    let entry = typeof payload === 'string' ? undefined : cache.get(bytes)
    if (entry === undefined) {
      entry = { hash: createHash('sha256').update(bytes).digest('base64url'), encoded: {} }
      if (typeof payload !== 'string') cache.set(bytes, entry)
    }
    return { bytes, entry }
  }

  app.addHook('onSend', (request, reply, payload, done) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return done(null, payload)
    const list = listVersionOf(payload)
    // Other streams (the docs page's files) carry validators of their own.
    if (list === undefined && typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload)
    if (!JSON_TYPE.test(String(reply.getHeader('content-type'))) || reply.hasHeader('etag') || reply.hasHeader('content-encoding')) return done(null, payload)

    let entry: Representations
    let bytesOf: () => Buffer
    if (list === undefined) {
      const representations = representationsOf(payload as string | Buffer)
      entry = representations.entry
      bytesOf = () => representations.bytes
    } else {
      entry = lists.get(list) ?? { hash: list.digest, encoded: {} }
      lists.set(list, entry)
      bytesOf = () => list.bytes
    }
    const compressible = (list?.byteLength ?? bytesOf().length) >= COMPRESSION_THRESHOLD
    const coding = compressible ? chooseCoding(request) : undefined
    if (compressible) addVary(reply, 'Accept-Encoding')
    const tag = coding === undefined ? `"${entry.hash}"` : `"${entry.hash}-${coding}"`
    reply.header('etag', tag)

    if (matches(request.headers['if-none-match'], tag)) {
      reply.code(304)
      // Fastify's HEAD route handler fails on a null payload (fastify/fastify#6978): a HEAD goes on
      // with the body a 200 would have, which that handler measures for Content-Length and drops.
      if (request.method === 'GET') {
        reply.removeHeader('content-type')
        reply.removeHeader('content-length')
        return done(null, null)
      }
    }
    if (coding === undefined) {
      // A list streamed as its parts is sent with its length, as its Buffer would be.
      if (list !== undefined) reply.header('content-length', String(list.byteLength))
      return done(null, payload)
    }

    const encoded = entry.encoded[coding] ??= encode(bytesOf(), coding)
    encoded.then((body) => {
      reply.header('content-encoding', coding)
      done(null, body)
    }, (error: Error) => {
      // A failed encoding is not kept: the next request tries again.
      if (entry.encoded[coding] === encoded) delete entry.encoded[coding]
      done(error)
    })
  })
}

export default fp(conditionalRequests, { name: 'conditional-requests', dependencies: ['compress'] })
