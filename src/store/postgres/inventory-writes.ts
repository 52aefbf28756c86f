import { StoreUnavailableError } from '../../contract/errors.js'
import type { InventoryEvents } from '../types.js'

interface Pending<R> {
  petId: number
  quantity: number
  /** How this PATCH's inventory.updated event is recorded (its scope, its clock); undefined: record none. */
  events: InventoryEvents | undefined
  resolve: (row: R | undefined) => void
  reject: (error: unknown) => void
}

/**
 * PATCHes of the inventory, batched per event-loop turn: the writes asked for while the event
 * loop handles one batch of I/O go to the database together at the end of that turn
 * (setImmediate), as one statement with its announcement, in one round trip. Each caller gets the
 * row its own write returned, once the statement has committed.
 *
 * Why: on PostgreSQL a round trip is most of the server's CPU for a PATCH (the socket write and
 * read, the protocol), and a commit most of the database's; one of each per turn instead of per
 * request divides both by the number of concurrent writers.
 *
 * A failure stays with its own write:
 * - A batch holds one write per pet: a second write of a pet in the same turn goes in another
 *   batch, sent at the same time (the two requests were concurrent, so either order is correct,
 *   and each caller gets what its own statement wrote).
 * - A batch skips the rows other transactions hold (`send(…, alone = false)`: SKIP LOCKED) and
 *   says which it skipped; each of those writes is sent again alone, waiting for its own row
 *   within its own time limit.
 * - A batch that fails for one of its writes (a constraint, a deadlock with a writer outside the
 *   service) is tried again write by write, so that each fails or succeeds alone. Only a failure
 *   of the connection or of the server (StoreUnavailableError) fails the whole batch, as it would
 *   each of its writes.
 */
export class InventoryWrites<R> {
  private queue: Pending<R>[] = []
  private scheduled = false

  constructor (
    private readonly send: (petIds: number[], quantities: number[], alone: boolean, events: InventoryEvents | undefined) => Promise<R[]>,
    /** The pet a row answers for, and whether its write was skipped (its row was held). */
    private readonly answer: (row: R) => { petId: number, skipped: boolean }
  ) {}

  write (petId: number, quantity: number, events: InventoryEvents | undefined): Promise<R | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ petId, quantity, events, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  private flush (): void {
    this.scheduled = false
    let rest = this.queue
    this.queue = []
    while (rest.length > 0) {
      const batch: Pending<R>[] = []
      const later: Pending<R>[] = []
      const pets = new Set<number>()
      for (const item of rest) {
        if (pets.has(item.petId)) later.push(item)
        else {
          pets.add(item.petId)
          batch.push(item)
        }
      }
      void this.run(batch)
      rest = later
    }
  }

  private async run (batch: Pending<R>[]): Promise<void> {
    const alone = batch.length === 1
    let rows: R[]
    try {
      // Every PATCH of the service records its event (the repository gives how): a batch does.
      const events = batch.find((item) => item.events !== undefined)?.events
      rows = await this.send(batch.map((item) => item.petId), batch.map((item) => item.quantity), alone, events)
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) && !alone) {
        for (const item of batch) void this.run([item])
      } else {
        for (const item of batch) item.reject(error)
      }
      return
    }
    const written = new Map<number, R>()
    const skipped = new Set<number>()
    for (const row of rows) {
      const { petId, skipped: held } = this.answer(row)
      if (held) skipped.add(petId)
      else written.set(petId, row)
    }
    for (const item of batch) {
      if (skipped.has(item.petId)) void this.run([item])
      else item.resolve(written.get(item.petId))
    }
  }
}
