// Loaded into a server process with `node --import` by bench/per-request.ts, which drives it over
// the IPC channel that spawned the process: between 'start' and 'stop' it measures the bytes the
// process allocated on V8's heap (what the heap holds now, plus what every collection in between
// freed, as v8.GCProfiler reports each one) and, when asked to, the promises it created (an
// async_hooks hook for PROMISE resources, enabled only for that measurement: the hook allocates
// per promise itself, so bytes are measured without it).
import { createHook } from 'node:async_hooks'
import process from 'node:process'
import { GCProfiler, getHeapStatistics } from 'node:v8'

let promises = 0
const promiseHook = createHook({ init (_id, type) { if (type === 'PROMISE') promises++ } })
let profiler
let usedAtStart = 0
let promisesAtStart = 0
let countingPromises = false

process.on('message', (message) => {
  if (message.command === 'start') {
    countingPromises = message.promises === true
    if (countingPromises) promiseHook.enable()
    profiler = new GCProfiler()
    profiler.start()
    usedAtStart = getHeapStatistics().used_heap_size
    promisesAtStart = promises
    process.send({ started: true })
  } else if (message.command === 'stop') {
    const usedNow = getHeapStatistics().used_heap_size
    const { statistics } = profiler.stop()
    if (countingPromises) promiseHook.disable()
    let freed = 0
    for (const gc of statistics) freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize
    process.send({ allocatedBytes: usedNow - usedAtStart + freed, promises: promises - promisesAtStart, collections: statistics.length })
  }
})
