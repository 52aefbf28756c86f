import t from 'tap'
import { loadConfig } from '../../src/config.js'

t.test('DATABASE_POOL_MAX and DATABASE_TIMEOUT_MS: defaults, and one-line errors for bad values', async (t) => {
  const config = loadConfig({})
  t.equal(config.databasePoolMax, 10)
  t.equal(config.databaseTimeoutMs, 5000)
  t.same({ ...loadConfig({ DATABASE_POOL_MAX: '25', DATABASE_TIMEOUT_MS: '750' }) }, { ...config, databasePoolMax: 25, databaseTimeoutMs: 750 })
  const bad: [string, string, RegExp][] = [
    ['DATABASE_POOL_MAX', '0', /^Invalid configuration: DATABASE_POOL_MAX must be >= 1 \(got "0"\)$/],
    ['DATABASE_POOL_MAX', 'ten', /^Invalid configuration: DATABASE_POOL_MAX must be integer/],
    ['DATABASE_POOL_MAX', '1001', /DATABASE_POOL_MAX must be <= 1000/],
    ['DATABASE_TIMEOUT_MS', '50', /DATABASE_TIMEOUT_MS must be >= 100/],
    ['DATABASE_TIMEOUT_MS', '1.5', /DATABASE_TIMEOUT_MS must be integer/]
  ]
  for (const [name, value, message] of bad) {
    t.throws(() => loadConfig({ [name]: value }), { name: 'ConfigError', message }, `${name}=${value}`)
  }
})
