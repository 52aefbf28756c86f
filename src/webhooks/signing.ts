import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** A new signing secret: whsec_ and 24 random bytes in base64 (the Standard Webhooks form). */
export function newSecret (): string {
  return `whsec_${randomBytes(24).toString('base64')}`
}

/** The Standard Webhooks headers of one attempt; `secrets` are the endpoint's valid ones, newest first. */
export function signedHeaders (eventId: string, body: string, secrets: readonly string[], at: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    // The specification's own library signs (HMAC-SHA256 of "id.timestamp.body" with the secret's
    // bytes); during a rotation each valid secret signs, the signatures separated by spaces.
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' ')
  }
}
