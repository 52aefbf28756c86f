import { hash } from 'node:crypto'

/**
 * One version of a JSON array body that its producer keeps as one text per element. The body is
 * `[` + the element texts joined by `,` + `]`, built by the producer, so each element text is a
 * complete JSON value of its own. `changedSince` is what lets the response serializer validate a
 * new version by checking only the elements that differ from a version it has already checked.
 */
export interface JsonListVersion {
  /** The list this is a version of; the versions of one list are numbered upwards. */
  readonly list: object
  readonly version: number
  /**
   * The whole array as UTF-8 JSON, in consecutive parts shared with the list's other versions
   * (a part is never changed once handed out).
   */
  readonly parts: readonly Buffer[]
  readonly byteLength: number
  /**
   * The body's entity tag (base64url): the SHA-256 of the SHA-256 digests of its chunks, in order
   * (see JsonList). Only the chunks that changed are hashed again.
   */
  readonly digest: string
  /** The same bytes in one Buffer: copied from the parts on first use, then kept. */
  readonly bytes: Buffer
  /**
   * The texts, as of this version, of the elements added or replaced after version `since` (a text
   * replaced again, or removed, by this version is not listed). Undefined when the list no longer
   * knows (`since` is too old, or the list was rebuilt since): then every element must be checked.
   */
  changedSince (since: number): readonly string[] | undefined
}

interface Chunk {
  keys: number[]
  texts: string[]
  /** ',' and the texts joined by ',', encoded; undefined once the chunk has changed. */
  bytes: Buffer | undefined
  /** The SHA-256 of the texts joined by ',' (bytes without its comma); undefined once changed. */
  digest: Buffer | undefined
}

/** What one version changed: each key with its new text, or null when it was removed. */
interface Change {
  version: number
  keys: readonly number[]
  texts: readonly (string | null)[]
}

/**
 * Elements per chunk, on average. A change re-encodes and re-hashes one chunk (some 50 kB of
 * inventory entries); a body of 100,000 entries is ~100 parts, each one write when streamed. (At
 * 100,000 entries with a PATCH before every GET, 512 gave a GET ~1 ms slower from its writes;
 * 4,096 brought back major collections, each re-encoded chunk being larger.)
 */
const CHUNK_SIZE = 1024

const newChunk = (keys: number[], texts: string[]): Chunk => ({ keys, texts, bytes: undefined, digest: undefined })

/**
 * Whether a chunk ends after the element of `key`: true for about one key in `chunkSize`, chosen
 * by a multiplicative hash of the key alone (Fibonacci hashing of its two 32-bit halves, top
 * bits). So where the chunks end depends only on which keys the list holds, never on the order of
 * the changes that made it, and the entity tag, which is built from the chunks, is the same for
 * the same body on every instance.
 */
export function endsChunk (key: number, chunkSize = CHUNK_SIZE): boolean {
  const high = Math.floor(key / 2 ** 32) >>> 0
  const mixed = Math.imul((key >>> 0) ^ Math.imul(high, 0x85EBCA6B), 0x9E3779B1) >>> 0
  return mixed < 2 ** 32 / chunkSize
}

const sha256 = (bytes: Buffer): Buffer => hash('sha256', bytes, 'buffer')

/** Changes remembered for changedSince (element texts, versions); older ones are forgotten (a full check). */
const HISTORY_TEXTS = 20_000
const HISTORY_VERSIONS = 1024
const OPEN = Buffer.from('[')
const CLOSE = Buffer.from(']')

/**
 * A JSON array kept as element texts by numeric key (ascending), in chunks whose encoded bytes
 * and SHA-256 are kept: changing one element re-encodes and re-hashes its chunk; the other
 * chunks' bytes are shared by the new version, which is a list of parts, not one copy of the
 * whole text. Each version handed out is immutable: later changes make a new version.
 *
 * A chunk ends after each element whose key endsChunk() picks (the last chunk wherever the list
 * ends). The entity tag is the SHA-256 of the chunks' SHA-256 digests, so it is a function of the
 * body alone, like a hash of the bytes, but a change costs hashing one chunk (~50 kB) instead of
 * everything after it (on average half of a 5 MB body at 100,000 entries, ~2 ms).
 */
export class JsonList {
  private chunks: Chunk[] = []
  private versionNumber = 0
  private current: JsonListVersion | undefined
  private changedKeys: number[] = []
  private changedTexts: (string | null)[] = []
  private dirty = true
  private history: Change[] = []
  private historyTexts = 0
  /** changedSince(s) can answer for every s ≥ this. */
  private knownFrom = Number.POSITIVE_INFINITY

  constructor (private readonly chunkSize = CHUNK_SIZE) {}

  /** Replaces every element; `entries` must be in ascending key order. Forgets the change history. */
  reset (entries: Iterable<readonly [number, string]>): void {
    const chunks: Chunk[] = []
    let chunk: Chunk | undefined
    for (const [key, text] of entries) {
      if (chunk === undefined) {
        chunk = newChunk([], [])
        chunks.push(chunk)
      }
      chunk.keys.push(key)
      chunk.texts.push(text)
      if (endsChunk(key, this.chunkSize)) chunk = undefined
    }
    this.chunks = chunks
    this.history = []
    this.historyTexts = 0
    this.changedKeys = []
    this.changedTexts = []
    this.dirty = true
    this.knownFrom = Number.POSITIVE_INFINITY
  }

  get size (): number {
    let size = 0
    for (const chunk of this.chunks) size += chunk.keys.length
    return size
  }

  /** Adds the element of `key`, or replaces its text. */
  set (key: number, text: string): void {
    const at = this.chunkIndexFor(key)
    const chunk = this.chunks[at]
    if (chunk === undefined) {
      this.chunks.push(newChunk([key], [text]))
    } else {
      const index = lowerBound(chunk.keys, key)
      if (chunk.keys[index] === key) {
        if (chunk.texts[index] === text) return
        chunk.texts[index] = text
      } else {
        chunk.keys.splice(index, 0, key)
        chunk.texts.splice(index, 0, text)
        this.rechunk(at)
      }
      chunk.bytes = undefined
      chunk.digest = undefined
    }
    this.dirty = true
    this.changedKeys.push(key)
    this.changedTexts.push(text)
  }

  /** Removes the element of `key`, if there is one. */
  delete (key: number): void {
    const at = this.chunkIndexFor(key)
    const chunk = this.chunks[at]
    if (chunk === undefined) return
    const index = lowerBound(chunk.keys, key)
    if (chunk.keys[index] !== key) return
    chunk.keys.splice(index, 1)
    chunk.texts.splice(index, 1)
    chunk.bytes = undefined
    chunk.digest = undefined
    this.rechunk(at)
    this.dirty = true
    this.changedKeys.push(key)
    this.changedTexts.push(null)
  }

  /** The current version: the same object until the list changes. */
  version (): JsonListVersion {
    if (!this.dirty && this.current !== undefined) return this.current
    const version = ++this.versionNumber
    if (this.knownFrom === Number.POSITIVE_INFINITY) {
      // Built from scratch: changes are known from this version on.
      this.knownFrom = version
    } else {
      this.remember({ version, keys: this.changedKeys, texts: this.changedTexts })
    }
    this.changedKeys = []
    this.changedTexts = []
    this.dirty = false
    const parts: Buffer[] = [OPEN]
    const digests: Buffer[] = []
    for (const chunk of this.chunks) {
      chunk.bytes ??= Buffer.from(',' + chunk.texts.join(','))
      chunk.digest ??= sha256(chunk.bytes.subarray(1))
      digests.push(chunk.digest)
      // The first chunk without its leading comma: a view, not a copy.
      parts.push(parts.length === 1 ? chunk.bytes.subarray(1) : chunk.bytes)
    }
    parts.push(CLOSE)
    let byteLength = 0
    for (const part of parts) byteLength += part.length
    const history = this.history
    const knownFrom = () => this.knownFrom
    let bytes: Buffer | undefined
    this.current = {
      list: this,
      version,
      parts,
      byteLength,
      digest: sha256(Buffer.concat(digests)).toString('base64url'),
      get bytes () {
        bytes ??= Buffer.concat(parts, byteLength)
        return bytes
      },
      changedSince (since: number): readonly string[] | undefined {
        if (since > version || since < knownFrom()) return undefined
        // Changes of versions up to this one are never altered once recorded, only dropped.
        const latest = new Map<number, string | null>()
        for (const change of history) {
          if (change.version <= since || change.version > version) continue
          change.keys.forEach((key, i) => latest.set(key, change.texts[i]!))
        }
        const texts: string[] = []
        for (const text of latest.values()) if (text !== null) texts.push(text)
        return texts
      }
    }
    return this.current
  }

  /**
   * Puts chunk `at`, after an element was added to it or removed, back into the shape reset()
   * would give: a chunk that no longer ends after a chosen key (the removed element was that key,
   * or an element was added after it) takes in the chunks after it, then the result is cut after
   * every chosen key in it.
   */
  private rechunk (at: number): void {
    const chunks = this.chunks
    const chunk = chunks[at]!
    while (at + 1 < chunks.length && (chunk.keys.length === 0 || !endsChunk(chunk.keys.at(-1)!, this.chunkSize))) {
      const next = chunks.splice(at + 1, 1)[0]!
      chunk.keys.push(...next.keys)
      chunk.texts.push(...next.texts)
    }
    if (chunk.keys.length === 0) {
      chunks.splice(at, 1)
      return
    }
    const pieces: Chunk[] = []
    let from = 0
    chunk.keys.forEach((key, i) => {
      if (i === chunk.keys.length - 1 || !endsChunk(key, this.chunkSize)) return
      pieces.push(newChunk(chunk.keys.slice(from, i + 1), chunk.texts.slice(from, i + 1)))
      from = i + 1
    })
    if (pieces.length === 0) return
    pieces.push(newChunk(chunk.keys.slice(from), chunk.texts.slice(from)))
    chunks.splice(at, 1, ...pieces)
  }

  private remember (change: Change): void {
    this.history.push(change)
    this.historyTexts += change.texts.length
    while (this.historyTexts > HISTORY_TEXTS || this.history.length > HISTORY_VERSIONS) {
      const dropped = this.history.shift()!
      this.historyTexts -= dropped.texts.length
      this.knownFrom = dropped.version
    }
  }

  /** The index of the chunk `key` belongs in: the last whose first key is not above it, else 0. */
  private chunkIndexFor (key: number): number {
    const chunks = this.chunks
    let low = 0
    let high = chunks.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if (chunks[middle]!.keys[0]! <= key) low = middle
      else high = middle - 1
    }
    return low
  }
}

/** The first index whose key is not below `key`. */
function lowerBound (keys: readonly number[], key: number): number {
  let low = 0
  let high = keys.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (keys[middle]! < key) low = middle + 1
    else high = middle
  }
  return low
}

/** The text of a list's JSON, whether an engine gave it as a string or as a list version. */
export const listText = (json: string | JsonListVersion): string => typeof json === 'string' ? json : json.bytes.toString('utf8')
