import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

/** One HTTP/1.1 response as it came off the wire. */
export interface RawResponse {
  status: number
  /** Header names in lower case (a repeated header keeps its last value). */
  headers: Record<string, string>
  body: Buffer
}

/** The length of the first complete response in `data`, with the response, or undefined while it is incomplete. */
export function parseResponse (data: Buffer): { length: number, response: RawResponse } | undefined {
  const headEnd = data.indexOf('\r\n\r\n')
  if (headEnd < 0) return undefined
  const lines = data.subarray(0, headEnd).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1])
  if (!Number.isInteger(status)) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0])}`)
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let at = headEnd + 4
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const chunks: Buffer[] = []
    for (;;) {
      const lineEnd = data.indexOf('\r\n', at)
      if (lineEnd < 0) return undefined
      const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16)
      if (data.length < lineEnd + 2 + size + 2) return undefined
      chunks.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
      at = lineEnd + 2 + size + 2
      if (size === 0) return { length: at, response: { status, headers, body: Buffer.concat(chunks) } }
    }
  }
  const length = Number(headers['content-length'] ?? 0)
  if (data.length < at + length) return undefined
  return { length: at + length, response: { status, headers, body: data.subarray(at, at + length) } }
}

/** Every complete response in `data`, in order, and the bytes after the last one. */
export function parseResponses (data: Buffer): { responses: RawResponse[], rest: Buffer } {
  const responses: RawResponse[] = []
  for (let parsed = parseResponse(data); parsed !== undefined; parsed = parseResponse(data)) {
    responses.push(parsed.response)
    data = data.subarray(parsed.length)
  }
  return { responses, rest: data }
}

export interface RawConnection {
  socket: Socket
  /** Every byte received so far. */
  received (): Buffer
  /** Resolves once `count` complete responses have arrived (rejects if the connection closes first). */
  responses (count: number): Promise<RawResponse[]>
  /** Resolves when the connection has closed, from either side (a reset included). */
  closed: Promise<void>
}

/** A raw TCP connection to an HTTP server, whose every received byte is kept. */
export async function rawConnection (port: number, host = '127.0.0.1'): Promise<RawConnection> {
  const socket = connect(port, host)
  await once(socket, 'connect')
  let data = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]) })
  socket.on('error', () => { /* a reset ends the connection too: closed resolves */ })
  const closed = once(socket, 'close').then(() => undefined)
  let isClosed = false
  void closed.then(() => { isClosed = true })
  return {
    socket,
    received: () => data,
    closed,
    responses: async (count) => {
      for (;;) {
        const { responses } = parseResponses(data)
        if (responses.length >= count) return responses
        if (isClosed) throw new Error(`the connection closed after ${responses.length} of ${count} responses: ${JSON.stringify(data.toString('latin1'))}`)
        await Promise.race([once(socket, 'data'), closed])
      }
    }
  }
}
