import { createHash, type Hash } from 'node:crypto'

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
   * The SHA-256 of the body (base64url), hashed from the first chunk that changed on: the hash's
   * state after each chunk is kept, so a change near the end costs little.
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
}

/** What one version changed: each key with its new text, or null when it was removed. */
interface Change {
  version: number
  keys: readonly number[]
  texts: readonly (string | null)[]
}

/**
 * Entries per chunk when the list is built; a chunk that grows to twice that is split. A change
 * re-encodes one chunk (some 50 kB of inventory entries); a body of 100,000 entries is ~100 parts,
 * each one write when streamed. (At 100,000 entries with a PATCH before every GET, 512 gave a GET
 * ~1 ms slower from its writes; 4,096 brought back major collections, each re-encoded chunk being
 * larger.)
 */
const CHUNK_SIZE = 1024

const newChunk = (keys: number[], texts: string[]): Chunk => ({ keys, texts, bytes: undefined })

/** Changes remembered for changedSince (element texts, versions); older ones are forgotten (a full check). */
const HISTORY_TEXTS = 20_000
const HISTORY_VERSIONS = 1024
const OPEN = Buffer.from('[')
const CLOSE = Buffer.from(']')

/**
 * A JSON array kept as element texts by numeric key (ascending), in chunks whose encoded bytes
 * are kept: changing one element re-encodes its chunk; the other chunks' bytes are shared by the
 * new version, which is a list of parts, not one copy of the whole text. Each version handed out
 * is immutable: later changes make a new version.
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
  /** The SHA-256 state after '[' and the parts of chunks 0 to i; valid up to the first changed chunk. */
  private hashes: Hash[] = []

  constructor (private readonly chunkSize = CHUNK_SIZE) {}

  /** Replaces every element; `entries` must be in ascending key order. Forgets the change history. */
  reset (entries: Iterable<readonly [number, string]>): void {
    const chunks: Chunk[] = []
    let chunk: Chunk | undefined
    for (const [key, text] of entries) {
      if (chunk === undefined || chunk.keys.length === this.chunkSize) {
        chunk = newChunk([], [])
        chunks.push(chunk)
      }
      chunk.keys.push(key)
      chunk.texts.push(text)
    }
    this.chunks = chunks
    this.hashes = []
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
        if (chunk.keys.length >= 2 * this.chunkSize) {
          const half = chunk.keys.length >> 1
          this.chunks.splice(at + 1, 0, newChunk(chunk.keys.splice(half), chunk.texts.splice(half)))
        }
      }
      chunk.bytes = undefined
    }
    this.changedAt(at)
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
    if (chunk.keys.length === 0) this.chunks.splice(at, 1)
    this.changedAt(at)
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
    for (const chunk of this.chunks) {
      chunk.bytes ??= Buffer.from(',' + chunk.texts.join(','))
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
      digest: this.digestOf(parts),
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

  /** Chunk `at` (and so every one after it, which may have moved) is no longer as hashed. */
  private changedAt (at: number): void {
    if (this.hashes.length > at) this.hashes.length = at
    this.dirty = true
  }

  /** The SHA-256 of '[', the chunks' parts and ']', resumed from the last state still valid. */
  private digestOf (parts: readonly Buffer[]): string {
    const hashes = this.hashes
    let hash = hashes.length === 0 ? createHash('sha256').update(OPEN) : hashes.at(-1)!.copy()
    // parts[i + 1] is chunk i.
    for (let i = hashes.length; i < parts.length - 2; i++) {
      hash.update(parts[i + 1]!)
      hashes.push(hash)
      hash = hash.copy()
    }
    return hash.update(CLOSE).digest('base64url')
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
