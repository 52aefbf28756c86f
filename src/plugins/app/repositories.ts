import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { apiKeysRepository, type ApiKeysRepository } from '../../repositories/api-keys.js'
import { idempotencyRepository, type IdempotencyRepository } from '../../repositories/idempotency.js'
import { inventoryRepository, type InventoryRepository } from '../../repositories/inventory.js'
import { ordersRepository, type OrdersRepository } from '../../repositories/orders.js'
import { petsRepository, type PetsRepository } from '../../repositories/pets.js'
import { serviceKey } from '../../repositories/service-keys.js'
import { Paging } from '../../contract/paging.js'
import { webhooksRepository, type WebhooksRepository } from '../../repositories/webhooks.js'
import { webhookEvents, type WebhookEvents } from '../../webhooks/events.js'
import { SecretBox } from '../../webhooks/secrets.js'

export interface RepositoriesOptions {
  now: () => number
  /** WEBHOOK_ENCRYPTION_KEY: the webhook secrets are stored encrypted with it. */
  webhookEncryptionKey: Buffer | undefined
  /** How often expired Idempotency-Key records are removed. */
  sweepIntervalMs?: number | undefined
}

const SWEEP_INTERVAL_MS = 10 * 60_000

/**
 * One repository per resource, fastify/demo style, decorated once over the store the storage
 * plugin opened: handlers use the repositories they need and never see an engine.
 */
async function repositories (app: FastifyInstance, options: RepositoriesOptions) {
  const { store } = app
  const idempotency = idempotencyRepository(store)
  // The events of openapi.yaml's webhooks, which changes record (the transactional outbox).
  const events = webhookEvents(app.apiDocument)
  const box = new SecretBox(options.webhookEncryptionKey)
  if (!box.encrypting) app.log.warn('WEBHOOK_ENCRYPTION_KEY is not set: webhook signing secrets are stored as they are (docs/administration.md, "Webhooks")')
  const webhooks = webhooksRepository(store, box, options.now)
  // A key that cannot open the stored secrets stops the start (one line, exit 1), rather than
  // failing every delivery.
  await webhooks.checkSecretsOpen()
  app.decorate('apiKeysRepository', apiKeysRepository(store))
  app.decorate('inventoryRepository', inventoryRepository(store, events.scopes, options.now))
  app.decorate('petsRepository', petsRepository(store))
  app.decorate('ordersRepository', ordersRepository(store, idempotency, options.now, events.scopes))
  app.decorate('idempotencyRepository', idempotency)
  app.decorate('webhooksRepository', webhooks)
  app.decorate('webhookEvents', events)
  app.decorate('webhookSecrets', box)
  app.decorate('paging', new Paging(await serviceKey(store, 'cursor')))

  // Idempotency-Key records last 24 hours; a sweep removes the expired ones, so the table holds
  // at most a day of them. A failed sweep (storage down) is tried again at the next one.
  // So does the webhook delivery log after 30 days.
  const sweep = () => {
    idempotency.sweep(options.now()).then((removed) => {
      if (removed > 0) app.log.debug({ removed }, 'expired Idempotency-Key records removed')
    }, (error: unknown) => { app.log.warn({ err: error }, 'could not remove expired Idempotency-Key records') })
    webhooks.sweep(options.now()).then((removed) => {
      if (removed > 0) app.log.debug({ removed }, 'webhook delivery log older than 30 days removed')
    }, (error: unknown) => { app.log.warn({ err: error }, 'could not remove the old webhook delivery log') })
  }
  const timer = setInterval(sweep, options.sweepIntervalMs ?? SWEEP_INTERVAL_MS).unref()
  app.addHook('onClose', async () => { clearInterval(timer) })
}

declare module 'fastify' {
  interface FastifyInstance {
    apiKeysRepository: ApiKeysRepository
    inventoryRepository: InventoryRepository
    petsRepository: PetsRepository
    ordersRepository: OrdersRepository
    idempotencyRepository: IdempotencyRepository
    webhooksRepository: WebhooksRepository
    /** The events of openapi.yaml's webhooks: types, scopes, schemas (src/webhooks/events.ts). */
    webhookEvents: WebhookEvents
    /** How webhook secrets are stored (sealed with WEBHOOK_ENCRYPTION_KEY when it is set). */
    webhookSecrets: SecretBox
    /** The cursors of paged lists, signed with the service's cursor key (src/contract/paging.ts). */
    paging: Paging
  }
}

export default fp(repositories, { name: 'repositories', dependencies: ['storage'] })
