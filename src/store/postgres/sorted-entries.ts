/** Entries per chunk after a split; a chunk splits when it reaches twice this. */
const CHUNK_SIZE = 256

interface Chunk<V, R> {
  ids: number[]
  values: V[]
  /** What `renderChunk` made of the values, until they change. */
  rendered: R | undefined
}

/**
 * Values in ascending id order, held in chunks of a few hundred, so that setting or deleting one
 * entry touches one chunk: the next rendering renders that chunk again and reuses the others.
 * A list of 100,000 entries is some 400 chunks.
 */
export class SortedEntries<V, R> {
  private readonly chunks: Chunk<V, R>[] = []

  /** `ids` ascending, without repeats; `values` in the same order. */
  constructor (ids: readonly number[], values: readonly V[], private readonly renderChunk: (values: readonly V[]) => R) {
    for (let start = 0; start < ids.length; start += CHUNK_SIZE) {
      this.chunks.push({ ids: ids.slice(start, start + CHUNK_SIZE), values: values.slice(start, start + CHUNK_SIZE), rendered: undefined })
    }
  }

  get size (): number {
    return this.chunks.reduce((sum, chunk) => sum + chunk.ids.length, 0)
  }

  set (id: number, value: V): void {
    if (this.chunks.length === 0) {
      this.chunks.push({ ids: [id], values: [value], rendered: undefined })
      return
    }
    const chunkIndex = this.chunkFor(id)
    const chunk = this.chunks[chunkIndex]!
    const index = lowerBound(chunk.ids, id)
    chunk.rendered = undefined
    if (chunk.ids[index] === id) {
      chunk.values[index] = value
      return
    }
    chunk.ids.splice(index, 0, id)
    chunk.values.splice(index, 0, value)
    if (chunk.ids.length >= 2 * CHUNK_SIZE) {
      this.chunks.splice(chunkIndex + 1, 0, { ids: chunk.ids.splice(CHUNK_SIZE), values: chunk.values.splice(CHUNK_SIZE), rendered: undefined })
    }
  }

  delete (id: number): void {
    if (this.chunks.length === 0) return
    const chunkIndex = this.chunkFor(id)
    const chunk = this.chunks[chunkIndex]!
    const index = lowerBound(chunk.ids, id)
    if (chunk.ids[index] !== id) return
    chunk.ids.splice(index, 1)
    chunk.values.splice(index, 1)
    chunk.rendered = undefined
    if (chunk.ids.length === 0) this.chunks.splice(chunkIndex, 1)
  }

  /** Each chunk's rendering, in id order; none is empty. */
  renderings (): R[] {
    return this.chunks.map((chunk) => (chunk.rendered ??= this.renderChunk(chunk.values)))
  }

  /** The chunk an id belongs in: the first whose last id is not below it, else the last. */
  private chunkFor (id: number): number {
    let low = 0
    let high = this.chunks.length - 1
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.chunks[middle]!.ids.at(-1)! < id) low = middle + 1
      else high = middle
    }
    return low
  }
}

/** The first index whose id is not below `id` (ids.length when there is none). */
function lowerBound (ids: readonly number[], id: number): number {
  let low = 0
  let high = ids.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (ids[middle]! < id) low = middle + 1
    else high = middle
  }
  return low
}
