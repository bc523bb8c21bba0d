// Connecting accounts over HTTP (server/routes/connections.ts,
// db/migrations/committed/000030-connected-accounts.sql, split 10-connected-accounts.sql), against local fakes of
// Mastodon and X that follow their published OAuth formats
// (tests/support/fakes/mastodon.ts, x.ts). The only simulated step is the
// user's click on the consent page: the test follows the fake's redirect to
// the callback, as the browser would. Every answer is checked against
// openapi.yaml (tests/support/http.ts); no answer, log line or audit row may
// carry a token, a code or a client secret.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CredentialVault } from '../../server/platforms/vault.ts';
import type { IntegrationCredentials } from '../../server/platforms/types.ts';
import { startFakeMastodon, type FakeMastodon } from '../support/fakes/mastodon.ts';
import { startFakeX, type FakeX, type FakeXUser } from '../support/fakes/x.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const KEYS = `1:${randomBytes(32).toString('base64')}`;
let server: TestServer;
let api: ReturnType<typeof client>;
let mastodon: FakeMastodon;
let xfake: FakeX;
let owner: Awaited<ReturnType<typeof signup>>;
let ws: string;
const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
/** Every text the server said: answer bodies, Location headers, log lines. */
const said: string[] = [];
let users: FakeXUser[] = [];

beforeAll(async () => {
  mastodon = await startFakeMastodon();
  xfake = await startFakeX();
  server = await startTestServer('connections', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    X_API_BASE_URL: xfake.url,
    X_CLIENT_ID: xfake.clientId,
    X_CLIENT_SECRET: xfake.clientSecret,
    CREDENTIALS_KEYS: KEYS,
    CORS_ORIGINS: ['https://app.example.com'],
    PUBLISH_TIMEOUT_MS: 3000,
  });
  // Capture what the server logs (its logger is silent in tests): every line, as text.
  const log = server.deps.log as unknown as Record<string, unknown>;
  const capture = (msg: string, fields?: Record<string, unknown>) => void said.push(`${msg} ${JSON.stringify(fields ?? {})}`);
  for (const level of ['debug', 'info', 'warn', 'error']) log[level] = capture;
  log.child = () => log;
  api = client(server);
  owner = await signup(api);
  ws = owner.workspaceId;
  users = [xfake.addUser({ username: 'acme', name: 'Acme' }), xfake.addUser({ username: 'other', name: 'Other' })];
});
afterAll(async () => {
  await server?.close();
  await mastodon?.close();
  await xfake?.close();
});
beforeEach(() => {
  mastodon.consent = 'allow';
  xfake.consent.userId = users[0]!.id;
  xfake.consent.refuse = false;
  xfake.consent.scopes = null;
});

async function post(path: string, body: unknown, token = owner.token) {
  const r = await api.post(`/v1/workspaces/${ws}${path}`, body, { token });
  said.push(JSON.stringify(r.body));
  return r;
}

/** The browser at the platform's consent page: where the platform sends it (our callback). */
async function consent(authorizeUrl: string): Promise<URL> {
  const r = await fetch(authorizeUrl, { redirect: 'manual' });
  expect(r.status).toBe(302);
  return new URL(r.headers.get('location')!);
}

/** The browser at our callback: where it is sent next. */
async function callback(url: URL | string): Promise<URL> {
  const r = await fetch(url, { redirect: 'manual' });
  const location = r.headers.get('location');
  said.push(`${r.status} ${location} ${await r.text()}`);
  expect(r.status).toBe(303);
  expect(r.headers.get('cache-control')).toBe('no-store');
  return new URL(location!);
}

async function connectMastodon(): Promise<URL> {
  const start = await post('/integrations/connect', { platform: 'mastodon', instanceUrl: `${mastodon.url}/some/path` });
  expect(start.status).toBe(201);
  return callback(await consent(start.body.data.authorizeUrl));
}

async function connectX(body: Record<string, unknown> = {}): Promise<{ start: any; back: URL }> {
  const start = await post('/integrations/connect', { platform: 'x', ...body });
  expect(start.status).toBe(201);
  return { start: start.body.data, back: await callback(await consent(start.body.data.authorizeUrl)) };
}

async function storedCredentials(integrationId: string): Promise<IntegrationCredentials> {
  const { rows } = await server.owner.query('select ciphertext from app.integration_credentials where integration_id = $1', [integrationId]);
  return vault.decryptJson<IntegrationCredentials>(`integration:${integrationId}`, rows[0].ciphertext);
}

describe('what can be connected here', () => {
  it('lists each connector and platform, with the reason and the way to configure an operator app', async () => {
    const r = await api.get(`/v1/workspaces/${ws}/platforms`, { token: owner.token });
    expect(r.status).toBe(200);
    const of = (connector: string, platform: string) => r.body.data.find((p: any) => p.connector === connector && p.platform === platform);
    expect(of('x', 'x')).toMatchObject({ connect: 'oauth', connectable: true, reason: null, needsInstanceUrl: false, callbackUrl: `${server.baseUrl}/v1/oauth/callback/x` });
    expect(of('x', 'x').scopes).toContain('offline.access');
    expect(of('linkedin', 'linkedin')).toMatchObject({
      connectable: false,
      reason: { code: 'PLATFORM_APP_NOT_CONFIGURED' },
      configure: { env: ['LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET'] },
    });
    expect(of('mastodon', 'mastodon')).toMatchObject({ connect: 'oauth', connectable: true, needsInstanceUrl: true, configure: null });
    expect(of('bluesky', 'bluesky')).toMatchObject({ connect: 'password', connectable: true, callbackUrl: null });
    expect(of('sandbox', 'pinterest')).toMatchObject({ connect: 'none', connectable: true });
  });

  it('refuses what cannot be connected, each with its code', async () => {
    expect((await post('/integrations/connect', { platform: 'linkedin' })).body.error.code).toBe('PLATFORM_APP_NOT_CONFIGURED');
    expect((await post('/integrations/connect', { platform: 'youtube' })).body.error.code).toBe('PLATFORM_NOT_SUPPORTED');
    // Bluesky connects through AT Protocol OAuth here too (tests/api/bluesky-oauth.test.ts); a handle is for it only.
    expect((await post('/integrations/connect', { platform: 'x', handle: 'alice.bsky.social' })).body.error.code).toBe('VALIDATION_FAILED');
    expect((await post('/integrations/connect', { platform: 'x', connector: 'sandbox' })).body.error.code).toBe('CONNECT_FLOW_NOT_APPLICABLE');
    expect((await post('/integrations/connect', { platform: 'mastodon' })).body.error.code).toBe('INSTANCE_URL_REQUIRED');
    // X is one service: a user-given host would be sent the operator's client secret at the code exchange.
    expect((await post('/integrations/connect', { platform: 'x', instanceUrl: mastodon.url })).body.error.code).toBe('INVALID_INSTANCE_URL');
    expect((await post('/integrations/connect', { platform: 'x', returnTo: 'https://evil.example/steal' })).body.error.code).toBe('INVALID_RETURN_TO');
    const sandbox = await post('/integrations', { connector: 'x', platform: 'x', name: 'X' });
    expect(sandbox.status).toBe(400);
    expect(sandbox.body.error.code).toBe('CONNECT_FLOW_REQUIRED');
    expect((await api.get('/v1/oauth/callback/x', { unchecked: true })).status).toBe(400);
  });
});

describe('Mastodon: the whole flow against the fake instance', () => {
  it('registers the app once, runs PKCE, and connects the signed-in account', async () => {
    const start = await post('/integrations/connect', { platform: 'mastodon', instanceUrl: `${mastodon.url}/about` });
    expect(start.status).toBe(201);
    const s = start.body.data;
    expect(s.state).toMatch(new RegExp(`^${ws}\\.[A-Za-z0-9_-]{43}$`));
    expect(s.redirectUri).toBe(`${server.baseUrl}/v1/oauth/callback/mastodon`);
    expect(Date.parse(s.expiresAt) - Date.now()).toBeGreaterThan(9 * 60_000);
    const authorize = new URL(s.authorizeUrl);
    expect(authorize.origin + authorize.pathname).toBe(`${mastodon.url}/oauth/authorize`);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('state')).toBe(s.state);
    expect([...mastodon.apps.values()].map((a) => a.redirectUris)).toEqual([[s.redirectUri]]);

    const back = await callback(await consent(s.authorizeUrl));
    expect(back.origin + back.pathname).toBe(`${server.baseUrl}/app`);
    const id = back.searchParams.get('integration')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const got = await api.get(`/v1/workspaces/${ws}/integrations/${id}`, { token: owner.token });
    expect(got.body.data).toMatchObject({
      connector: 'mastodon', platform: 'mastodon', accountId: mastodon.alice.id, username: 'alice', instanceUrl: mastodon.url,
      connectionState: 'ok', connectionReason: null,
    });
    // The token the fake issued is the one stored, encrypted, with the instance.
    const creds = await storedCredentials(id);
    expect(mastodon.tokens.get(creds.accessToken)?.accountId).toBe(mastodon.alice.id);
    expect(creds.extra.instanceUrl).toBe(mastodon.url);
    // The code exchange sent the PKCE verifier that matches the challenge.
    const exchange = mastodon.callsTo('POST', '/oauth/token').at(-1)!;
    expect(typeof exchange.body.code_verifier).toBe('string');

    // A second connection to the instance reuses the app (and this account is connected already).
    const again = await connectMastodon();
    expect(again.searchParams.get('error')).toBe('account_already_connected');
    expect(mastodon.callsTo('POST', '/api/v1/apps')).toHaveLength(1);
  });

  it('a refused consent comes back as error=access_denied, and nothing is connected', async () => {
    const before = (await server.owner.query('select count(*)::int as n from app.integrations')).rows[0].n;
    mastodon.consent = 'deny';
    const back = await connectMastodon();
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('integration')).toBeNull();
    expect((await server.owner.query('select count(*)::int as n from app.integrations')).rows[0].n).toBe(before);
  });
});

describe('the state', () => {
  it('is taken once: the same callback again is state_used', async () => {
    const start = await post('/integrations/connect', { platform: 'x' });
    xfake.consent.userId = xfake.addUser({ username: `once${Date.now()}` }).id;
    const to = await consent(start.body.data.authorizeUrl);
    expect((await callback(to)).searchParams.get('integration')).toBeTruthy();
    const replay = await callback(to);
    expect(replay.searchParams.get('error')).toBe('state_used');
    expect(replay.searchParams.get('integration')).toBeNull();
  });

  it('expires: a callback after expiresAt is state_expired', async () => {
    const start = await post('/integrations/connect', { platform: 'x' });
    const to = await consent(start.body.data.authorizeUrl);
    await server.owner.query(`update app.oauth_states set expires_at = now() - interval '1 second' where workspace_id = $1 and consumed_at is null`, [ws]);
    expect((await callback(to)).searchParams.get('error')).toBe('state_expired');
  });

  it('is bound to its workspace: the same random part under another workspace is unknown, and leaves the real one usable', async () => {
    const other = await signup(api);
    const start = await post('/integrations/connect', { platform: 'x' });
    xfake.consent.userId = xfake.addUser({ username: `bound${Date.now()}` }).id;
    const to = await consent(start.body.data.authorizeUrl);
    const forged = new URL(to);
    forged.searchParams.set('state', start.body.data.state.replace(ws, other.workspaceId));
    expect((await callback(forged)).searchParams.get('error')).toBe('state_unknown');
    expect((await callback(to)).searchParams.get('integration')).toBeTruthy();
    const garbage = new URL(to);
    garbage.searchParams.set('state', 'not-a-state');
    expect((await callback(garbage)).searchParams.get('error')).toBe('state_unknown');
  });

  it('is bound to its platform: a callback on another platform path is unknown', async () => {
    const start = await post('/integrations/connect', { platform: 'x' });
    const to = await consent(start.body.data.authorizeUrl);
    const elsewhere = new URL(to);
    elsewhere.pathname = '/v1/oauth/callback/mastodon';
    expect((await callback(elsewhere)).searchParams.get('error')).toBe('state_unknown');
  });
});

describe('X: scopes, reconnect, roles', () => {
  it('a grant missing a required scope is refused (missing_scope) and connects nothing', async () => {
    xfake.consent.scopes = ['tweet.read', 'users.read'];
    const { back } = await connectX();
    expect(back.searchParams.get('error')).toBe('missing_scope');
    expect(back.searchParams.get('error_description')).toMatch(/tweet\.write/);
  });

  it('connects an X account with its rotating refresh token, and goes back to an allowed returnTo', async () => {
    const { start, back } = await connectX({ returnTo: 'https://app.example.com/channels?tab=x' });
    expect(new URL(start.authorizeUrl).pathname).toBe('/i/oauth2/authorize');
    expect(back.origin + back.pathname).toBe('https://app.example.com/channels');
    expect(back.searchParams.get('tab')).toBe('x');
    const id = back.searchParams.get('integration')!;
    const got = await api.get(`/v1/workspaces/${ws}/integrations/${id}`, { token: owner.token });
    expect(got.body.data).toMatchObject({ connector: 'x', accountId: users[0]!.id, username: 'acme', connectionState: 'ok', credentialsExpireAt: null });
    const creds = await storedCredentials(id);
    expect(creds.refreshToken).toMatch(/^xrt-/);
    expect(Date.parse(creds.expiresAt!) - Date.now()).toBeGreaterThan(3600_000);
    const row = (await server.owner.query('select has_refresh_token, refreshable, next_refresh_at < expires_at as early from app.integration_credentials where integration_id = $1', [id])).rows[0];
    expect(row).toEqual({ has_refresh_token: true, refreshable: true, early: true });
  });

  it('reconnects the same account with new tokens, refuses another account, and brings a reconnect_required integration back', async () => {
    const list = await api.get(`/v1/workspaces/${ws}/integrations`, { token: owner.token });
    const id = list.body.data.find((i: any) => i.connector === 'x' && i.accountId === users[0]!.id).id;
    const before = await storedCredentials(id);

    // The platform refused the grant: the worker marks it (app.integration_reconnect_required).
    await server.owner.query(`select app.integration_reconnect_required($1, 'X refused the refresh token (invalid_request)')`, [id]);
    const broken = await api.get(`/v1/workspaces/${ws}/integrations/${id}`, { token: owner.token });
    expect(broken.body.data).toMatchObject({ connectionState: 'reconnect_required', connectionReason: 'X refused the refresh token (invalid_request)' });

    xfake.consent.userId = users[1]!.id;
    const wrong = await post(`/integrations/${id}/reconnect`, {});
    expect(wrong.status).toBe(201);
    expect(wrong.body.data.integrationId).toBe(id);
    const refused = await callback(await consent(wrong.body.data.authorizeUrl));
    expect(refused.searchParams.get('error')).toBe('reconnect_account_mismatch');
    expect((await storedCredentials(id)).accessToken).toBe(before.accessToken);

    xfake.consent.userId = users[0]!.id;
    const again = await post(`/integrations/${id}/reconnect`, {});
    const back = await callback(await consent(again.body.data.authorizeUrl));
    expect(back.searchParams.get('integration')).toBe(id);
    const after = await storedCredentials(id);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).toMatch(/^xrt-/);
    const fixed = await api.get(`/v1/workspaces/${ws}/integrations/${id}`, { token: owner.token });
    expect(fixed.body.data).toMatchObject({ connectionState: 'ok', connectionReason: null });
  });

  it('keeps the stored refresh token when a reconnect brings none', async () => {
    const list = await api.get(`/v1/workspaces/${ws}/integrations`, { token: owner.token });
    const id = list.body.data.find((i: any) => i.connector === 'x' && i.accountId === users[0]!.id).id;
    const before = await storedCredentials(id);
    expect(before.refreshToken).toMatch(/^xrt-/);
    // The token endpoint answers this once with an access token and no refresh token.
    const issued = xfake.issueTokens(users[0]!.id, ['tweet.read', 'tweet.write', 'users.read', 'media.write']);
    xfake.inject({ method: 'POST', path: '/2/oauth2/token' }, {
      type: 'status', status: 200,
      body: { token_type: 'bearer', expires_in: 7200, access_token: issued.accessToken, scope: 'tweet.read tweet.write users.read media.write offline.access' },
    });
    const start = await post(`/integrations/${id}/reconnect`, {});
    expect((await callback(await consent(start.body.data.authorizeUrl))).searchParams.get('integration')).toBe(id);
    const after = await storedCredentials(id);
    expect(after.accessToken).toBe(issued.accessToken);
    expect(after.refreshToken).toBe(before.refreshToken);
  });

  it('needs the manager role to start or reconnect; an editor may still see the platforms', async () => {
    const editor = await createKey(api, owner.token, ws, { role: 'editor' });
    const r = await post('/integrations/connect', { platform: 'x' }, editor.key);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('ROLE_REQUIRED');
    const list = await api.get(`/v1/workspaces/${ws}/integrations`, { token: owner.token });
    const id = list.body.data.find((i: any) => i.connector === 'x').id;
    expect((await post(`/integrations/${id}/reconnect`, {}, editor.key)).status).toBe(403);
    expect((await api.get(`/v1/workspaces/${ws}/platforms`, { token: editor.key })).status).toBe(200);
    const sandbox = await post('/integrations', { connector: 'sandbox', platform: 'x', name: 'S' });
    expect((await post(`/integrations/${sandbox.body.data.id}/reconnect`, {})).body.error.code).toBe('RECONNECT_NOT_APPLICABLE');
  });

  it('the callback is audited as the user who started it', async () => {
    const { rows } = await server.owner.query(
      `select actor_kind, actor_id, workspace_id, status, error_code from audit.api_calls where route = '/v1/oauth/callback/{platform}' and actor_id is not null order by occurred_at desc limit 1`,
    );
    expect(rows[0]).toMatchObject({ actor_kind: 'user', actor_id: owner.userId, workspace_id: ws, status: 303 });
  });
});

describe('a consent that covers several accounts', () => {
  it('is shown without credentials, and the chosen accounts become integrations with their own', async () => {
    // What the callback keeps for a LinkedIn consent (api.oauth_complete with several accounts):
    // one ciphertext per account, bound to the integration it will become.
    const accounts = ['urn:li:person:7', 'urn:li:organization:8', 'urn:li:organization:9'].map((id, i) => ({
      integrationId: crypto.randomUUID(), accountId: id, username: null, name: `Page ${i}`, kind: i === 0 ? 'person' : 'organization', avatarUrl: null, profileUrl: null,
    }));
    const creds = accounts.map((a) => vault.encryptJson(`integration:${a.integrationId}`, { accessToken: `li-token-${a.accountId}`, refreshToken: null, expiresAt: null, scopes: [], extra: {} }));
    const meta = accounts.map(() => ({ keyVersion: 1, expiresAt: new Date(Date.now() + 5 * 86400_000).toISOString(), refreshExpiresAt: null, refreshable: false, hasRefreshToken: false }));
    const { rows } = await server.owner.query(
      `insert into app.pending_connections (workspace_id, organization_id, user_id, connector, platform, accounts, credentials, credential_meta, expires_at)
       values ($1, $2, $3, 'linkedin', 'linkedin', $4, $5, $6, now() + interval '30 minutes') returning id`,
      [ws, owner.organizationId, owner.userId, JSON.stringify(accounts), creds, JSON.stringify(meta)],
    );
    const pid = rows[0].id;
    const editor = await createKey(api, owner.token, ws, { role: 'editor' });
    expect((await api.get(`/v1/workspaces/${ws}/pending-connections/${pid}`, { token: editor.key })).status).toBe(403);
    const shown = await api.get(`/v1/workspaces/${ws}/pending-connections/${pid}`, { token: owner.token });
    expect(shown.status).toBe(200);
    expect(shown.body.data.accounts.map((a: any) => [a.accountId, a.kind, a.integrationId])).toEqual([
      ['urn:li:person:7', 'person', null], ['urn:li:organization:8', 'organization', null], ['urn:li:organization:9', 'organization', null],
    ]);
    expect(JSON.stringify(shown.body)).not.toMatch(/li-token|ciphertext/);
    expect((await post(`/pending-connections/${pid}/choose`, { accountIds: ['urn:li:organization:99'] })).body.error.code).toBe('UNKNOWN_ACCOUNT');
    const chosen = await post(`/pending-connections/${pid}/choose`, { accountIds: ['urn:li:organization:9'] });
    expect(chosen.status).toBe(201);
    expect(chosen.body.data).toHaveLength(1);
    expect(chosen.body.data[0]).toMatchObject({ id: accounts[2]!.integrationId, connector: 'linkedin', accountId: 'urn:li:organization:9', name: 'Page 2', connectionState: 'expiring' });
    // A token that cannot be refreshed and ends in 5 days: its end is the hard expiry shown.
    expect(Date.parse(chosen.body.data[0].credentialsExpireAt) - Date.now()).toBeGreaterThan(4 * 86400_000);
    expect((await storedCredentials(accounts[2]!.integrationId)).accessToken).toBe('li-token-urn:li:organization:9');
    expect((await api.get(`/v1/workspaces/${ws}/pending-connections/${pid}`, { token: owner.token })).status).toBe(404);
  });
});

describe('the private-network guard and the failed-credential limit', () => {
  it('refuses an instance on a private address, or over plain http, unless WEBHOOK_ALLOW_PRIVATE_NETWORKS; throttles state guessing', async () => {
    const strict = await startTestServer('connections_strict', { CREDENTIALS_KEYS: KEYS, AUTH_FAILURE_LIMIT: 3, AUTH_FAILURE_AUDIT: 1 });
    try {
      const a = client(strict);
      const o = await signup(a);
      const connect = (instanceUrl: string) => a.post(`/v1/workspaces/${o.workspaceId}/integrations/connect`, { platform: 'mastodon', instanceUrl }, { token: o.token });
      const r = await connect(mastodon.url.replace('http:', 'https:'));
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
      // And plain http for a user-given host: platform calls go over https only.
      expect((await connect('http://mastodon.example')).body.error.code).toBe('INVALID_INSTANCE_URL');
      expect(mastodon.callsTo('POST', '/api/v1/apps')).toHaveLength(1);

      // Guessing states is a failed credential of the address: past AUTH_FAILURE_LIMIT, 429.
      const guess = () => fetch(`${strict.baseUrl}/v1/oauth/callback/x?code=c&state=${o.workspaceId}.${randomBytes(32).toString('base64url')}`, { redirect: 'manual' });
      for (let i = 0; i < 3; i++) {
        const r = await guess();
        expect(r.status).toBe(303);
        expect(new URL(r.headers.get('location')!).searchParams.get('error')).toBe('state_unknown');
      }
      const throttled = await guess();
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await throttled.json()) as { error: { code: string } }).error.code).toBe('AUTH_THROTTLED');
      // Only the first refusal of the minute has an audit row of its own (AUTH_FAILURE_AUDIT=1).
      const rows = (await strict.owner.query(`select count(*)::int as n from audit.api_calls where route = '/v1/oauth/callback/{platform}'`)).rows[0].n;
      expect(rows).toBe(1);
    } finally {
      await strict.close();
    }
  });
});

describe('secrets', () => {
  it('no answer, redirect, log line or audit row carries a token, a code, a verifier or a client secret', async () => {
    const secrets = new Set<string>([xfake.clientSecret]);
    for (const t of mastodon.tokens.keys()) secrets.add(t);
    for (const a of mastodon.apps.values()) secrets.add(a.clientSecret);
    for (const c of mastodon.callsTo('POST', '/oauth/token')) {
      if (typeof c.body.code === 'string') secrets.add(c.body.code);
      if (typeof c.body.code_verifier === 'string') secrets.add(c.body.code_verifier);
    }
    for (const c of xfake.callsTo('POST', '/2/oauth2/token')) {
      for (const k of ['code', 'code_verifier', 'refresh_token']) if (typeof c.body[k] === 'string') secrets.add(c.body[k] as string);
    }
    for (const c of xfake.callsTo('GET', '/2/users/me')) secrets.add(String(c.headers.authorization).replace(/^Bearer /, ''));
    const { rows: creds } = await server.owner.query('select integration_id from app.integration_credentials');
    for (const r of creds) {
      const c = await storedCredentials(r.integration_id);
      secrets.add(c.accessToken);
      if (c.refreshToken) secrets.add(c.refreshToken);
    }
    expect(secrets.size).toBeGreaterThan(10);
    const audit = (await server.owner.query('select * from audit.api_calls')).rows.map((r) => JSON.stringify(r));
    const events = (await server.owner.query('select data::text as d from app.webhook_events')).rows.map((r) => r.d);
    const haystack = [...said, ...audit, ...events].join('\n');
    expect(said.length).toBeGreaterThan(20);
    expect([...secrets].filter((s) => haystack.includes(s))).toEqual([]);
    // And nothing shaped like one of the fakes' tokens.
    expect(haystack).not.toMatch(/xat-|xrt-|xcode-/);
  });
});
