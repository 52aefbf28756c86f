import { join } from 'node:path'
import { ESLint } from 'eslint'
import t from 'tap'
import { projectRoot } from '../src/contract/paths.js'

// The contract's code (src/contract/) imports nothing of the rest of the project but the types
// generated from openapi.yaml; eslint.config.js holds every file to it (npm run lint). Here the
// rule is shown to refuse what it should and to let through what it should.

const eslint = new ESLint({ cwd: projectRoot })

/** The messages of the import rule for `code`, linted as if it were the file `file` of the project. */
async function refusals (file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(projectRoot, file) })
  return result!.messages.filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message)
}

t.test('a file of src/contract/ imports its own folder, packages and src/generated/, nothing else of the project', async (t) => {
  t.same(await refusals('src/contract/zz-fixture.ts', [
    "import { Ajv } from 'ajv'",
    "import type { operations } from '../generated/openapi.js'",
    "import { ApiError } from './errors.js'",
    'export { ApiError, Ajv }',
    'export type Operations = operations',
    ''
  ].join('\n')), [], 'its own files, src/generated/ and packages')

  for (const specifier of ['../config.js', '../store/types.js', '../plugins/app/metrics.js', '../rate-limit/windows.js', '../../handlers/index.js']) {
    const messages = await refusals('src/contract/zz-fixture.ts', `import type { X } from '${specifier}'\nexport type Y = X\n`)
    t.equal(messages.length, 1, `${specifier} is refused`)
    t.match(messages[0], /src\/contract\/ imports nothing from the rest of the project/, `${specifier}: the message says why`)
  }
  t.equal((await refusals('src/contract/zz-fixture.ts', "export { Store } from '../store/types.js'\n")).length, 1, 'a re-export is an import too')

  t.same(await refusals('src/store/zz-fixture.ts', "import { ApiError } from '../contract/errors.js'\nexport { ApiError }\n"), [],
    'the rest of src/ imports src/contract/')
})

t.test('every file of src/contract/ keeps the rule', async (t) => {
  const results = await eslint.lintFiles([join(projectRoot, 'src/contract')])
  t.ok(results.length >= 10, `the folder's files were linted (${results.length})`)
  t.same(results.flatMap((result) => result.messages.filter((message) => message.ruleId === 'no-restricted-imports')
    .map((message) => `${result.filePath}: ${message.message}`)), [], 'no file imports the rest of the project')
})
