import type { ValidateFunction } from 'ajv'
import { createDocumentAjv, DOCUMENT_SCHEMA_ID } from '../contract/ajv.js'
import type { ApiDocument } from '../contract/document.js'
import type { EventScopes, WebhookEventType } from '../repositories/webhooks.js'

type Json = Record<string, unknown>

/** The events of openapi.yaml's `webhooks`: their types, the scope each needs, and their body's schema. */
export interface WebhookEvents {
  readonly types: readonly WebhookEventType[]
  readonly scopes: EventScopes
  /** Why an event's body breaks its schema in the document, or undefined when it matches. */
  problem (type: string, envelope: unknown): string | undefined
}

/** Reads the document's `webhooks`: one entry per event type, a POST whose body is the event and whose x-scope is the scope subscribing needs. */
export function webhookEvents (document: ApiDocument): WebhookEvents {
  const webhooks = (document.spec.webhooks ?? {}) as Record<string, { post?: Json }>
  const ajv = createDocumentAjv(document.spec)
  const validators = new Map<string, ValidateFunction>()
  const scopes: Record<string, string> = {}
  for (const [type, item] of Object.entries(webhooks)) {
    const scope = item.post?.['x-scope']
    if (typeof scope !== 'string') throw new Error(`openapi.yaml: webhooks/${type} has no x-scope (the scope an endpoint's key needs to receive it)`)
    scopes[type] = scope
    const pointer = `#/webhooks/${type.replace(/~/g, '~0').replace(/\//g, '~1')}/post/requestBody/content/application~1json/schema`
    validators.set(type, ajv.compile({ $ref: `${DOCUMENT_SCHEMA_ID}${pointer}` }))
  }
  return {
    types: Object.keys(scopes) as WebhookEventType[],
    scopes: scopes as EventScopes,
    problem (type, envelope) {
      const validate = validators.get(type)
      if (validate === undefined) return `no event type ${type} in openapi.yaml`
      return validate(envelope) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'event' })
    }
  }
}
