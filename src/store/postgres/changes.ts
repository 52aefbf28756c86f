import pg from 'pg'
import { KEEPALIVE_DELAY_MS } from './pool.js'

/** Ids of one kind that changed, or 'all' when the writer did not say which (or too many). */
export type Changed<K> = K[] | 'all'

/** What one committed statement changed, as the change triggers (migrations 002 and 004) announce it. */
export interface Change {
  /** Pets whose record, inventory entry or status (through their orders) changed. */
  pets?: Changed<number>
  orders?: Changed<number>
  /** Hashes of API keys. */
  keys?: Changed<string>
}

const numbers = (list: string): Changed<number> => {
  const ids = list.split(',').map(Number)
  return ids.every(Number.isSafeInteger) ? ids : 'all'
}

/**
 * Reads a payload: "TAG IDS" pairs separated by spaces (pet, order, key; IDS comma separated or
 * *). Anything it does not understand is taken as "everything changed", never ignored.
 */
export function parseChange (payload: string): Change {
  const words = payload.split(' ')
  const change: Change = {}
  if (words.length % 2 !== 0) return { pets: 'all', orders: 'all', keys: 'all' }
  for (let i = 0; i < words.length; i += 2) {
    const [tag, list] = [words[i], words[i + 1] ?? '']
    const all = list === '*' || list === ''
    if (tag === 'pet') change.pets = all ? 'all' : numbers(list)
    else if (tag === 'order') change.orders = all ? 'all' : numbers(list)
    else if (tag === 'key') change.keys = all ? 'all' : list.split(',')
    else return { pets: 'all', orders: 'all', keys: 'all' }
  }
  return change
}

export interface ChangeHandlers {
  /** Another connection committed this change. */
  changed (change: Change): void
  /** Listening began: every change committed from now on is reported; none before it is known. */
  listening (): void
  /** Listening stopped: changes may go unreported until `listening` is called again. */
  lost (): void
}

export interface ChangeFeedOptions {
  /** Bound on connecting and on each statement of the listening connection, in ms. */
  timeoutMs: number
  /** Notifications of these backends are this instance's own writes, which it has applied already. */
  isOwnBackend (processId: number): boolean
}

const FIRST_RETRY_MS = 100
const LAST_RETRY_MS = 2000
/** A statement on the listening connection this often proves it alive (a silent network loses notifications). */
const HEARTBEAT_MS = 2000

/**
 * The changes other connections commit, from a connection of its own (never one of the pool's:
 * LISTEN belongs to a session) that LISTENs on the schema's channel. A lost connection is
 * reported and opened again after a pause that doubles up to 2 s; a statement every 2 s finds a
 * connection that went silent.
 */
export class ChangeFeed {
  private client: pg.Client | undefined
  private state: 'idle' | 'connecting' | 'listening' | 'closed' = 'idle'
  private retryMs = FIRST_RETRY_MS
  private retryTimer: NodeJS.Timeout | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined
  private waiting: { resolve: () => void, reject: (error: Error) => void }[] = []
  private lastStatement: Promise<unknown> = Promise.resolve()

  constructor (
    private readonly config: pg.ClientConfig,
    private readonly handlers: ChangeHandlers,
    private readonly options: ChangeFeedOptions
  ) {}

  get listening (): boolean {
    return this.state === 'listening'
  }

  /** Starts listening, unless it already has; the caller is not kept waiting. */
  start (): void {
    if (this.state === 'idle' && this.retryTimer === undefined) void this.connect()
  }

  /** Drops a listening connection and opens another (the database looks unreachable). */
  restart (): void {
    if (this.state === 'listening' && this.client !== undefined) this.drop(this.client)
  }

  /**
   * Resolves once listening, after every change committed before the call has been reported:
   * the server sends pending notifications before it answers a statement on the same connection.
   */
  async sync (): Promise<void> {
    this.start()
    if (this.state !== 'listening') await new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }))
    const client = this.client
    if (client === undefined || this.state !== 'listening') throw new Error('not listening for changes')
    await this.statement(client, { text: 'SELECT 1' })
  }

  /** One statement at a time on the listening connection (pg queues them, but is to stop doing so). */
  private statement<R extends pg.QueryResultRow> (client: pg.Client, query: pg.QueryConfig): Promise<R[]> {
    const result = this.lastStatement.then(async () => (await client.query<R>(query)).rows)
    this.lastStatement = result.then(() => {}, () => {})
    return result
  }

  async close (): Promise<void> {
    this.state = 'closed'
    clearTimeout(this.retryTimer)
    clearInterval(this.heartbeatTimer)
    for (const { reject } of this.waiting.splice(0)) reject(new Error('the change feed is closed'))
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
  }

  private async connect (): Promise<void> {
    this.retryTimer = undefined
    this.state = 'connecting'
    this.lastStatement = Promise.resolve()
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: this.options.timeoutMs, query_timeout: this.options.timeoutMs, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS })
    this.client = client
    client.on('error', () => this.drop(client))
    client.on('end', () => this.drop(client))
    client.on('notification', (message) => {
      if (this.client !== client || this.options.isOwnBackend(message.processId)) return
      this.handlers.changed(parseChange(message.payload ?? ''))
    })
    let channel: string
    try {
      await client.connect()
      // Named after its schema in pg_stat_activity, whatever the connection string says.
      const { rows } = await client.query<{ channel: string | null }>(`SELECT petstore_channel(current_schema()) AS channel,
        set_config('application_name', left('petstore-listener ' || current_schema(), 63), false)`)
      const found = rows[0]?.channel
      if (found === undefined || found === null) throw new Error('no schema to listen on')
      channel = found
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`)
    } catch {
      // Unreachable, or not migrated yet: try again later, uncached meanwhile.
      this.drop(client)
      return
    }
    if (this.client !== client) return
    this.state = 'listening'
    this.retryMs = FIRST_RETRY_MS
    this.handlers.listening()
    // Also proves the session still listens (a pooler in transaction mode would lose it).
    const heartbeat = { text: 'SELECT $1 = ANY (ARRAY(SELECT pg_listening_channels())) AS listening', values: [channel] }
    this.heartbeatTimer = setInterval(() => {
      this.statement<{ listening: boolean }>(client, heartbeat).then((rows) => {
        if (rows[0]?.listening !== true) this.drop(client)
      }, () => this.drop(client))
    }, HEARTBEAT_MS).unref()
    for (const { resolve } of this.waiting.splice(0)) resolve()
  }

  private drop (client: pg.Client): void {
    if (this.client !== client) return
    this.client = undefined
    clearInterval(this.heartbeatTimer)
    client.end().catch(() => {})
    if (this.state === 'closed') return
    const wasListening = this.state === 'listening'
    this.state = 'idle'
    if (wasListening) this.handlers.lost()
    this.retryTimer = setTimeout(() => { void this.connect() }, this.retryMs).unref()
    this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS)
  }
}
