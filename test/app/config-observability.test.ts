/** The variables of issue 14's metrics and docs items: METRICS_PORT, METRICS_HOST, DOCS_PERSIST_AUTHORIZATION, PUBLIC_BASE_URL's default. */
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config.js'

t.test('defaults: no metrics listener, metrics on loopback when there is one, no persisted authorization', async (t) => {
  t.match(loadConfig({}), { metricsPort: undefined, metricsHost: '127.0.0.1', docsPersistAuthorization: false })
  t.match(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', DOCS_PERSIST_AUTHORIZATION: 'true' }),
    { metricsPort: 9464, metricsHost: '0.0.0.0', docsPersistAuthorization: true })
  t.equal(loadConfig({ METRICS_PORT: '' }).metricsPort, undefined, 'an empty METRICS_PORT counts as unset')
  t.equal(loadConfig({ METRICS_PORT: '0' }).metricsPort, 0, 'METRICS_PORT=0 picks a free port, as PORT=0 does')
})

t.test('PUBLIC_BASE_URL defaults to http://HOST:PORT of the running instance', async (t) => {
  t.equal(loadConfig({}).publicBaseUrl, 'http://127.0.0.1:3000')
  t.equal(loadConfig({ PORT: '3103' }).publicBaseUrl, 'http://127.0.0.1:3103', 'the port it listens on')
  t.equal(loadConfig({ HOST: 'localhost', PORT: '8080' }).publicBaseUrl, 'http://localhost:8080', 'a host name as it is')
  t.equal(loadConfig({ HOST: '::1' }).publicBaseUrl, 'http://[::1]:3000', 'an IPv6 address in brackets')
  t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '80' }).publicBaseUrl, 'http://127.0.0.1:80', 'every IPv4 interface: reached at the loopback address')
  t.equal(loadConfig({ HOST: '::' }).publicBaseUrl, 'http://[::1]:3000', 'every IPv6 interface: reached at ::1')
  t.equal(loadConfig({ PORT: '3103', PUBLIC_BASE_URL: 'https://api.example.com' }).publicBaseUrl, 'https://api.example.com', 'a given PUBLIC_BASE_URL wins')
})

t.test('bad values are refused with one line naming the variable', async (t) => {
  for (const [env, message] of [
    [{ METRICS_PORT: '65536' }, 'Invalid configuration: METRICS_PORT must be <= 65535 (got "65536")'],
    [{ METRICS_PORT: 'nine' }, 'Invalid configuration: METRICS_PORT must be a whole number in plain decimal digits (got "nine")'],
    [{ METRICS_HOST: 'a b' }, 'Invalid configuration: METRICS_HOST must be an address or host name without spaces (got "a b")'],
    [{ DOCS_PERSIST_AUTHORIZATION: 'yes' }, 'Invalid configuration: DOCS_PERSIST_AUTHORIZATION must be equal to one of the allowed values: true, false (got "yes")'],
    [{ METRICS_PORT: '3000' }, 'Invalid configuration: METRICS_PORT must differ from PORT: metrics are never served on the API port (got "3000")'],
    [{ PORT: '8080', METRICS_PORT: '8080' }, 'Invalid configuration: METRICS_PORT must differ from PORT: metrics are never served on the API port (got "8080")']
  ] as const) {
    t.throws(() => loadConfig(env), new ConfigError(message), JSON.stringify(env))
  }
  t.equal(loadConfig({ PORT: '0', METRICS_PORT: '0' }).metricsPort, 0, 'both 0: two different free ports')
})
