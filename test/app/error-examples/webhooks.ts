import type { Provocation } from './provocation.js'

/**
 * The errors of the webhook operations' own handlers. The endpoints made here have addresses
 * written as public IP addresses (nothing to resolve), and are removed before any change could
 * send them an event.
 */
export const provoke: Provocation = async (api) => {
  const headers = { ...await api.authHeader('enterprise'), 'content-type': 'application/json' }
  const create = (url: string) => api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: { url, events: ['order.placed'] } })
  const provoked: Awaited<ReturnType<Provocation>> = [
    ['an endpoint address in a private range', await create('https://10.0.0.8/petstore/events')],
    ['an event type the service does not send', await api.request({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: 'https://93.184.216.34/petstore/events', events: ['order.shipped'] } })],
    ['an unknown endpoint', await api.request({ method: 'GET', url: '/v1/webhooks/7', headers })],
    ['a page of more than 100', await api.request({ method: 'GET', url: '/v1/webhooks?limit=101', headers })]
  ]
  const ids: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await create(`https://93.184.216.${i + 1}/petstore/events`)
    if (res.statusCode !== 201) throw new Error(`createWebhookEndpoint answered ${res.statusCode}: ${res.body}`)
    ids.push((res.json() as { id: number }).id)
  }
  provoked.push(['an 11th endpoint', await create('https://93.184.216.99/petstore/events')])
  for (const id of ids) await api.request({ method: 'DELETE', url: `/v1/webhooks/${id}`, headers })
  return provoked
}
