// Preloaded into a benchmarked server (NODE_OPTIONS=--import=…) by bench/list-writes.ts: samples
// the event loop's delay every millisecond, and every 200 ms appends the longest delay of that
// window, and its garbage collections (count, longest pause, major ones), as a line of JSON to
// $LOOP_DELAY_FILE. The longest delay of a 1 ms timer is the longest time the loop was blocked
// (plus the machine's scheduling noise).
import { appendFileSync } from 'node:fs'
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import process from 'node:process'
import { setInterval } from 'node:timers'

const histogram = monitorEventLoopDelay({ resolution: 1 })
histogram.enable()
let gc = { count: 0, major: 0, longest: 0 }
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count++
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.major++
    gc.longest = Math.max(gc.longest, entry.duration)
  }
}).observe({ entryTypes: ['gc'] })
setInterval(() => {
  const ms = (n) => Number(n.toFixed(2))
  appendFileSync(process.env.LOOP_DELAY_FILE, JSON.stringify({ t: Date.now(), max: ms(histogram.max / 1e6), gc: { ...gc, longest: ms(gc.longest) } }) + '\n')
  histogram.reset()
  gc = { count: 0, major: 0, longest: 0 }
}, 200).unref()
