import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export type DependencyName = 'storage' | 'rate-limit-store'
export type Readiness = [name: DependencyName, state: 'ok' | 'unavailable'][]

/** How long one readiness result is reused: /readyz needs no key and has no limit. */
export const READINESS_REUSE_MS = 1000

/** What a dependency's outage means for requests, logged once when it starts; and once when it ends. */
const lines: Record<DependencyName, { level: 'error' | 'warn', down: string, up: string }> = {
  storage: {
    level: 'error',
    down: 'storage unavailable: requests that need it are answered 503 until it is back',
    up: 'storage available again'
  },
  'rate-limit-store': {
    level: 'warn',
    down: 'rate-limit store unreachable: serving requests without rate limits (fail open) until it answers again',
    up: 'rate-limit store reachable again: rate limits are enforced'
  }
}

/** One dependency as the request path sees it. */
export interface DependencyState {
  /** Whether it is down now, as the last call or check found it. */
  readonly down: boolean
  /** A request's call failed: counted, and logged when it starts an outage. */
  failed (error: unknown): void
  /** A request's call succeeded: logged when it ends an outage. */
  answered (): void
}

export interface Dependencies {
  of (name: DependencyName): DependencyState
  /**
   * Every dependency checked (storage always; the rate-limit store with Redis). A result is reused
   * for READINESS_REUSE_MS, calls that arrive while the checks run share them, and a result that
   * calls a dependency ok is dropped as soon as a request finds it failing.
   */
  readiness (): Promise<Readiness>
}

export interface DependenciesOptions {
  /** Monotonic milliseconds (performance.now by default): the clock of a result's reuse. */
  clock?: (() => number) | undefined
}

/** The reason of a failure in one line: its message, and its cause's (a driver's error). */
function reason (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error && !error.message.includes(error.cause.message) ? `: ${error.cause.message}` : ''
  return `${error.message}${cause}`
}

/**
 * The state of each dependency the service needs, kept from what requests and readiness checks
 * find: an outage is logged once when it starts (without a stack: the cause in one line) and once
 * when it ends, never per request; every failed call is counted (dependency_failures_total).
 * While one is down it is checked every READINESS_REUSE_MS, so its return is noticed (and logged)
 * without a request or a load balancer asking.
 */
async function dependencies (app: FastifyInstance, options: DependenciesOptions) {
  // Monotonic time, not the app's clock: the tests move that one to drive rate-limit windows.
  const clock = options.clock ?? (() => performance.now())
  const metrics = app.metrics
  const checks = new Map<DependencyName, () => Promise<void>>([['storage', () => app.store.ping()]])
  if (app.rateLimitStore.engine === 'redis') checks.set('rate-limit-store', () => app.rateLimitStore.ping())

  interface Result { readiness: Promise<Readiness>, validUntil: number, ok: Set<DependencyName> | undefined, stale: boolean }
  let current: Result | undefined
  let recheck: NodeJS.Timeout | undefined

  /** A request found `name` failing: a result that calls it ok is not reused (one still running is shared, then dropped). */
  const forget = (name: DependencyName) => {
    if (current === undefined) return
    if (current.ok === undefined) current.stale = true
    else if (current.ok.has(name)) current = undefined
  }

  const states = new Map<DependencyName, DependencyState & { changed (down: boolean, error?: unknown): void }>()
  for (const name of checks.keys()) {
    const line = lines[name]
    const state = {
      down: false,
      changed (down: boolean, error?: unknown) {
        if (down === state.down) return
        state.down = down
        if (down) {
          app.log[line.level]({ dependency: name, reason: reason(error) }, `${line.down} (${reason(error)})`)
          recheck ??= setInterval(() => { void readiness() }, READINESS_REUSE_MS).unref()
        } else {
          app.log.info({ dependency: name }, line.up)
          if ([...states.values()].every((other) => !other.down)) {
            clearInterval(recheck)
            recheck = undefined
          }
        }
      },
      failed (error: unknown) {
        metrics?.dependencyFailure(name)
        forget(name)
        state.changed(true, error)
      },
      answered () {
        if (state.down) state.changed(false)
      }
    }
    states.set(name, state)
  }

  const runChecks = (): Promise<Readiness> => Promise.all([...checks].map(async ([name, check]) => {
    const state = states.get(name)!
    try {
      await check()
      state.changed(false)
      return [name, 'ok'] as const
    } catch (error) {
      state.changed(true, error)
      return [name, 'unavailable'] as const
    }
  }))

  const readiness = (): Promise<Readiness> => {
    const now = clock()
    if (current !== undefined && now < current.validUntil) return current.readiness
    const entry: Result = { readiness: runChecks(), validUntil: Number.POSITIVE_INFINITY, ok: undefined, stale: false }
    void entry.readiness.then((results) => {
      entry.ok = new Set(results.filter(([, state]) => state === 'ok').map(([name]) => name))
      entry.validUntil = entry.stale ? Number.NEGATIVE_INFINITY : clock() + READINESS_REUSE_MS
    })
    current = entry
    return entry.readiness
  }

  app.addHook('onClose', async () => { clearInterval(recheck) })
  app.decorate('dependencies', {
    of: (name: DependencyName) => {
      const state = states.get(name)
      if (state === undefined) throw new Error(`no dependency ${name} is configured`)
      return state
    },
    readiness
  } satisfies Dependencies)
}

declare module 'fastify' {
  interface FastifyInstance {
    dependencies: Dependencies
  }
}

export default fp(dependencies, { name: 'dependencies', dependencies: ['metrics', 'storage', 'rate-limit'] })
