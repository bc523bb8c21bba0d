// The signing secrets of lifecycle webhook subscriptions
// (app.webhook_subscriptions.secret_ciphertext). The worker must sign with
// them, so they cannot be hashed: they are encrypted with AES-256-GCM like the
// inbound hook secrets (server/inbox/secrets.ts), bound to the subscription
// id and to their own purpose, so a ciphertext copied to another row or
// table does not decrypt.
import type { Secrets } from '../storage/signing.ts';
import { decryptHookSecret, encryptHookSecret } from '../inbox/secrets.ts';
import { issueWebhookSecret } from '../platforms/webhook.ts';

const BINDING = 'lifecycle-webhook-subscription';

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export const newSubscriptionSecret = issueWebhookSecret;

export function encryptSubscriptionSecret(secrets: Secrets, subscriptionId: string, secret: string): Promise<Buffer> {
  return encryptHookSecret(secrets, subscriptionId, BINDING, secret);
}

/** The secret, or null when this server cannot read it (another SIGNED_URL_SECRET, or tampered). */
export function decryptSubscriptionSecret(secrets: Secrets, subscriptionId: string, ciphertext: Buffer): Promise<string | null> {
  return decryptHookSecret(secrets, subscriptionId, BINDING, ciphertext);
}
