import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import app, { serverOptions } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { ensureDemoKey } from './startup.js'

/** Reads the configuration, builds and registers the app, listens, and drains on SIGTERM/SIGINT. */
async function main () {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message)
      process.exit(1)
    }
    throw error
  }

  const server = Fastify(serverOptions(config))
  await server.register(app, { config })
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) server.log.error({ err }, 'closing after an uncaught error')
    else server.log.info({ signal }, 'draining in-flight requests, then closing')
    await server.close()
  })

  await server.listen({ port: config.port, host: config.host })
  const docsUrl = `${config.publicBaseUrl}/docs`
  const demoKey = await ensureDemoKey(server.store, config)
  if (demoKey) {
    server.log.info({ docs: docsUrl, demoApiKey: demoKey }, `Pet Store API ready. Docs: ${docsUrl} — demo API key (shown once): ${demoKey}`)
  } else {
    server.log.info({ docs: docsUrl }, `Pet Store API ready. Docs: ${docsUrl}`)
  }
}

await main()
