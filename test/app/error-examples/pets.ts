import type { Provocation } from './provocation.js'

/** The errors of getPetById's own handler; the demo catalogue has no pet 99. */
export const provoke: Provocation = async (api) => {
  const headers = await api.authHeader('pro')
  return [
    ['an unknown pet', await api.request({ method: 'GET', url: '/v1/pets/99', headers })]
  ]
}
