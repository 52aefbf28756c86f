import type { Catalogue } from './types.js'

const photo = (slug: string) => [`https://images.petstore.example.com/${slug}.jpg`]

/**
 * Loaded on first start into an empty database (unless SEED=false). It shows every status:
 * pets 3 and 7 have open orders covering their stock (pending), pets 5 and 9 are sold out.
 * Pet 12 and order 42 are the ones openapi.yaml's examples name, so that "Try it out" on the docs
 * page answers 200 with its examples on a fresh start; orders placed later get ids after 42.
 */
export const demoCatalogue: Catalogue = {
  pets: [
    { id: 1, name: 'Rex', category: { id: 1, name: 'Dogs' }, photoUrls: photo('rex'), tags: [{ id: 1, name: 'friendly' }] },
    { id: 2, name: 'Misty', category: { id: 2, name: 'Cats' }, photoUrls: photo('misty'), tags: [{ id: 2, name: 'indoor' }] },
    { id: 3, name: 'Goldie', category: { id: 3, name: 'Fish' }, photoUrls: photo('goldie'), tags: [] },
    { id: 4, name: 'Polly', category: { id: 4, name: 'Birds' }, photoUrls: photo('polly'), tags: [{ id: 3, name: 'talks' }] },
    { id: 5, name: 'Nibbles', category: { id: 5, name: 'Rodents' }, photoUrls: photo('nibbles') },
    { id: 6, name: 'Shelly', category: { id: 6, name: 'Reptiles' }, photoUrls: photo('shelly'), tags: [{ id: 4, name: 'slow' }] },
    { id: 7, name: 'Biscuit', category: { id: 1, name: 'Dogs' }, photoUrls: photo('biscuit'), tags: [{ id: 1, name: 'friendly' }] },
    { id: 8, name: 'Luna', category: { id: 2, name: 'Cats' }, photoUrls: [] },
    { id: 9, name: 'Kiwi', category: { id: 4, name: 'Birds' }, photoUrls: photo('kiwi') },
    { id: 10, name: 'Bubbles', category: { id: 3, name: 'Fish' }, photoUrls: photo('bubbles'), tags: [{ id: 5, name: 'schooling' }] },
    { id: 12, name: 'Pepper', category: { id: 1, name: 'Dogs' }, photoUrls: photo('pepper'), tags: [{ id: 1, name: 'friendly' }] }
  ],
  inventory: [
    { petId: 1, quantity: 4 },
    { petId: 2, quantity: 7 },
    { petId: 3, quantity: 2 },
    { petId: 4, quantity: 3 },
    { petId: 5, quantity: 0 },
    { petId: 6, quantity: 5 },
    { petId: 7, quantity: 1 },
    { petId: 8, quantity: 9 },
    { petId: 9, quantity: 0 },
    { petId: 10, quantity: 25 },
    { petId: 12, quantity: 7 }
  ],
  orders: [
    { id: 1, petId: 1, quantity: 1, shipDate: '2026-11-20T10:00:00.000Z', status: 'delivered', complete: true },
    { id: 2, petId: 3, quantity: 2, shipDate: '2026-11-25T09:30:00.000Z', status: 'placed', complete: false },
    { id: 3, petId: 7, quantity: 1, shipDate: '2026-11-26T14:00:00.000Z', status: 'approved', complete: false },
    { id: 4, petId: 2, quantity: 2, shipDate: '2026-11-27T11:15:00.000Z', status: 'placed', complete: false },
    { id: 5, petId: 10, quantity: 5, shipDate: '2026-11-18T16:45:00.000Z', status: 'delivered', complete: true },
    { id: 6, petId: 5, quantity: 1, shipDate: '2026-11-28T08:00:00.000Z', status: 'approved', complete: false },
    { id: 42, petId: 12, quantity: 2, shipDate: '2026-12-02T09:30:00.000Z', status: 'placed', complete: false }
  ]
}
