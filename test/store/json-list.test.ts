import t from 'tap'
import { endsChunk, JsonList, type JsonListVersion } from '../../src/contract/json-list.js'
import { listTag } from '../helpers/entity-tag.js'
import { seededRandom } from '../helpers/random.js'

// JsonList keeps a JSON array as element texts by key, in chunks. Whatever the sequence of
// changes, each version's bytes must be the array of the current elements in key order, and
// changedSince must name every element that differs from the earlier version.

const text = (key: number, n: number) => JSON.stringify({ key, n })
const expected = (model: Map<number, string>) => '[' + [...model.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v).join(',') + ']'

t.test('every version is the array of the current elements in key order, after random sets and deletes, with the tag of its body', async (t) => {
  const next = seededRandom(7)
  // Small chunks, so that chunks are split, emptied and hashed in many places.
  const list = new JsonList(16)
  const model = new Map<number, string>()
  const initial = Array.from({ length: 600 }, (_, i) => [i * 20, text(i * 20, 0)] as const)
  list.reset(initial)
  for (const [key, value] of initial) model.set(key, value)
  t.equal(list.version().bytes.toString(), expected(model), 'as built')

  let mismatches = 0
  let digestMismatches = 0
  let chunkingMismatches = 0
  let previous = list.version()
  for (let step = 1; step <= 1500; step++) {
    const changes = 1 + next(5)
    for (let c = 0; c < changes; c++) {
      // Keys beyond the built range and between existing keys: inserts split chunks and add new ones.
      const key = next(12_000)
      if (next(10) === 0) {
        list.delete(key)
        model.delete(key)
      } else {
        list.set(key, text(key, step))
        model.set(key, text(key, step))
      }
    }
    const version = list.version()
    if (version.bytes.toString() !== expected(model)) mismatches++
    if (Buffer.concat(version.parts).toString() !== expected(model)) mismatches++
    if (`"${version.digest}"` !== listTag(version.bytes, (e: { key: number }) => e.key, 16)) digestMismatches++
    // Chunks end where the keys say, whatever the changes were: as in a list built afresh.
    const fresh = new JsonList(16)
    fresh.reset([...model.entries()].sort((a, b) => a[0] - b[0]))
    if (fresh.version().parts.map((p) => p.length).join() !== version.parts.map((p) => p.length).join()) chunkingMismatches++
    if (fresh.version().digest !== version.digest) digestMismatches++
    // What changed since the previous version, by comparing the two arrays element by element.
    const before = new Set((JSON.parse(previous.bytes.toString()) as unknown[]).map((e) => JSON.stringify(e)))
    const differing = (JSON.parse(version.bytes.toString()) as unknown[]).map((e) => JSON.stringify(e)).filter((e) => !before.has(e))
    const reported = new Set(version.changedSince(previous.version))
    if (!differing.every((e) => reported.has(e))) mismatches++
    previous = version
  }
  t.equal(mismatches, 0, '1,500 versions, each equal to the model and with every changed element reported')
  t.equal(digestMismatches, 0, 'each tag the one worked out from the body alone, and the tag of the same list built afresh')
  t.equal(chunkingMismatches, 0, 'the chunks of each version those of the same elements built afresh (they split and merge as keys come and go)')
  t.equal(list.size, model.size)
  t.ok(list.version().parts.length - 2 > 20, `${list.version().parts.length - 2} chunks`)
})

t.test('the same version object while nothing changes; setting an equal text changes nothing', async (t) => {
  const list = new JsonList()
  list.reset([[1, '"a"'], [2, '"b"']])
  const first = list.version()
  t.equal(list.version(), first)
  list.set(2, '"b"')
  list.delete(3)
  t.equal(list.version(), first, 'no new version')
  list.set(2, '"c"')
  const second = list.version()
  t.not(second, first)
  t.equal(second.version, first.version + 1)
  t.equal(first.bytes.toString(), '["a","b"]', 'an earlier version is unchanged')
  t.equal(second.bytes.toString(), '["a","c"]')
})

t.test('changedSince: the latest text of each changed element; none that was replaced again or removed', async (t) => {
  const list = new JsonList()
  list.reset([[1, '1'], [2, '2'], [3, '3']])
  const v1 = list.version()
  list.set(2, '20')
  const v2 = list.version()
  list.set(2, '200')
  list.set(4, '4')
  list.delete(3)
  const v3 = list.version()
  list.delete(4)
  const v4 = list.version()
  t.same(v2.changedSince(v1.version), ['20'])
  t.same(v3.changedSince(v1.version), ['200', '4'], 'pet 2 as of v3 only; 3 removed is not listed')
  t.same(v3.changedSince(v2.version), ['200', '4'])
  t.same(v4.changedSince(v1.version), ['200'], '4 added and removed again is gone')
  t.same(v2.changedSince(v2.version), [], 'nothing since itself')
  t.same(v2.changedSince(v3.version), undefined, 'not from a later version')
  t.equal(v4.bytes.toString(), '[1,200]')
})

t.test('changedSince is undefined across a rebuild and once the history is forgotten', async (t) => {
  const list = new JsonList()
  list.reset([[1, '1']])
  const v1 = list.version()
  list.reset([[1, '1'], [2, '2']])
  const v2 = list.version()
  t.equal(v2.changedSince(v1.version), undefined, 'rebuilt: every element must be checked')
  t.equal(v1.changedSince(v1.version), undefined, 'an old version cannot tell either')

  let last: JsonListVersion = v2
  // More single changes than the history keeps.
  for (let i = 0; i < 1100; i++) {
    list.set(1, String(i))
    last = list.version()
  }
  t.equal(last.changedSince(v2.version), undefined, 'too old')
  t.same(last.changedSince(last.version - 1), [String(1099)], 'recent ones are known')
})

t.test('an empty list, and a list emptied by deletes, is []', async (t) => {
  const list = new JsonList()
  list.reset([])
  t.equal(list.version().bytes.toString(), '[]')
  list.set(5, '5')
  t.equal(list.version().bytes.toString(), '[5]')
  list.delete(5)
  t.equal(list.version().bytes.toString(), '[]')
  t.equal(list.size, 0)
})

t.test('endsChunk picks about one key in chunkSize, spread out, from either half of a 64-bit key', async (t) => {
  const lengths = (keys: number[]) => {
    const result: number[] = []
    let from = 0
    keys.forEach((key, i) => { if (endsChunk(key)) { result.push(i + 1 - from); from = i + 1 } })
    return result
  }
  const low = lengths(Array.from({ length: 100_000 }, (_, i) => i + 1))
  t.ok(low.length >= 50 && low.length <= 200, `${low.length} chunks in keys 1 to 100,000 (about 98 expected)`)
  t.ok(Math.max(...low) <= 8 * 1024, `the longest ${Math.max(...low)} elements`)
  const high = lengths(Array.from({ length: 100_000 }, (_, i) => (i + 1) * 2 ** 32 + 7))
  t.ok(high.length >= 50 && high.length <= 200, `${high.length} chunks in keys differing only above 2^32`)
})
