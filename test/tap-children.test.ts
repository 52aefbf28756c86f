/**
 * The processes the tests spawn run without tap's module recorder (test/helpers/tap-children.mjs):
 * neither through tap's spawn patch nor through the NODE_OPTIONS a child inherits.
 */
import { spawnSync } from 'node:child_process'
import t from 'tap'

const probe = 'console.log(JSON.stringify({ options: process.env.NODE_OPTIONS ?? "", execArgv: process.execArgv.filter((a) => a.startsWith("--")), recorder: Object.getOwnPropertySymbols(globalThis).map(String).filter((s) => s.includes("processinfo")) }))'
const recorder = /processinfo/

t.ok(recorder.test(process.execArgv.join(' ')), 'the test process itself was started with the recorder (so the checks below can fail)')
// .taprc turns these plugins off; a Test class still built for tap's defaults (as npm installs
// it, before package.json's prepare runs tap build) would still start every test process with them.
t.notMatch(process.execArgv.join(' '), /@tapjs[\\/](typescript|mock)[\\/]/, 'nor with the loaders of the plugins .taprc turns off (ts-node, the mock hooks)')

for (const [name, env] of [['this process\'s environment', process.env], ['a minimal environment', { PATH: process.env.PATH ?? '' }]] as const) {
  t.test(`a Node process spawned with ${name}`, async (t) => {
    const child = spawnSync(process.execPath, ['-e', probe], { env, encoding: 'utf8' })
    t.equal(child.status, 0, `exit 0 ${child.stderr}`)
    const seen = JSON.parse(child.stdout) as { options: string, execArgv: string[], recorder: string[] }
    t.notMatch(seen.options, recorder, 'NODE_OPTIONS does not load the recorder')
    t.notMatch(seen.execArgv.join(' '), recorder, 'nor do its arguments')
    t.same(seen.recorder, [], 'and it did not register itself')
  })
}
