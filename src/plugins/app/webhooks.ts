import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../../contract/errors.js'
import { deliveryQueue } from '../../repositories/webhook-deliveries.js'
import type { WebhookEventType } from '../../repositories/webhooks.js'
import type { ApiKeyRecord } from '../../store/types.js'
import { isPublicAddress, urlProblem } from '../../webhooks/addresses.js'
import { DeliveryWorker } from '../../webhooks/delivery.js'

export interface WebhooksOptions {
  now: () => number
  timeoutMs: number
  retrySchedule: readonly number[]
  allowPrivate: boolean
}

/** What the webhook handlers check before they write (decorated as app.webhookRules). */
export interface WebhookRules {
  /** 400 unless `url` may receive webhooks: https to a public host (any http(s) address with WEBHOOK_ALLOW_PRIVATE). */
  checkUrl (url: string): Promise<void>
  /** 403 unless the key holds the scope of every event type (each webhook's x-scope in openapi.yaml). */
  checkScopes (apiKey: ApiKeyRecord, events: readonly WebhookEventType[]): void
}

/**
 * Webhooks beyond their repository: the rules an endpoint's address and events must follow, and
 * the delivery of the outbox's events (src/webhooks/delivery.ts), started with the app and
 * stopped (after the attempts under way) when it closes.
 */
async function webhooks (app: FastifyInstance, options: WebhooksOptions) {
  const events = app.webhookEvents
  const rules: WebhookRules = {
    async checkUrl (url) {
      const problem = urlProblem(url, options.allowPrivate)
      if (problem !== undefined) throw new ApiError('invalid_request', `body/url ${problem}`)
      if (options.allowPrivate) return
      // A host name is resolved now too: a name of a private address is refused at once (and
      // again at every delivery, against the address connected to).
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
      if (isIP(host) !== 0) return
      let addresses: { address: string }[]
      try {
        addresses = await lookup(host, { all: true })
      } catch {
        throw new ApiError('invalid_request', `body/url must name a host that resolves: ${host} does not`)
      }
      const refused = addresses.find((entry) => !isPublicAddress(entry.address))
      if (refused !== undefined) throw new ApiError('invalid_request', `body/url must be an https address of a public host: ${host} resolves to ${refused.address}`)
    },
    checkScopes (apiKey, types) {
      for (const type of types) {
        const scope = events.scopes[type]
        if (!apiKey.scopes.includes(scope)) {
          throw new ApiError('insufficient_scope', `the API key lacks the scope ${scope}, which receiving ${type} needs`,
            { 'www-authenticate': `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"` })
        }
      }
    }
  }
  app.decorate('webhookRules', rules)

  const queue = deliveryQueue(app.store)
  app.metrics?.webhookQueue(() => queue.pending())
  const worker = new DeliveryWorker({
    queue,
    events,
    box: app.webhookSecrets,
    timeoutMs: options.timeoutMs,
    retrySchedule: options.retrySchedule,
    allowPrivate: options.allowPrivate,
    now: options.now,
    log: app.log.child({ component: 'webhooks' }),
    metrics: app.metrics
  })
  app.addHook('onReady', async () => { worker.start() })
  // preClose: before the store closes (its onClose), the attempts under way are settled.
  app.addHook('preClose', async () => { await worker.close() })
}

declare module 'fastify' {
  interface FastifyInstance {
    webhookRules: WebhookRules
  }
}

export default fp(webhooks, { name: 'webhooks', dependencies: ['repositories', 'storage'] })
