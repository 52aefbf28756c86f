import type { Response as InjectResponse } from 'light-my-request'

/** The assertions these helpers use, so they accept any tap Test without depending on its types. */
export interface Asserts {
  equal (found: unknown, wanted: unknown, message: string): boolean
  same (found: unknown, wanted: unknown, message: string): boolean
  match (found: unknown, pattern: unknown, message: string): boolean
}

type ResponseLike = Pick<InjectResponse, 'statusCode' | 'headers' | 'body'>

/**
 * An error response: the HTTP status, exactly the Error body {code, message, status} with that
 * code and status, and a message free of stack traces. Returns the body for further checks.
 */
export function expectError (t: Asserts, res: ResponseLike, status: number, code: string, name = `${status} ${code}`): { code: string, message: string, status: number } {
  t.equal(res.statusCode, status, `${name}: HTTP ${status}`)
  t.match(String(res.headers['content-type']), /^application\/json/, `${name}: JSON`)
  const body = JSON.parse(res.body) as { code: string, message: string, status: number }
  t.same(Object.keys(body).sort(), ['code', 'message', 'status'], `${name}: exactly {code, message, status}`)
  t.equal(body.code, code, `${name}: code ${code}`)
  t.equal(body.status, status, `${name}: status ${status} in the body`)
  t.equal(typeof body.message === 'string' && body.message.length > 0, true, `${name}: a message`)
  return body
}

/** A 401 as openapi.yaml describes it (Unauthorized): the Error body and an RFC 6750 `WWW-Authenticate: Bearer` challenge. */
export function expectUnauthorized (t: Asserts, res: ResponseLike, name = '401'): void {
  expectError(t, res, 401, 'unauthorized', name)
  t.match(String(res.headers['www-authenticate']), /^Bearer( |$)/, `${name}: WWW-Authenticate: Bearer`)
}
