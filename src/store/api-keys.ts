import { createHash, randomBytes } from 'node:crypto'

const KEY_PREFIX = 'psk_'

/** SHA-256 of the presented key: the only form in which keys are stored or looked up. */
export function hashApiKey (key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** A fresh key: 32 random bytes shown as psk_ + base64url, and its hash. */
export function generateApiKey (): { id: string, secret: string, hash: string } {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url')
  return { id: 'key_' + randomBytes(8).toString('hex'), secret, hash: hashApiKey(secret) }
}
