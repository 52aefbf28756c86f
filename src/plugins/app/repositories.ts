import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { apiKeysRepository, type ApiKeysRepository } from '../../repositories/api-keys.js'
import { idempotencyRepository, type IdempotencyRepository } from '../../repositories/idempotency.js'
import { inventoryRepository, type InventoryRepository } from '../../repositories/inventory.js'
import { ordersRepository, type OrdersRepository } from '../../repositories/orders.js'
import { petsRepository, type PetsRepository } from '../../repositories/pets.js'
import { serviceKey } from '../../repositories/service-keys.js'
import { Paging } from '../../contract/paging.js'

export interface RepositoriesOptions {
  now: () => number
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
  app.decorate('apiKeysRepository', apiKeysRepository(store))
  app.decorate('inventoryRepository', inventoryRepository(store))
  app.decorate('petsRepository', petsRepository(store))
  app.decorate('ordersRepository', ordersRepository(store, idempotency, options.now))
  app.decorate('idempotencyRepository', idempotency)
  app.decorate('paging', new Paging(await serviceKey(store, 'cursor')))

  // Idempotency-Key records last 24 hours; a sweep removes the expired ones, so the table holds
  // at most a day of them. A failed sweep (storage down) is tried again at the next one.
  const sweep = () => {
    idempotency.sweep(options.now()).then((removed) => {
      if (removed > 0) app.log.debug({ removed }, 'expired Idempotency-Key records removed')
    }, (error: unknown) => { app.log.warn({ err: error }, 'could not remove expired Idempotency-Key records') })
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
    /** The cursors of paged lists, signed with the service's cursor key (src/contract/paging.ts). */
    paging: Paging
  }
}

export default fp(repositories, { name: 'repositories', dependencies: ['storage'] })
