import type { ProcessClient } from './process-client.js'

/**
 * A stream of changes spread over several instances, each change making exactly one event: a
 * PATCH of pets 1 to 6 to a quantity never set before (inventory.updated), or an order of one
 * unit of pet 8 or 10 (order.placed; stock set far above what the orders take first, so the
 * status stays available and no inventory.updated comes with it).
 */
export const ORDER_PETS = [8, 10]

export interface ChangeOutcome {
  /** The event each acknowledged change must have produced: `inventory.updated <petId> <quantity>` or `order.placed <orderId>`. */
  acknowledged: string[]
  /** Changes whose answer never came (the instance died): their events may or may not exist. */
  unanswered: number
  /** How many were sent to each instance. */
  sent: number[]
}

export async function stockForOrders (api: ProcessClient): Promise<void> {
  for (const petId of ORDER_PETS) {
    const res = await api.request('PATCH', `/v1/inventory/${petId}`, { quantity: 1_000_000 })
    if (res.status !== 200) throw new Error(`PATCH /v1/inventory/${petId} answered ${res.status}`)
  }
}

/** The key an event's body is found by, matching ChangeOutcome.acknowledged. */
export function eventKey (body: { type: string, data: Record<string, unknown> }): string {
  return body.type === 'inventory.updated' ? `${body.type} ${String(body.data.petId)} ${String(body.data.quantity)}` : `${body.type} ${String(body.data.id)}`
}

/**
 * Sends `count` changes, `workers` at a time, change i to instance i mod n while it is alive.
 * `afterAnswer` runs after each acknowledged change (to kill an instance mid-run, say): an
 * instance it reports dead gets no more, and its changes whose answer did not come are counted.
 */
export async function sendChanges (instances: ProcessClient[], count: number, workers: number, afterAnswer: (acknowledged: number) => void = () => {},
  alive: (instance: number) => boolean = () => true): Promise<ChangeOutcome> {
  const outcome: ChangeOutcome = { acknowledged: [], unanswered: 0, sent: instances.map(() => 0) }
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      let target = i % instances.length
      while (!alive(target)) target = (target + 1) % instances.length
      outcome.sent[target]!++
      const order = i % 4 === 3
      const petId = order ? ORDER_PETS[i % ORDER_PETS.length]! : (i % 6) + 1
      const quantity = 1000 + i
      let res
      try {
        res = order
          ? await instances[target]!.request('POST', '/v1/store/orders', { petId, quantity: 1 })
          : await instances[target]!.request('PATCH', `/v1/inventory/${petId}`, { quantity })
      } catch (error) {
        if (alive(target)) throw error
        outcome.unanswered++
        continue
      }
      if (res.status !== (order ? 201 : 200)) throw new Error(`change ${i} answered ${res.status}: ${res.text}`)
      outcome.acknowledged.push(order ? `order.placed ${res.json<{ id: number }>().id}` : `inventory.updated ${petId} ${quantity}`)
      afterAnswer(outcome.acknowledged.length)
    }
  }
  await Promise.all(Array.from({ length: workers }, worker))
  return outcome
}
