// `node --import ./test/helpers/ts-register.mjs file.ts`: runs the project's TypeScript (ts-hooks.mjs).
import { register } from 'node:module'
import { sep } from 'node:path'
import process from 'node:process'
import { URL } from 'node:url'

// Once hooks are registered, Node 20 sends every ES module import through the hooks' thread, a
// round trip each. Kysely's ES build is 280 modules importing each other about 1,000 times: 1 s of
// CPU per process through the hooks, 0.27 s imported before they exist (the same build, cached by
// the loader). The store imports it, so every test file, server and CLI process does; the
// scripts (generate, lint) do not, and skip it.
if (!(process.argv[1] ?? '').includes(`${sep}scripts${sep}`)) await import('kysely')

register(new URL('./ts-hooks.mjs', import.meta.url))
