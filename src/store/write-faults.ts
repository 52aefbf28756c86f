import { StoreUnavailableError } from '../contract/errors.js'

/**
 * The storage fault writes met (a full disk, a read-only file or server, an I/O error), kept for
 * readiness until a write passes again; one per database connection or pool.
 *
 * While it is kept, readiness answers unavailable when a write met it since the previous check;
 * otherwise a probe write decides, and its success ends the fault. A probe needs less than most
 * writes (on SQLite one page, in WAL space a failed write may have left allocated; on PostgreSQL
 * one row of a small table), so it can pass on a nearly full disk while requests' writes fail: it
 * is believed only when no write has failed since the last check.
 */
export class WriteFaults {
  private fault: { code: string, failedSinceCheck: boolean } | undefined

  /** The code writes failed with, while the fault is kept. */
  get code (): string | undefined {
    return this.fault?.code
  }

  /** A write failed for a storage fault (`code`: the engine's). */
  met (code: string): void {
    this.fault = { code, failedSinceCheck: true }
  }

  /** Resolves when writes pass (nothing kept, or `probe` succeeded); rejects with StoreUnavailableError otherwise. */
  async check (probe: () => Promise<unknown>): Promise<void> {
    const fault = this.fault
    if (fault === undefined) return
    if (fault.failedSinceCheck) {
      fault.failedSinceCheck = false
      throw new StoreUnavailableError(`writes are failing (${fault.code})`)
    }
    try {
      await probe()
    } catch (error) {
      // The probe's own failure is this check's answer, not a write failed since it.
      if (this.fault !== undefined) this.fault.failedSinceCheck = false
      throw error
    }
    this.fault = undefined
  }
}
