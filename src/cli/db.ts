#!/usr/bin/env node
/** The `db` bin (npm run db:migrate, db:seed): the command of db-command.ts on this process's arguments, environment and streams. */
import { runDb } from './db-command.js'
import { processIo } from './process-io.js'

process.exitCode = await runDb(processIo())
