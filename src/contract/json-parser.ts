import { isUtf8 } from 'node:buffer'
import type { FastifyBodyParser, FastifyInstance } from 'fastify'
import { ApiError } from './errors.js'

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * The first member name that occurs twice in one object of `text`, which must be valid JSON
 * (it is scanned after JSON.parse accepted it, so the scan can skip what it need not check).
 * Names are compared decoded: "a" and "\u0061" are the same name.
 */
export function duplicateMemberName (text: string): string | undefined {
  // One entry per open object (its names so far) or array (null).
  const open: (Set<string> | null)[] = []
  let expectName = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // The closing quote is the first one after an even run of backslashes.
      let end = text.indexOf('"', i + 1)
      for (;;) {
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++
        if (slashes % 2 === 0) break
        end = text.indexOf('"', end + 1)
      }
      if (expectName) {
        let escaped = false
        for (let k = i + 1; k < end && !escaped; k++) escaped = text.charCodeAt(k) === BACKSLASH
        const name = escaped ? JSON.parse(text.slice(i, end + 1)) as string : text.slice(i + 1, end)
        const names = open[open.length - 1]!
        if (names.has(name)) return name
        names.add(name)
        expectName = false
      }
      i = end
    } else if (c === 0x7b) { // {
      open.push(new Set())
      expectName = true
    } else if (c === 0x5b) { // [
      open.push(null)
      expectName = false
    } else if (c === 0x7d || c === 0x5d) { // } ]
      open.pop()
    } else if (c === 0x2c) { // ,
      expectName = open[open.length - 1] != null
    }
  }
  return undefined
}

/** Members of every object in a parsed JSON value (walked without recursion: nesting may be deep). */
function memberCount (value: unknown): number {
  let count = 0
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next !== 'object' || next === null) continue
    if (Array.isArray(next)) {
      for (const item of next) if (typeof item === 'object' && item !== null) pending.push(item)
    } else {
      for (const key in next) {
        count++
        const item = (next as Record<string, unknown>)[key]
        if (typeof item === 'object' && item !== null) pending.push(item)
      }
    }
  }
  return count
}

/**
 * Whether `text` (valid JSON, parsed as `value`) may repeat a member name. Every member of the
 * text has one colon; so has every colon inside a string. When the colons are exactly as many as
 * the parsed members, no member was lost to a repeat and none of the colons is in a string: the
 * full scan is needed only otherwise (a repeat, or a string holding a colon, say a time).
 */
function mayRepeatNames (text: string, value: unknown): boolean {
  // An object with two members has a comma.
  if (text.indexOf(',') === -1) return false
  let colons = 0
  for (let at = text.indexOf(':'); at !== -1; at = text.indexOf(':', at + 1)) colons++
  return colons !== memberCount(value)
}

/**
 * The application/json parser: Fastify's own (malformed JSON, an empty body and the poisoning
 * keys are refused as before), given text only once the bytes are valid UTF-8 (Fastify would
 * decode invalid bytes to U+FFFD silently), and refusing an object with a repeated member name
 * (I-JSON, RFC 7493: which value counts would otherwise depend on the parser).
 */
export function strictJsonParser (app: FastifyInstance): FastifyBodyParser<Buffer> {
  const parse = app.getDefaultJsonParser('error', 'error')
  return (request, body, done) => {
    // An empty body sent to a route that declares none (cancelOrder's DELETE) is no body rather
    // than 400: many HTTP clients send `Content-Type: application/json` with every request. A
    // route that takes a body still refuses an empty one.
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) return done(null, undefined)
    if (!isUtf8(body)) return done(new ApiError('invalid_request', 'body is not valid UTF-8'), undefined)
    const text = body.toString('utf8')
    parse(request, text, (error, value) => {
      if (error !== null) return done(error, undefined)
      const name = mayRepeatNames(text, value) ? duplicateMemberName(text) : undefined
      if (name !== undefined) {
        const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name
        return done(new ApiError('invalid_request', `body has the member ${JSON.stringify(shown)} more than once in one object`), undefined)
      }
      done(null, value)
    })
  }
}
