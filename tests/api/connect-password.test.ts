// App-password connections over HTTP (POST {ws}/integrations/connect-password,
// server/routes/connections.ts, api.connect_with_password) against the real
// Bluesky PDS software (@atproto/pds, tests/support/pds.ts) on this machine:
// the sign-in is a real createSession, the account read from the PDS, the
// session's tokens stored encrypted and never answered.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationCredentials } from '../../server/platforms/types.ts';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startPds, type PdsAccount, type TestPds } from '../support/pds.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const KEYS = `1:${randomBytes(32).toString('base64')}`;
const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
let pds: TestPds;
let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let alice: PdsAccount;
let bob: PdsAccount;

beforeAll(async () => {
  pds = await startPds({ appViewUrl: null });
  server = await startTestServer('connect_password', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, CREDENTIALS_KEYS: KEYS, PUBLISH_TIMEOUT_MS: 5000 });
  api = client(server);
  owner = await signup(api);
  alice = await pds.createAccount(`al${randomBytes(3).toString('hex')}`);
  bob = await pds.createAccount(`bo${randomBytes(3).toString('hex')}`);
}, 120_000);
afterAll(async () => {
  await server?.close();
  await pds?.stop();
});

const connect = (body: Record<string, unknown>, token = owner.token) =>
  api.post(`/v1/workspaces/${owner.workspaceId}/integrations/connect-password`, { platform: 'bluesky', serviceUrl: pds.url, ...body }, { token });

describe('Bluesky with an app password', () => {
  it('signs in on the PDS, connects the account and keeps the session encrypted; the app password is not stored', async () => {
    const r = await connect({ identifier: alice.handle, appPassword: alice.appPassword });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ connector: 'bluesky', platform: 'bluesky', accountId: alice.did, username: alice.handle, instanceUrl: new URL(pds.url).origin, connectionState: 'ok' });
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(alice.appPassword);
    const { rows } = await server.owner.query('select ciphertext, has_refresh_token from app.integration_credentials where integration_id = $1', [r.body.data.id]);
    expect(rows[0].has_refresh_token).toBe(true);
    const creds = vault.decryptJson<IntegrationCredentials>(`integration:${r.body.data.id}`, rows[0].ciphertext);
    expect(creds.accessToken.split('.')).toHaveLength(3);
    expect(text).not.toContain(creds.accessToken);
    expect(JSON.stringify(creds)).not.toContain(alice.appPassword);
    // The stored session works on the PDS.
    expect((await pds.xrpc('GET', 'com.atproto.server.getSession', { token: creds.accessToken })).json.did).toBe(alice.did);
  });

  it('refuses a wrong app password and the account\'s own password, naming neither', async () => {
    const wrong = await connect({ identifier: bob.handle, appPassword: 'abcd-efgh-ijkl-mnop' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('SIGN_IN_FAILED');
    expect(JSON.stringify(wrong.body)).not.toContain('abcd-efgh-ijkl-mnop');
    const own = await connect({ identifier: bob.handle, appPassword: bob.password });
    expect(own.status).toBe(400);
    expect(own.body.error.code).toBe('SIGN_IN_FAILED');
    expect(own.body.error.message).toMatch(/app password/i);
    expect(JSON.stringify(own.body)).not.toContain(bob.password);
  });

  it('reconnects the same account only, and refuses a second integration of it', async () => {
    const first = (await api.get(`/v1/workspaces/${owner.workspaceId}/integrations`, { token: owner.token })).body.data.find((i: any) => i.accountId === alice.did);
    const again = await connect({ identifier: alice.handle, appPassword: alice.appPassword });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('ACCOUNT_ALREADY_CONNECTED');
    const re = await connect({ identifier: alice.handle, appPassword: alice.appPassword, integrationId: first.id });
    expect(re.status).toBe(201);
    expect(re.body.data.id).toBe(first.id);
    const other = await connect({ identifier: bob.handle, appPassword: bob.appPassword, integrationId: first.id });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('RECONNECT_ACCOUNT_MISMATCH');
  });

  it('needs the manager role, and a password connector', async () => {
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    const r = await connect({ identifier: bob.handle, appPassword: bob.appPassword }, editor.key);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('ROLE_REQUIRED');
    const x = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations/connect-password`, { platform: 'x', identifier: 'a', appPassword: 'b' }, { token: owner.token });
    expect(x.body.error.code).toBe('CONNECT_FLOW_NOT_APPLICABLE');
  });
});
