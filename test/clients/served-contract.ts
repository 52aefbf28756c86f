/**
 * What the client tests check every call against: the document the server serves (/openapi.json),
 * read as an outsider reads it. The status is one the operation declares, the body is valid
 * against that response's schema (or absent when it declares none), and every header the response
 * declares is there (unless `required: false`) with a value its schema accepts. A webhook the
 * server sends is checked against the document's `webhooks` the same way.
 */
import type { Test } from 'tap'
import { createDocumentAjv, DOCUMENT_SCHEMA_ID } from '../../src/contract/ajv.js'
import { issueApiKey } from '../../src/repositories/api-keys.js'
import { createStore } from '../../src/store/create-store.js'

type Json = Record<string, unknown>
export type ServedDocument = Json & { paths: Record<string, Record<string, Json>> }

export interface ServedOperation {
  method: string
  path: string
  /** Its JSON pointer in the served document. */
  pointer: string
  definition: Json
  /** The scope its security requirement names. */
  scope: string | undefined
}

/** What a client got back, in the form the tests compare. */
export interface CheckedCall { what: string, status: number, headers: Record<string, string> }

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'])
const escape = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1')

export class ServedContract {
  readonly operations = new Map<string, ServedOperation>()
  /** The scopes a key can hold: bearerAuth's x-scopes. */
  readonly scopes: string[]
  readonly ajv
  constructor (readonly served: ServedDocument) {
    this.ajv = createDocumentAjv(served)
    const bearerAuth = ((served.components as Json | undefined)?.securitySchemes as Record<string, Json> | undefined)?.bearerAuth
    this.scopes = Object.keys((bearerAuth?.['x-scopes'] ?? {}) as Json)
    for (const [path, item] of Object.entries(served.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!HTTP_METHODS.has(method)) continue
        const scopes = ((operation.security as Json[] | undefined)?.[0]?.bearerAuth as string[] | undefined)
        this.operations.set(String(operation.operationId), {
          method: method.toUpperCase(),
          path,
          pointer: `/paths/${escape(path)}/${method}`,
          definition: operation,
          scope: scopes?.length === 1 ? scopes[0] : undefined
        })
      }
    }
  }

  /** What a $ref points to, with its JSON pointer (ajv resolves the $refs inside from there). */
  private resolve (value: Json, pointer: string): [Json, string] {
    if (typeof value.$ref !== 'string') return [value, pointer]
    const target = value.$ref.slice(2).split('/').reduce<Json>((node, part) => node[part.replaceAll('~1', '/').replaceAll('~0', '~')] as Json, this.served)
    return this.resolve(target, value.$ref.slice(1))
  }

  private validator (pointer: string) {
    return this.ajv.getSchema(`${DOCUMENT_SCHEMA_ID}#${pointer}`)!
  }

  /**
   * Checks one call of `operationId`: its status, its body (`noBody`: what the client gives for a
   * response without one) and the declared headers. Answers whether the response has a JSON body,
   * or undefined when the status is not declared.
   */
  check (t: Test, operationId: string, call: CheckedCall, body: unknown, noBody: unknown = undefined): 'json' | 'none' | undefined {
    const operation = this.operations.get(operationId)
    const what = `${operationId}, ${call.what}: ${call.status}`
    const declared = (operation?.definition.responses as Record<string, Json> | undefined)?.[String(call.status)]
    if (operation === undefined || declared === undefined) {
      t.fail(`${what} is not a response the document declares`)
      return undefined
    }
    const [response, at] = this.resolve(declared, `${operation.pointer}/responses/${call.status}`)
    const schema = (response.content as Record<string, { schema: Json }> | undefined)?.['application/json']?.schema
    if (schema === undefined) {
      t.same(body, noBody, `${what}: no body, and the client says none`)
    } else {
      const validate = this.validator(`${at}/content/application~1json/schema`)
      t.ok(validate(body), `${what}: the body the client returns is valid against the response's schema ${this.ajv.errorsText(validate.errors)}`)
    }
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      const value = call.headers[name.toLowerCase()]
      const [definition, headerAt] = this.resolve(header, `${at}/headers/${name}`)
      // Optional headers (`required: false`: Link on a last page, Idempotent-Replayed on a first answer) are checked when sent.
      if (value === undefined && definition.required === false) continue
      const parsed = (definition.schema as Json).type === 'integer' && value !== undefined && /^-?[0-9]+$/.test(value) ? Number(value) : value
      const validate = this.validator(`${headerAt}/schema`)
      t.ok(value !== undefined && validate(parsed), `${what}: header ${name} is there and valid (${String(value)})`)
    }
    return schema === undefined ? 'none' : 'json'
  }

  /**
   * Checks one webhook the server sent: a JSON body valid against the request body of the
   * document's `webhooks` entry for its `type`, and the header parameters that entry declares,
   * each there and valid.
   */
  checkEvent (t: Test, event: { headers: Record<string, string>, body: unknown }): void {
    const type = String((event.body as Json | null)?.type)
    const webhook = (this.served.webhooks as Record<string, Record<string, Json>> | undefined)?.[type]?.post
    if (webhook === undefined) {
      t.fail(`an event of type ${type}, which the document's webhooks do not declare`)
      return
    }
    const pointer = `/webhooks/${escape(type)}/post`
    t.match(event.headers['content-type'], /^application\/json(;|$)/, `${type} event: sent as application/json`)
    const [body, at] = this.resolve(webhook.requestBody as Json, `${pointer}/requestBody`)
    if ((body.content as Json | undefined)?.['application/json'] === undefined) t.fail(`${type}: the document declares no JSON body`)
    const validate = this.validator(`${at}/content/application~1json/schema`)
    t.ok(validate(event.body), `${type} event: the body is valid against its schema in the document's webhooks ${this.ajv.errorsText(validate.errors)}`)
    for (const [i, parameter] of ((webhook.parameters ?? []) as Json[]).entries()) {
      const [definition, parameterAt] = this.resolve(parameter, `${pointer}/parameters/${i}`)
      if (definition.in !== 'header') continue
      const value = event.headers[String(definition.name).toLowerCase()]
      const validateHeader = this.validator(`${parameterAt}/schema`)
      t.ok(value !== undefined && validateHeader(value), `${type} event: header ${String(definition.name)} is there and valid (${String(value)})`)
    }
  }

  /** The body and challenge of a 403 for a key without the operation's scope, as the document names that scope. */
  insufficientScope (operationId: string): { body: Json, challenge: string } {
    const scope = this.operations.get(operationId)?.scope
    return {
      body: { code: 'insufficient_scope', message: `the API key lacks the scope ${String(scope)}, which ${operationId} needs`, status: 403 },
      challenge: `Bearer realm="petstore", error="insufficient_scope", scope="${String(scope)}"`
    }
  }
}

/** A key holding exactly `scopes`, written into the server's database; enterprise, with limits no test reaches. */
export async function scopedKey (databaseUrl: string, name: string, scopes: readonly string[]): Promise<string> {
  const store = await createStore(databaseUrl)
  try {
    await store.migrate()
    const { secret } = await issueApiKey(store, { name, plan: 'enterprise', perMinute: 10_000_000, perDay: 100_000_000, scopes })
    return secret
  } finally {
    await store.close()
  }
}
