import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { projectRoot } from '../src/paths.js'
import { tempDir } from './helpers/app.js'
import { run } from './helpers/cli.js'

const generate = (...args: string[]) => run(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'generate.ts'), ...args], {})

/** Every file under a directory with its content, to prove what a run did not touch. */
function snapshot (dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const file = join(e.parentPath, e.name)
      return [file.slice(dir.length + 1), readFileSync(file, 'utf8')]
    }))
}

t.test('npm run generate -- --check passes on the repository', async (t) => {
  const res = await run('npm', ['run', '-s', 'generate', '--', '--check'], {})
  t.equal(res.code, 0, `up to date: ${res.stdout}${res.stderr}`)
  t.match(res.stdout, /up to date/)
})

t.test('on a copy: a new operation fails --check, then gets a typed stub without touching written handlers', async (t) => {
  const root = tempDir(t)
  cpSync(join(projectRoot, 'openapi.yaml'), join(root, 'openapi.yaml'))
  cpSync(join(projectRoot, 'handlers'), join(root, 'handlers'), { recursive: true })
  cpSync(join(projectRoot, 'src', 'generated'), join(root, 'src', 'generated'), { recursive: true })

  // A written handler, marked so that any rewrite would show.
  const written = join(root, 'handlers', 'listInventory.ts')
  writeFileSync(written, readFileSync(written, 'utf8') + '// written by hand: must survive generate\n')

  const spec = parseYaml(readFileSync(join(root, 'openapi.yaml'), 'utf8')) as { paths: Record<string, unknown> }
  spec.paths['/store/orders/{orderId}'] = {
    get: {
      operationId: 'getOrderById',
      summary: 'Find an order by id',
      parameters: [{ name: 'orderId', in: 'path', required: true, schema: { type: 'integer', format: 'int64', minimum: 1 } }],
      responses: {
        200: { description: 'The order', content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' } } } },
        404: { $ref: '#/components/responses/NotFound' }
      }
    }
  }
  writeFileSync(join(root, 'openapi.yaml'), toYaml(spec))
  const before = snapshot(root)

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails')
  t.match(check.stderr, 'handlers/getOrderById.ts is missing', 'names the missing handler')
  t.match(check.stderr, 'src/generated/openapi.ts is stale', 'names the stale types')
  t.match(check.stderr, 'handlers/index.ts is stale', 'names the stale handler map')
  t.same(snapshot(root), before, '--check writes nothing')

  const gen = await generate('--root', root)
  t.equal(gen.code, 0, `generate succeeds ${gen.stderr}`)
  const after = snapshot(root)
  const stub = after['handlers/getOrderById.ts']
  t.ok(stub, 'a stub is created for the new operation')
  t.match(stub, /export const getOrderById: OperationHandler<'getOrderById'> =/, 'typed by the operation\'s generated types')
  for (const [file, content] of Object.entries(before)) {
    if (file.startsWith('handlers/') && file !== 'handlers/index.ts') t.equal(after[file], content, `${file} is not rewritten`)
  }
  t.match(after['handlers/listInventory.ts'], /written by hand: must survive generate/)
  t.match(after['handlers/index.ts'], /import \{ getOrderById \} from '\.\/getOrderById\.js'/, 'the handler map wires the new operation')
  t.match(after['src/generated/openapi.ts'], /getOrderById: \{/, 'the types know the new operation')

  const again = await generate('--check', '--root', root)
  t.equal(again.code, 0, `--check passes after generate ${again.stderr}`)
})

t.test('on a copy: a handler no operation uses is reported, never deleted', async (t) => {
  const root = tempDir(t)
  cpSync(join(projectRoot, 'openapi.yaml'), join(root, 'openapi.yaml'))
  cpSync(join(projectRoot, 'handlers'), join(root, 'handlers'), { recursive: true })
  cpSync(join(projectRoot, 'src', 'generated'), join(root, 'src', 'generated'), { recursive: true })
  const orphan = join(root, 'handlers', 'findPetsByTag.ts')
  writeFileSync(orphan, 'export const findPetsByTag = async () => []\n')

  const check = await generate('--check', '--root', root)
  t.equal(check.code, 1, '--check fails on an orphan')
  t.match(check.stderr, 'handlers/findPetsByTag.ts is not used by any operation')

  const gen = await generate('--root', root)
  t.match(gen.stderr, 'handlers/findPetsByTag.ts is not used by any operation', 'generate reports it too')
  t.ok(existsSync(orphan), 'the orphan is left for a person to remove')
  t.notMatch(readFileSync(join(root, 'handlers', 'index.ts'), 'utf8'), /findPetsByTag/, 'and it is not wired')
})
