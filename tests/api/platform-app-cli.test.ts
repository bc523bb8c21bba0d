// `npx pressroom platform-app set|list|remove` and `credentials rotate` (server/cli/pressroom.ts), spawned
// for real against a test server's database: the operator's app is stored with
// its secret encrypted by the same vault keys as the server's, never printed,
// and the server then offers the platform (GET platforms, POST integrations/connect).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { openWebhookSecret, sealWebhookSecret } from '../../server/platforms/webhook-secret.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const BIN = fileURLToPath(new URL('../../bin/pressroom.mjs', import.meta.url));
const KEYS = `1:${randomBytes(32).toString('base64')}`;
const SECRET = `li-secret-${randomBytes(12).toString('hex')}`;
let server: TestServer;

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; json: any }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: path.join(tmpdir(), 'pressroom-cli-test-nowhere'), DATABASE_URL: server.db.ownerUrl, CREDENTIALS_KEYS: KEYS, ...env };
  for (const k of ['APP_DATABASE_URL', 'EMBEDDED_PG_PORT', 'LOG_LEVEL', 'LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET']) if (!(k in env)) delete childEnv[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, json });
    });
  });
}

beforeAll(async () => {
  server = await startTestServer('platform_app_cli', { CREDENTIALS_KEYS: KEYS });
});
afterAll(async () => {
  await server?.close();
});

describe('pressroom platform-app', { timeout: 60_000 }, () => {
  it('set stores the client id and the encrypted secret, prints neither secret nor ciphertext, and the server offers the platform', async () => {
    const api = client(server);
    const owner = await signup(api);
    const platforms = async () => (await api.get(`/v1/workspaces/${owner.workspaceId}/platforms`, { token: owner.token })).body.data.find((p: any) => p.platform === 'linkedin');
    expect((await platforms()).connectable).toBe(false);

    const set = await cli(['platform-app', 'set', 'linkedin', '--client-id', 'li-client-1', '--client-secret-env', 'LI_SECRET'], { LI_SECRET: SECRET });
    expect(set.code, set.stdout).toBe(0);
    expect(set.json).toMatchObject({ connector: 'linkedin', clientId: 'li-client-1', hasSecret: true });
    expect(set.stdout).not.toContain(SECRET);
    const { rows } = await server.owner.query(`select id, secret_ciphertext, source, instance from app.platform_apps where connector = 'linkedin'`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ source: 'admin', instance: '' });
    expect(rows[0].secret_ciphertext.toString('latin1')).not.toContain(SECRET);
    const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
    expect(vault.decrypt(`platform-app:${rows[0].id}`, rows[0].secret_ciphertext)).toBe(SECRET);

    const list = await cli(['platform-app', 'list']);
    expect(list.code).toBe(0);
    expect(list.json).toEqual([expect.objectContaining({ connector: 'linkedin', clientId: 'li-client-1', hasSecret: true, source: 'admin', instance: null })]);
    expect(list.stdout).not.toContain(SECRET);

    expect((await platforms()).connectable).toBe(true);
    const start = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations/connect`, { platform: 'linkedin' }, { token: owner.token });
    expect(start.status).toBe(201);
    expect(new URL(start.body.data.authorizeUrl).searchParams.get('client_id')).toBe('li-client-1');

    const removed = await cli(['platform-app', 'remove', 'linkedin']);
    expect(removed.json).toEqual({ connector: 'linkedin', removed: true });
    expect((await platforms()).connectable).toBe(false);
  });

  it('credentials rotate re-encrypts what an older key made under the current key, so the old key can be dropped', async () => {
    // An app secret and an integration's credential made with key version 1.
    const set = await cli(['platform-app', 'set', 'x', '--client-id', 'x-client', '--client-secret-env', 'XS'], { XS: SECRET });
    expect(set.code, set.stdout).toBe(0);
    const api = client(server);
    const owner = await signup(api);
    const ig = (await server.owner.query(
      `insert into app.integrations (organization_id, workspace_id, connector, platform, name, account_id) values ($1, $2, 'x', 'x', 'X', '42') returning id`,
      [owner.organizationId, owner.workspaceId],
    )).rows[0].id;
    const v1 = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
    const cred = { accessToken: 'at-rotate-me', refreshToken: 'rt-rotate-me', expiresAt: null, scopes: [], extra: {} };
    await server.owner.query('select app.credentials_store($1, $2)', [ig, JSON.stringify({ ciphertext: v1.encryptJson(`integration:${ig}`, cred).toString('base64'), keyVersion: 1, expiresAt: null, refreshExpiresAt: null, refreshable: true, hasRefreshToken: true })]);

    // Webhook channels: one secret sealed with version 1, one stored in the clear (from before sealing).
    const hook = async (name: string, stored: string) => (await server.owner.query(
      `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret) values ($1, $2, 'webhook', 'x', $3, 'https://93.184.215.14/h', $4) returning id`,
      [owner.organizationId, owner.workspaceId, name, stored],
    )).rows[0].id as string;
    const hookSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const sealedHook = await hook('Sealed', sealWebhookSecret(v1, hookSecret));
    const clearHook = await hook('In the clear', hookSecret);

    const key2 = randomBytes(32).toString('base64');
    const both = `${KEYS},2:${key2}`;
    const r = await cli(['credentials', 'rotate'], { CREDENTIALS_KEYS: both });
    expect(r.code, r.stdout).toBe(0);
    expect(r.json).toEqual({ currentVersion: 2, credentials: 1, apps: 1, webhookSecrets: 2 });
    expect(r.stdout).not.toMatch(/rotate-me|li-secret/);
    expect(r.stdout).not.toContain(hookSecret);
    // Only version 2 is needed now: the old key can go.
    const v2 = new CredentialVault(new Map([[2, Buffer.from(key2, 'base64')]]), 'env');
    const row = (await server.owner.query('select ciphertext, key_version from app.integration_credentials where integration_id = $1', [ig])).rows[0];
    expect(row.key_version).toBe(2);
    expect(v2.decryptJson(`integration:${ig}`, row.ciphertext)).toEqual(cred);
    const app = (await server.owner.query(`select id, secret_ciphertext from app.platform_apps where connector = 'x'`)).rows[0];
    expect(v2.decrypt(`platform-app:${app.id}`, app.secret_ciphertext)).toBe(SECRET);
    for (const id of [sealedHook, clearHook]) {
      const stored = (await server.owner.query('select webhook_secret from app.integrations where id = $1', [id])).rows[0].webhook_secret as string;
      expect(stored).toMatch(/^prv1:/);
      expect(openWebhookSecret(v2, stored)).toBe(hookSecret);
    }
    // Nothing left below version 2: a second run rewrites nothing.
    expect((await cli(['credentials', 'rotate'], { CREDENTIALS_KEYS: both })).json).toEqual({ currentVersion: 2, credentials: 0, apps: 0, webhookSecrets: 0 });
    await cli(['platform-app', 'remove', 'x']);
    await server.owner.query('delete from app.integrations where id = any($1)', [[ig, sealedHook, clearHook]]);
  });

  it('refuses a connector without an operator app, an unset secret variable, and a missing subcommand', async () => {
    const mastodon = await cli(['platform-app', 'set', 'mastodon', '--client-id', 'x']);
    expect(mastodon.code).toBe(1);
    expect(mastodon.json.error.code).toBe('INVALID_INPUT');
    const unset = await cli(['platform-app', 'set', 'x', '--client-id', 'x', '--client-secret-env', 'NOT_SET_ANYWHERE']);
    expect(unset.code).toBe(1);
    expect(unset.json.error.code).toBe('INVALID_INPUT');
    expect((await cli(['platform-app'])).code).toBe(2);
    expect((await server.owner.query('select count(*)::int as n from app.platform_apps')).rows[0].n).toBe(0);
  });
});
