import type { Response as InjectResponse } from 'light-my-request'
import type { TestApp } from '../../helpers/app.js'

/**
 * The errors an operation's own handler answers with, provoked on the app of
 * test/app/error-examples.test.ts (its clock and PUBLIC_BASE_URL fixed): each entry says how, and
 * the response. A new error code gets a module of its own in this folder, exporting `provoke`,
 * and the test checks its example in openapi.yaml against what is sent.
 */
export type Provocation = (api: TestApp) => Promise<[how: string, response: InjectResponse][]>
