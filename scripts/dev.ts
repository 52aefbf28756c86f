/**
 * npm run dev: the server from src/ through tsx, restarted on every change of openapi.yaml, src/
 * or handlers/. A change of openapi.yaml first runs `npm run generate` (types, handler map, a 501
 * stub for each new operation), so an edited operation is live within seconds; `tsc --noEmit`
 * then runs beside the server, and one report shows what generate did, the stubs and the type
 * errors (docs/changing-the-api.md).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { watch } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const DEBOUNCE_MS = 150

function report (title: string, lines: string[]): void {
  const rule = '─'.repeat(72)
  process.stdout.write(`\n${rule}\ndev: ${title}\n${lines.map((line) => `  ${line}`).join('\n')}${lines.length > 0 ? '\n' : ''}${rule}\n`)
}

/** Runs a node script of the project to its end, with its output. */
function runNode (args: string[]): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.on('close', (code) => resolve({ code, output }))
  })
}

let server: ChildProcess | undefined
let stopping: Promise<void> | undefined

async function stopServer (): Promise<void> {
  const child = server
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const forced = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(forced)
}

function startServer (): void {
  server = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'server.ts')], { cwd: root, stdio: 'inherit' })
}

let typecheck: ChildProcess | undefined

/** tsc --noEmit over the project; a newer change cancels the run still going. */
function startTypecheck (header: string[], changed: string): void {
  typecheck?.kill('SIGTERM')
  const child = spawn(process.execPath, [tsc, '--noEmit', '--pretty', 'false'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  typecheck = child
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.on('close', (code, signal) => {
    if (signal !== null || typecheck !== child) return
    const errors = output.split('\n').filter((line) => line.trim() !== '')
    const title = code === 0 ? 'no type errors' : `type errors (npm run typecheck), ${errors.filter((line) => / error TS\d+/.test(line)).length}`
    report(`${title}${changed}`, [...header, ...errors])
  })
}

const changedFiles = new Set<string>()
let generateNext = false
// generate's own writes (src/generated, handlers/index.ts, stubs) belong to the restart under way.
let generating = false
let quietUntil = 0
let pending: NodeJS.Timeout | undefined
let busy: Promise<void> = Promise.resolve()

/** One restart: generate when openapi.yaml changed, a new server, then the type check beside it. */
async function restart (): Promise<void> {
  const header: string[] = []
  const changed = changedFiles.size === 0 ? '' : `; after a change of ${[...changedFiles].sort().join(', ')}`
  changedFiles.clear()
  if (generateNext) {
    generateNext = false
    generating = true
    // The command in a process of its own, not runGenerate (scripts/lib/generate.ts) in this one:
    // each run loads the generator's code as it is now, edits included.
    const generate = await runNode(['--import', 'tsx', join(root, 'scripts', 'generate.ts')]).finally(() => {
      generating = false
      quietUntil = Date.now() + 500
    })
    header.push(...generate.output.trim().split('\n').filter((line) => line !== ''))
    if (generate.code !== 0) {
      report('openapi.yaml changed; npm run generate failed, the server keeps running as it was', header)
      return
    }
    report('openapi.yaml changed: generated', header)
  }
  stopping ??= stopServer().finally(() => { stopping = undefined })
  await stopping
  startServer()
  startTypecheck(header, changed)
}

function failed (error: unknown): void {
  report('the restart failed; save a file to try again', [String(error)])
}

function schedule (file: string): void {
  changedFiles.add(file)
  if (file === 'openapi.yaml') generateNext = true
  clearTimeout(pending)
  pending = setTimeout(() => { busy = busy.then(restart).catch(failed) }, DEBOUNCE_MS)
}

// openapi.yaml through its directory: an editor often replaces the file rather than writing it.
watch(root, (_event, name) => { if (name === 'openapi.yaml') schedule('openapi.yaml') })
for (const dir of ['src', 'handlers']) {
  watch(join(root, dir), { recursive: true }, (_event, name) => {
    if (name === null || !/\.(ts|sql|json)$/.test(name) || generating || Date.now() < quietUntil) return
    schedule(relative(root, join(root, dir, name)))
  })
}

const quit = async () => {
  clearTimeout(pending)
  typecheck?.kill('SIGTERM')
  await stopServer()
  process.exit(0)
}
process.on('SIGINT', () => { void quit() })
process.on('SIGTERM', () => { void quit() })

busy = busy.then(restart).catch(failed)
