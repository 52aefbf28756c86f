/**
 * Compiled by `npm run typecheck`, never run: each `@ts-expect-error` line must be a compile
 * error (tsc fails on one that is not), and every other line must compile. The operations are
 * test/types/fixture.yaml's, as openapi-typescript writes them (fixture-openapi.ts), plus the
 * project's own (src/generated/openapi.ts).
 *
 * A wrong argument is reported where it is written; a wrong returned value is reported on the
 * handler's declaration (its return type is inferred, then compared), so each of those has a
 * handler of its own that does nothing else.
 */
import type { ErrorBody } from '../../src/contract/errors.js'
import { JsonText } from '../../src/contract/json-text.js'
import type { HandlerOf, OperationHandler } from '../../src/contract/operation-types.js'
import type { components, operations } from './fixture-openapi.js'

type Order = components['schemas']['Order']
type Problem = components['schemas']['Problem']
declare const order: Order
declare const problem: Problem

// POST /orders: 201 Order (the success), 202 {queued}, 404 and 4XX Problem, a default; a boolean query parameter.
export const createOrder: HandlerOf<operations['createOrder']> = async (request, reply) => {
  const dryRun: boolean = request.query.dryRun
  const quantity: number = request.body.quantity
  // @ts-expect-error the query parameter is a boolean, not text
  const asText: string = request.query.dryRun
  // @ts-expect-error the body has no such property
  void request.body.price
  void [asText, quantity]

  if (dryRun) return reply.code(202).send({ queued: true })
  if (quantity === 0) return reply.code(404).send(problem)
  if (quantity === 1) return reply.code(418).send(problem) // within the declared 4XX
  if (quantity === 2) return new JsonText<Order>('{"id":1,"quantity":2,"status":"placed"}')
  // @ts-expect-error a body of another status (the 201 Order sent as the 202)
  if (quantity === 3) return reply.code(202).send(order)
  // @ts-expect-error a status the operation does not declare (its `default` does not make any status allowed)
  if (quantity === 4) return reply.code(500).send(problem)
  return order
}

// GET /orders: an array query parameter of an enum, an integer one; 200 and 400 only.
export const listOrders: HandlerOf<operations['listOrders']> = async (request, reply) => {
  const statuses: ('placed' | 'delivered')[] | undefined = request.query.status
  const limit: number | undefined = request.query.limit
  // @ts-expect-error an array parameter is a list, not one value
  const one: 'placed' | 'delivered' | undefined = request.query.status
  // @ts-expect-error an undeclared query parameter
  void request.query.offset
  void [one, limit]
  if (statuses === undefined) return reply.code(400).send(problem)
  // @ts-expect-error 404 is not declared here
  if (statuses.length === 0) return reply.code(404).send(problem)
  return [order]
}

// DELETE /orders/{orderId}: 204 without body, header parameters (read in lower case), a path parameter.
export const deleteOrder: HandlerOf<operations['deleteOrder']> = async (request, reply) => {
  const orderId: number = request.params.orderId
  const ifMatch: string = request.headers['if-match']
  const attempt: number | undefined = request.headers['x-attempt']
  // @ts-expect-error the path parameter is a number
  const idText: string = request.params.orderId
  void [ifMatch, attempt, idText]
  if (orderId === 0) return reply.code(404).send(problem)
  // @ts-expect-error a 204 has no body
  if (orderId === 1) return reply.code(204).send(order)
  return reply.code(204).send()
}

// The project's own operations, from openapi.yaml.
export const getPetById: OperationHandler<'getPetById'> = async (request, reply) => {
  const petId: number = request.params.petId
  const notFound: ErrorBody = { code: 'not_found', message: `no pet with id ${petId}`, status: 404 }
  if (petId === 1) return reply.code(404).send(notFound)
  // @ts-expect-error getPetById declares no 201
  if (petId === 2) return reply.code(201).send(notFound)
  const pet = await request.server.petsRepository.get(petId)
  // @ts-expect-error the Error body sent as the 200
  if (pet === undefined) return reply.code(200).send(notFound)
  return reply.code(200).send(pet)
}

export const listInventory: OperationHandler<'listInventory'> = async (request) => {
  // @ts-expect-error listInventory declares no query parameter
  void request.query.limit
  return []
}

// Wrong returned values, one per handler.
// @ts-expect-error the 404 body returned as the success body
export const returnsProblem: HandlerOf<operations['createOrder']> = async () => problem
// @ts-expect-error JSON text of another body
export const returnsOtherText: HandlerOf<operations['createOrder']> = async () => new JsonText<Problem>('{}')
// @ts-expect-error the 202 body is not the success (the lowest declared 2xx, 201) body
export const returnsAccepted: HandlerOf<operations['createOrder']> = async () => ({ queued: true })
// @ts-expect-error one item where the success body is a list
export const returnsItem: HandlerOf<operations['listOrders']> = async () => order
// @ts-expect-error a 204 success has no body: nothing may be returned but the reply
export const returnsBodyFor204: HandlerOf<operations['deleteOrder']> = async () => order
// @ts-expect-error the Error body is not a Pet
export const returnsErrorAsPet: OperationHandler<'getPetById'> = async () => ({ code: 'not_found', message: 'no pet', status: 404 }) satisfies ErrorBody
