import { Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http'
import type { Response as InjectResponse } from 'light-my-request'
import { checkResponse } from './contract.js'

export interface ProcessAnswer {
  status: number
  headers: IncomingHttpHeaders
  text: string
  json<T = unknown> (): T
}

export interface ProcessClient {
  /** One request with the key; the answer is checked against openapi.yaml (checkResponse throws when it breaks it). */
  request (method: string, path: string, body?: unknown): Promise<ProcessAnswer>
  close (): void
}

/**
 * A client of a real server process, over keep-alive connections of its own, whose every answer
 * goes through the same openapi.yaml check as buildTestApp's injected ones. It sends no
 * Accept-Encoding, so bodies come as they are (the check reads them as sent).
 */
export function processClient (baseUrl: string, key: string, sockets = 16): ProcessClient {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets })
  return {
    request: (method, path, body) => new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const headers: Record<string, string> = { authorization: `Bearer ${key}` }
      if (payload !== undefined) headers['content-type'] = 'application/json'
      const req = httpRequest(new URL(path, baseUrl), { method, headers, agent }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('error', reject)
        res.on('end', () => {
          const raw = Buffer.concat(chunks)
          const text = raw.toString('utf8')
          // The shape checkResponse reads of light-my-request's answers.
          const shaped = { statusCode: res.statusCode!, headers: res.headers, body: text, rawPayload: raw, raw: { req: { headers } } }
          try {
            checkResponse(method, path, shaped as unknown as InjectResponse)
          } catch (error) {
            reject(error as Error)
            return
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json: <T>() => JSON.parse(text) as T })
        })
      })
      req.on('error', reject)
      req.end(payload)
    }),
    close: () => { agent.destroy() }
  }
}
