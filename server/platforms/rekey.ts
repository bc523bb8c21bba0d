// Re-encrypting what the credential vault protects (docs/connectors.md, "Credentials"):
// connected accounts' credentials, platform app secrets and webhook channel secrets made with a
// key version below `belowVersion` are decrypted and encrypted again with the current key, each
// written only where the row still holds what was read (app.vault_ciphertexts, app.vault_rekey).
// `npx pressroom credentials rotate` runs it with the current version; the server's start runs it
// with 1, which seals the webhook channel secrets stored in the clear before they were sealed.
import pg from 'pg';
import type { Config } from '../config.ts';
import { vaultOf } from './credentials.ts';
import { resealWebhookSecret } from './webhook-secret.ts';
import type { CredentialVault } from './vault.ts';

interface Queryable { query(text: string, values?: unknown[]): Promise<{ rows: any[] }> }

export interface RekeyCounts { credentials: number; apps: number; webhookSecrets: number }

/** `openVault` is called only when something is found, so a start with nothing to seal never creates a key file. */
export async function rekeyVault(client: Queryable, openVault: () => CredentialVault, belowVersion: number): Promise<RekeyCounts> {
  const { rows } = await client.query('select app.vault_ciphertexts($1) as v', [belowVersion]);
  const found = rows[0].v as {
    credentials: { integrationId: string; ciphertext: string }[];
    apps: { id: string; ciphertext: string }[];
    webhookSecrets: { id: string; stored: string }[];
  };
  if (!found.credentials.length && !found.apps.length && !found.webhookSecrets.length) return { credentials: 0, apps: 0, webhookSecrets: 0 };
  const vault = openVault();
  const rekey = (binding: string, was: string) => vault.encrypt(binding, vault.decrypt(binding, Buffer.from(was, 'base64'))).toString('base64');
  const payload = {
    credentials: found.credentials.map((c) => ({ integrationId: c.integrationId, was: c.ciphertext, ciphertext: rekey(`integration:${c.integrationId}`, c.ciphertext), keyVersion: vault.currentVersion })),
    apps: found.apps.map((a) => ({ id: a.id, was: a.ciphertext, ciphertext: rekey(`platform-app:${a.id}`, a.ciphertext) })),
    webhookSecrets: found.webhookSecrets.map((w) => ({ id: w.id, was: w.stored, stored: resealWebhookSecret(vault, w.stored) })),
  };
  const done = await client.query('select app.vault_rekey($1) as r', [JSON.stringify(payload)]);
  return done.rows[0].r as RekeyCounts;
}

/** At start: seals what is still stored in the clear (key version 0), as the database's owner; how many rows. */
export async function sealSecretsInTheClear(ownerUrl: string, config: Pick<Config, 'DATA_DIR'> & Partial<Config>): Promise<number> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const done = await rekeyVault(client, () => vaultOf(config), 1);
    return done.webhookSecrets;
  } finally {
    await client.end();
  }
}
