/**
 * Keeps the floor true (issue 23): before anything is measured, each request a workload sends
 * the floor is also sent to the service on the same dataset, and the two answers must agree:
 * the same status, the same header names, the same values (except those that differ by nature:
 * the request id, the rate-limit count and reset, the entity tag of the list, the instance's own
 * address in a Link) and the same body bytes (except the time a placed order was placed).
 */
import { request } from 'node:http'

export interface Probe {
  method: string
  path: string
  body?: string | undefined
  headers: Record<string, string>
}

interface Answer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

/** Headers about the connection, not the answer. */
const IGNORED = new Set(['date', 'connection', 'keep-alive'])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const WHOLE = /^\d+$/
const STRONG_TAG = /^"[A-Za-z0-9_-]{43}(?:-br|-gzip)?"$/
const ORDER_LOCATION = /^\/v1\/store\/orders\/[1-9]\d*$/

function send (baseUrl: string, probe: Probe): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(probe.path, baseUrl)
    const headers = probe.body === undefined ? probe.headers : { ...probe.headers, 'content-length': String(Buffer.byteLength(probe.body)) }
    const req = request(url, { method: probe.method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const answerHeaders: Record<string, string> = {}
        for (const [name, value] of Object.entries(res.headers)) if (!IGNORED.has(name) && value !== undefined) answerHeaders[name] = String(value)
        resolve({ status: res.statusCode ?? 0, headers: answerHeaders, body: Buffer.concat(chunks) })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(probe.body)
  })
}

/** Whether two values of a header agree, given what may differ between two instances. */
function sameValue (name: string, service: string, floor: string, serviceUrl: string, floorUrl: string): boolean {
  if (service === floor) return true
  switch (name) {
    case 'x-request-id': return UUID.test(service) && UUID.test(floor)
    case 'x-ratelimit-remaining':
    case 'x-ratelimit-reset': return WHOLE.test(service) && WHOLE.test(floor)
    case 'etag': return STRONG_TAG.test(service) && STRONG_TAG.test(floor) && service.endsWith('-br"') === floor.endsWith('-br"') && service.endsWith('-gzip"') === floor.endsWith('-gzip"')
    case 'location': return ORDER_LOCATION.test(service) && ORDER_LOCATION.test(floor)
    // The deprecation Link names the instance's own address (its default PUBLIC_BASE_URL).
    case 'link': return service.replaceAll(new URL(serviceUrl).origin, '') === floor.replaceAll(new URL(floorUrl).origin, '')
    default: return false
  }
}

/** A placed order's shipDate is the moment it was placed, which two instances do not share. */
const comparableBody = (probe: Probe, body: Buffer) => probe.method === 'POST'
  ? body.toString('utf8').replace(/"shipDate":"[^"]*"/g, '"shipDate":"…"')
  : body.toString('latin1')

/** Sends each probe to the service, then to the floor; returns what differs (nothing when they agree). */
export async function compareAnswers (serviceUrl: string, floorUrl: string, probes: Probe[]): Promise<string[]> {
  const differences: string[] = []
  for (const probe of probes) {
    const service = await send(serviceUrl, probe)
    const floor = await send(floorUrl, probe)
    const at = `${probe.method} ${probe.path}`
    if (service.status !== floor.status) differences.push(`${at}: status ${service.status} from the service, ${floor.status} from the floor`)
    for (const name of new Set([...Object.keys(service.headers), ...Object.keys(floor.headers)])) {
      const a = service.headers[name]
      const b = floor.headers[name]
      if (a === undefined || b === undefined) differences.push(`${at}: ${name} only from the ${a === undefined ? 'floor' : 'service'} (${a ?? b})`)
      else if (!sameValue(name, a, b, serviceUrl, floorUrl)) differences.push(`${at}: ${name} is ${JSON.stringify(a)} from the service, ${JSON.stringify(b)} from the floor`)
    }
    if (comparableBody(probe, service.body) !== comparableBody(probe, floor.body)) {
      differences.push(`${at}: the bodies differ (${service.body.length} bytes from the service, ${floor.body.length} from the floor): ${service.body.subarray(0, 120).toString()} … / ${floor.body.subarray(0, 120).toString()} …`)
    }
  }
  return differences
}
