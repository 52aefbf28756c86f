/**
 * The data every measurement starts from. Each build seeds its own template database once per
 * size, through its own CLI as an operator would (`db migrate`, `db seed --synthetic N`, `keys
 * create`); each measurement then gets a fresh copy of it, so no measurement sees another's writes.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

/** A compiled service: `dist` holds src/server.js and src/cli/, run from `cwd` (its checkout). */
export interface Build {
  dist: string
  cwd: string
}

/** Limits of the benchmark's enterprise key that no run reaches: the limiter still counts every request. */
const LIMIT = '2000000000'

async function cli (build: Build, tool: 'db' | 'keys', args: string[], databaseUrl: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [join(build.dist, 'src', 'cli', `${tool}.js`), ...args], {
      cwd: build.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }
    })
    return stdout
  } catch (error) {
    throw new Error(`${tool} ${args.join(' ')} (in ${build.cwd}): ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`)
  }
}

/** Seeds `size` synthetic pets and one enterprise key into an empty database; returns the key. */
export async function seed (build: Build, databaseUrl: string, size: number): Promise<string> {
  await cli(build, 'db', ['migrate'], databaseUrl)
  await cli(build, 'db', ['seed', '--synthetic', String(size)], databaseUrl)
  const created = await cli(build, 'keys', ['create', '--plan', 'enterprise', '--name', 'benchmark', '--per-minute', LIMIT, '--per-day', LIMIT, '--json'], databaseUrl)
  return (JSON.parse(created) as { key: string }).key
}

/** A copy of a SQLite template (with its WAL, should one be left). */
export function copySqlite (template: string, copy: string): void {
  for (const suffix of ['', '-wal']) if (existsSync(template + suffix)) copyFileSync(template + suffix, copy + suffix)
}

export function removeSqlite (file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
}

/** The PostgreSQL server of BENCH_DATABASE_URL, where each run creates (and drops) databases of its own. */
export class Postgres {
  constructor (readonly adminUrl: string) {}

  private async query<R extends pg.QueryResultRow> (sql: string, params: unknown[] = [], database?: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: database === undefined ? this.adminUrl : this.url(database), connectionTimeoutMillis: 3000 })
    await client.connect()
    try {
      return (await client.query<R>(sql, params)).rows
    } finally {
      await client.end()
    }
  }

  /** Why it cannot be used, or undefined when it answers. */
  async unavailable (): Promise<string | undefined> {
    try {
      await this.query('SELECT 1')
      return undefined
    } catch (error) {
      return `PostgreSQL at ${this.adminUrl.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} does not answer (${(error as Error).message})`
    }
  }

  url (database: string): string {
    const url = new URL(this.adminUrl)
    url.pathname = `/${database}`
    return url.toString()
  }

  /** Creates a database (the names are the runner's own, never input); a copy of `template` if given. */
  async create (database: string, template?: string): Promise<string> {
    await this.query(`CREATE DATABASE ${database}${template === undefined ? '' : ` TEMPLATE ${template}`}`)
    return this.url(database)
  }

  /**
   * Gathers the planner's statistics, as autovacuum would soon after the seeding in production:
   * without them a fresh copy of a large table gets plans made for an empty one.
   */
  async analyze (database: string): Promise<void> {
    await this.query('ANALYZE', [], database)
  }

  async drop (database: string): Promise<void> {
    await this.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  }

  /**
   * The backends serving one database (the service's pool): their CPU time is the database's
   * share of an answer, which the service process's own leaves out.
   */
  async backends (database: string): Promise<number[]> {
    const rows = await this.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database])
    return rows.map((r) => r.pid)
  }
}
