import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import type { JsonText } from './json-text.js'

export type OperationId = keyof operations

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : never

export type PathParams<O extends OperationId> =
  operations[O]['parameters'] extends { path: infer P } ? (P extends Record<string, unknown> ? P : undefined) : undefined

export type RequestBody<O extends OperationId> =
  operations[O] extends { requestBody: infer R } ? JsonContent<R> : undefined

/** The body of the operation's 200 response, as openapi.yaml defines it. */
export type SuccessBody<O extends OperationId> =
  operations[O]['responses'] extends { 200: infer R } ? JsonContent<R> : never

/**
 * A handler receives the request typed from the document and returns the success body (or that
 * body as JSON text, validated all the same); errors are thrown as ApiError. The compiler checks
 * the returned shape against openapi.yaml.
 */
export type OperationHandler<O extends OperationId> = (
  request: FastifyRequest<{ Params: PathParams<O>, Body: RequestBody<O> }>,
  reply: FastifyReply
) => Promise<SuccessBody<O> | JsonText<SuccessBody<O>>>

export type HandlerMap = { [O in OperationId]: OperationHandler<O> }
