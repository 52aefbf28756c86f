#!/usr/bin/env node
/**
 * db migrate                 apply pending schema migrations (idempotent)
 * db seed FILE.json          upsert pets, inventory and orders from a file
 * db seed --synthetic N      create N pets with an inventory entry each (benchmarks)
 * Both migrate first, so they work on a database the server has never opened.
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { loadDocument } from '../openapi/document.js'
import { CatalogueError, readCatalogueFile } from '../store/catalogue.js'
import { createStore } from '../store/create-store.js'
import { addSyntheticPets } from '../store/synthetic.js'
import type { Catalogue, Store } from '../store/types.js'
import { runCli, UsageError } from './run-cli.js'

const usage = `Usage:
  db migrate
  db seed FILE.json
  db seed --synthetic N`

/** Inventory and orders must name a pet of the file or of the database; say which entry does not. */
async function checkPetReferences (store: Store, catalogue: Catalogue): Promise<void> {
  const known = new Set((catalogue.pets ?? []).map((pet) => pet.id))
  const references = [
    ...(catalogue.inventory ?? []).map((item, i) => [`inventory/${i}`, item.petId] as const),
    ...(catalogue.orders ?? []).map((order, i) => [`orders/${i}`, order.petId] as const)
  ]
  for (const [where, petId] of references) {
    if (known.has(petId)) continue
    if (await store.getPet(petId) === undefined) throw new CatalogueError(`catalogue/${where}/petId: no pet ${petId} in the file or in the database`)
    known.add(petId)
  }
}

await runCli(usage, async (argv) => {
  const [command, ...rest] = argv
  if (command !== 'migrate' && command !== 'seed') throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`)
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { synthetic: { type: 'string' } } })
  if (command === 'seed' && (values.synthetic === undefined) === (positionals.length !== 1)) {
    throw new UsageError('seed takes either one FILE.json or --synthetic N')
  }
  if (values.synthetic !== undefined && !/^[1-9][0-9]{0,7}$/.test(values.synthetic)) {
    throw new UsageError(`--synthetic must be a whole number from 1 to 99999999, got ${JSON.stringify(values.synthetic)}`)
  }

  const store = await createStore(loadConfig().databaseUrl)
  try {
    await store.migrate()
    if (command === 'migrate') {
      console.log(`${store.engine}: schema up to date`)
    } else if (values.synthetic !== undefined) {
      const count = Number(values.synthetic)
      await addSyntheticPets(store, count)
      console.log(`created ${count} synthetic pets, each with an inventory entry`)
    } else {
      const catalogue = await readCatalogueFile(loadDocument(), positionals[0]!)
      await checkPetReferences(store, catalogue)
      const counts = await store.importCatalogue(catalogue)
      console.log(`imported ${counts.pets} pets, ${counts.inventory} inventory entries, ${counts.orders} orders`)
    }
  } catch (error) {
    if (error instanceof CatalogueError) throw new UsageError(error.message, 1)
    throw error
  } finally {
    await store.close()
  }
})
