/**
 * db migrate                 apply pending schema migrations (idempotent)
 * db seed FILE.json          upsert pets, inventory and orders from a file
 * db seed --synthetic N      create N pets with an inventory entry each (benchmarks)
 * db redeliver ENDPOINT_ID --since TIME
 *                            send a webhook endpoint's failed deliveries again (an operator's replay)
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
import { deliveryQueue } from '../repositories/webhook-deliveries.js'

const text = {
  usage: `Usage:
  db migrate
  db seed FILE.json
  db seed --synthetic N
  db redeliver ENDPOINT_ID --since TIME`,
  details: `Works on the database of DATABASE_URL (default sqlite:./data/petstore.db).

  migrate            applies pending schema migrations (idempotent); creates a SQLite database
                     that does not exist yet (a PostgreSQL database must be created first).
  seed FILE.json     upserts pets, inventory and orders from a file (migrating first).
  seed --synthetic N creates N pets with an inventory entry each, for benchmarks.
  redeliver ENDPOINT_ID --since TIME
                     sends the webhook endpoint's failed deliveries of the events recorded
                     since TIME again, each with the whole retry schedule. TIME is an RFC 3339
                     time (2026-11-27T00:00:00Z) or how long ago (48h, 7d); the delivery log
                     keeps 30 days. The endpoint must be enabled.
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

/** --since: an RFC 3339 time with its offset, or how long before `now` (48h, 7d). */
function sinceOf (text: string, now: number): string {
  const ago = /^([1-9]\d{0,3})(h|d)$/.exec(text)
  const at = ago !== null
    ? now - Number(ago[1]) * (ago[2] === 'h' ? 3_600_000 : 86_400_000)
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text) ? Date.parse(text) : Number.NaN
  if (!Number.isFinite(at)) throw new UsageError(`--since must be a time such as 2026-11-27T00:00:00Z, or how long ago (48h, 7d); got ${JSON.stringify(text)}`)
  return new Date(at).toISOString()
}

/** db redeliver: the endpoint's failed deliveries due again, on the store given. */
async function redeliver (store: Store, io: CliIo, endpoint: string, since: string): Promise<void> {
  const id = Number(endpoint)
  const result = await deliveryQueue(store).redeliver(id, since, Date.now())
  if (result.outcome === 'no_endpoint') throw new UsageError(`no webhook endpoint ${id}`, 1, false)
  if (result.outcome === 'disabled') {
    throw new UsageError(`webhook endpoint ${id} is disabled: its owner re-enables it first (PATCH /v1/webhooks/${id} with {"enabled": true})`, 1, false)
  }
  io.stdout(`${result.count} failed deliveries of webhook endpoint ${id} since ${since} are due again; running instances send them within a second`)
}

/** Runs `db …` on io.argv; resolves to its exit code. */
export function runDb (io: CliIo): Promise<number> {
  return runCli(text, io, async (argv) => {
    const [command, ...rest] = argv
    if (command !== 'migrate' && command !== 'seed' && command !== 'redeliver') throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`)
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { synthetic: { type: 'string' }, since: { type: 'string' } } })
    if (command === 'redeliver' && (positionals.length !== 1 || !/^[1-9]\d{0,15}$/.test(positionals[0]!))) {
      throw new UsageError('redeliver takes one ENDPOINT_ID (the id the webhook API gives)')
    }
    if (command === 'redeliver' && values.since === undefined) throw new UsageError('redeliver needs --since TIME: the events recorded since then')
    if (command !== 'redeliver' && values.since !== undefined) throw new UsageError(`--since is redeliver's option, not ${command}'s`)
    const since = values.since === undefined ? undefined : sinceOf(values.since, Date.now())
    if (command === 'seed' && (values.synthetic === undefined) === (positionals.length !== 1)) {
      throw new UsageError('seed takes either one FILE.json or --synthetic N')
    }
    if (values.synthetic !== undefined && !/^[1-9][0-9]{0,7}$/.test(values.synthetic)) {
      throw new UsageError(`--synthetic must be a whole number from 1 to 99999999, got ${JSON.stringify(values.synthetic)}`)
    }

    const store = await openStore(loadConfig(io.env), { create: command === 'migrate', cwd: io.cwd })
    try {
      if (command === 'redeliver') {
        await redeliver(store, io, positionals[0]!, since!)
      } else if (command === 'migrate') {
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
