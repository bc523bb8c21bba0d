// A webhook channel's signing secret at rest (db/migrations/committed/000035-sealed-webhook-channel-secrets.sql):
// `prv1:<base64 of the credential vault's ciphertext>` in app.integrations.webhook_secret, sealed
// by the route that creates the channel and opened by whoever signs with it (the worker, the
// published-caption route). A secret written before sealing existed is stored in the clear
// until the server's next start seals it (server/platforms/rekey.ts); it is used as it is.
import type { CredentialVault } from './vault.ts';

const PREFIX = 'prv1:';
const BINDING = 'webhook-channel-secret';

export function sealWebhookSecret(vault: CredentialVault, secret: string): string {
  return PREFIX + vault.encrypt(BINDING, secret).toString('base64');
}

/** The secret to sign with, from what the database holds (sealed, or in the clear from before). */
export function openWebhookSecret(vault: CredentialVault, stored: string | null | undefined): string | null {
  if (stored === null || stored === undefined) return null;
  if (!stored.startsWith(PREFIX)) return stored;
  return vault.decrypt(BINDING, Buffer.from(stored.slice(PREFIX.length), 'base64'));
}

/** A stored secret sealed again with the vault's current key (rotation, or the first seal of one in the clear). */
export function resealWebhookSecret(vault: CredentialVault, stored: string): string {
  return sealWebhookSecret(vault, openWebhookSecret(vault, stored)!);
}
