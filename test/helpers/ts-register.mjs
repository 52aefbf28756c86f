// `node --import ./test/helpers/ts-register.mjs file.ts`: runs the project's TypeScript (ts-hooks.mjs).
import { register } from 'node:module'
import { URL } from 'node:url'

register(new URL('./ts-hooks.mjs', import.meta.url))
