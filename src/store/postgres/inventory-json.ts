/**
 * The inventory list as JSON text, kept with the snapshot it was read under. A snapshot (xmin,
 * xmax and the transactions in progress) fixes exactly which transactions are visible, so a new
 * statement whose snapshot is equal sees the same rows: the text is reused. Any transaction that
 * wrote anywhere (another instance, the CLI, psql) changes the next snapshot, so nothing
 * committed is ever missed; unrelated writes only cost a needless re-read.
 *
 * Concurrent calls that find the text out of date share one read instead of each running the
 * whole query at once, but only a read that started after they arrived: it sees every write
 * acknowledged before them. Reads are numbered as they start.
 */
export class InventoryJson {
  private cached: { snapshot: string, text: string } | undefined
  private readsStarted = 0
  private reading: { id: number, text: Promise<string> } | undefined
  private queued: Promise<string> | undefined

  constructor (private readonly source: {
    /** The current snapshot, as text. */
    snapshot: () => Promise<string>
    /** The list and the snapshot it was read under, in one statement. */
    read: () => Promise<{ snapshot: string, json: string }>
  }) {}

  async get (): Promise<string> {
    const arrived = this.readsStarted
    const cached = this.cached
    if (cached !== undefined && await this.source.snapshot() === cached.snapshot) return cached.text
    if (this.reading === undefined) return this.read()
    if (this.reading.id > arrived) return this.reading.text
    const after = this.reading.text.then(() => {}, () => {})
    this.queued ??= after.then(() => { this.queued = undefined; return this.read() })
    return this.queued
  }

  private read (): Promise<string> {
    const id = ++this.readsStarted
    const text = this.source.read().then(({ snapshot, json }) => {
      this.cached = { snapshot, text: json }
      return json
    })
    this.reading = { id, text }
    const clear = () => { if (this.reading?.id === id) this.reading = undefined }
    text.then(clear, clear)
    return text
  }
}
