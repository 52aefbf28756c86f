import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { ensureDemoKey } from './startup.js'

/** Reads the configuration, listens, and drains in-flight requests on SIGTERM/SIGINT. */
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

  const app = await buildApp(config)
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal }, 'draining in-flight requests, then closing')
    await app.close()
  })

  await app.listen({ port: config.port, host: config.host })
  const docsUrl = `${config.publicBaseUrl}/docs`
  const demoKey = await ensureDemoKey(app.store, config)
  if (demoKey) {
    app.log.info({ docs: docsUrl, demoApiKey: demoKey }, `Pet Store API ready. Docs: ${docsUrl} — demo API key (shown once): ${demoKey}`)
  } else {
    app.log.info({ docs: docsUrl }, `Pet Store API ready. Docs: ${docsUrl}`)
  }
}

await main()
