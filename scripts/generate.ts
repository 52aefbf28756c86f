/**
 * npm run generate [-- --check] [-- --root DIR]
 *
 * Regenerates, from openapi.yaml, the types, handlers/index.ts and a 501 stub per new operation,
 * and keeps handlers/ in step with renamed and removed operations; --check writes nothing and
 * fails when anything is stale. The work is runGenerate of scripts/lib/generate.ts (described
 * there), which the tests call in their own process; this is the command: runGenerate on this
 * process's arguments, working directory and streams.
 */
import { runGenerate } from './lib/generate.js'

const code = await runGenerate({
  argv: process.argv.slice(2),
  cwd: process.cwd(),
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line)
})
// process.exit on failure only, as before: a success ends when nothing is left to do.
if (code !== 0) process.exit(code)
