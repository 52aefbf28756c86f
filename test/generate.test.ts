import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { runGenerate } from '../scripts/lib/generate.js'
import { projectRoot } from '../src/contract/paths.js'
import { type Teardown, tempDir } from './helpers/app.js'
import { type CliResult, run } from './helpers/cli.js'
import { typescriptArgs } from './helpers/node-args.js'
import { isStub, operations } from './helpers/surface.js'

/**
 * A run of generate in this process (runGenerate, scripts/lib/generate.ts), from the project
 * directory as `run` starts the command, the lines collected as console.log / console.error write
 * them: the same code without a Node process of ~1 s of CPU (openapi-typescript and the TypeScript
 * compiler) each time. It reads the copy's files afresh on every run, so the runs of one test see
 * each edit.
 */
async function generate (...args: string[]): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  const code = await runGenerate({
    argv: args,
    cwd: projectRoot,
    stdout: (line) => { stdout += `${line}\n` },
    stderr: (line) => { stderr += `${line}\n` }
  })
  return { code, stdout, stderr }
}

/**
 * The command itself, scripts/generate.ts as a process, for what only a process shows: its exit
 * code and what reaches its streams (a success, a failure, an error without a stack trace).
 */
const generateCommand = (...args: string[]) => run(process.execPath, [...typescriptArgs, join(projectRoot, 'scripts', 'generate.ts'), ...args], {})

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

// Fixtures: operations under /zz-fixture, which no real operation will take, so that these tests
// hold whatever operations openapi.yaml has.
const FIXTURE_ITEM = '/zz-fixture/widgets/{widgetId}'
const FIXTURE_LIST = '/zz-fixture/widgets'
const widget = { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'integer' } } }
const fixtureGetWidget = {
  operationId: 'fixtureGetWidget',
  summary: 'Find a widget by id',
  parameters: [{ name: 'widgetId', in: 'path', required: true, schema: { type: 'integer', format: 'int64', minimum: 1 } }],
  responses: {
    200: { description: 'The widget', content: { 'application/json': { schema: widget } } },
    404: { $ref: '#/components/responses/NotFound' }
  }
}
const fixtureListWidgets = {
  operationId: 'fixtureListWidgets',
  summary: 'List widgets',
  responses: { 200: { description: 'Every widget', content: { 'application/json': { schema: { type: 'array', items: widget } } } } }
}
// A written handler; the store method of the same name must survive a rename of the operation.
const fixtureListWidgetsHandler = `import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/zz-fixture/widgets: 'fixtureListWidgets', written by hand. */
export const fixtureListWidgets: OperationHandler<'fixtureListWidgets'> = async (request) => request.server.store.fixtureListWidgets()
`

/** The number of operations of a copy's openapi.yaml. */
function operationCount (root: string): number {
  const spec = parseYaml(readFileSync(join(root, 'openapi.yaml'), 'utf8')) as Spec
  return Object.values(spec.paths).flatMap((item) => Object.values(item)).filter((op) => typeof op.operationId === 'string').length
}

/** A copy with the fixture list operation and its written handler, generated. */
async function copyWithWrittenFixture (t: Test): Promise<string> {
  const root = copyProject(t)
  editSpec(root, (spec) => { spec.paths[FIXTURE_LIST] = { get: fixtureListWidgets } })
  writeFileSync(join(root, 'handlers', 'fixtureListWidgets.ts'), fixtureListWidgetsHandler)
  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `the fixture operation is generated ${gen.stderr}`)
  return root
}

// Operations of the repository itself still waiting for their handler (usually none).
const repositoryStubs = operations.filter((op) => isStub(op.operationId)).map((op) => op.operationId).sort()

const expectedStub = (id: string) => `import { notImplemented } from '../src/contract/not-implemented.js'

/**
 * ${id}: generated stub, every request is answered 501 not_implemented. Replace it with
 *   export const ${id}: OperationHandler<'${id}'> = async (request, reply) => { … }
 * and \`import type { OperationHandler } from '../src/contract/operation-types.js'\` (see docs/changing-the-api.md).
 */
export const ${id} = notImplemented('${id}')
`

t.test('npm run generate -- --check passes on the repository, and lists exactly the operations whose handler is a stub', async (t) => {
  const res = await run('npm', ['run', '-s', 'generate', '--', '--check'], {})
  t.equal(res.code, 0, `up to date: ${res.stdout}${res.stderr}`)
  t.match(res.stdout, /up to date/)
  const stubs = repositoryStubs
  if (stubs.length === 0) t.notMatch(res.stdout, /not implemented yet/, 'every operation of openapi.yaml is implemented: no stub listed')
  else t.match(res.stdout, `not implemented yet (the handler is the generated stub, answering 501): ${stubs.join(', ')}\n`, 'the stubs of handlers/ are listed')
})

t.test('on a copy: a new operation fails --check, then gets a 501 stub, listed, without touching written handlers', async (t) => {
  const root = copyProject(t)
  // A written handler, marked so that any rewrite would show.
  const written = join(root, 'handlers', 'listInventory.ts')
  writeFileSync(written, readFileSync(written, 'utf8') + '// written by hand: must survive generate\n')
  editSpec(root, (spec) => { spec.paths[FIXTURE_ITEM] = { get: fixtureGetWidget } })
  const before = snapshot(root)

  // The command as a process: a failure is its exit code, its report on its stderr.
  const check = await generateCommand('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/fixtureGetWidget.ts is missing', 'names the missing handler')
  t.match(check.stderr, 'src/generated/openapi.ts is stale', 'names the stale types')
  t.match(check.stderr, 'handlers/index.ts is stale', 'names the stale handler map')
  t.same(snapshot(root), before, '--check writes nothing')

  // And a success: exit code 0, the files written, the report on its stdout.
  const gen = await generateCommand('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'created handlers/fixtureGetWidget.ts (a stub answering 501 not_implemented)')
  const listed = `not implemented yet (the handler is the generated stub, answering 501): ${[...repositoryStubs, 'fixtureGetWidget'].sort().join(', ')}\n`
  t.match(gen.stdout, listed, 'the stub is listed')
  const after = snapshot(root)
  t.equal(after['handlers/fixtureGetWidget.ts'], expectedStub('fixtureGetWidget'), 'the stub is notImplemented(\'fixtureGetWidget\') with its doc comment')
  for (const [file, content] of Object.entries(before)) {
    if (file.startsWith('handlers/') && file !== 'handlers/index.ts') t.equal(after[file], content, `${file} is not rewritten`)
  }
  t.match(after['handlers/listInventory.ts'], /written by hand: must survive generate/)
  t.match(after['handlers/index.ts'], /import \{ fixtureGetWidget \} from '\.\/fixtureGetWidget\.js'/, 'the handler map wires the new operation')
  t.match(after['handlers/index.ts'], /^ {2}fixtureGetWidget, \/\/ GET \/zz-fixture\/widgets\/\{widgetId\}$/m, 'with its method and path')
  t.match(after['src/generated/openapi.ts'], /fixtureGetWidget: \{/, 'the types know the new operation')

  const again = await generate('--check', '--root', root)
  t.equal(again.code, 0, `--check passes after generate ${again.stderr}`)
  t.match(again.stdout, listed, '--check lists the stub as well, without failing')
  const rerun = await generate('--root', root)
  t.match(rerun.stdout, new RegExp(`^everything up to date \\(${operationCount(root)} operations\\)$`, 'm'), 'a second run changes nothing')
  t.match(rerun.stdout, listed, 'and still lists the stub')
})

t.test('on a copy: a renamed operation takes its handler along (file, export, type argument), the code kept', async (t) => {
  const root = await copyWithWrittenFixture(t)
  const original = readFileSync(join(root, 'handlers', 'fixtureListWidgets.ts'), 'utf8')
  editSpec(root, (spec) => { spec.paths[FIXTURE_LIST]!.get!.operationId = 'fixtureListGadgets' })
  const before = snapshot(root)

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, `handlers/fixtureListWidgets.ts is the handler of GET ${FIXTURE_LIST}, now operation fixtureListGadgets: npm run generate renames it to handlers/fixtureListGadgets.ts`)
  t.notMatch(check.stderr, 'handlers/fixtureListGadgets.ts is missing', 'the new name is not treated as a new operation')
  t.same(snapshot(root), before, '--check writes nothing')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'renamed handlers/fixtureListWidgets.ts → handlers/fixtureListGadgets.ts')
  t.notMatch(gen.stdout, /not implemented yet .*fixtureListGadgets/, 'no stub was made for the new name')
  t.notOk(existsSync(join(root, 'handlers', 'fixtureListWidgets.ts')), 'the old file is gone')
  const renamed = readFileSync(join(root, 'handlers', 'fixtureListGadgets.ts'), 'utf8')
  t.equal(renamed, original
    .replace('export const fixtureListWidgets:', 'export const fixtureListGadgets:')
    .replaceAll("'fixtureListWidgets'", "'fixtureListGadgets'"), 'the same code under the new name (export and quoted operationIds)')
  t.match(renamed, /request\.server\.store\.fixtureListWidgets\(\)/, 'a store method of the same name is not renamed')
  const index = readFileSync(join(root, 'handlers', 'index.ts'), 'utf8')
  t.match(index, /^ {2}fixtureListGadgets, \/\/ GET \/zz-fixture\/widgets$/m, 'the handler map wires the new name')
  t.notMatch(index, /\bfixtureListWidgets\b/, 'and not the old one')

  const again = await generate('--check', '--root', root)
  t.equal(again.code, 0, `--check passes after generate ${again.stderr}`)
})

t.test('on a copy: an operation removed while its handler is the unedited stub loses the stub', async (t) => {
  const root = copyProject(t)
  editSpec(root, (spec) => { spec.paths[FIXTURE_ITEM] = { get: fixtureGetWidget } })
  t.equal((await generate('--root', root)).code, 0, 'the stub is created')
  t.ok(existsSync(join(root, 'handlers', 'fixtureGetWidget.ts')))

  editSpec(root, (spec) => { delete spec.paths[FIXTURE_ITEM] })
  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/fixtureGetWidget.ts is the unedited stub of an operation no longer in openapi.yaml: npm run generate deletes it')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  t.match(gen.stdout, 'deleted handlers/fixtureGetWidget.ts')
  t.notOk(existsSync(join(root, 'handlers', 'fixtureGetWidget.ts')), 'the stub is deleted')
  t.notMatch(readFileSync(join(root, 'handlers', 'index.ts'), 'utf8'), /fixtureGetWidget/, 'and unwired')
  t.equal((await generate('--check', '--root', root)).code, 0, '--check passes')
})

t.test('on a copy: an operation removed while its handler was edited is reported with the command, and --check fails until it is run', async (t) => {
  const root = await copyWithWrittenFixture(t)
  const file = join(root, 'handlers', 'fixtureListWidgets.ts')
  editSpec(root, (spec) => { delete spec.paths[FIXTURE_LIST] })

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  const command = `rm ${file}`
  t.match(check.stderr, `handlers/fixtureListWidgets.ts is not used by any operation in openapi.yaml and has been edited; move what you need out of it, then remove it: ${command}`)

  const gen = await generate('--root', root)
  t.equal(gen.code, 1, 'generate fails while the orphan is there')
  t.match(gen.stderr, `remove it: ${command}`, 'and names the command')
  t.ok(existsSync(file), 'the edited handler is not deleted')
  t.notMatch(readFileSync(join(root, 'handlers', 'index.ts'), 'utf8'), /fixtureListWidgets/, 'the rest is generated: the handler map no longer wires it')

  const rerun = await generate('--root', root)
  t.equal(rerun.code, 1, 'a second generate still fails')
  t.notMatch(rerun.stdout, /up to date/, 'and never says everything is up to date')
  t.equal((await generate('--check', '--root', root)).code, 1, '--check still fails')

  const removal = await run('sh', ['-c', command], {})
  t.equal(removal.code, 0, `the command works as printed ${removal.stderr}`)
  const done = await generate('--root', root)
  t.equal(done.code, 0, 'generate passes once it is gone')
  t.match(done.stdout, new RegExp(`^everything up to date \\(${operationCount(root)} operations\\)$`, 'm'))
  t.equal((await generate('--check', '--root', root)).code, 0, '--check passes')
})

t.test('on a copy tracked by git: the command is git rm, run from the repository', async (t) => {
  const root = await copyWithWrittenFixture(t)
  const git = (...args: string[]) => run('git', ['-C', root, '-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], {})
  t.equal((await git('init', '-q')).code, 0)
  t.equal((await git('add', '.')).code, 0)
  t.equal((await git('commit', '-q', '-m', 'copy')).code, 0)
  editSpec(root, (spec) => { delete spec.paths[FIXTURE_LIST] })

  const check = await generate('--check', '--root', root)
  const command = `git -C ${root} rm handlers/fixtureListWidgets.ts`
  t.match(check.stderr, `remove it: ${command}`, 'from elsewhere, git -C names the repository')
  const removal = await run('sh', ['-c', command], {})
  t.equal(removal.code, 0, `the command works as printed ${removal.stderr}`)
  t.equal((await generate('--root', root)).code, 0, 'generate passes once it is gone')
})

t.test('an operation without a usable operationId is a clear error', async (t) => {
  const root = copyProject(t)
  editSpec(root, (spec) => { spec.paths[FIXTURE_LIST] = { get: { ...fixtureListWidgets, operationId: 'list-widgets' } } })
  let res = await generate('--root', root)
  t.equal(res.code, 1)
  t.match(res.stderr, /^generate: GET \/zz-fixture\/widgets: operationId "list-widgets" must be a JavaScript identifier/m)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')

  writeFileSync(join(root, 'openapi.yaml'), 'paths: [unclosed\n')
  // The command as a process: a library's error (the YAML parser's) ends it with code 1 and one message.
  res = await generateCommand('--root', root)
  t.equal(res.code, 1)
  t.match(res.stderr, /^generate: cannot read .*openapi\.yaml: /m)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace')
})

t.test('what openapi-typescript prints about the document reaches stderr, from the command and in-process alike', async (t) => {
  const root = copyProject(t)
  // A discriminator mapped to a schema that is no object: openapi-typescript warns through the
  // global console and goes on.
  editSpec(root, (spec) => {
    const schemas = (spec as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas
    schemas.FixtureWidgetName = { type: 'string' }
    schemas.FixtureAnyWidget = {
      oneOf: [{ $ref: '#/components/schemas/FixtureWidgetName' }],
      discriminator: { propertyName: 'kind', mapping: { name: '#/components/schemas/FixtureWidgetName' } }
    }
  })
  const command = await generateCommand('--root', root)
  t.equal(command.code, 0, `a warning does not fail the command ${command.stderr}`)
  t.match(command.stdout, 'wrote src/generated/openapi.ts')
  t.match(command.stderr, /FixtureAnyWidget/, 'the command prints the warning on its stderr')
  const consoleBefore = { ...console }
  const inProcess = await generate('--check', '--root', root)
  t.equal(inProcess.code, 0, `--check passes in-process ${inProcess.stderr}`)
  t.match(inProcess.stdout, /^generate --check: up to date/m)
  t.equal(inProcess.stderr, command.stderr, 'with the same warning on stderr')
  t.ok((Object.keys(consoleBefore) as (keyof Console)[]).every((key) => console[key] === consoleBefore[key]), 'and this process\'s console is as it was')
})
