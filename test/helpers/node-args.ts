import { fileURLToPath } from 'node:url'

/**
 * The node arguments that run a .ts file of the project, as the tests themselves run (.taprc):
 * `[process.execPath, ...typescriptArgs, file]`.
 */
export const typescriptArgs = ['--import', fileURLToPath(new URL('./ts-register.mjs', import.meta.url))]
