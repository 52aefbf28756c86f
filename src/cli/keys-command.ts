/**
 * keys create --plan PLAN [--name NAME] [--per-minute N --per-day N] [--scopes A,B] [--json]
 * keys list [--json]
 * keys revoke ID
 * keys update ID --scopes A,B
 *
 * Works on the server's DATABASE_URL, also while the server runs: a revoked key, or a key's new
 * scopes, take effect on its next request (SQLite), or on every instance once PostgreSQL's
 * notification of the change reaches it (docs/administration.md, "API keys while the server runs").
 * It never creates that database (see openStore).
 *
 * runKeys runs one command on the arguments, environment and streams it is given; keys.ts is
 * the bin that gives it the process's own.
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { loadDocument } from '../contract/document.js'
import { apiKeysRepository, issueApiKey } from '../repositories/api-keys.js'
import type { ApiKeyRecord, Store } from '../store/types.js'
import { type CliIo, openStore, runCli, UsageError } from './run-cli.js'

const { planNames, scopes: allScopes } = await loadDocument()

const text = {
  usage: `Usage:
  keys create --plan PLAN [--name NAME] [--per-minute N --per-day N] [--scopes A,B] [--json]
  keys list [--json]
  keys revoke ID
  keys update ID --scopes A,B`,
  get details () {
    return `Manages the API keys in the database of DATABASE_URL (default sqlite:./data/petstore.db),
also while the server runs. The database must exist: see npm run db:migrate.

  create   issues a key and prints its secret, the only time it is shown.
           PLAN is one of ${planNames.join(', ')}; an enterprise key takes its own
           --per-minute and --per-day limits. --scopes lists what it may do, among
           ${allScopes.join(', ')}; without it, every scope.
           --json prints {"id", "key", "plan", "name"}.
  list     lists the keys (never their secrets), with their scopes and state.
  revoke   revokes a key: every instance refuses it from then on (on PostgreSQL, once
           the database's notification reaches it: milliseconds).
  update   replaces a key's scopes, applied by every instance as a revocation is.`
  }
}

function positiveInteger (name: string, text: string | undefined): number | null {
  if (text === undefined) return null
  if (!/^[1-9][0-9]{0,9}$/.test(text) || Number(text) > 2147483647) throw new UsageError(`--${name} must be a whole number from 1 to 2147483647, got ${JSON.stringify(text)}`)
  return Number(text)
}

/** --scopes A,B: scopes of openapi.yaml (bearerAuth's x-scopes), in the document's order. */
function scopesOf (text: string): string[] {
  const named = text.split(',').map((scope) => scope.trim()).filter((scope) => scope !== '')
  const unknown = named.filter((scope) => !allScopes.includes(scope))
  if (unknown.length > 0) throw new UsageError(`--scopes: unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the scopes are ${allScopes.join(', ')}`, 2, false)
  if (named.length === 0) throw new UsageError(`--scopes needs at least one scope of ${allScopes.join(', ')}`, 2, false)
  return allScopes.filter((scope) => named.includes(scope))
}

async function create (store: Store, args: string[], print: CliIo['stdout']) {
  const { values } = parseArgs({
    args,
    options: { plan: { type: 'string' }, name: { type: 'string' }, 'per-minute': { type: 'string' }, 'per-day': { type: 'string' }, scopes: { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  const plans = planNames
  if (values.plan === undefined || !plans.includes(values.plan)) {
    throw new UsageError(`--plan must be one of ${plans.join(', ')}${values.plan === undefined ? '' : `, got ${JSON.stringify(values.plan)}`}`)
  }
  const perMinute = positiveInteger('per-minute', values['per-minute'])
  const perDay = positiveInteger('per-day', values['per-day'])
  if (values.plan === 'enterprise') {
    if (perMinute === null || perDay === null) throw new UsageError('an enterprise key needs its own --per-minute and --per-day limits')
  } else if (perMinute !== null || perDay !== null) {
    throw new UsageError(`--per-minute and --per-day are only for enterprise keys; the ${values.plan} plan has fixed limits`)
  }
  if (perMinute !== null && perDay !== null && perDay < perMinute) {
    throw new UsageError(`--per-day (${perDay}) is below --per-minute (${perMinute}): the daily limit must be at least the per-minute one`)
  }
  const name = values.name ?? `${values.plan} key`
  if (name.length === 0 || name.length > 200) throw new UsageError('--name must be 1 to 200 characters')
  const scopes = values.scopes === undefined ? allScopes : scopesOf(values.scopes)

  const { record, secret } = await issueApiKey(store, { name, plan: values.plan, perMinute, perDay, scopes })
  if (values.json) {
    print(JSON.stringify({ id: record.id, key: secret, plan: record.plan, name: record.name }))
  } else {
    print(`Created ${record.id} (${record.plan}, "${record.name}", scopes ${record.scopes.join(' ')}).`)
    print(`API key, shown only now: ${secret}`)
  }
}

function limits (key: ApiKeyRecord): string {
  return key.perMinute === null ? 'plan' : `${key.perMinute}/min ${key.perDay}/day`
}

async function list (store: Store, args: string[], print: CliIo['stdout']) {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } })
  const keys = await apiKeysRepository(store).list()
  if (values.json) {
    print(JSON.stringify(keys))
    return
  }
  if (keys.length === 0) {
    print('No keys. Create one with: keys create --plan free --name NAME')
    return
  }
  const rows = [['ID', 'NAME', 'PLAN', 'LIMITS', 'SCOPES', 'CREATED', 'STATE'], ...keys.map((k) => [
    k.id, k.name, k.plan, limits(k), k.scopes.join(','), k.createdAt, k.revokedAt === null ? 'active' : `revoked ${k.revokedAt}`
  ])]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const row of rows) print(row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd())
}

async function revoke (store: Store, args: string[], print: CliIo['stdout']) {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} })
  if (positionals.length !== 1) throw new UsageError('revoke takes exactly one key ID (see: keys list)')
  const id = positionals[0]!
  const before = (await apiKeysRepository(store).list()).find((k) => k.id === id)
  if (before === undefined) throw new UsageError(`no key with id ${id}`, 1)
  if (before.revokedAt !== null) {
    print(`${before.id} ("${before.name}") was already revoked at ${before.revokedAt}; nothing changed.`)
    return
  }
  const key = await apiKeysRepository(store).revoke(id)
  if (key === undefined) throw new UsageError(`no key with id ${id}`, 1)
  print(`Revoked ${key.id} ("${key.name}") at ${key.revokedAt}. It is refused from its next request on (on PostgreSQL by each instance once notified: milliseconds).`)
}

async function update (store: Store, args: string[], print: CliIo['stdout']) {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { scopes: { type: 'string' } } })
  if (positionals.length !== 1) throw new UsageError('update takes exactly one key ID (see: keys list)')
  if (values.scopes === undefined) throw new UsageError('update needs --scopes A,B: the scopes the key is to hold')
  const scopes = scopesOf(values.scopes)
  const key = await apiKeysRepository(store).setScopes(positionals[0]!, scopes)
  if (key === undefined) throw new UsageError(`no key with id ${positionals[0]!}`, 1)
  print(`${key.id} ("${key.name}") now holds ${key.scopes.join(', ')}. Applied from its next request on (on PostgreSQL by each instance once notified: milliseconds).`)
}

const commands: Record<string, (store: Store, args: string[], print: CliIo['stdout']) => Promise<void>> = { create, list, revoke, update }

/** Runs `keys …` on io.argv; resolves to its exit code. */
export function runKeys (io: CliIo): Promise<number> {
  return runCli(text, io, async (argv) => {
    const [command, ...rest] = argv
    const run = command === undefined ? undefined : commands[command]
    if (run === undefined) throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`)
    const store = await openStore(loadConfig(io.env), { create: false, cwd: io.cwd })
    try {
      await run(store, rest, io.stdout)
    } finally {
      await store.close()
    }
  })
}
