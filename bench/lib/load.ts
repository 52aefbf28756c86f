/**
 * Load generators behind one interface: wrk (C, one thread, pinned to its own core) when it is
 * installed, else autocannon in this process. Latencies are kept in microseconds either way:
 * autocannon's own histogram rounds to whole milliseconds, so its per-response times are recorded here.
 */
import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { cpuSeconds } from './proc.js'

export interface RequestTemplate {
  method: 'GET' | 'PATCH'
  path: string
  body?: string
}

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
  return generator === 'wrk' ? runWrk(spec) : runAutocannon(spec)
}

const luaString = (text: string) => JSON.stringify(text) // a JSON string literal is a valid Lua string literal for ASCII

function wrkScript (spec: LoadSpec): string {
  const headers = Object.entries(spec.headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`).join('\n')
  const first = spec.requests[0]!
  const lines = [headers]
  if (spec.requests.length === 1 && first.body === undefined) {
    lines.push(`wrk.method = ${luaString(first.method)}`, `wrk.path = ${luaString(first.path)}`)
  } else {
    const entries = spec.requests.map((r) => `{${luaString(r.method)}, ${luaString(r.path)}, ${r.body === undefined ? 'nil' : luaString(r.body)}}`)
    lines.push(
      `local templates = {${entries.join(',\n')}}`,
      'local prepared = {}',
      'local n = #templates',
      'local i = 0',
      'init = function (args)',
      '  for k, t in ipairs(templates) do prepared[k] = wrk.format(t[1], t[2], nil, t[3]) end',
      'end',
      'request = function ()',
      '  i = i % n + 1',
      '  return prepared[i]',
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

async function runWrk (spec: LoadSpec): Promise<LoadResult> {
  const script = join(spec.scratchDir, 'wrk-script.lua')
  writeFileSync(script, wrkScript(spec))
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

async function runAutocannon (spec: LoadSpec): Promise<LoadResult> {
  const templates = spec.requests
  let next = 0
  const latencies: number[] = []
  const cpuBefore = process.cpuUsage()
  const instance = autocannon({
    url: spec.baseUrl,
    connections: spec.connections,
    duration: spec.durationSec,
    timeout: spec.timeoutSec,
    headers: spec.headers,
    requests: [{
      setupRequest: (request: Record<string, unknown>) => {
        const t = templates[next]!
        next = (next + 1) % templates.length
        return { ...request, method: t.method, path: t.path, body: t.body }
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
