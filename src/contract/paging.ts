import { createHmac, timingSafeEqual } from 'node:crypto'
import { ApiError } from './errors.js'

/** What a paged list was asked for besides its place: a cursor is valid only for the same filters. */
export type PageFilters = Readonly<Record<string, string | number | boolean | readonly (string | number)[] | undefined>>

const VERSION = 1
/** Bytes of the signature kept in a cursor: 128 bits, which no one guesses. */
const SIGNATURE_BYTES = 16
const CURSOR_BYTES = 1 + 8 + SIGNATURE_BYTES
const CURSOR = /^[A-Za-z0-9_-]{34}$/

/** The filters as one text, whatever order they were given in; `limit` may change between pages. */
function canonical (filters: PageFilters): string {
  return JSON.stringify(Object.keys(filters).filter((name) => name !== 'limit' && filters[name] !== undefined).sort().map((name) => [name, filters[name]]))
}

/**
 * The cursors of every paged list of the API (openapi.yaml, "Paging"), and the `Link` of the next
 * page. A cursor carries the id the next page starts after, signed (HMAC-SHA256) with a key the
 * database holds for the whole service (src/repositories/service-keys.ts), over the list's name,
 * its filters and that id: every instance, before and after a restart, accepts the cursors the
 * service gave, and refuses one that was made up, edited, or given for another list or other
 * filters (400 invalid_request). 34 base64url characters.
 */
export class Paging {
  constructor (private readonly key: Buffer) {}

  private signature (list: string, filters: PageFilters, lastId: Buffer): Buffer {
    return createHmac('sha256', this.key).update(`${list}\n${canonical(filters)}\n`).update(lastId).digest().subarray(0, SIGNATURE_BYTES)
  }

  /** The cursor of the page after the one that ended with `lastId`. */
  cursor (list: string, filters: PageFilters, lastId: number): string {
    const bytes = Buffer.alloc(CURSOR_BYTES)
    bytes[0] = VERSION
    bytes.writeBigUInt64BE(BigInt(lastId), 1)
    this.signature(list, filters, bytes.subarray(1, 9)).copy(bytes, 9)
    return bytes.toString('base64url')
  }

  /** The id a cursor says its page starts after; undefined without one; 400 for any cursor this service did not give for this list and these filters. */
  after (list: string, filters: PageFilters, cursor: string | undefined): number | undefined {
    if (cursor === undefined) return undefined
    const decoded = CURSOR.test(cursor) ? Buffer.from(cursor, 'base64url') : undefined
    // Only the text this service writes: base64url's last character has bits nothing reads.
    const bytes = decoded?.length === CURSOR_BYTES && decoded.toString('base64url') === cursor ? decoded : undefined
    const id = bytes?.[0] === VERSION ? Number(bytes.readBigUInt64BE(1)) : 0
    if (bytes === undefined || !Number.isSafeInteger(id) || id < 1 ||
      !timingSafeEqual(bytes.subarray(9), this.signature(list, filters, bytes.subarray(1, 9)))) {
      throw new ApiError('invalid_request', 'querystring/cursor is not a cursor this service gave for this list: send back the one of a Link header, with the same filters')
    }
    return id
  }
}

/** The `Link` header of the next page: the request's own query with the next cursor (RFC 8288). */
export function nextPageLink (path: string, query: PageFilters, cursor: string): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || name === 'cursor') continue
    if (Array.isArray(value)) for (const item of value) params.append(name, String(item))
    else params.append(name, String(value))
  }
  params.append('cursor', cursor)
  return `<${path}?${params.toString()}>; rel="next"`
}
