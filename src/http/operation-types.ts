import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import type { JsonText } from './json-text.js'

export type OperationId = keyof operations

type Responses<O extends OperationId> = operations[O]['responses']

/** A response's JSON body; `undefined` when it has none (a 204, say). */
type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : undefined

/** A declared parameter group (`path`, `query`, `header`); an empty record when there is none. */
type ParameterGroup<O extends OperationId, In extends 'path' | 'query' | 'header'> =
  [NonNullable<operations[O]['parameters'][In]>] extends [never]
    ? Record<string, never>
    : NonNullable<operations[O]['parameters'][In]>

export type PathParams<O extends OperationId> = ParameterGroup<O, 'path'>
export type QueryParams<O extends OperationId> = ParameterGroup<O, 'query'>

/** Header parameters under the names Node gives them: lower case (header names are case-insensitive). */
export type HeaderParams<O extends OperationId> = {
  [K in keyof ParameterGroup<O, 'header'> as K extends string ? Lowercase<K> : K]: ParameterGroup<O, 'header'>[K]
}

export type RequestBody<O extends OperationId> =
  operations[O] extends { requestBody?: infer R } ? ([R] extends [never] ? undefined : JsonContent<NonNullable<R>>) : undefined

// The 2xx codes in ascending order, so that the lowest declared one can be found.
type SuccessCodes = [200, 201, 202, 203, 204, 205, 206, 207, 208, 226]
type LowestDeclared<Keys, Codes extends unknown[]> =
  Codes extends [infer Code, ...infer Rest] ? (Code extends Keys ? Code : LowestDeclared<Keys, Rest>) : ('2XX' extends Keys ? '2XX' : never)

/** The status a handler's returned body is sent with: the operation's lowest declared 2xx (see successStatus). */
export type SuccessCode<O extends OperationId> = LowestDeclared<keyof Responses<O>, SuccessCodes>

/** The body of the operation's success response, as openapi.yaml defines it (`undefined` when it has none). */
export type SuccessBody<O extends OperationId> = JsonContent<Responses<O>[SuccessCode<O> & keyof Responses<O>]>

/**
 * Every declared status with its body, keyed as Fastify's `Reply` generic expects (200, or '4xx'
 * for a range): `reply.code(N).send(body)` is then checked against status N's schema, and a
 * status the operation does not declare is refused. `default` has no place there and is left out.
 */
export type ReplyBodies<O extends OperationId> = {
  [K in keyof Responses<O> as K extends number ? K : K extends `${infer D extends 1 | 2 | 3 | 4 | 5}XX` ? `${D}xx` : never]:
    JsonContent<Responses<O>[K]> extends infer B ? ([B] extends [undefined] ? undefined : B | JsonText<B>) : never
}

export interface OperationRoute<O extends OperationId> {
  Params: PathParams<O>
  Querystring: QueryParams<O>
  Headers: HeaderParams<O>
  Body: RequestBody<O>
  Reply: ReplyBodies<O>
}

export type OperationRequest<O extends OperationId> = FastifyRequest<OperationRoute<O>>
export type OperationReply<O extends OperationId> = FastifyReply<OperationRoute<O>>

/** What a handler may return: the success body (or that body as JSON text), never for a success without body. */
type SuccessResult<O extends OperationId> = [SuccessBody<O>] extends [undefined] ? never : SuccessBody<O> | JsonText<SuccessBody<O>>

/**
 * A handler receives the request typed from the document and returns the success body (sent with
 * the success status), or answers any other declared status with `return reply.code(N).send(body)`
 * (`return reply.code(204).send()` for one without body). Errors are thrown as ApiError. The
 * compiler checks every body against openapi.yaml, and the serializer checks it again at run time.
 */
export type OperationHandler<O extends OperationId> = (
  request: OperationRequest<O>,
  reply: OperationReply<O>
) => Promise<SuccessResult<O> | OperationReply<O>>

export type HandlerMap = { [O in OperationId]: OperationHandler<O> }

/**
 * The status a handler's returned body is sent with, from the operation's declared response
 * codes: its lowest 2xx, as SuccessCode computes it for the compiler (Fastify would send 200).
 */
export function successStatus (responseCodes: Iterable<string>): number {
  const codes = [...responseCodes]
  const declared = codes.map(Number).filter((code) => Number.isInteger(code) && code >= 200 && code < 300)
  return declared.length > 0 ? Math.min(...declared) : 200
}
