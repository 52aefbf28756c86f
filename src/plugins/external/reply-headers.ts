import type { FastifyReply } from 'fastify'

/**
 * Starts a reply's headers from a fixed set, in an object V8 keeps fast: a workaround.
 *
 * Fastify keeps a reply's headers in a plain object (`{}`), filled one name at a time by
 * `reply.header()`. V8 turns an object grown that way into a hash table ("dictionary mode") once
 * it holds about 20 properties, and a /v1 list of 1 KiB or more carries 20 (the 12 security
 * headers, the 3 rate-limit headers, Content-Type, X-Request-Id, Vary, ETag and Content-Length),
 * a pet 22 (its deprecation headers on top). From then on every
 * header written, Fastify's reads of them and Node's walk over them in `writeHead` take V8's slow
 * path. An object made by a constructor that assigns the fixed headers holds them in the object
 * itself, and the ones added later stay within V8's limit: the object stays fast.
 * Interleaved A/B: list-100 0.92 × the CPU per answer, GET pet 0.92 × (bench/README.md).
 *
 * Fastify offers no way to choose that object, so it is replaced through Fastify's own symbol
 * for it (`fastify.reply.headers`), and only while it is still empty. Should a Fastify release
 * name it differently or fill it earlier, the headers are set the ordinary way: slower, never
 * different. test/app/reply-headers.test.ts fails when a /v1 answer's headers end in dictionary mode.
 *
 * Returns the function that gives a reply the headers.
 */
export function replyHeadersStarter (headers: Readonly<Record<string, string>>): (reply: FastifyReply) => void {
  // The constructor's body is generated from the (constant) headers, as ajv and
  // fast-json-stringify generate theirs: one assignment per name, with the names and values as
  // JSON string literals, so nothing in them is ever code.
  const body = Object.entries(headers).map(([name, value]) => `this[${JSON.stringify(name)}] = ${JSON.stringify(value)}`).join('\n')
  const StartingHeaders = new Function(body) as unknown as new () => Record<string, string>
  // Looked up on the first reply, once (replies share their symbols); undefined when absent.
  let looked = false
  let symbol: symbol | undefined

  return (reply) => {
    if (!looked) {
      symbol = Object.getOwnPropertySymbols(reply).find((s) => s.description === 'fastify.reply.headers')
      looked = true
    }
    const fields = reply as unknown as Record<symbol, unknown>
    const current = symbol === undefined ? undefined : fields[symbol]
    if (current !== null && typeof current === 'object' && isEmpty(current)) fields[symbol!] = new StartingHeaders()
    else reply.headers(headers)
  }
}

function isEmpty (object: object): boolean {
  for (const _ in object) return false
  return true
}
