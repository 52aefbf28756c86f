import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { projectRoot } from '../src/paths.js'
import { type Teardown, tempDir } from './helpers/app.js'
import { run } from './helpers/cli.js'

const generate = (...args: string[]) => run(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'generate.ts'), ...args], {})

type Spec = { paths: Record<string, Record<string, Record<string, unknown>>> }

/** Every file under a directory with its content, to prove what a run did not touch. */
function snapshot (dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const file = join(e.parentPath, e.name)
      return [file.slice(dir.length + 1), readFileSync(file, 'utf8')]
    }))
}

/** A temporary copy of what the generator reads and writes. */
function copyProject (t: Teardown): string {
  const root = tempDir(t)
  cpSync(join(projectRoot, 'openapi.yaml'), join(root, 'openapi.yaml'))
  cpSync(join(projectRoot, 'handlers'), join(root, 'handlers'), { recursive: true })
  cpSync(join(projectRoot, 'src', 'generated'), join(root, 'src', 'generated'), { recursive: true })
  return root
}

function editSpec (root: string, edit: (spec: Spec) => void): void {
  const spec = parseYaml(readFileSync(join(root, 'openapi.yaml'), 'utf8')) as Spec
  edit(spec)
  writeFileSync(join(root, 'openapi.yaml'), toYaml(spec))
}

const getOrderHistory = {
  operationId: 'getOrderHistory',
  summary: 'The changes of an order',
  parameters: [{ name: 'orderId', in: 'path', required: true, schema: { type: 'integer', format: 'int64', minimum: 1 } }],
  responses: {
    200: { description: 'The order as it was after each change', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Order' } } } } },
    404: { $ref: '#/components/responses/NotFound' }
  }
}

const expectedStub = (id: string) => `import { notImplemented } from '../src/http/not-implemented.js'

/**
 * ${id}: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const ${id}: OperationHandler<'${id}'> = async (request, reply) => { … }
 * and \`import type { OperationHandler } from '../src/http/operation-types.js'\` (see docs/changing-the-api.md).
 */
export const ${id} = notImplemented('${id}')
`

t.test('npm run generate -- --check passes on the repository, with no operation left a stub', async (t) => {
  const res = await run('npm', ['run', '-s', 'generate', '--', '--check'], {})
  t.equal(res.code, 0, `up to date: ${res.stdout}${res.stderr}`)
  t.match(res.stdout, /up to date/)
  t.notMatch(res.stdout, /not implemented yet/, 'every operation of openapi.yaml is implemented')
})

t.test('on a copy: a new operation fails --check, then gets a 501 stub, listed, without touching written handlers', async (t) => {
  const root = copyProject(t)
  // A written handler, marked so that any rewrite would show.
  const written = join(root, 'handlers', 'listInventory.ts')
  writeFileSync(written, readFileSync(written, 'utf8') + '// written by hand: must survive generate\n')
  editSpec(root, (spec) => { spec.paths['/store/orders/{orderId}/history'] = { get: getOrderHistory } })
  const before = snapshot(root)

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/getOrderHistory.ts is missing', 'names the missing handler')
  t.match(check.stderr, 'src/generated/openapi.ts is stale', 'names the stale types')
  t.match(check.stderr, 'handlers/index.ts is stale', 'names the stale handler map')
  t.same(snapshot(root), before, '--check writes nothing')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'created handlers/getOrderHistory.ts (a stub answering 501 not_implemented)')
  t.match(gen.stdout, /^not implemented yet \(the handler is the generated stub, answering 501\): getOrderHistory$/m, 'the stub is listed')
  const after = snapshot(root)
  t.equal(after['handlers/getOrderHistory.ts'], expectedStub('getOrderHistory'), 'the stub is notImplemented(\'getOrderHistory\') with its doc comment')
  for (const [file, content] of Object.entries(before)) {
    if (file.startsWith('handlers/') && file !== 'handlers/index.ts') t.equal(after[file], content, `${file} is not rewritten`)
  }
  t.match(after['handlers/listInventory.ts'], /written by hand: must survive generate/)
  t.match(after['handlers/index.ts'], /import \{ getOrderHistory \} from '\.\/getOrderHistory\.js'/, 'the handler map wires the new operation')
  t.match(after['handlers/index.ts'], /^ {2}getOrderHistory, \/\/ GET \/store\/orders\/\{orderId\}\/history$/m, 'with its method and path')
  t.match(after['src/generated/openapi.ts'], /getOrderHistory: \{/, 'the types know the new operation')

  const again = await generate('--check', '--root', root)
  t.equal(again.code, 0, `--check passes after generate ${again.stderr}`)
  t.match(again.stdout, /not implemented yet .*: getOrderHistory$/m, '--check lists the stub as well, without failing')
  const rerun = await generate('--root', root)
  t.match(rerun.stdout, /^everything up to date \(9 operations\)$/m, 'a second run changes nothing')
  t.match(rerun.stdout, /not implemented yet .*: getOrderHistory$/m, 'and still lists the stub')
})

t.test('on a copy: a renamed operation takes its handler along (file, export, type argument), the code kept', async (t) => {
  const root = copyProject(t)
  const original = readFileSync(join(root, 'handlers', 'listOrders.ts'), 'utf8')
  editSpec(root, (spec) => { spec.paths['/store/orders']!.get!.operationId = 'listStoreOrders' })
  const before = snapshot(root)

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/listOrders.ts is the handler of GET /store/orders, now operation listStoreOrders: npm run generate renames it to handlers/listStoreOrders.ts')
  t.notMatch(check.stderr, 'handlers/listStoreOrders.ts is missing', 'the new name is not treated as a new operation')
  t.same(snapshot(root), before, '--check writes nothing')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'renamed handlers/listOrders.ts → handlers/listStoreOrders.ts')
  t.notMatch(gen.stdout, /not implemented yet/, 'no stub was made for the new name')
  t.notOk(existsSync(join(root, 'handlers', 'listOrders.ts')), 'the old file is gone')
  const renamed = readFileSync(join(root, 'handlers', 'listStoreOrders.ts'), 'utf8')
  t.equal(renamed, original
    .replace('export const listOrders:', 'export const listStoreOrders:')
    .replaceAll("'listOrders'", "'listStoreOrders'"), 'the same code under the new name (export and quoted operationIds)')
  t.match(renamed, /request\.server\.store\.listOrders\w*\(\)/, 'a store method whose name starts the same is not renamed')
  const index = readFileSync(join(root, 'handlers', 'index.ts'), 'utf8')
  t.match(index, /^ {2}listStoreOrders, \/\/ GET \/store\/orders$/m, 'the handler map wires the new name')
  t.notMatch(index, /\blistOrders\b/, 'and not the old one')

  const again = await generate('--check', '--root', root)
  t.equal(again.code, 0, `--check passes after generate ${again.stderr}`)
})

t.test('on a copy: an operation removed while its handler is the unedited stub loses the stub', async (t) => {
  const root = copyProject(t)
  editSpec(root, (spec) => { spec.paths['/store/orders/{orderId}/history'] = { get: getOrderHistory } })
  t.equal((await generate('--root', root)).code, 0, 'the stub is created')
  t.ok(existsSync(join(root, 'handlers', 'getOrderHistory.ts')))

  editSpec(root, (spec) => { delete spec.paths['/store/orders/{orderId}/history'] })
  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/getOrderHistory.ts is the unedited stub of an operation no longer in openapi.yaml: npm run generate deletes it')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'deleted handlers/getOrderHistory.ts')
  t.notOk(existsSync(join(root, 'handlers', 'getOrderHistory.ts')), 'the stub is deleted')
  t.notMatch(readFileSync(join(root, 'handlers', 'index.ts'), 'utf8'), /getOrderHistory/, 'and unwired')
  t.equal((await generate('--check', '--root', root)).code, 0, '--check passes')
})

t.test('on a copy: an operation removed while its handler was edited is reported with the command, and --check fails until it is run', async (t) => {
  const root = copyProject(t)
  const file = join(root, 'handlers', 'listOrders.ts')
  editSpec(root, (spec) => { delete spec.paths['/store/orders']!.get })

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  const command = `rm ${file}`
  t.match(check.stderr, `handlers/listOrders.ts is not used by any operation in openapi.yaml and has been edited; move what you need out of it, then remove it: ${command}`)

  const gen = await generate('--root', root)
  t.equal(gen.code, 1, 'generate fails while the orphan is there')
  t.match(gen.stderr, `remove it: ${command}`, 'and names the command')
  t.ok(existsSync(file), 'the edited handler is not deleted')
  t.notMatch(readFileSync(join(root, 'handlers', 'index.ts'), 'utf8'), /listOrders/, 'the rest is generated: the handler map no longer wires it')

  const rerun = await generate('--root', root)
  t.equal(rerun.code, 1, 'a second generate still fails')
  t.notMatch(rerun.stdout, /up to date/, 'and never says everything is up to date')
  t.equal((await generate('--check', '--root', root)).code, 1, '--check still fails')

  const removal = await run('sh', ['-c', command], {})
  t.equal(removal.code, 0, `the command works as printed ${removal.stderr}`)
  const done = await generate('--root', root)
  t.equal(done.code, 0, 'generate passes once it is gone')
  t.match(done.stdout, /^everything up to date \(7 operations\)$/m)
  t.equal((await generate('--check', '--root', root)).code, 0, '--check passes')
})

t.test('on a copy tracked by git: the command is git rm, run from the repository', async (t) => {
  const root = copyProject(t)
  const git = (...args: string[]) => run('git', ['-C', root, '-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], {})
  t.equal((await git('init', '-q')).code, 0)
  t.equal((await git('add', '.')).code, 0)
  t.equal((await git('commit', '-q', '-m', 'copy')).code, 0)
  editSpec(root, (spec) => { delete spec.paths['/store/orders']!.get })

  const check = await generate('--check', '--root', root)
  const command = `git -C ${root} rm handlers/listOrders.ts`
  t.match(check.stderr, `remove it: ${command}`, 'from elsewhere, git -C names the repository')
  const removal = await run('sh', ['-c', command], {})
  t.equal(removal.code, 0, `the command works as printed ${removal.stderr}`)
  t.equal((await generate('--root', root)).code, 0, 'generate passes once it is gone')
})

t.test('an operation without a usable operationId is a clear error', async (t) => {
  const root = copyProject(t)
  editSpec(root, (spec) => { spec.paths['/store/orders']!.get!.operationId = 'list-orders' })
  let res = await generate('--root', root)
  t.equal(res.code, 1)
  t.match(res.stderr, /^generate: GET \/store\/orders: operationId "list-orders" must be a JavaScript identifier/m)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')

  writeFileSync(join(root, 'openapi.yaml'), 'paths: [unclosed\n')
  res = await generate('--root', root)
  t.equal(res.code, 1)
  t.match(res.stderr, /^generate: cannot read .*openapi\.yaml: /m)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')
})
