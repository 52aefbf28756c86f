import { ApiError } from './errors.js'
import type { OperationHandler, OperationId } from './operation-types.js'

const stubs = new WeakSet<object>()

/**
 * The handler of a generated stub: every request to the operation is answered 501
 * not_implemented, so a new operation of openapi.yaml is routed, validated and documented
 * before its implementation exists.
 */
export function notImplemented<O extends OperationId> (operationId: O): OperationHandler<O> {
  const handler: OperationHandler<O> = async () => {
    throw new ApiError('not_implemented', `operation ${operationId} is not implemented yet`)
  }
  stubs.add(handler)
  return handler
}

/** Whether a handler is still a stub made by notImplemented, for the warning at start. */
export function isNotImplemented (handler: unknown): boolean {
  return typeof handler === 'function' && stubs.has(handler)
}
