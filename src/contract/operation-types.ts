import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations, webhooks } from '../generated/openapi.js'
import type { JsonText } from './json-text.js'

/** The operations the service answers: those of `paths` (the `webhooks` are what it sends). */
export type OperationId = Exclude<keyof operations, WebhookOperationId>

/** The operationIds of the document's `webhooks`: requests the service sends, not ones it answers. */
type WebhookOperationId = { [E in keyof webhooks]: webhooks[E] extends { post: infer O } ? { [K in keyof operations]: operations[K] extends O ? (O extends operations[K] ? K : never) : never }[keyof operations] : never }[keyof webhooks]

/** An operation as openapi-typescript writes it in src/generated/openapi.ts. */
export interface OperationShape {
  parameters: { query?: unknown, header?: unknown, path?: unknown }
  requestBody?: unknown
  responses: object
}

/** A response's JSON body; `undefined` when it has none (a 204, say). */
type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : undefined

/** A declared parameter group (`path`, `query`, `header`); undefined when there is none (Fastify then types it unknown). */
type ParameterGroup<Op extends OperationShape, In extends 'path' | 'query' | 'header'> =
  [NonNullable<Op['parameters'][In]>] extends [never] ? undefined : NonNullable<Op['parameters'][In]>

type BodyOf<Op extends OperationShape> =
  Op extends { requestBody?: infer R } ? ([NonNullable<R>] extends [never] ? undefined : JsonContent<NonNullable<R>>) : undefined

// The 2xx codes in ascending order, so that the lowest declared one can be found.
type SuccessCodes = [200, 201, 202, 203, 204, 205, 206, 207, 208, 226]
type LowestDeclared<Keys, Codes extends unknown[]> =
  Codes extends [infer Code, ...infer Rest] ? (Code extends Keys ? Code : LowestDeclared<Keys, Rest>) : ('2XX' extends Keys ? '2XX' : never)

/** The body of the operation's lowest declared 2xx response (`undefined` when it has none). */
type SuccessBodyOf<Op extends OperationShape> =
  JsonContent<Op['responses'][LowestDeclared<keyof Op['responses'], SuccessCodes> & keyof Op['responses']]>

/**
 * Every declared status with its body, keyed as Fastify's `Reply` generic expects (200, or '4xx'
 * for a range): `reply.code(N).send(body)` is then checked against status N's schema, and a
 * status the operation does not declare is refused. `default` has no place there and is left out.
 */
type ReplyBodiesOf<Op extends OperationShape> = {
  [K in keyof Op['responses'] as K extends number ? K : K extends `${infer D extends 1 | 2 | 3 | 4 | 5}XX` ? `${D}xx` : never]:
    JsonContent<Op['responses'][K]> extends infer B ? ([B] extends [undefined] ? NoBody : B | JsonText<B>) : never
}

// A status without body: `send()` takes nothing. (Fastify reads a Reply type without keys, such
// as undefined, as "anything goes"; this one has a key no value can fill, and is void besides.)
declare const noBody: unique symbol
type NoBody = void & { readonly [noBody]?: never }

/** Fastify's route generic for an operation: what its request holds and what its reply may send. */
export interface RouteOf<Op extends OperationShape> {
  Params: ParameterGroup<Op, 'path'>
  Querystring: ParameterGroup<Op, 'query'>
  // Fastify's request type lower-cases these names, as Node does with the headers received.
  Headers: ParameterGroup<Op, 'header'>
  Body: BodyOf<Op>
  Reply: ReplyBodiesOf<Op>
}

/** What a handler may return: the success body (or that body as JSON text); nothing when the success has no body. */
type SuccessResultOf<Op extends OperationShape> =
  [SuccessBodyOf<Op>] extends [undefined] ? never : SuccessBodyOf<Op> | JsonText<SuccessBodyOf<Op>>

/**
 * A handler receives the request typed from the document and returns the success body (sent with
 * the success status), or answers any other declared status with `return reply.code(N).send(body)`
 * (`return reply.code(204).send()` for one without body). Errors are thrown as ApiError. The
 * compiler checks every body against openapi.yaml, and the serializer checks it again at run time.
 */
export type HandlerOf<Op extends OperationShape> = (
  request: FastifyRequest<RouteOf<Op>>,
  reply: FastifyReply<RouteOf<Op>>
) => Promise<SuccessResultOf<Op> | FastifyReply<RouteOf<Op>>>

export type OperationHandler<O extends OperationId> = HandlerOf<operations[O]>
export type HandlerMap = { [O in OperationId]: OperationHandler<O> }

export type PathParams<O extends OperationId> = RouteOf<operations[O]>['Params']
export type QueryParams<O extends OperationId> = RouteOf<operations[O]>['Querystring']
export type HeaderParams<O extends OperationId> = RouteOf<operations[O]>['Headers']
export type RequestBody<O extends OperationId> = RouteOf<operations[O]>['Body']
export type SuccessBody<O extends OperationId> = SuccessBodyOf<operations[O]>

/**
 * The status a handler's returned body is sent with, from the operation's declared response
 * codes: its lowest 2xx, the one whose body SuccessBody types (Fastify would send 200).
 */
export function successStatus (responseCodes: Iterable<string>): number {
  const declared = [...responseCodes].map(Number).filter((code) => Number.isInteger(code) && code >= 200 && code < 300)
  return declared.length > 0 ? Math.min(...declared) : 200
}
