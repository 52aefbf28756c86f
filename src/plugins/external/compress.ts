import { constants, type BrotliOptions, type ZlibOptions } from 'node:zlib'
import fastifyCompress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** The content codings offered, preferred first when a client accepts several equally. */
export const CONTENT_CODINGS = ['br', 'gzip'] as const
export type ContentCoding = typeof CONTENT_CODINGS[number]

/** Smaller bodies are sent as they are: the codings' headers would eat most of the gain. */
export const COMPRESSION_THRESHOLD = 1024

// Brotli's default quality (11) takes about 30 s on the 5 MB list of 100,000 entries; quality 4
// (@fastify/compress's own default) tens of milliseconds, for a body under a third of gzip's.
// gzip keeps zlib's default level.
export const compressionOptions: { br: BrotliOptions, gzip: ZlibOptions } = {
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
  gzip: { level: 6 }
}

/**
 * @fastify/compress: responses of 1 KiB or more in br or gzip, as Accept-Encoding allows, with
 * Vary: Accept-Encoding. The JSON bodies of GET responses arrive here already encoded, cached with
 * their ETag (src/plugins/app/conditional-requests.ts), and are passed through as they are.
 * Request bodies are not decompressed: the API takes JSON as sent.
 */
async function compress (app: FastifyInstance) {
  await app.register(fastifyCompress, {
    encodings: [...CONTENT_CODINGS],
    threshold: COMPRESSION_THRESHOLD,
    brotliOptions: compressionOptions.br,
    zlibOptions: compressionOptions.gzip,
    // JSON, YAML (/openapi.yaml, which mime-db does not mark compressible) and text; other types as mime-db marks them.
    customTypes: /^text\/(?!event-stream)|^application\/(?:[\w.-]+\+)?(?:json|yaml)(?:;|$)/,
    globalDecompression: false
  })
}

export default fp(compress, { name: 'compress' })
