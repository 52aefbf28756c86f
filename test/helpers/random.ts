/** Reproducible pseudo-random integers below n (xorshift32), for tests that make random operations. */
export function seededRandom (seed: number): (n: number) => number {
  let state = seed | 0 || 1
  return (n) => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) % n
  }
}
