/**
 * The stages of a request, for the per-stage account of issue 23 (bench/README.md, "Per-stage
 * account"): every sample of a CPU profile is given to one stage by the functions and modules on
 * its stack. This file is the whole mapping.
 *
 * Each rule names a stage and a level. Walking a sample's stack from the running function towards
 * the root, the frame whose rule has the highest level wins, and among equal levels the innermost.
 * The walk stops at the first of Fastify's continuations (a hook's `done`, the body parser's
 * `done`, `reply.send`): what runs beneath one of those is the next step of the request, not
 * part of the hook or handler that called it.
 * - Level 1, the frameworks everything runs inside (Fastify's core, Node's HTTP): a sample counts
 *   there only when no stage of the service's own is on its stack.
 * - Level 2, the stages: a library or file that does one thing. Innermost wins, so the rate-limit
 *   counting called back from the key check's hook counts as rate limiting, and a header set by
 *   the security-headers hook through Fastify's `reply.headers` counts as security headers.
 * - Level 3, stages that own everything they call: the key check's lookup (`identify`, bearer-auth's
 *   `auth`, which hashes the key and asks the key guard and the store), Fastify's request validation (lib/validation.js, whatever
 *   validator it calls) and the response serializer (the function Fastify's reply calls to turn a
 *   body into bytes, the service's response validation included).
 * Samples that no rule claims (timers, promise jobs, V8's own work) are "other"; "(garbage
 * collector)" samples are GC.
 */

export const STAGES = [
  'security headers',
  'request id/logging',
  'key check',
  'rate-limit windows',
  'validation',
  'handler/store',
  'serialization',
  'entity tag/conditional',
  'compression negotiation',
  'metrics',
  'Fastify core/routing',
  'node http/writev',
  'GC',
  'other'
] as const
export type Stage = typeof STAGES[number]

export interface Frame { functionName: string, url: string }

type Level = 1 | 2 | 3

/**
 * Modules by stage: `pkg/path/file.js` under node_modules, project files without their extension
 * (`src/app` whether run compiled or through tsx), `node:…` for Node's own. A trailing `*` makes
 * a prefix. The first rule that matches a frame is its rule. Project files are named where they
 * are now and, after "before:", where they were before the moves of issue 23 (merged in f0f3382),
 * so that the profile of a `--baseline` build of an earlier commit is mapped alike.
 */
const MODULES: [Stage, Level, string[]][] = [
  // before: bearer-auth's `auth` (the key's lookup) lived here.
  ['key check', 3, ['src/plugins/external/bearer-auth']],
  ['validation', 3, ['fastify/lib/validation.js']],
  ['security headers', 2, ['src/plugins/external/security-headers', 'src/plugins/external/reply-headers', 'helmet/*']],
  ['request id/logging', 2, [
    // genReqId; pino's child logger per request and its redaction; the X-Request-Id header and the
    // Host/Authorization framing checks (http-protocol.ts).
    'src/app', 'src/logger', 'src/plugins/app/http-protocol', 'fastify/lib/logger-factory.js', 'fastify/lib/logger-pino.js',
    'pino/*', 'pino-std-serializers/*', '@pinojs/redact/*', 'fast-redact/*', 'sonic-boom/*', 'abstract-logging/*'
  ]],
  ['key check', 2, [
    'src/plugins/app/authentication', 'src/authentication/*', 'src/repositories/api-keys', '@fastify/bearer-auth/*',
    // before:
    'src/rate-limit/key-guard', 'src/rate-limit/expiring-map', 'src/store/api-keys'
  ]],
  ['rate-limit windows', 2, ['src/rate-limit/*', 'src/plugins/app/rate-limit-policy', 'src/plugins/external/rate-limit', '@fastify/rate-limit/*']],
  ['validation', 2, [
    'src/contract/validation', 'src/contract/json-parser', 'src/contract/json-body', 'src/contract/ajv',
    'ajv/*', 'ajv-formats/*', 'fast-uri/*', 'secure-json-parse/*',
    // before:
    'src/http/validation', 'src/http/json-parser', 'src/http/json-body', 'src/openapi/ajv'
  ]],
  ['serialization', 2, ['src/contract/json-text', 'fast-json-stringify/*', /* before: */ 'src/http/json-text']],
  ['handler/store', 2, [
    'handlers/*', 'src/store/*', 'src/repositories/*', 'src/contract/json-list', 'src/contract/paging', 'better-sqlite3/*', 'kysely/*',
    // before:
    'src/http/paging'
  ]],
  ['entity tag/conditional', 2, ['src/plugins/app/conditional-requests']],
  ['compression negotiation', 2, [
    'src/plugins/external/compress', '@fastify/compress/*', '@fastify/accept-negotiator/*', 'node:zlib',
    'peek-stream/*', 'pumpify/*', 'pump/*', 'minipass/*', 'mime-db/*'
  ]],
  ['metrics', 2, ['src/plugins/app/metrics', 'prom-client/*', 'tdigest/*', 'bintrees/*']],
  // The operation's route options (deprecation headers, the refusal of undeclared query parameters).
  ['Fastify core/routing', 2, ['src/contract/operations', /* before: */ 'src/openapi/operations']],
  ['Fastify core/routing', 1, [
    'fastify/*', 'find-my-way/*', 'avvio/*', 'light-my-request/*', '@fastify/error/*', 'fast-querystring/*',
    'fastify-openapi-glue/*', 'fastify-plugin/*', 'toad-cache/*', 'process-warning/*', 'rfdc/*', 'src/routes/*'
  ]],
  ['node http/writev', 1, ['node:_http_*', 'node:http', 'node:net', 'node:internal/stream_base_commons', 'node:internal/streams/*', 'node:stream', 'node:internal/http']]
]

/** Functions that are a stage of their own inside a file of another: [stage, level, module, names]. */
const FUNCTIONS: [Stage, Level, string, string[]][] = [
  // bearer-auth's `auth`: the key's SHA-256, the key guard and the store's lookup.
  ['key check', 3, 'src/plugins/app/authentication', ['identify']]
]

/** The floor (bench/servers/floor.ts) is one file: its functions by stage (all level 2). */
const FLOOR_FUNCTIONS: Record<string, Stage> = {
  securityHeaders: 'security headers',
  requestId: 'request id/logging',
  framingError: 'request id/logging',
  v1Request: 'key check',
  checkKey: 'key check',
  seeOtherCommits: 'key check',
  countWindows: 'rate-limit windows',
  setLimitHeaders: 'rate-limit windows',
  listInventory: 'handler/store',
  updateInventory: 'handler/store',
  getPet: 'handler/store',
  placeOrder: 'handler/store',
  updateOrder: 'handler/store',
  listOrders: 'handler/store',
  petBody: 'handler/store',
  statusOf: 'handler/store',
  changed: 'handler/store',
  commit: 'handler/store',
  flush: 'handler/store',
  wakeReads: 'handler/store',
  afterWrites: 'handler/store',
  listBody: 'serialization',
  representation: 'entity tag/conditional',
  sendJson: 'entity tag/conditional',
  matches: 'entity tag/conditional',
  chooseCoding: 'compression negotiation',
  encode: 'compression negotiation',
  deprecation: 'Fastify core/routing'
}
const FLOOR_MODULE = 'bench/servers/floor'

/** Where a step hands the request on to the next one: the walk up a stack stops there. */
const CONTINUATIONS: Record<string, Set<string>> = {
  'fastify/lib/hooks.js': new Set(['next', 'handleResolve', 'handleReject']),
  'fastify/lib/content-type-parser.js': new Set(['done', 'onDone']),
  'fastify/lib/reply.js': new Set(['Reply.send'])
}

const REPLY = 'fastify/lib/reply.js'
/** What Fastify's preSerializationHookEnd calls besides the serializer. */
const NOT_SERIALIZER = new Set(['onSendHook', 'onErrorHook', 'wrapSerializationError'])

/** The module a frame's code is in (see MODULES); '' for native code and V8's pseudo-frames. */
export function moduleOf (url: string): string {
  if (url === '') return ''
  if (url.startsWith('node:')) return url
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+\/.*)$/.exec(url)
  if (inPackage) return inPackage[1]!
  // The project's files from the last src/, handlers/ or bench/ in the path (the checkout's own
  // directory may carry one of those names too); compiled ones are under bench/out/dist/.
  const path = url.replace('/bench/out/dist/', '/')
  const at = Math.max(...['/src/', '/handlers/', '/bench/'].map((dir) => path.lastIndexOf(dir)))
  return (at >= 0 ? path.slice(at + 1) : path).replace(/\.(?:[cm]?js|[cm]?ts)$/, '')
}

const matchesModule = (module: string, pattern: string) => pattern.endsWith('*') ? module.startsWith(pattern.slice(0, -1)) : module === pattern

function ruleFor (frame: Frame, parent: Frame | undefined): [Stage, Level] | undefined {
  const module = moduleOf(frame.url)
  if (module === '') return undefined
  if (module === REPLY && frame.functionName === 'serialize') return ['serialization', 3]
  if (parent !== undefined && parent.functionName === 'preSerializationHookEnd' && moduleOf(parent.url) === REPLY && !NOT_SERIALIZER.has(frame.functionName)) return ['serialization', 3]
  for (const [stage, level, inModule, names] of FUNCTIONS) {
    if (module === inModule && names.includes(frame.functionName)) return [stage, level]
  }
  if (module === FLOOR_MODULE) {
    const stage = FLOOR_FUNCTIONS[frame.functionName]
    return stage === undefined ? undefined : [stage, 2]
  }
  for (const [stage, level, patterns] of MODULES) {
    if (patterns.some((pattern) => matchesModule(module, pattern))) return [stage, level]
  }
  return undefined
}

/** The stage of a profile sample whose stack is `stack`, the running function first. */
export function stageOf (stack: readonly Frame[]): Stage {
  const leaf = stack[0]
  if (leaf?.functionName === '(garbage collector)') return 'GC'
  let best: [Stage, Level] | undefined
  for (let i = 0; i < stack.length; i++) {
    const frame = stack[i]!
    const rule = ruleFor(frame, stack[i + 1])
    if (rule !== undefined && (best === undefined || rule[1] > best[1])) best = rule
    if (CONTINUATIONS[moduleOf(frame.url)]?.has(frame.functionName) === true) break
  }
  return best?.[0] ?? 'other'
}
