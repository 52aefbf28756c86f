import t from 'tap'
import { atEndOfTurn } from '../../src/http/end-of-turn.js'

// Responses are handed to the socket at the end of the event-loop turn (src/http/end-of-turn.ts).

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

t.test('callbacks run after the current turn, together and in order', async (t) => {
  const ran: string[] = []
  atEndOfTurn(() => ran.push('a'))
  atEndOfTurn(() => ran.push('b'))
  await Promise.resolve()
  t.same(ran, [], 'not during the turn (nor its microtasks)')
  atEndOfTurn(() => {
    ran.push('c')
    atEndOfTurn(() => ran.push('from inside'))
  })
  await nextTurn()
  t.same(ran, ['a', 'b', 'c'], 'all of them at the end of the turn, in the order given')
  await nextTurn()
  t.same(ran, ['a', 'b', 'c', 'from inside'], 'one scheduled while they run waits for the next turn')
})

t.test('a callback that throws does not keep the others from running; the error is still thrown', async (t) => {
  const ran: string[] = []
  const thrown = new Promise<unknown>((resolve) => {
    // The failure escapes from setImmediate as an uncaught exception; catch it here, once.
    const listeners = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.once('uncaughtException', (error) => {
      for (const listener of listeners) process.on('uncaughtException', listener)
      resolve(error)
    })
  })
  atEndOfTurn(() => ran.push('before'))
  atEndOfTurn(() => { throw new Error('boom') })
  atEndOfTurn(() => ran.push('after'))
  t.match(await thrown, { message: 'boom' })
  t.same(ran, ['before', 'after'])
})
