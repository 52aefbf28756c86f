/**
 * Keeps the floor true to the service: the first request of each workload is sent to both, each on
 * a fresh copy of one dataset, and their answers must agree in status, header names, header
 * values (but those that differ between two instances by nature) and body bytes.
 */
import { request as httpRequest } from 'node:http'
import type { Request } from './load.js'

export interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** About the connection, not the answer. */
const IGNORED = new Set(['date', 'connection', 'keep-alive'])
/**
 * Values that differ between two instances: the request id, the limiter's count and reset (the
 * floor and the service may count the set-up's requests apart), the entity tag (each hashes its own
 * way), the instance's own address in the deprecation Link.
 */
const VOLATILE = new Set(['x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'etag', 'link'])

export function ask (baseUrl: string, request: Request, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const all = request.body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(request.body)) }
    const req = httpRequest(new URL(request.path, baseUrl), { method: request.method, headers: all }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const answerHeaders: Record<string, string> = {}
        for (const [name, value] of Object.entries(res.headers)) if (!IGNORED.has(name) && value !== undefined) answerHeaders[name] = String(value)
        // A placed order's shipDate is the moment each instance placed it.
        resolve({ status: res.statusCode ?? 0, headers: answerHeaders, body: Buffer.concat(chunks).toString('utf8').replace(/"shipDate":"[^"]*"/g, '"shipDate":"…"') })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(request.body)
  })
}

/** What differs between the service's answer and the floor's; empty when they agree. */
export function differences (service: Answer, floor: Answer): string[] {
  const found: string[] = []
  if (service.status !== floor.status) found.push(`status ${service.status} from the service, ${floor.status} from the floor`)
  for (const name of new Set([...Object.keys(service.headers), ...Object.keys(floor.headers)])) {
    const a = service.headers[name]
    const b = floor.headers[name]
    if (a === undefined || b === undefined) found.push(`${name} only from the ${a === undefined ? 'floor' : 'service'} (${a ?? b})`)
    else if (a !== b && !VOLATILE.has(name)) found.push(`${name} is ${JSON.stringify(a)} from the service, ${JSON.stringify(b)} from the floor`)
  }
  if (service.body !== floor.body) found.push(`the bodies differ: ${service.body.slice(0, 120)} … / ${floor.body.slice(0, 120)} …`)
  return found
}
