// Loaded into each tap test process (.taprc node-arg), before the test file.
//
// tap starts every test process with @tapjs/processinfo, which records each module a process loads
// (for coverage and `tap --changed`) and, through process-on-spawn, adds itself to the
// NODE_OPTIONS of every process spawned below it. This suite has coverage off and never runs
// --changed, yet each server, CLI, npm and tsc process the tests start would load the recorder and
// pass every module it loads through it: about 0.5 s of CPU per spawned Node process (a `keys
// list` costs 1.05 s with it, 0.5 s without). So the processes the tests spawn run without it; the
// test process itself keeps it, since tap adds it before this file runs.
// test/app/tap-children.test.ts fails if a spawned process still gets it.
import { createRequire } from 'node:module'
import process from 'node:process'

const recorder = /@tapjs[\\/]processinfo[\\/]/

const require = createRequire(import.meta.url)
let processOnSpawn
try {
  processOnSpawn = require('process-on-spawn')
} catch {
  // Not installed: then tap does not patch spawn either.
}
// process-on-spawn keeps its listeners in one global registry, shared by every copy of the
// package; processinfo's is the only listener in a tap test process.
processOnSpawn?.removeAllListeners()

// Children spawned with this process's environment would still inherit the --import from it.
const options = process.env.NODE_OPTIONS
if (options !== undefined) {
  const kept = options.split(/\s+/).filter((option) => option !== '' && !recorder.test(option))
  if (kept.length === 0) delete process.env.NODE_OPTIONS
  else process.env.NODE_OPTIONS = kept.join(' ')
}
