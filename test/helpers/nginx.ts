import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { delimiter, join } from 'node:path'
import type { Test } from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { tempDir } from './app.js'
import { freePort } from './ports.js'

/** The documented proxy configuration: the part of the server block, and the upstream block in its comments. */
export const SNIPPET = join(projectRoot, 'docs', 'nginx', 'petstore-proxy.conf')

export const nginxBinary = ['/usr/sbin/nginx', ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'nginx'))].find((path) => existsSync(path))
// .ci/run installs Debian's nginx; on CI its absence is a failure, elsewhere a test says what to install.
export const NGINX_SKIP = 'nginx is not installed: apt-get install nginx (Debian\'s package; .ci/run installs it) to run the reverse-proxy tests'

/**
 * The `upstream petstore { … }` block the snippet's comments document, as written there (without
 * the comment marks). Its `server` lines name example addresses; upstreamFor puts real ones in.
 */
export function documentedUpstream (): string {
  const lines = readFileSync(SNIPPET, 'utf8').split('\n').filter((line) => line.startsWith('#')).map((line) => line.replace(/^# ?/, ''))
  const start = lines.findIndex((line) => /^\s*upstream petstore \{/.test(line))
  const end = lines.findIndex((line, i) => i > start && /^\s*\}/.test(line))
  if (start < 0 || end < 0) throw new Error(`no upstream petstore block in the comments of ${SNIPPET}`)
  const indent = /^\s*/.exec(lines[start]!)![0].length
  return lines.slice(start, end + 1).map((line) => line.slice(indent)).join('\n')
}

/** The documented upstream block with its `server` lines pointing, in order, at loopback `ports`. */
export function upstreamFor (ports: number[]): string {
  const block = documentedUpstream()
  const servers = block.split('\n').filter((line) => /^\s*server /.test(line))
  if (servers.length !== ports.length) throw new Error(`the documented upstream lists ${servers.length} servers, not ${ports.length}`)
  let i = 0
  return block.replace(/^(\s*server )\S+/gm, (_, head: string) => `${head}127.0.0.1:${ports[i++]!}`)
}

async function waitForPort (port: number, child: ChildProcess, stderr: () => string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}:\n${stderr()}`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nginx did not listen on ${port} within ${timeoutMs} ms:\n${stderr()}`)
}

export interface Nginx {
  port: number
  /** What nginx has written to its error log (stderr) so far. */
  errors (): string
}

/**
 * nginx in the foreground, on a free loopback port: `upstream` (an `upstream petstore { … }`
 * block) at http level, and a server block that includes the documented snippet as it is.
 */
export async function startNginx (t: Test, binary: string, upstream: string): Promise<Nginx> {
  const dir = tempDir(t)
  chmodSync(dir, 0o755) // nginx's workers may run as another user than its master
  const port = await freePort()
  const config = `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path ${dir}/body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
${upstream}
    server {
        listen 127.0.0.1:${port};
        include ${SNIPPET};
    }
}
`
  const file = join(dir, 'nginx.conf')
  writeFileSync(file, config)
  const child = spawn(binary, ['-p', dir, '-e', 'stderr', '-c', file], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    await once(child, 'exit')
  })
  await waitForPort(port, child, () => stderr)
  return { port, errors: () => stderr }
}
