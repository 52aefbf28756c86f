// The part of autocannon's API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Result {
      duration: number
      errors: number
      timeouts: number
      non2xx: number
      requests: { total: number }
      throughput: { total: number }
    }
    interface Instance extends PromiseLike<Result> {
      on (event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void
    }
  }
  function autocannon (options: Record<string, unknown>): autocannon.Instance
  export default autocannon
}
