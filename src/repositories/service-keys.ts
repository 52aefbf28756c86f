import { randomBytes } from 'node:crypto'
import { statement, type Arg } from '../store/query.js'
import type { Store } from '../store/types.js'
import { first, run } from '../store/work.js'

const q = {
  // The first instance to start writes the key; every other one finds it.
  offer: statement('serviceKeys.offer', (db, arg: Arg<{ name: string, value: string }>) => db
    .insertInto('service_keys').values({ name: arg('name'), value: arg('value') })
    .onConflict((conflict) => conflict.column('name').doNothing())),
  get: statement('serviceKeys.get', (db, arg: Arg<{ name: string }>) => db
    .selectFrom('service_keys').select('value').where('name', '=', arg('name')))
}

/**
 * A secret key of the service's own, the same for every instance sharing the database, made on
 * first use: 32 random bytes.
 */
export async function serviceKey (store: Store, name: 'cursor'): Promise<Buffer> {
  const value = await store.write(function * () {
    yield * run(q.offer, { name, value: randomBytes(32).toString('base64url') })
    return (yield * first(q.get, { name }))?.value
  })
  if (value === undefined) throw new Error(`service key ${name} could not be read after it was written`)
  return Buffer.from(value, 'base64url')
}
