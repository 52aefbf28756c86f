import { sql } from 'kysely'
import { statusOf, toOrder } from '../store/rows.js'
import { statement, type Arg } from '../store/query.js'
import type { Order } from '../store/types.js'
import { all, first, lockRow, run, type DataAccess, type Work } from '../store/work.js'
import type { IdempotencyRepository, Idempotent, IdempotentRequest } from './idempotency.js'
import { recordEvent, subscribedTypes, type EventScopes, type WebhookEventType } from './webhooks.js'

export type OrderStatus = Order['status']

/** The statuses whose orders reserve their pet's units (the status rule of openapi.yaml). */
export const OPEN_STATUSES: readonly OrderStatus[] = ['placed', 'approved']

export interface NewOrder {
  petId: number
  quantity: number
  /** ISO 8601 text, kept as it was sent. */
  shipDate: string
}

export type PlaceOutcome =
  | { kind: 'placed', order: Order }
  | { kind: 'no_inventory' }
  | { kind: 'insufficient_stock', available: number }

export type StatusOutcome =
  | { kind: 'updated', order: Order }
  | { kind: 'not_found' }
  | { kind: 'invalid_transition', from: OrderStatus }
  | { kind: 'insufficient_stock', stock: number, order: Order }

export type CancelOutcome = { kind: 'cancelled' } | { kind: 'not_found' } | { kind: 'invalid_transition', from: OrderStatus }

export interface PageQuery {
  statuses?: readonly OrderStatus[] | undefined
  petId?: number | undefined
  /** Only orders with a higher id (the cursor of the previous page). */
  afterId?: number | undefined
  limit: number
}

export interface OrdersRepository {
  /**
   * Places an order if the pet's stock, less what its open orders reserve, covers it. With an
   * Idempotency-Key, once per key (see IdempotencyRepository.guard).
   */
  place (order: NewOrder, idempotency?: IdempotentRequest): Promise<Idempotent<PlaceOutcome>>
  get (id: number): Promise<Order | undefined>
  /**
   * Moves an order on: placed → approved, placed | approved → delivered (the units leave the
   * stock in the same transaction). Its own status again changes nothing.
   */
  setStatus (id: number, status: Exclude<OrderStatus, 'placed'>): Promise<StatusOutcome>
  /** Deletes an open order; a delivered one stays. */
  cancel (id: number): Promise<CancelOutcome>
  /** Orders in id order, after `afterId`; `more` when others follow. */
  page (query: PageQuery): Promise<{ orders: Order[], more: boolean }>
}


/** The columns of an order under the names of Order (toOrder maps the row). */
const orderSelection = ['id', 'pet_id as petId', 'quantity', 'ship_date as shipDate', 'status', 'complete'] as const

const q = {
  stock: statement('orders.stock', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('inventory').select('quantity').where('pet_id', '=', arg('petId'))),
  reserved: statement('orders.reserved', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('orders')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('quantity'), sql<number>`0`).as('units'))
    .where('pet_id', '=', arg('petId'))
    .where('status', 'in', OPEN_STATUSES)),
  insert: statement('orders.insert', (db, arg: Arg<NewOrder>) => db
    .insertInto('orders')
    .values({ pet_id: arg('petId'), quantity: arg('quantity'), ship_date: arg('shipDate'), status: 'placed', complete: false })
    .returning(orderSelection)),
  byId: statement('orders.byId', (db, arg: Arg<{ id: number }>) => db
    .selectFrom('orders').select(orderSelection).where('id', '=', arg('id'))),
  setStatus: statement('orders.setStatus', (db, arg: Arg<{ id: number, status: OrderStatus, complete: boolean }>) => db
    .updateTable('orders').set({ status: arg('status'), complete: arg('complete') }).where('id', '=', arg('id'))
    .returning(orderSelection)),
  takeFromStock: statement('orders.takeFromStock', (db, arg: Arg<{ petId: number, quantity: number }>) => db
    .updateTable('inventory').set((eb) => ({ quantity: eb('quantity', '-', arg('quantity')) })).where('pet_id', '=', arg('petId'))),
  remove: statement('orders.remove', (db, arg: Arg<{ id: number }>) => db
    .deleteFrom('orders').where('id', '=', arg('id')))
}

const everyOrder = statement('orders.list', (db) => db.selectFrom('orders').select(orderSelection).orderBy('id'))

/** Every order, in id order (the tests read them back so). */
export const allOrders = (data: DataAccess): Promise<Order[]> => data.read(function * () { return (yield * all(everyOrder, {})).map(toOrder) })

/** The pet's stock and the units its open orders reserve; undefined when it has no inventory entry. */
function * stockOf (petId: number): Work<{ stock: number, reserved: number, available: number } | undefined> {
  const entry = yield * first(q.stock, { petId })
  if (entry === undefined) return undefined
  const reserved = Number((yield * first(q.reserved, { petId }))?.units ?? 0)
  return { stock: entry.quantity, reserved, available: Math.max(0, entry.quantity - reserved) }
}

/** What a change of an order records for the webhooks (openapi.yaml, webhooks): the events someone wants. */
interface EventContext {
  scopes: EventScopes
  now: number
}

/**
 * Records the events of a change of an order: the order's own (its data: the Order as it is now,
 * or as it was when cancelled), and inventory.updated when the pet's stock or status changed, from
 * the stock and reservations before and after (the status rule of openapi.yaml, as statusOf).
 */
function * recordOrderEvents (context: EventContext, type: WebhookEventType, order: Order, before: { stock: number, reserved: number }, after: { stock: number, reserved: number }): Work<void> {
  const wanted = yield * subscribedTypes(context.scopes)
  if (wanted.has(type)) yield * recordEvent(type, order, context.scopes[type], { now: context.now })
  const previous = { quantity: before.stock, status: statusOf(before.stock, before.reserved) }
  const status = statusOf(after.stock, after.reserved)
  if (wanted.has('inventory.updated') && (after.stock !== before.stock || status !== previous.status)) {
    yield * recordEvent('inventory.updated', { petId: order.petId, quantity: after.stock, status, previous }, context.scopes['inventory.updated'], { now: context.now })
  }
}

/**
 * Every write to an order first locks its pet's inventory entry, then reads the order again: so
 * writes of one pet's stock and orders take their turns (on PostgreSQL; SQLite has one writer),
 * always in the same order, and what each reads stays true until it commits.
 */
function * lockedOrder (id: number): Work<Order | undefined> {
  const seen = yield * first(q.byId, { id })
  if (seen === undefined) return undefined
  yield * lockRow('inventory', seen.petId)
  const row = yield * first(q.byId, { id })
  return row && toOrder(row)
}

function * place (order: NewOrder, events: EventContext): Work<PlaceOutcome> {
  yield * lockRow('inventory', order.petId)
  const units = yield * stockOf(order.petId)
  if (units === undefined) return { kind: 'no_inventory' }
  if (order.quantity > units.available) return { kind: 'insufficient_stock', available: units.available }
  const [row] = yield * all(q.insert, order)
  if (row === undefined) throw new Error('the order insert returned no row')
  const placed = toOrder(row)
  yield * recordOrderEvents(events, 'order.placed', placed, units, { stock: units.stock, reserved: units.reserved + order.quantity })
  return { kind: 'placed', order: placed }
}

function * setStatus (id: number, status: Exclude<OrderStatus, 'placed'>, events: EventContext): Work<StatusOutcome> {
  const order = yield * lockedOrder(id)
  if (order === undefined) return { kind: 'not_found' }
  if (order.status === status) return { kind: 'updated', order }
  if (order.status === 'delivered') return { kind: 'invalid_transition', from: order.status }
  const before = (yield * stockOf(order.petId)) ?? { stock: 0, reserved: 0 }
  if (status === 'delivered') {
    if (before.stock < order.quantity) return { kind: 'insufficient_stock', stock: before.stock, order }
    yield * run(q.takeFromStock, { petId: order.petId, quantity: order.quantity })
  }
  const [row] = yield * all(q.setStatus, { id, status, complete: status === 'delivered' })
  if (row === undefined) throw new Error('the order update returned no row')
  const updated = toOrder(row)
  // Delivering an open order takes its units out of the stock and out of what is reserved.
  const after = status === 'delivered' ? { stock: before.stock - order.quantity, reserved: before.reserved - order.quantity } : before
  yield * recordOrderEvents(events, status === 'delivered' ? 'order.delivered' : 'order.approved', updated, before, after)
  return { kind: 'updated', order: updated }
}

function * cancel (id: number, events: EventContext): Work<CancelOutcome> {
  const order = yield * lockedOrder(id)
  if (order === undefined) return { kind: 'not_found' }
  if (order.status === 'delivered') return { kind: 'invalid_transition', from: order.status }
  const before = (yield * stockOf(order.petId)) ?? { stock: 0, reserved: 0 }
  yield * run(q.remove, { id })
  yield * recordOrderEvents(events, 'order.cancelled', order, before, { stock: before.stock, reserved: before.reserved - order.quantity })
  return { kind: 'cancelled' }
}

/** Placing is answered again to a retry; a failure of the service is not an outcome, so it is not kept. */
const keptOutcome = () => true

/**
 * `scopes`: the scope each event type needs (openapi.yaml's webhooks): each change records, in its
 * own transaction, the events endpoints subscribe to.
 */
export function ordersRepository (data: DataAccess, idempotency: IdempotencyRepository, now: () => number, scopes: EventScopes): OrdersRepository {
  const events = (): EventContext => ({ scopes, now: now() })
  return {
    place: (order, request) => data.write(() => request === undefined
      ? doneOnce(place(order, events()))
      : idempotency.guard(request, now(), () => place(order, events()), keptOutcome)),

    get: (id) => data.read(function * () {
      const row = yield * first(q.byId, { id })
      return row && toOrder(row)
    }),

    setStatus: (id, status) => data.write(() => setStatus(id, status, events())),

    cancel: (id) => data.write(() => cancel(id, events())),

    page: ({ statuses, petId, afterId, limit }) => data.read(function * () {
      const args: PageArgs = { afterId: afterId ?? 0, petId: petId ?? 0, limit: limit + 1 }
      statuses?.forEach((status, i) => { args[`status${i}`] = status })
      const rows = yield * all(pageStatement(afterId !== undefined, petId !== undefined, statuses?.length), args)
      return { orders: rows.slice(0, limit).map(toOrder), more: rows.length > limit }
    })
  }
}

type PageArgs = { afterId: number, petId: number, limit: number } & { [status: `status${number}`]: OrderStatus }

/**
 * The query of a page of orders for one combination of filters (which are given, how many
 * statuses), written once and compiled once per combination: a request only fills in its values.
 * openapi.yaml allows up to three distinct statuses, so there are at most 2 × 2 × 4 of them. (Built
 * and compiled per request instead, the query cost about 40 µs of CPU per page.)
 */
const pageStatements = new Map<string, ReturnType<typeof pageQuery>>()
const pageQuery = (byAfterId: boolean, byPet: boolean, statusCount: number | undefined) =>
  statement('orders.page', (db, arg: Arg<PageArgs>) => {
    let query = db.selectFrom('orders').select(orderSelection).orderBy('id').limit(arg('limit'))
    if (byAfterId) query = query.where('id', '>', arg('afterId'))
    if (byPet) query = query.where('pet_id', '=', arg('petId'))
    if (statusCount !== undefined) query = query.where('status', 'in', Array.from({ length: statusCount }, (_, i) => arg(`status${i}`)))
    return query
  })
function pageStatement (byAfterId: boolean, byPet: boolean, statusCount: number | undefined) {
  const shape = `${byAfterId}:${byPet}:${statusCount}`
  let found = pageStatements.get(shape)
  if (found === undefined) pageStatements.set(shape, found = pageQuery(byAfterId, byPet, statusCount))
  return found
}

/** The outcome of work that no Idempotency-Key guards. */
function * doneOnce<T> (work: Work<T>): Work<Idempotent<T>> {
  return { kind: 'done', outcome: yield * work, replayed: false }
}
