/**
 * npx tsx bench/sqlite-patch.ts [--rounds 5] [--batches 2000] [--batch 20]: the CPU of SQLite's
 * PATCH statements alone, without HTTP (bench/README.md, "A PATCH without RETURNING"). Each
 * variant runs on its own copy of one 100-pet dataset (seeded through the service's store, so the
 * change-log triggers fire), `--batch` PATCHes per IMMEDIATE transaction as the group commit runs
 * them, variants interleaved round after round; reported as µs of process CPU per PATCH.
 *
 * - service: what the service runs now (src/store/sqlite/statements.ts): the UPDATE, then the
 *   entry's status for the stock written;
 * - returning: the statement before (UPDATE … RETURNING every field of inventory-fields.ts);
 * - floor: the floor's UPDATE alone (bench/servers/floor.ts keeps the status in memory).
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import { inventorySelectList } from '../src/store/inventory-fields.js'
import { prepareStatements } from '../src/store/sqlite/statements.js'
import { seedDatabase } from './lib/datasets.js'
import { coreCount, hasTaskset, pinSelf } from './lib/proc.js'

const { values: args } = parseArgs({ options: { rounds: { type: 'string' }, batches: { type: 'string' }, batch: { type: 'string' } } })
const rounds = Number(args.rounds ?? 5)
const batches = Number(args.batches ?? 2000)
const batchSize = Number(args.batch ?? 20)
const PETS = 100
if (coreCount() >= 2 && hasTaskset()) pinSelf(0)

type Patch = (petId: number, quantity: number) => unknown
const variants: Record<string, (db: Database.Database) => Patch> = {
  service: (db) => {
    const st = prepareStatements(db)
    return (petId, quantity) => st.updateInventory.run(quantity, petId).changes === 0 ? undefined : st.inventoryStatus.get({ petId, quantity })
  },
  returning: (db) => {
    const statement = db.prepare(`UPDATE inventory SET quantity = ? WHERE pet_id = ? RETURNING ${inventorySelectList('inventory')}`)
    return (petId, quantity) => statement.get(quantity, petId)
  },
  floor: (db) => {
    const statement = db.prepare('UPDATE inventory SET quantity = ? WHERE pet_id = ?')
    return (petId, quantity) => statement.run(quantity, petId)
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'petstore-sqlite-patch-'))
try {
  const dataset = join(scratch, 'dataset.db')
  await seedDatabase(`sqlite:${dataset}`, PETS)
  const samples: Record<string, number[]> = {}
  for (let round = 1; round <= rounds; round++) {
    for (const [name, make] of Object.entries(variants)) {
      const file = join(scratch, `${name}-${round}.db`)
      copyFileSync(dataset, file)
      const db = new Database(file)
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = NORMAL')
      const patch = make(db)
      // Quantities 0…49 in turn, so all three statuses occur (an open order on every tenth pet).
      const batch = db.transaction((first: number) => {
        for (let i = first; i < first + batchSize; i++) patch((i % PETS) + 1, i % 50)
      })
      for (let b = 0; b < batches / 10; b++) batch(b * batchSize) // warm-up
      const before = process.cpuUsage()
      for (let b = 0; b < batches; b++) batch(b * batchSize)
      const used = process.cpuUsage(before)
      db.close()
      ;(samples[name] ??= []).push((used.user + used.system) / (batches * batchSize))
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const service = median(samples.service!)
  console.log(`µs of CPU per PATCH, ${batchSize} per transaction, ${batches} transactions, median of ${rounds} interleaved rounds`)
  for (const [name, values] of Object.entries(samples)) {
    const m = median(values)
    console.log(`${name.padEnd(10)} ${m.toFixed(2).padStart(6)} µs   service ÷ this ${(service / m).toFixed(2)} ×   rounds: ${values.map((v) => v.toFixed(2)).join(' ')}`)
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
