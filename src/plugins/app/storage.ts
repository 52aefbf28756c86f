import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createStore, type StoreOptions } from '../../store/create-store.js'
import { demoCatalogue } from '../../store/demo-catalogue.js'
import type { Store } from '../../store/types.js'
import { petsRepository } from '../../repositories/pets.js'

export interface StorageOptions {
  databaseUrl: string
  storeOptions?: StoreOptions
  seed: boolean
  /** A store made by the caller (tests); it is still closed with the app. */
  store?: Store | undefined
}

/**
 * Opens the store once, migrates it, loads the demo catalogue into an empty database, decorates
 * `app.store` (with every operation timed when metrics are kept).
 */
async function storage (app: FastifyInstance, options: StorageOptions) {
  const store = options.store ?? await createStore(options.databaseUrl, options.storeOptions)
  app.decorate('store', app.metrics?.timed(store) ?? store)
  app.addHook('onClose', async () => { await store.close() })

  await store.migrate()
  if (options.seed && await petsRepository(store).count() === 0) {
    const counts = await store.importCatalogue(demoCatalogue)
    app.log.info({ ...counts }, 'empty database: loaded the demo catalogue')
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

export default fp(storage, { name: 'storage', dependencies: ['metrics'] })
