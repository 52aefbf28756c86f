import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

/** What a sealed secret starts with. */
export const SEALED_PREFIX = 'enc:v1:'
const SEALED = SEALED_PREFIX

/**
 * How endpoint secrets are stored. With WEBHOOK_ENCRYPTION_KEY (32 bytes), sealed with AES-256-GCM
 * (`enc:v1:` + base64url of the 12-byte nonce, the 16-byte tag and the ciphertext), so a database
 * dump does not reveal them; without it, as they are. A secret stored sealed needs the key to be
 * read; one stored as it is can be read either way, so turning encryption on needs no migration.
 */
export class SecretBox {
  constructor (private readonly key: Buffer | undefined) {
    if (key !== undefined && key.length !== 32) throw new RangeError('WEBHOOK_ENCRYPTION_KEY must be 32 bytes')
  }

  get encrypting (): boolean {
    return this.key !== undefined
  }

  seal (secret: string): string {
    if (this.key === undefined) return secret
    const nonce = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce)
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
    return SEALED + Buffer.concat([nonce, cipher.getAuthTag(), sealed]).toString('base64url')
  }

  open (stored: string): string {
    if (!stored.startsWith(SEALED)) return stored
    if (this.key === undefined) throw new Error('a webhook secret is stored encrypted, and WEBHOOK_ENCRYPTION_KEY is not set')
    const bytes = Buffer.from(stored.slice(SEALED.length), 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, 12))
    decipher.setAuthTag(bytes.subarray(12, 28))
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
  }
}
