import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { run } from '../helpers/cli.js'
import { typescriptArgs } from '../helpers/node-args.js'

// bench/per-request.ts, run as a user runs it (a short measurement): it must build the service,
// start it and the floor, and count what their requests cost.
const script = join(projectRoot, 'bench', 'per-request.ts')

t.test('counts the promises and bytes of each workload\'s requests in the service and the floor', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, script, '--requests', '100'], {}, 300_000)
  t.equal(result.code, 0, `exits 0 (stderr: ${result.stderr.slice(-500)})`)
  const rows = new Map<string, { bytes: number, promises: number }>()
  for (const match of result.stdout.matchAll(/^\| ([\w-]+) \| (\w+) \| ([\d,]+) \| ([\d.]+) \|$/gm)) {
    rows.set(`${match[1]} ${match[2]}`, { bytes: Number(match[3]!.replaceAll(',', '')), promises: Number(match[4]) })
  }
  for (const workload of ['list-100', 'get-pet', 'patch']) {
    const service = rows.get(`${workload} service`)
    const floor = rows.get(`${workload} floor`)
    if (service === undefined || floor === undefined) {
      t.fail(`${workload}: a row for the service and one for the floor (output: ${result.stdout.slice(-800)})`)
      continue
    }
    // A request of either allocates kilobytes (headers, parser state) and makes promises
    // (an async handler at least); none at all would mean the probe measured nothing.
    t.ok(service.bytes > 1000 && floor.bytes > 1000, `${workload}: bytes allocated per request counted (${service.bytes}, ${floor.bytes})`)
    t.ok(service.promises >= 1 && floor.promises >= 1, `${workload}: promises per request counted (${service.promises}, ${floor.promises})`)
    t.ok(service.promises > floor.promises, `${workload}: the service makes more promises than the floor (authentication, two rate-limit windows)`)
  }
})

t.test('a usage error is one line on stderr and exit status 2', async (t) => {
  const result = await run(process.execPath, [...typescriptArgs, script, '--requests', '5'], {})
  t.equal(result.code, 2)
  t.equal(result.stderr.trim(), 'bench/per-request.ts: --requests must be a whole number from 100 up, not 5 (--help lists the options)')
})
