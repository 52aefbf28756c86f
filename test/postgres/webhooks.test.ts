import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * The webhook tests written on buildTestApp (the endpoints' API, retries, rotation, redelivery)
 * run a second time on PostgreSQL, whose PATCHes record their events in their own batched
 * statement. (test/webhooks/delivery.test.ts runs both engines itself.)
 */
process.env.TEST_DATABASE = 'postgres'
const webhooksDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'webhooks')
for (const file of ['endpoints.test.ts', 'retries.test.ts']) await import(pathToFileURL(join(webhooksDir, file)).href)
