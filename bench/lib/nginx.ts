/**
 * nginx as the load balancer in front of several service instances (the scale-out workload):
 * Debian's nginx, started with a configuration of its own in a scratch directory, one worker,
 * keep-alive connections to the instances, as a deployment would run it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

export interface ProxyHandle {
  baseUrl: string
  /** The master and its worker(s): their CPU time is nginx's. */
  pids (): number[]
  logFile: string
  stop (): Promise<void>
}

/** nginx's path (BENCH_NGINX, else Debian's or the first on PATH), or undefined when there is none. */
export function nginxBinary (): string | undefined {
  const given = process.env.BENCH_NGINX
  if (given !== undefined && given !== '') return existsSync(given) ? given : undefined
  for (const candidate of ['/usr/sbin/nginx', '/usr/local/sbin/nginx']) if (existsSync(candidate)) return candidate
  try {
    return execFileSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).trim() || undefined
  } catch {
    return undefined
  }
}

function configuration (dir: string, port: number, upstreams: string[]): string {
  // Keep-alive both ways with no per-connection request cap, so that neither side reconnects
  // during a measurement; nothing is logged per request.
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 75s;
  upstream petstore {
${upstreams.map((u) => `    server ${u};`).join('\n')}
    keepalive 128;
    keepalive_requests 100000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://petstore;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`
}

/** The processes whose parent is `pid` (nginx's workers). */
function childrenOf (pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    // Kernels without CONFIG_PROC_CHILDREN: scan /proc for the parent id.
    const found: number[] = []
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(entry))
      } catch { /* gone */ }
    }
    return found
  }
}

export interface NginxOptions {
  binary: string
  /** A directory of its own for the configuration, pid file, temp files and error log. */
  dir: string
  port: number
  /** host:port of every instance. */
  upstreams: string[]
  /** Core to pin nginx to (taskset -c); undefined: no pinning. */
  core: number | undefined
}

export async function startNginx (options: NginxOptions): Promise<ProxyHandle> {
  mkdirSync(options.dir, { recursive: true })
  const conf = join(options.dir, 'nginx.conf')
  writeFileSync(conf, configuration(options.dir, options.port, options.upstreams))
  const logFile = join(options.dir, 'error.log')
  // -e: the error log nginx uses before it has read the configuration (else /var/log/nginx).
  const args = ['-p', options.dir, '-c', conf, '-e', logFile]
  const child: ChildProcess = options.core === undefined
    ? spawn(options.binary, args, { stdio: 'ignore' })
    : spawn('taskset', ['-c', String(options.core), options.binary, ...args], { stdio: 'ignore' })
  const exited = once(child, 'exit')
  const baseUrl = `http://127.0.0.1:${options.port}`
  const deadline = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited before it was ready; see ${logFile}`)
    try {
      const res = await fetch(`${baseUrl}/healthz`)
      if (res.ok) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`nginx did not pass /healthz through within 20 s; see ${logFile}`)
    }
    await sleep(100)
  }
  const master = child.pid!
  return {
    baseUrl,
    pids: () => [master, ...childrenOf(master)],
    logFile,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(killer)
    }
  }
}
