/**
 * db migrate                 apply pending schema migrations (idempotent)
 * db seed FILE.json          upsert pets, inventory and orders from a file
 * db seed --synthetic N      create N pets with an inventory entry each (benchmarks)
 * Both migrate first, so they work on a database the server has never opened; only migrate
 * creates a database that does not exist.
 *
 * runDb runs one command on the arguments, environment and streams it is given; db.ts is the
 * bin that gives it the process's own.
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { loadDocument } from '../contract/document.js'
import { CatalogueError, readCatalogueFile } from '../store/catalogue.js'
import { addSyntheticPets } from '../store/synthetic.js'
import type { Catalogue, Store } from '../store/types.js'
import { type CliIo, openStore, runCli, UsageError } from './run-cli.js'
import { petsRepository } from '../repositories/pets.js'

const text = {
  usage: `Usage:
  db migrate
  db seed FILE.json
  db seed --synthetic N`,
  details: `Works on the database of DATABASE_URL (default sqlite:./data/petstore.db).

  migrate            applies pending schema migrations (idempotent); creates a SQLite database
                     that does not exist yet (a PostgreSQL database must be created first).
  seed FILE.json     upserts pets, inventory and orders from a file (migrating first).
  seed --synthetic N creates N pets with an inventory entry each, for benchmarks.
Seeding needs an existing database: run db migrate (or start the server) first.`
}

/** Inventory and orders must name a pet of the file or of the database; say which entry does not. */
async function checkPetReferences (store: Store, catalogue: Catalogue): Promise<void> {
  const known = new Set((catalogue.pets ?? []).map((pet) => pet.id))
  const references = [
    ...(catalogue.inventory ?? []).map((item, i) => [`inventory/${i}`, item.petId] as const),
    ...(catalogue.orders ?? []).map((order, i) => [`orders/${i}`, order.petId] as const)
  ]
  for (const [where, petId] of references) {
    if (known.has(petId)) continue
    if (await petsRepository(store).get(petId) === undefined) throw new CatalogueError(`catalogue/${where}/petId: no pet ${petId} in the file or in the database`)
    known.add(petId)
  }
}

/** Runs `db …` on io.argv; resolves to its exit code. */
export function runDb (io: CliIo): Promise<number> {
  return runCli(text, io, async (argv) => {
    const [command, ...rest] = argv
    if (command !== 'migrate' && command !== 'seed') throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`)
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { synthetic: { type: 'string' } } })
    if (command === 'seed' && (values.synthetic === undefined) === (positionals.length !== 1)) {
      throw new UsageError('seed takes either one FILE.json or --synthetic N')
    }
    if (values.synthetic !== undefined && !/^[1-9][0-9]{0,7}$/.test(values.synthetic)) {
      throw new UsageError(`--synthetic must be a whole number from 1 to 99999999, got ${JSON.stringify(values.synthetic)}`)
    }

    const store = await openStore(loadConfig(io.env), { create: command === 'migrate', cwd: io.cwd })
    try {
      if (command === 'migrate') {
        io.stdout(`${store.engine}: schema up to date`)
      } else if (values.synthetic !== undefined) {
        const count = Number(values.synthetic)
        await addSyntheticPets(store, count)
        io.stdout(`created ${count} synthetic pets, each with an inventory entry`)
      } else {
        // The bins pass the path on as given, so that an error names the file as it was typed.
        const file = io.cwd === undefined ? positionals[0]! : resolve(io.cwd, positionals[0]!)
        const catalogue = await readCatalogueFile(await loadDocument(), file)
        await checkPetReferences(store, catalogue)
        const counts = await store.importCatalogue(catalogue)
        io.stdout(`imported ${counts.pets} pets, ${counts.inventory} inventory entries, ${counts.orders} orders`)
      }
    } catch (error) {
      if (error instanceof CatalogueError) throw new UsageError(error.message, 1)
      throw error
    } finally {
      await store.close()
    }
  })
}
