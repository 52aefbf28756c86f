// Module hooks that run the project's TypeScript (src/, handlers/, scripts/, test/) in the tests
// and in the processes they start: each .ts file is stripped of its types by esbuild (as tsx does,
// with the compiler options of tsconfig.json), cached on disk by content; every other module is
// left to Node. Lighter than tsx, which also hooks every CommonJS require of node_modules: about
// a second of CPU less for each test process and half of that for each process a test starts.
// Registered by ts-register.mjs (.taprc's node-arg; test/helpers/node-args.ts for child processes).
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import process from 'node:process'
import { fileURLToPath, URL } from 'node:url'

const projectRoot = fileURLToPath(new URL('../..', import.meta.url))
const compilerOptions = JSON.parse(readFileSync(join(projectRoot, 'tsconfig.json'), 'utf8')).compilerOptions
const options = { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline', tsconfigRaw: { compilerOptions } }
const cacheDir = join(tmpdir(), `petstore-ts-cache-${process.getuid?.() ?? 'user'}`)
mkdirSync(cacheDir, { recursive: true })
// esbuild itself is loaded on the first file not in the cache: most processes never need it.
const esbuildVersion = createRequire(import.meta.url)('esbuild/package.json').version
const optionsKey = JSON.stringify([esbuildVersion, options])

const isProjectFile = (url) => url.startsWith('file:') && !url.includes('/node_modules/')

/** `./x.js` names `./x.ts` in TypeScript written for NodeNext, when there is no x.js beside it. */
export async function resolve (specifier, context, next) {
  if (specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../')) &&
    context.parentURL !== undefined && isProjectFile(context.parentURL)) {
    const url = new URL(specifier, context.parentURL)
    if (!existsSync(url)) {
      const ts = new URL(url.href.slice(0, -'.js'.length) + '.ts')
      if (existsSync(ts)) return { url: ts.href, format: 'module', shortCircuit: true }
    }
  }
  return next(specifier, context)
}

export async function load (url, context, next) {
  if (!url.endsWith('.ts') || !isProjectFile(url)) return next(url, context)
  const file = fileURLToPath(url)
  const source = readFileSync(file, 'utf8')
  const cached = join(cacheDir, createHash('sha256').update(optionsKey).update('\0').update(file).update('\0').update(source).digest('hex') + '.js')
  let code
  try {
    code = readFileSync(cached, 'utf8')
  } catch {
    const { transformSync } = await import('esbuild')
    code = transformSync(source, { ...options, sourcefile: file }).code
    // Written aside then renamed, so that a process reading it at the same time sees all or nothing.
    const partial = `${cached}.${process.pid}.tmp`
    writeFileSync(partial, code)
    renameSync(partial, cached)
  }
  return { format: 'module', source: code, shortCircuit: true }
}
