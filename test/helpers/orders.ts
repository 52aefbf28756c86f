import type { Response as InjectResponse } from 'light-my-request'
import { handlers } from '../../handlers/index.js'
import type { OperationHandler } from '../../src/http/operation-types.js'
import type { TestApp } from './app.js'

export interface Order { id: number, petId: number, quantity: number, shipDate: string, status: 'placed' | 'approved' | 'delivered', complete: boolean }
export interface Item { petId: number, quantity: number, status: 'available' | 'pending' | 'sold' }

/** An enterprise key with room to spare: these tests are about orders, not rate limits. */
export async function roomyHeaders (api: TestApp): Promise<{ authorization: string }> {
  return { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 100000, perDay: 1000000 })}` }
}

/** Sets a pet's stock through updateInventory, so a test starts from the state it states. */
export async function setStock (api: TestApp, headers: Record<string, string>, petId: number, quantity: number): Promise<Item> {
  const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: { quantity } })
  if (res.statusCode !== 200) throw new Error(`PATCH /v1/inventory/${petId} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

export function placeOrder (api: TestApp, headers: Record<string, string>, payload: unknown, extra: Record<string, string> = {}): Promise<InjectResponse> {
  return api.request({ method: 'POST', url: '/v1/store/orders', headers: { ...headers, ...extra }, payload: payload as object })
}

/** A pet's inventory entry as GET /v1/inventory lists it, with the list's entity tag. */
export async function inventoryEntry (api: TestApp, headers: Record<string, string>, petId: number): Promise<{ item: Item | undefined, etag: string }> {
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  if (res.statusCode !== 200) throw new Error(`GET /v1/inventory answered ${res.statusCode}: ${res.body}`)
  return { item: (res.json() as Item[]).find((i) => i.petId === petId), etag: String(res.headers.etag) }
}

/** Every order of a pet, through listOrders (one page of up to 100). */
export async function ordersOf (api: TestApp, headers: Record<string, string>, petId: number): Promise<Order[]> {
  const res = await api.request({ method: 'GET', url: `/v1/store/orders?petId=${petId}`, headers })
  if (res.statusCode !== 200) throw new Error(`GET /v1/store/orders?petId=${petId} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/**
 * The real placeOrder handler, holding its first call until `open()` (later calls go straight
 * through): a request is then in progress for as long as a test needs. The idempotency rules
 * apply around the handler, so a repeat of that request meanwhile meets its key in progress.
 */
export function heldPlaceOrder (): { handler: OperationHandler<'placeOrder'>, entered: Promise<void>, open: () => void } {
  let open!: () => void
  let enter!: () => void
  const gate = new Promise<void>((resolve) => { open = resolve })
  const entered = new Promise<void>((resolve) => { enter = resolve })
  let calls = 0
  const handler: OperationHandler<'placeOrder'> = async function (this: unknown, request, reply) {
    if (calls++ === 0) {
      enter()
      await gate
    }
    return await handlers.placeOrder.call(this as never, request, reply)
  }
  return { handler, entered, open }
}

/** The real placeOrder handler, whose first call fails with an unexpected error (a 500). */
export function failingOncePlaceOrder (): OperationHandler<'placeOrder'> {
  let calls = 0
  return async function (this: unknown, request, reply) {
    if (calls++ === 0) throw new Error('the storage fell over')
    return await handlers.placeOrder.call(this as never, request, reply)
  }
}
