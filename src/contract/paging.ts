import { ApiError } from './errors.js'

/**
 * The cursor of listOrders' pages (openapi.yaml): the last id of the page before, as 8 bytes
 * big-endian in base64url (11 characters). Opaque to clients; only a cursor this service gave is
 * accepted, so a changed or made-up one is 400 rather than a page that starts somewhere else.
 */
export function encodeCursor (lastId: number): string {
  const bytes = Buffer.alloc(8)
  bytes.writeBigUInt64BE(BigInt(lastId))
  return bytes.toString('base64url')
}

const CURSOR = /^[A-Za-z0-9_-]{11}$/

export function decodeCursor (cursor: string): number {
  const id = CURSOR.test(cursor) ? Number(Buffer.from(cursor, 'base64url').readBigUInt64BE()) : 0
  // Re-encoding gives the same text only for a cursor made by encodeCursor.
  if (!Number.isSafeInteger(id) || id < 1 || encodeCursor(id) !== cursor) {
    throw new ApiError('invalid_request', 'querystring/cursor is not a cursor this service gave')
  }
  return id
}

/** The `Link` header of the next page: the request's own query with the next cursor (RFC 8288). */
export function nextPageLink (path: string, query: Record<string, string | number | readonly string[] | undefined>, cursor: string): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || name === 'cursor') continue
    if (Array.isArray(value)) for (const item of value) params.append(name, String(item))
    else params.append(name, String(value))
  }
  params.append('cursor', cursor)
  return `<${path}?${params.toString()}>; rel="next"`
}
