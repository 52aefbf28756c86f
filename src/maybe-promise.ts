/**
 * A value, or a promise of one. The stores answer in the same call when they can (the in-memory
 * counters, a read SQLite makes at once, a key PostgreSQL holds in its cache): every /v1 request
 * asks them, and each promise a request makes is a measured part of its cost (bench/README.md,
 * "Promises and bytes per request").
 */
export type MaybePromise<T> = T | Promise<T>
