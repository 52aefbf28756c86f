import { randomBytes } from 'node:crypto'
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import type { FastifyBaseLogger } from 'fastify'
import type { Metrics } from '../plugins/app/metrics.js'
import { StoreUnavailableError } from '../contract/errors.js'
import type { AttemptOutcome, ClaimedDelivery, DeliveryQueue, Settlement } from '../repositories/webhook-deliveries.js'
import { checkedLookup, urlProblem } from './addresses.js'
import type { WebhookEvents } from './events.js'
import type { SecretBox } from './secrets.js'
import { signedHeaders } from './signing.js'

/** The most of a receiver's answer read (the rest is not waited for), and kept in the log. */
const READ_BYTES = 4096
const KEPT_BYTES = 1024
/**
 * Attempts that end within this long of each other are settled in one transaction, and the slots
 * they free are refilled by one claim: per event, a fraction of a claim and of a settle instead
 * of one of each. It delays only the bookkeeping, and the refill that follows it.
 */
const BATCH_MS = 5

export interface DeliveryOptions {
  queue: DeliveryQueue
  events: WebhookEvents
  box: SecretBox
  /** WEBHOOK_TIMEOUT_MS: the longest an attempt may take. */
  timeoutMs: number
  /** WEBHOOK_RETRY_SCHEDULE: the wait before each retry, in milliseconds. */
  retrySchedule: readonly number[]
  /** WEBHOOK_ALLOW_PRIVATE: http and private addresses are allowed (development and tests). */
  allowPrivate: boolean
  now: () => number
  log: FastifyBaseLogger
  metrics: Metrics | null
  /** Attempts under way at once, per instance. */
  concurrency?: number
  /** How often an idle instance looks for due deliveries. */
  pollMs?: number
}

/** Why an attempt that got no status failed, from the error the request met. */
function errorName (error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ETIMEDOUT' || code === 'WEBHOOK_TIMEOUT') return 'timeout'
  if (code === 'ECONNREFUSED') return 'connection_refused'
  if (code === 'EADDRNOTPUBLIC') return 'address_not_allowed'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error'
  return 'network_error'
}

/**
 * Delivers the outbox's events, on every instance, apart from the requests: it takes due
 * deliveries with a lease in the database (WEBHOOK_TIMEOUT_MS + 5 s; another instance takes a
 * delivery over once its holder's lease has run out, so a dead instance's deliveries are made by
 * the others), attempts each with the Standard Webhooks headers, and settles it: delivered on a
 * 2xx within the time limit, otherwise due again after the next wait of the schedule (±10 %), or
 * failed after the last. A body that breaks its schema in openapi.yaml is never sent: a bug,
 * logged, counted and failed at once (invalid_payload).
 *
 * A slow or dead receiver costs at most `concurrency` sockets and the time limit: requests never
 * wait for a delivery. Redirects are not followed (Node's http client does not), and every
 * connection goes only to a public address unless private ones are allowed (checkedLookup).
 */
export class DeliveryWorker {
  private readonly instance = `inst_${randomBytes(8).toString('hex')}`
  private readonly concurrency: number
  private readonly pollMs: number
  private readonly leaseMs: number
  private readonly agents: { http: HttpAgent, https: HttpsAgent }
  private readonly inFlight = new Set<Promise<void>>()
  private running = false
  /** Closing: attempts cut short by it are not settled (their lease runs out and they are made again). */
  private closing = false
  private wake: (() => void) | undefined
  private refill: NodeJS.Immediate | undefined
  private loop: Promise<void> | undefined
  private failing = false
  /** Attempts made, waiting to be settled together (settleSoon). */
  private unsettled: { settlement: Settlement, done: () => void }[] = []
  private settleTimer: NodeJS.Timeout | undefined

  constructor (private readonly options: DeliveryOptions) {
    this.concurrency = options.concurrency ?? 32
    this.pollMs = options.pollMs ?? 500
    this.leaseMs = options.timeoutMs + 5000
    const lookup = checkedLookup(options.allowPrivate)
    this.agents = {
      http: new HttpAgent({ keepAlive: true, maxSockets: this.concurrency, lookup }),
      https: new HttpsAgent({ keepAlive: true, maxSockets: this.concurrency, lookup })
    }
  }

  start (): void {
    if (this.running) return
    this.running = true
    this.loop = this.run()
  }

  /**
   * Stops taking deliveries and cuts the attempts under way short, without settling them: each
   * keeps its lease until it runs out, then any instance makes it again (at least once), so a
   * shutdown never waits for a slow receiver.
   */
  async close (): Promise<void> {
    this.running = false
    this.closing = true
    clearImmediate(this.refill)
    this.wake?.()
    // Attempts already made are recorded, not made again.
    this.settleNow()
    this.agents.http.destroy()
    this.agents.https.destroy()
    await this.loop
    await Promise.allSettled([...this.inFlight])
  }

  private async run (): Promise<void> {
    while (this.running) {
      let claimed: ClaimedDelivery[] = []
      const room = this.concurrency - this.inFlight.size
      if (room > 0) {
        try {
          const now = this.options.now()
          // A read first: an idle instance looks without writing.
          if (await this.options.queue.anyDue(now)) claimed = await this.options.queue.claim(this.instance, now, now + this.leaseMs, room)
          if (this.failing) this.options.log.info('webhook deliveries resumed: the storage answers again')
          this.failing = false
        } catch (error) {
          // The storage is down: the dependencies' own log says so; one line here, then quiet.
          if (!this.failing) this.options.log.warn({ err: error }, 'webhook deliveries paused: the due ones could not be read')
          this.failing = true
        }
      }
      for (const delivery of claimed) {
        const attempt = this.attempt(delivery).finally(() => {
          this.inFlight.delete(attempt)
          // Attempts settled together end together: one refill after them (the next turn), not one each.
          this.refill ??= setImmediate(() => {
            this.refill = undefined
            this.wake?.()
          })
        })
        this.inFlight.add(attempt)
      }
      // A full batch: more may be due at once. Otherwise wait for the poll or a free slot.
      if (claimed.length === room && room > 0) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs)
        this.wake = () => {
          clearTimeout(timer)
          this.wake = undefined
          resolve()
        }
      })
    }
  }

  private async attempt (delivery: ClaimedDelivery): Promise<void> {
    const { options } = this
    const startedAt = options.now()
    let outcome: AttemptOutcome
    let problem: string | undefined
    try {
      problem = options.events.problem(delivery.type, JSON.parse(delivery.payload))
    } catch {
      problem = 'the stored body is not JSON'
    }
    if (problem !== undefined) {
      options.log.error({ eventId: delivery.eventId, type: delivery.type, problem }, 'a webhook event does not match its schema in openapi.yaml: not sent (a bug)')
      options.metrics?.webhookAttempt('invalid_payload')
      outcome = { delivered: false, statusCode: null, error: 'invalid_payload', durationMs: 0, responseBody: null, nextAttemptAt: null }
    } else {
      let sent: Omit<AttemptOutcome, 'nextAttemptAt'>
      try {
        sent = await this.send(delivery, startedAt)
      } catch (error) {
        // The service could not make the attempt (a secret it cannot open, say): logged, tried
        // again on the schedule. Left to reject, it would end the process, and every restart again.
        options.log.error({ err: error, eventId: delivery.eventId }, 'a webhook attempt could not be made')
        sent = { delivered: false, statusCode: null, error: 'service_error', durationMs: Math.max(0, options.now() - startedAt), responseBody: null }
      }
      outcome = this.next(delivery, sent, startedAt)
      options.metrics?.webhookAttempt(outcome.delivered ? 'delivered' : outcome.nextAttemptAt === null ? 'gave_up' : 'failed_attempt')
    }
    // Closing cuts attempts short: a failure then is not recorded (its lease runs out, it is made again).
    if (this.closing && !outcome.delivered) return
    await this.settleSoon({ delivery, outcome })
  }

  /** Settles the attempt with the others that end within BATCH_MS (or once a batch is full). */
  private settleSoon (settlement: Settlement): Promise<void> {
    return new Promise((resolve) => {
      this.unsettled.push({ settlement, done: resolve })
      // Nothing else under way to wait for (every attempt in flight has ended), or a full batch: now.
      if (this.unsettled.length >= this.inFlight.size || this.unsettled.length >= this.concurrency || this.closing) this.settleNow()
      else this.settleTimer ??= setTimeout(() => this.settleNow(), BATCH_MS)
    })
  }

  private settleNow (): void {
    clearTimeout(this.settleTimer)
    this.settleTimer = undefined
    const batch = this.unsettled
    this.unsettled = []
    if (batch.length > 0) void this.settle(batch.map((entry) => entry.settlement)).finally(() => { for (const entry of batch) entry.done() })
  }

  /**
   * One transaction for the batch. A failure that is not the storage's (a value one engine
   * refuses, say) stays with its own attempt: the batch is settled again one by one, and an
   * attempt that still fails once more without the receiver's answer. What is not settled keeps
   * its lease until it runs out, then is attempted again (at least once).
   */
  private async settle (batch: Settlement[], alone = false): Promise<void> {
    try {
      await this.options.queue.settle(batch, this.options.now())
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) && batch.length > 1) {
        await Promise.all(batch.map((settlement) => this.settle([settlement])))
      } else if (!(error instanceof StoreUnavailableError) && !alone && batch[0]!.outcome.responseBody !== null) {
        const [{ delivery, outcome }] = batch as [Settlement]
        this.options.log.warn({ err: error, eventId: delivery.eventId }, 'a webhook attempt could not be recorded with the receiver\'s answer; recorded without it')
        await this.settle([{ delivery, outcome: { ...outcome, responseBody: null } }], true)
      } else {
        this.options.log.warn({ err: error, eventIds: batch.map((s) => s.delivery.eventId) }, 'webhook attempts could not be recorded; they will be made again')
      }
    }
  }

  /** The attempt's outcome with when to try again: after the schedule's next wait, ±10 %. */
  private next (delivery: ClaimedDelivery, sent: Omit<AttemptOutcome, 'nextAttemptAt'>, startedAt: number): AttemptOutcome {
    if (sent.delivered) return { ...sent, nextAttemptAt: null }
    const wait = this.options.retrySchedule[delivery.attempts]
    if (wait === undefined) return { ...sent, nextAttemptAt: null }
    return { ...sent, nextAttemptAt: Math.round(startedAt + sent.durationMs + wait * (0.9 + 0.2 * Math.random())) }
  }

  /** One POST of the event to the endpoint. */
  private send (delivery: ClaimedDelivery, startedAt: number): Promise<Omit<AttemptOutcome, 'nextAttemptAt'>> {
    const { options } = this
    const finish = (statusCode: number | null, error: string | null, body: Buffer | null): Omit<AttemptOutcome, 'nextAttemptAt'> => ({
      delivered: statusCode !== null && statusCode >= 200 && statusCode < 300,
      statusCode,
      error: error ?? (statusCode !== null && (statusCode < 200 || statusCode >= 300) ? 'status_code' : null),
      durationMs: Math.max(0, options.now() - startedAt),
      // As text, as the log keeps it: bytes that are not UTF-8, and NUL, which PostgreSQL's text
      // refuses (an attempt that cannot be logged is made again, forever), read as U+FFFD.
      responseBody: body === null || body.length === 0 ? null : body.subarray(0, KEPT_BYTES).toString('utf8').replaceAll('\0', '\uFFFD')
    })
    // Checked again at each attempt (a literal address is connected to without a lookup).
    if (urlProblem(delivery.url, options.allowPrivate) !== undefined) return Promise.resolve(finish(null, 'address_not_allowed', null))
    if (this.closing) return Promise.resolve(finish(null, 'network_error', null))
    const secrets = [options.box.open(delivery.secret)]
    if (delivery.previousSecret !== null && (delivery.previousSecretExpiresAt ?? 0) > startedAt) secrets.push(options.box.open(delivery.previousSecret))
    const headers = signedHeaders(delivery.eventId, delivery.payload, secrets, new Date(startedAt))
    const url = new URL(delivery.url)
    const secure = url.protocol === 'https:'
    return new Promise((resolve) => {
      let settled = false
      let answer: IncomingMessage | undefined
      const chunks: Buffer[] = []
      const done = (error: string | null) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(finish(answer?.statusCode ?? null, error, Buffer.concat(chunks)))
      }
      const request = (secure ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(delivery.payload), 'user-agent': 'petstore-webhooks/1' },
        agent: secure ? this.agents.https : this.agents.http
      }, (response: IncomingMessage) => {
        answer = response
        let read = 0
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          read += chunk.length
          // Enough to keep: the rest of a large answer is not waited for.
          if (read >= READ_BYTES) {
            response.destroy()
            done(null)
          }
        })
        response.on('end', () => { done(null) })
        response.on('error', () => { done(null) })
      })
      // The status decides; an answer whose body is still coming when time is up is judged by it.
      const timer = setTimeout(() => {
        if (answer !== undefined) {
          answer.destroy()
          done(null)
        } else {
          request.destroy(Object.assign(new Error('the receiver did not answer in time'), { code: 'WEBHOOK_TIMEOUT' }))
        }
      }, options.timeoutMs)
      request.on('error', (error) => { done(answer === undefined ? errorName(error) : null) })
      request.end(delivery.payload)
    })
  }
}
