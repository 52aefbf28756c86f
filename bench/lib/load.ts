/** The load generator: wrk, one thread, pinned to its own core, driven by a generated Lua script. */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpuSeconds } from './proc.js'

export interface Request {
  method: 'GET' | 'PATCH' | 'POST'
  path: string
  body?: string
}

export interface LoadSpec {
  baseUrl: string
  /** Sent in turn, one per request, over and over. */
  requests: Request[]
  headers: Record<string, string>
  connections: number
  seconds: number
  core: number | undefined
  /** Where the Lua script is written. */
  scriptFile: string
}

export interface LoadResult {
  answers: number
  seconds: number
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  /** Answers with a status of 400 or more, and socket errors and timeouts. */
  errors: number
  /** CPU seconds wrk used, sampled while it ran. */
  wrkCpu: number
}

// A JSON string literal is a valid Lua string literal for ASCII text.
const lua = (text: string) => JSON.stringify(text)

function script (spec: LoadSpec): string {
  const templates = spec.requests.map((r) => `{${lua(r.method)}, ${lua(r.path)}, ${r.body === undefined ? 'nil' : lua(r.body)}}`)
  return [
    ...Object.entries(spec.headers).map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`),
    `local templates = {${templates.join(',\n')}}`,
    'local prepared = {}',
    'local i = 0',
    'init = function (args)',
    '  for k, t in ipairs(templates) do prepared[k] = wrk.format(t[1], t[2], nil, t[3]) end',
    'end',
    'request = function ()',
    '  i = i % #prepared + 1',
    '  return prepared[i]',
    'end',
    'done = function (summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("WRKJSON {\\"answers\\":%d,\\"us\\":%d,\\"errors\\":%d,\\"p50\\":%d,\\"p99\\":%d}\\n",',
    '    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,',
    '    latency:percentile(50), latency:percentile(99)))',
    'end'
  ].join('\n') + '\n'
}

export async function runLoad (spec: LoadSpec): Promise<LoadResult> {
  writeFileSync(spec.scriptFile, script(spec))
  // One thread, so that one Lua state walks the requests in order.
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '30s', '-s', spec.scriptFile, spec.baseUrl]
  const child = spec.core === undefined ? spawn('wrk', args) : spawn('taskset', ['-c', String(spec.core), 'wrk', ...args])
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  // Its /proc entry goes when it exits, so its CPU time is read while it runs.
  let wrkCpu = 0
  const sampler = setInterval(() => { wrkCpu = cpuSeconds(child.pid!) ?? wrkCpu }, 200)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearInterval(sampler)
  const line = out.split('\n').find((l) => l.startsWith('WRKJSON '))
  if (code !== 0 || line === undefined) throw new Error(`wrk exited with ${String(code)}: ${out.trim()}`)
  const r = JSON.parse(line.slice('WRKJSON '.length)) as { answers: number, us: number, errors: number, p50: number, p99: number }
  const seconds = r.us / 1e6
  return { answers: r.answers, seconds, rps: r.answers / seconds, p50: r.p50 / 1000, p99: r.p99 / 1000, errors: r.errors, wrkCpu }
}
