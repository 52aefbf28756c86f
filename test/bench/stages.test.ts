import t from 'tap'
import { type Frame, moduleOf, stageOf } from '../../bench/lib/stages.js'

// Stacks as a CPU profile records them, the running function first. Project files as the
// benchmark runs them: compiled under bench/out/dist/, or through tsx from the checkout.
const root = 'file:///work/petstore'
const project = (path: string, functionName = '') => ({ functionName, url: `${root}/bench/out/dist/${path}.js` })
const pkg = (path: string, functionName = '') => ({ functionName, url: `${root}/node_modules/${path}` })
const node = (module: string, functionName = '') => ({ functionName, url: `node:${module}` })
const native = (functionName: string) => ({ functionName, url: '' })
const stack = (...frames: Frame[]): Frame[] => [...frames, native('(root)')]

t.test('modules are named by package path, project path without extension, or node: URL', async (t) => {
  t.equal(moduleOf(`${root}/node_modules/fastify/lib/reply.js`), 'fastify/lib/reply.js')
  t.equal(moduleOf(`${root}/node_modules/@fastify/rate-limit/index.js`), '@fastify/rate-limit/index.js')
  t.equal(moduleOf(`${root}/bench/out/dist/src/plugins/app/authentication.js`), 'src/plugins/app/authentication')
  t.equal(moduleOf(`${root}/src/plugins/app/authentication.ts`), 'src/plugins/app/authentication', 'through tsx: the same name')
  t.equal(moduleOf(`${root}/bench/servers/floor.ts`), 'bench/servers/floor')
  t.equal(moduleOf('node:net'), 'node:net')
  t.equal(moduleOf(''), '')
})

t.test('a header set through Fastify by a hook belongs to the hook', async (t) => {
  t.equal(stageOf(stack(pkg('fastify/lib/reply.js', 'Reply.header'), pkg('fastify/lib/reply.js', 'Reply.headers'),
    project('src/plugins/external/security-headers'), pkg('fastify/lib/hooks.js', 'hookIterator'), pkg('fastify/lib/hooks.js', 'next'))), 'security headers')
})

t.test('what runs beneath a continuation is the next step, not the hook that called it', async (t) => {
  const sendAfterHook = stack(native('writev'), node('internal/stream_base_commons', 'writevGeneric'), node('net', 'Socket._writeGeneric'),
    node('_http_outgoing', 'end'), pkg('fastify/lib/reply.js', 'onSendEnd'), pkg('fastify/lib/reply.js', 'wrapOnSendEnd'),
    pkg('fastify/lib/hooks.js', 'next'), project('src/plugins/app/conditional-requests'), pkg('fastify/lib/hooks.js', 'next'))
  t.equal(stageOf(sendAfterHook), 'node http/writev')
  const coreAfterHook = stack(pkg('fastify/lib/handle-request.js', 'handleRequest'), pkg('fastify/lib/hooks.js', 'next'), project('src/plugins/app/authentication'))
  t.equal(stageOf(coreAfterHook), 'Fastify core/routing')
  const sentFromHandler = stack(pkg('fastify/lib/reply.js', 'onSendEnd'), pkg('fastify/lib/reply.js', 'Reply.send'), project('handlers/placeOrder', 'placeOrder'))
  t.equal(stageOf(sentFromHandler), 'Fastify core/routing', 'reply.send called by a handler')
  const parsedBody = stack(pkg('fastify/lib/validation.js', 'validate'), pkg('fastify/lib/handle-request.js', 'handler'),
    pkg('fastify/lib/content-type-parser.js', 'done'), project('src/contract/json-parser'))
  t.equal(stageOf(parsedBody), 'validation', 'validation after the body parser handed the body on')
})

t.test('among the stages the innermost wins; the key check owns its lookup', async (t) => {
  const counted = stack(project('src/rate-limit/memory-store', 'hit'), pkg('@fastify/rate-limit/index.js'),
    project('src/plugins/app/rate-limit-policy', 'count'), project('src/plugins/app/authentication'), pkg('@fastify/bearer-auth/lib/verify-bearer-auth-factory.js'))
  t.equal(stageOf(counted), 'rate-limit windows', 'counted from the callback of bearer-auth')
  const lookup = stack(native('get'), pkg('better-sqlite3/lib/methods/wrappers.js'), project('src/store/sqlite/caches', 'activeKey'),
    project('src/authentication/key-guard', 'check'), project('src/plugins/app/authentication', 'identify'), pkg('@fastify/bearer-auth/lib/verify-bearer-auth-factory.js'))
  t.equal(stageOf(lookup), 'key check')
  const hashed = stack(native('hash'), node('internal/crypto/hash', 'hash'), project('src/repositories/api-keys', 'hashApiKey'), project('src/plugins/app/authentication', 'identify'))
  t.equal(stageOf(hashed), 'key check')
  const beforeTheMoves = stack(native('get'), project('src/store/sqlite/caches', 'activeKey'), project('src/rate-limit/key-guard', 'check'),
    project('src/plugins/external/bearer-auth', 'auth'), pkg('@fastify/bearer-auth/lib/verify-bearer-auth-factory.js'))
  t.equal(stageOf(beforeTheMoves), 'key check', 'a --baseline build from before the moves of issue 23')
  const dispatcher = stack(project('src/plugins/app/authentication'), pkg('fastify/lib/hooks.js', 'hookIterator'))
  t.equal(stageOf(dispatcher), 'key check', 'the authentication hook itself')
})

t.test('the response serializer and what it calls are serialization; request validators are validation', async (t) => {
  const serializer = stack(native('validate20'), project('src/contract/validation', 'check'), project('src/contract/validation'),
    pkg('fastify/lib/reply.js', 'preSerializationHookEnd'), pkg('fastify/lib/reply.js', 'preSerializationHook'), pkg('fastify/lib/reply.js', 'Reply.send'))
  t.equal(stageOf(serializer), 'serialization')
  const onSend = stack(project('src/plugins/app/conditional-requests'), pkg('fastify/lib/hooks.js', 'onSendHookRunner'), pkg('fastify/lib/reply.js', 'onSendHook'),
    pkg('fastify/lib/reply.js', 'preSerializationHookEnd'), pkg('fastify/lib/reply.js', 'Reply.send'))
  t.equal(stageOf(onSend), 'entity tag/conditional', 'the onSend hooks that follow the serializer are not serialization')
  const params = stack(native('validate11'), project('src/contract/validation', 'validator'), pkg('fastify/lib/validation.js', 'validateParam'), pkg('fastify/lib/validation.js', 'validate'))
  t.equal(stageOf(params), 'validation')
})

t.test('GC, and what nothing claims', async (t) => {
  t.equal(stageOf([native('(garbage collector)'), native('(root)')]), 'GC')
  t.equal(stageOf([native('(program)'), native('(root)')]), 'other')
  t.equal(stageOf(stack(native('runMicrotasks'), node('internal/process/task_queues', 'processTicksAndRejections'))), 'other')
})

t.test("the floor's functions are named by stage", async (t) => {
  const floor = (functionName: string) => ({ functionName, url: `${root}/bench/servers/floor.ts` })
  t.equal(stageOf(stack(native('hash'), floor('checkKey'), floor('v1Request'))), 'key check')
  t.equal(stageOf(stack(floor('countWindows'), floor('v1Request'))), 'rate-limit windows')
  t.equal(stageOf(stack(pkg('fastify/lib/reply.js', 'Reply.headers'), floor('securityHeaders'), floor('v1Request'))), 'security headers')
  t.equal(stageOf(stack(native('run'), floor(''), floor('flush'))), 'handler/store', 'an anonymous function inherits its caller\'s stage')
})
