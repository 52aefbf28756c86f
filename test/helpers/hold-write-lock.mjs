// node test/helpers/hold-write-lock.mjs FILE MS [PET_ID QUANTITY]
// Another process holding a SQLite file's write lock (as a second instance, the keys command or a
// backup can): BEGIN IMMEDIATE, optionally one UPDATE of an inventory entry inside that
// transaction, hold it MS milliseconds, COMMIT. Prints "locked" once it holds the lock and
// "releasing" just before COMMIT.
import process from 'node:process'
import { setTimeout } from 'node:timers'
import Database from 'better-sqlite3'

const [file, ms, petId, quantity] = process.argv.slice(2)
const db = new Database(file, { timeout: 10_000 })
db.exec('BEGIN IMMEDIATE')
if (petId !== undefined) db.prepare('UPDATE inventory SET quantity = ? WHERE pet_id = ?').run(Number(quantity), Number(petId))
process.stdout.write('locked\n')
setTimeout(() => {
  process.stdout.write('releasing\n')
  db.exec('COMMIT')
  db.close()
}, Number(ms))
