/** Every error code of the API with its HTTP status; openapi.yaml lists the same codes. */
export const errorStatus = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  insufficient_stock: 409,
  invalid_transition: 409,
  idempotency_key_in_use: 409,
  out_of_range: 409,
  already_exists: 409,
  invalid_reference: 409,
  limit_exceeded: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  api_key_banned: 429,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503
} as const

export type ErrorCode = keyof typeof errorStatus

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
}

/** An error the API answers with as it is: its message is meant for the client. */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly statusCode: number
  readonly headers: Record<string, string>

  constructor (readonly code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.statusCode = errorStatus[code]
    this.headers = headers
  }

  toBody (): ErrorBody {
    return { code: this.code, message: this.message, status: this.statusCode }
  }
}

export const notFound = (message: string) => new ApiError('not_found', message)

/**
 * A write the database refused for one of its constraints: a bound (`out_of_range`), a
 * uniqueness (`already_exists`) or a reference (`invalid_reference`). The request's own doing,
 * answered 409 with the Error body; `cause` is the database's error, `constraint` its name when
 * the database gives one.
 */
export class ConstraintViolation extends ApiError {
  override name = 'ConstraintViolation'

  constructor (code: 'out_of_range' | 'already_exists' | 'invalid_reference', message: string, readonly constraint: string | undefined, options: { cause: unknown }) {
    super(code, message)
    this.cause = options.cause
  }
}

/** The storage could not be reached in time; the client may retry. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError'
  readonly statusCode = 503
}

/** A handler produced a body outside its schema in openapi.yaml: a bug, answered as 500. */
export class ResponseValidationError extends Error {
  override name = 'ResponseValidationError'
  readonly statusCode = 500
}
