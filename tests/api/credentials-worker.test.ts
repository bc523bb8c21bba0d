// The worker's side of connected accounts (server/platforms/credentials.ts,
// server/jobs/publish.ts, server/jobs/credentials.ts) against the local fake of
// X (tests/support/fakes/x.ts, rotating refresh tokens: a spent one is
// refused): the publish worker calls X with the account's stored token,
// refreshes it ahead of expiry and once on a 401 under the row lock, marks a
// revoked grant reconnect_required and fails that integration's editions at
// once; an outage only retries; two refreshes at once spend the token once.
import { PgBoss } from 'pg-boss';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerPublishJobs } from '../../server/jobs/publish.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { createLogger } from '../../server/log.ts';
import { createCredentialService, credentialPayload } from '../../server/platforms/credentials.ts';
import type { IntegrationCredentials } from '../../server/platforms/types.ts';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { startFakeX, type FakeX } from '../support/fakes/x.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const KEYS = `1:${randomBytes(32).toString('base64')}`;
const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
let server: TestServer;
let api: ReturnType<typeof client>;
let xfake: FakeX;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let n = 0;

beforeAll(async () => {
  xfake = await startFakeX();
  server = await startTestServer('credentials_worker', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    X_API_BASE_URL: xfake.url,
    X_CLIENT_ID: xfake.clientId,
    X_CLIENT_SECRET: xfake.clientSecret,
    CREDENTIALS_KEYS: KEYS,
    PUBLISH_TIMEOUT_MS: 3000,
    PUBLISH_RETRY_BASE_MS: 50,
    PUBLISH_MAX_ATTEMPTS: 2,
  });
  api = client(server);
  owner = await signup(api);
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 4, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerPublishJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 60_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
  await xfake?.close();
});

const service = () => createCredentialService({ pool: server.pool, config: server.config, log: createLogger('silent') });
const base = () => `/v1/workspaces/${owner.workspaceId}`;

/** Connects a fresh X user through the real flow (the browser's consent simulated by following the fake's redirect). */
async function connectX(): Promise<{ id: string; userId: string }> {
  const user = xfake.addUser({ username: `acct${++n}${Date.now() % 100000}`, name: `Account ${n}` });
  xfake.consent.userId = user.id;
  const start = await api.post(`${base()}/integrations/connect`, { platform: 'x' }, { token: owner.token });
  expect(start.status).toBe(201);
  const toCallback = (await fetch(start.body.data.authorizeUrl, { redirect: 'manual' })).headers.get('location')!;
  const back = new URL((await fetch(toCallback, { redirect: 'manual' })).headers.get('location')!);
  const id = back.searchParams.get('integration');
  expect(id, back.toString()).toBeTruthy();
  return { id: id!, userId: user.id };
}

async function stored(id: string): Promise<IntegrationCredentials> {
  const { rows } = await server.owner.query('select ciphertext from app.integration_credentials where integration_id = $1', [id]);
  return vault.decryptJson<IntegrationCredentials>(`integration:${id}`, rows[0].ciphertext);
}

/** Stores a changed credential as the worker would (app.credentials_store). */
async function restore(id: string, change: Partial<IntegrationCredentials>) {
  const next = { ...(await stored(id)), ...change };
  await server.owner.query('select app.credentials_store($1, $2)', [id, JSON.stringify(credentialPayload(vault, id, next, true))]);
}

async function publishNow(integrationId: string, caption: string): Promise<string> {
  const r = await api.post(`${base()}/content`, { intent: 'publish_now', caption, channels: [{ integrationId }] }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.editions[0].id;
}

async function settled(id: string) {
  const until = Date.now() + 20_000;
  for (;;) {
    const p = (await server.owner.query(`select app.publishing_json($1) as p`, [id])).rows[0].p;
    if (['published', 'failed', 'awaiting_confirmation'].includes(p.state)) return (await api.get(`${base()}/content/${id}`, { token: owner.token })).body.data;
    if (Date.now() > until) throw new Error(`timed out: ${JSON.stringify(p)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const refreshCalls = () => xfake.callsTo('POST', '/2/oauth2/token').filter((c) => c.body.grant_type === 'refresh_token');
const connection = async (id: string) => (await api.get(`${base()}/integrations/${id}`, { token: owner.token })).body.data;

describe('publishing with a connected account', () => {
  it('publishes with the stored token, and no refresh while it is valid', async () => {
    const { id, userId } = await connectX();
    const before = refreshCalls().length;
    const c = await settled(await publishNow(id, 'Hello X from the worker'));
    expect(c.status).toBe('sent');
    expect(xfake.postsBy(userId).map((t) => t.text)).toEqual(['Hello X from the worker']);
    expect(c.platformPostId).toBe(xfake.postsBy(userId)[0]!.id);
    expect(refreshCalls().length).toBe(before);
  });

  it('refreshes a token about to expire before the call, and stores the rotated refresh token', async () => {
    const { id, userId } = await connectX();
    const old = await stored(id);
    await restore(id, { expiresAt: new Date(Date.now() + 20_000).toISOString() });
    const before = refreshCalls().length;
    expect((await settled(await publishNow(id, 'After a refresh'))).status).toBe('sent');
    expect(refreshCalls().length).toBe(before + 1);
    const now = await stored(id);
    expect(now.refreshToken).not.toBe(old.refreshToken);
    expect(now.accessToken).not.toBe(old.accessToken);
    expect(Date.parse(now.expiresAt!) - Date.now()).toBeGreaterThan(3600_000);
    expect(xfake.postsBy(userId)).toHaveLength(1);
  });

  it('refreshes once on a 401 and sends again', async () => {
    const { id, userId } = await connectX();
    const old = await stored(id);
    xfake.expireAccessToken(old.accessToken);
    const before = refreshCalls().length;
    const c = await settled(await publishNow(id, 'After a 401'));
    expect(c.status).toBe('sent');
    expect(refreshCalls().length).toBe(before + 1);
    expect((await stored(id)).accessToken).not.toBe(old.accessToken);
    expect(xfake.postsBy(userId)).toHaveLength(1);
  });

  it('a revoked grant makes the integration reconnect_required; its editions fail with the reason, at once', async () => {
    const { id, userId } = await connectX();
    xfake.revokeUser(userId);
    const first = await settled(await publishNow(id, 'Revoked'));
    expect(first.status).toBe('failed');
    expect(first.error).toMatch(/reconnect/i);
    expect(await connection(id)).toMatchObject({ connectionState: 'reconnect_required' });
    expect((await connection(id)).connectionReason).toMatch(/refresh token/i);
    const tweets = xfake.callsTo('POST', '/2/tweets').length;
    const refreshes = refreshCalls().length;
    const second = await settled(await publishNow(id, 'Still revoked'));
    expect(second.status).toBe('failed');
    expect(second.error).toMatch(/must be reconnected/);
    // Failed fast: X was not called at all.
    expect(xfake.callsTo('POST', '/2/tweets').length).toBe(tweets);
    expect(refreshCalls().length).toBe(refreshes);
  });
});

describe('the refresh job and the lock', () => {
  it('refreshes what is due; an outage counts a failure (refresh_failing) and never disconnects', async () => {
    const { id } = await connectX();
    const due = () => server.owner.query(`update app.integration_credentials set next_refresh_at = now() - interval '1 second' where integration_id = $1`, [id]);
    await due();
    xfake.inject({ method: 'POST', path: '/2/oauth2/token' }, { type: 'status', status: 503, body: { title: 'Service Unavailable', detail: 'Over capacity', status: 503 } });
    expect(await service().refreshDue(50)).toMatchObject({ retry: 1 });
    const failing = await connection(id);
    expect(failing).toMatchObject({ connectionState: 'refresh_failing' });
    expect(failing.connectionReason).toMatch(/503/);
    const row = (await server.owner.query('select refresh_failures, next_refresh_at > now() as later from app.integration_credentials where integration_id = $1', [id])).rows[0];
    expect(row).toEqual({ refresh_failures: 1, later: true });
    // Nothing due now: the backoff holds it.
    expect(await service().refreshDue(50)).toEqual({});
    await due();
    const old = await stored(id);
    expect(await service().refreshDue(50)).toMatchObject({ ok: 1 });
    expect((await stored(id)).refreshToken).not.toBe(old.refreshToken);
    expect(await connection(id)).toMatchObject({ connectionState: 'ok', connectionReason: null });
  });

  it('two refreshes at once spend the refresh token once; the second uses the first one\'s tokens', async () => {
    const { id } = await connectX();
    const seen = (await server.owner.query(`select encode(ciphertext, 'base64') as c from app.integration_credentials where integration_id = $1`, [id])).rows[0].c;
    const before = refreshCalls().length;
    const s = service();
    const [a, b] = await Promise.all([s.refresh(id, { force: true, seen }), s.refresh(id, { force: true, seen })]);
    expect(a.state).toBe('ok');
    expect(b.state).toBe('ok');
    expect(refreshCalls().length).toBe(before + 1);
    if (a.state === 'ok' && b.state === 'ok') expect(a.credentials.refreshToken).toBe(b.credentials.refreshToken);
    // The grant is alive: the stored refresh token works.
    expect((await s.refresh(id, { force: true })).state).toBe('ok');
    expect(await connection(id)).toMatchObject({ connectionState: 'ok' });
  });
});
