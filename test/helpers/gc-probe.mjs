// Preloaded into a server process by test/server/soak.test.ts
// (NODE_OPTIONS="--expose-gc --import <this file>"): on SIGWINCH (ignored by default, and not one
// of the signals close-with-grace shuts down on) it collects all garbage, then
// prints the memory still in use as one JSON line on stdout, beside the server's own log lines.
import process from 'node:process'

process.on('SIGWINCH', () => {
  globalThis.gc()
  globalThis.gc()
  const { heapUsed, rss } = process.memoryUsage()
  process.stdout.write(JSON.stringify({ msg: 'gc-probe', heapUsed, rss }) + '\n')
})
