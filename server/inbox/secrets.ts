// The secrets of the inbound hooks (app.inbox_hook_secrets). The server must
// compute HMACs with them, so they cannot be hashed: they are encrypted with
// AES-256-GCM under a key derived from the server's signing secret
// (server/storage/signing.ts, purpose inbox-secret: SIGNED_URL_SECRET when
// set, else the random secret kept in app.server_secrets). Stored as
// iv (12 bytes) | tag (16 bytes) | ciphertext. Meta's verify token is only
// compared, so it is stored as its SHA-256.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Secrets } from '../storage/signing.ts';

const AAD_PREFIX = 'pressroom:inbox-hook-secret:v1:';

/** Binds a ciphertext to its integration and source: a row copied elsewhere does not decrypt. */
function aad(integrationId: string, source: string): Buffer {
  return Buffer.from(`${AAD_PREFIX}${integrationId}:${source}`, 'utf8');
}

/**
 * The "source" a hand-set platform access token (app.inbox_platform_tokens; sandbox and
 * webhook integrations only: a connected account's tokens are in the credential vault,
 * server/platforms/vault.ts) is bound to:
 * it is encrypted like a hook secret, and cannot pass for one.
 */
export const PLATFORM_TOKEN_BINDING = 'platform-token';

export async function encryptHookSecret(secrets: Secrets, integrationId: string, source: string, secret: string): Promise<Buffer> {
  const key = await secrets.key('inbox-secret');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(integrationId, source));
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]);
}

/** The secret, or null when the ciphertext does not decrypt (another server secret, or tampered). */
export async function decryptHookSecret(secrets: Secrets, integrationId: string, source: string, blob: Buffer): Promise<string | null> {
  if (blob.length < 29) return null;
  const key = await secrets.key('inbox-secret');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, 12));
    decipher.setAAD(aad(integrationId, source));
    decipher.setAuthTag(blob.subarray(12, 28));
    return Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

export function verifyTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
