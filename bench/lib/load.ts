/**
 * Load generators behind one interface: wrk (C, one thread, pinned to its own core) when it is
 * installed, else autocannon in this process. Latencies are kept in microseconds either way:
 * autocannon's own histogram rounds to whole milliseconds, so its per-response times are recorded here.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { cpuSeconds } from './proc.js'

/**
 * One request of a workload. Its path and the values of its own headers may hold placeholders,
 * filled in for each request as it is sent: `{seq}`, a counter of the run's requests made from
 * templates with placeholders (from LoadSpec.firstSeq), and `{run}`, a random text chosen per run.
 * They give what no fixed request can: an Idempotency-Key that no other request of any run
 * sends (`{run}-{seq}`), or a walk through ids that are each used once (`/orders/{seq}`).
 */
export interface RequestTemplate {
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  body?: string
  /** Headers of this request besides LoadSpec.headers. */
  headers?: Record<string, string>
}

const PLACEHOLDER = /\{(seq|run)\}/
const hasPlaceholders = (t: RequestTemplate) => PLACEHOLDER.test(t.path) || Object.values(t.headers ?? {}).some((v) => PLACEHOLDER.test(v))

export interface LoadSpec {
  baseUrl: string
  /** Cycled round-robin, one per request. */
  requests: RequestTemplate[]
  headers: Record<string, string>
  connections: number
  durationSec: number
  timeoutSec: number
  /** Core for the generator (wrk is started with taskset); undefined: no pinning. */
  core: number | undefined
  /** Where scratch files (wrk's Lua script) go. */
  scratchDir: string
  /** The first `{seq}`; default 1. */
  firstSeq?: number | undefined
  /** Requests a second over all connections (autocannon only); undefined: as fast as answered. */
  ratePerSec?: number | undefined
}

export interface LoadResult {
  requests: number
  seconds: number
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  max: number
  non2xx: number
  socketErrors: number
  bytes: number
  /** CPU seconds the generator used (to tell a generator-bound run). */
  generatorCpu: number
}

export type Generator = 'wrk' | 'autocannon'
export const WRK = '/usr/bin/wrk'
export const defaultGenerator = (): Generator => existsSync(WRK) ? 'wrk' : 'autocannon'

export function runLoad (generator: Generator, spec: LoadSpec): Promise<LoadResult> {
  const runId = randomBytes(6).toString('hex')
  return generator === 'wrk' ? runWrk(spec, runId) : runAutocannon(spec, runId)
}

const luaString = (text: string) => JSON.stringify(text) // a JSON string literal is a valid Lua string literal for ASCII

function wrkScript (spec: LoadSpec, runId: string): string {
  const headers = Object.entries(spec.headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`).join('\n')
  const first = spec.requests[0]!
  const lines = [headers]
  if (spec.requests.length === 1 && first.body === undefined && first.headers === undefined) {
    lines.push(`wrk.method = ${luaString(first.method)}`, `wrk.path = ${luaString(first.path)}`)
  } else {
    const luaTable = (h: Record<string, string> | undefined) => h === undefined ? 'nil' : `{${Object.entries(h).map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`).join(', ')}}`
    const entries = spec.requests.map((r) => `{${luaString(r.method)}, ${luaString(r.path)}, ${r.body === undefined ? 'nil' : luaString(r.body)}, ${luaTable(r.headers)}, ${String(hasPlaceholders(r))}}`)
    lines.push(
      `local templates = {${entries.join(',\n')}}`,
      'local prepared = {}',
      'local n = #templates',
      'local i = 0',
      `local values = {seq = ${(spec.firstSeq ?? 1) - 1}, run = ${luaString(runId)}}`,
      // wrk.format uses the headers it is given instead of wrk.headers, so a request's own headers
      // are added to a copy of them.
      'local function headersOf (own)',
      '  if own == nil then return nil end',
      '  local h = {}',
      '  for k, v in pairs(wrk.headers) do h[k] = v end',
      '  for k, v in pairs(own) do h[k] = string.gsub(v, "{(%a+)}", values) end',
      '  return h',
      'end',
      'init = function (args)',
      '  for k, t in ipairs(templates) do',
      '    if not t[5] then prepared[k] = wrk.format(t[1], t[2], headersOf(t[4]), t[3]) end',
      '  end',
      'end',
      'request = function ()',
      '  i = i % n + 1',
      '  local ready = prepared[i]',
      '  if ready then return ready end',
      '  local t = templates[i]',
      '  values.seq = values.seq + 1',
      '  return wrk.format(t[1], (string.gsub(t[2], "{(%a+)}", values)), headersOf(t[4]), t[3])',
      'end'
    )
  }
  lines.push(
    'done = function (summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("WRKJSON {\\"requests\\":%d,\\"duration\\":%d,\\"bytes\\":%d,\\"connect\\":%d,\\"read\\":%d,\\"write\\":%d,\\"status\\":%d,\\"timeout\\":%d,\\"p50\\":%d,\\"p99\\":%d,\\"max\\":%d}\\n",',
    '    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end'
  )
  return lines.join('\n') + '\n'
}

async function runWrk (spec: LoadSpec, runId: string): Promise<LoadResult> {
  if (spec.ratePerSec !== undefined) throw new Error('wrk cannot hold a rate: use autocannon for ratePerSec')
  const script = join(spec.scratchDir, 'wrk-script.lua')
  // One thread (-t1), so one Lua state counts {seq}: no two requests get the same number.
  writeFileSync(script, wrkScript(spec, runId))
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationSec}s`, `--timeout`, `${spec.timeoutSec}s`, '-s', script, spec.baseUrl]
  const child = spec.core === undefined ? spawn(WRK, args) : spawn('taskset', ['-c', String(spec.core), WRK, ...args])
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { err += d.toString() })
  // wrk's CPU time, sampled while it runs (its /proc entry goes when it exits).
  let generatorCpu = 0
  const sampler = setInterval(() => { generatorCpu = cpuSeconds(child.pid!) ?? generatorCpu }, 200)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearInterval(sampler)
  const line = out.split('\n').find((l) => l.startsWith('WRKJSON '))
  if (code !== 0 || line === undefined) throw new Error(`wrk exited with ${String(code)}: ${err || out}`)
  const r = JSON.parse(line.slice('WRKJSON '.length)) as Record<string, number>
  const seconds = r.duration! / 1e6
  return {
    requests: r.requests!,
    seconds,
    rps: r.requests! / seconds,
    p50: r.p50! / 1000,
    p99: r.p99! / 1000,
    max: r.max! / 1000,
    non2xx: r.status!, // wrk counts responses with status > 399
    socketErrors: r.connect! + r.read! + r.write! + r.timeout!,
    bytes: r.bytes!,
    generatorCpu
  }
}

async function runAutocannon (spec: LoadSpec, runId: string): Promise<LoadResult> {
  const templates = spec.requests
  let next = 0
  const dynamic = templates.map(hasPlaceholders)
  let seq = (spec.firstSeq ?? 1) - 1
  const fill = (text: string) => text.replace(/\{(seq|run)\}/g, (_, name: string) => name === 'seq' ? String(seq) : runId)
  const latencies: number[] = []
  const cpuBefore = process.cpuUsage()
  const instance = autocannon({
    url: spec.baseUrl,
    connections: spec.connections,
    duration: spec.durationSec,
    timeout: spec.timeoutSec,
    headers: spec.headers,
    ...(spec.ratePerSec === undefined ? {} : { overallRate: spec.ratePerSec }),
    requests: [{
      setupRequest: (request: Record<string, unknown>) => {
        const t = templates[next]!
        const fresh = dynamic[next]!
        next = (next + 1) % templates.length
        if (fresh) seq++
        const own = Object.entries(t.headers ?? {}).map(([k, v]) => [k, fresh ? fill(v) : v])
        return { ...request, method: t.method, path: fresh ? fill(t.path) : t.path, body: t.body, headers: { ...spec.headers, ...Object.fromEntries(own) } }
      }
    }]
  })
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => { latencies.push(responseTime) })
  const result = await instance as autocannon.Result
  const cpu = process.cpuUsage(cpuBefore)
  const sorted = Float64Array.from(latencies).sort()
  const at = (q: number) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  const seconds = result.duration
  const requests = result.requests.total
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted.length === 0 ? NaN : sorted[sorted.length - 1]!,
    non2xx: result.non2xx,
    socketErrors: result.errors, // timeouts included
    bytes: result.throughput.total,
    generatorCpu: (cpu.user + cpu.system) / 1e6
  }
}
