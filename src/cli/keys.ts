#!/usr/bin/env node
/** The `keys` bin (npm run keys): the command of keys-command.ts on this process's arguments, environment and streams. */
import { runKeys } from './keys-command.js'
import { processIo } from './process-io.js'

process.exitCode = await runKeys(processIo())
