import { Writable } from 'node:stream'

/** A pino destination that keeps every log line, parsed. */
export function logCapture (): { lines: Record<string, unknown>[], stream: Writable } {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  return { lines, stream }
}
