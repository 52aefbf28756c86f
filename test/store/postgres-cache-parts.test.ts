import t from 'tap'
import { parseChange } from '../../src/store/postgres/changes.js'
import { Invalidations } from '../../src/store/postgres/invalidations.js'
import { SortedEntries } from '../../src/store/postgres/sorted-entries.js'
import { seededRandom } from '../helpers/random.js'

/** The parts of the PostgreSQL caches that need no database (src/store/postgres/). */

t.test('Invalidations: when a value read may be kept', async (t) => {
  const changes = new Invalidations<number>()
  const since = changes.beginRead()
  t.notOk(changes.fresh(1, since), 'nothing is kept while caching is off')
  changes.endRead()

  changes.setCaching(true)
  let read = changes.beginRead()
  t.ok(changes.fresh(1, read), 'a read with nothing happening since it began')
  changes.changed([2])
  t.ok(changes.fresh(1, read), 'a change of another entry does not matter')
  t.notOk(changes.fresh(2, read), 'a change of the entry announced while the read was under way: not kept')
  changes.endRead()
  read = changes.beginRead()
  t.ok(changes.fresh(2, read), 'a read begun after the change')
  changes.changedAll()
  t.notOk(changes.fresh(1, read), '"everything changed" while the read was under way')
  changes.endRead()

  read = changes.beginRead()
  changes.beginWrite(3)
  t.notOk(changes.fresh(3, changes.beginRead()), 'not while this instance writes the entry, even for a read begun since')
  changes.endRead()
  t.ok(changes.endWrite(3), 'an uncontended write is the current value')
  t.notOk(changes.fresh(3, read), 'a read begun before the write ended is not kept')
  changes.endRead()

  changes.beginWrite(4)
  changes.beginWrite(4)
  t.notOk(changes.endWrite(4), 'two overlapping writes of one entry: neither is known to be the last')
  t.notOk(changes.endWrite(4))
  changes.beginWrite(5)
  changes.changed([5])
  t.notOk(changes.endWrite(5), 'a change announced during a write')
  changes.beginWrite(6)
  t.ok(changes.endWrite(6))

  read = changes.beginRead()
  changes.beginWrite(7)
  changes.changed([8])
  t.same(changes.staleSince(read)?.sort(), [7, 8], 'a read of everything: entries to read again')
  changes.endWrite(7)
  changes.setCaching(false)
  t.equal(changes.staleSince(read), undefined, 'or nothing to keep at all')
  t.notOk(changes.endWrite(9), 'an unknown write is never current')
  changes.endRead()
})

t.test('SortedEntries: in id order through sets and deletes, chunk renderings reused', async (t) => {
  let rendered = 0
  const entries = new SortedEntries<number, string>([], [], (values) => {
    rendered++
    return values.join(',')
  })
  t.same(entries.renderings(), [], 'empty')
  const model = new Map<number, number>()
  const random = seededRandom(7)
  for (let i = 0; i < 20_000; i++) {
    const id = random(3000)
    if (random(4) === 0) {
      entries.delete(id)
      model.delete(id)
    } else {
      entries.set(id, i)
      model.set(id, i)
    }
  }
  const expected = [...model.entries()].sort(([a], [b]) => a - b).map(([, value]) => value).join(',')
  t.equal(entries.renderings().join(','), expected, 'the same as sorting a map')
  t.equal(entries.size, model.size)
  t.ok(entries.renderings().length > 1, `in several chunks (${entries.renderings().length})`)

  rendered = 0
  entries.renderings()
  t.equal(rendered, 0, 'nothing changed: no chunk rendered again')
  const [first] = [...model.keys()].sort((a, b) => a - b)
  entries.set(first!, -1)
  entries.renderings()
  t.equal(rendered, 1, 'one entry changed: one chunk rendered again')

  const built = new SortedEntries([1, 2, 3], ['a', 'b', 'c'], (values) => values.join(''))
  built.set(0, 'z')
  built.delete(2)
  built.set(9, 'y')
  t.equal(built.renderings().join(''), 'zacy', 'built from sorted arrays, then changed')
})

t.test('parseChange: the payloads of migration 002; anything else is "everything changed"', async (t) => {
  t.same(parseChange('pet 1,2,9007199254740991'), { pets: [1, 2, 9007199254740991] })
  t.same(parseChange('order 4 pet 1,3'), { orders: [4], pets: [1, 3] })
  t.same(parseChange('key ab12,cd34'), { keys: ['ab12', 'cd34'] })
  t.same(parseChange('pet *'), { pets: 'all' })
  t.same(parseChange('order * pet *'), { orders: 'all', pets: 'all' })
  const everything = { pets: 'all', orders: 'all', keys: 'all' }
  t.same(parseChange(''), everything)
  t.same(parseChange('pet'), everything)
  t.same(parseChange('petz 1'), everything)
  t.same(parseChange('pet 1,x'), { pets: 'all' }, 'an id that is not an exact integer')
  t.same(parseChange('pet 1.5'), { pets: 'all' })
})
