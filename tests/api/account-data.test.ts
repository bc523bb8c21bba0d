// A connected account's data beyond publishing, over real HTTP against the local fakes of
// Mastodon and X (tests/support/fakes/mastodon.ts, x.ts): one token store
// (app.integration_credentials) serves the inbox's replies (server/jobs/inbox.ts, with the
// real pg-boss worker) and the metrics sync (server/jobs/analytics.ts), a token the platform
// refuses is refreshed once; and the account's own limits (a Mastodon instance's
// /api/v2/instance, read at connect and reconnect: app.connection_save, app.integration_limits)
// rule the content checks (POST {ws}/content/check, scheduling) over the platform's defaults.
//
// Mastodon has no inbound hooks here, so an inbound comment is written into app.inbox_events
// as a delivery's normalization would have (the superuser), then folded by the real fold.
import { randomBytes } from 'node:crypto';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMetricsSync } from '../../server/jobs/analytics.ts';
import { foldInbox, registerInboxJobs } from '../../server/jobs/inbox.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import type { Schema } from '../../server/http/types.ts';
import type { IntegrationCredentials } from '../../server/platforms/types.ts';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { startFakeMastodon, type FakeMastodon } from '../support/fakes/mastodon.ts';
import { startFakeX, type FakeX } from '../support/fakes/x.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const KEYS = `1:${randomBytes(32).toString('base64')}`;
const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
let server: TestServer;
let api: ReturnType<typeof client>;
let mastodon: FakeMastodon;
let xfake: FakeX;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let n = 0;

beforeAll(async () => {
  mastodon = await startFakeMastodon({ maxCharacters: 1000 });
  xfake = await startFakeX();
  server = await startTestServer('account_data', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    X_API_BASE_URL: xfake.url,
    X_CLIENT_ID: xfake.clientId,
    X_CLIENT_SECRET: xfake.clientSecret,
    CREDENTIALS_KEYS: KEYS,
    PUBLISH_TIMEOUT_MS: 3000,
  });
  api = client(server);
  owner = await signup(api);
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerInboxJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 60_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
  await mastodon?.close();
  await xfake?.close();
});

const ws = () => `/v1/workspaces/${owner.workspaceId}`;

/** The browser through the platform's consent page (it redirects at once) to our callback; answers the integration id. */
async function throughConsent(authorizeUrl: string): Promise<string> {
  const toCallback = (await fetch(authorizeUrl, { redirect: 'manual' })).headers.get('location')!;
  const back = new URL((await fetch(toCallback, { redirect: 'manual' })).headers.get('location')!);
  const id = back.searchParams.get('integration');
  expect(id, back.toString()).toBeTruthy();
  return id!;
}

async function connectMastodon(signedIn: string): Promise<string> {
  mastodon.signedIn = signedIn;
  const start = await api.post(`${ws()}/integrations/connect`, { platform: 'mastodon', instanceUrl: mastodon.url }, { token: owner.token });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  return throughConsent(start.body.data.authorizeUrl);
}

async function reconnect(id: string): Promise<void> {
  const start = await api.post(`${ws()}/integrations/${id}/reconnect`, {}, { token: owner.token });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  expect(await throughConsent(start.body.data.authorizeUrl)).toBe(id);
}

async function connectX(): Promise<{ id: string; userId: string }> {
  const user = xfake.addUser({ username: `acct${++n}${Date.now() % 100000}`, name: `Account ${n}` });
  user.followers = 4321;
  xfake.consent.userId = user.id;
  const start = await api.post(`${ws()}/integrations/connect`, { platform: 'x' }, { token: owner.token });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  return { id: await throughConsent(start.body.data.authorizeUrl), userId: user.id };
}

async function sandbox(platform: string): Promise<string> {
  const r = await api.post(`${ws()}/integrations`, { connector: 'sandbox', platform, name: `sandbox ${platform} ${++n}` }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id;
}

async function stored(id: string): Promise<IntegrationCredentials> {
  const { rows } = await server.owner.query('select ciphertext from app.integration_credentials where integration_id = $1', [id]);
  return vault.decryptJson<IntegrationCredentials>(`integration:${id}`, rows[0].ciphertext);
}

const refreshCalls = () => xfake.callsTo('POST', '/2/oauth2/token').filter((c) => c.body.grant_type === 'refresh_token');

/** An inbound comment on the account's post, as a delivery's normalization writes it, folded by the real fold. */
async function inbound(integrationId: string, post: string, message: string, author: { id: string; name: string }, text: string): Promise<{ threadId: string; messageId: string }> {
  await server.owner.query(
    `insert into app.inbox_events (organization_id, workspace_id, integration_id, event_id, type, thread_kind, thread_key, message_key, parent_key, author, body, occurred_at)
     values ($1, $2, $3, $4, 'message.created', 'comment', $5, $6, $5, $7, $8, now())`,
    [owner.organizationId, owner.workspaceId, integrationId, `created:${message}`, post, message, JSON.stringify(author), text],
  );
  await foldInbox(server.deps, integrationId);
  const threads = (await api.get(`${ws()}/inbox/threads?integrationId=${integrationId}&limit=100`, { token: owner.token })).body.data as Schema<'InboxThread'>[];
  const t = threads.find((x) => x.platformThreadId === post);
  expect(t, `thread ${post}`).toBeTruthy();
  const msgs = (await api.get(`${ws()}/inbox/threads/${t!.id}/messages?limit=100`, { token: owner.token })).body.data as Schema<'InboxMessage'>[];
  const m = msgs.find((x) => x.platformMessageId === message);
  expect(m, `message ${message}`).toBeTruthy();
  return { threadId: t!.id, messageId: m!.id };
}

async function reply(threadId: string, text: string, inReplyToId: string) {
  const r = await api.post(`${ws()}/inbox/threads/${threadId}/replies`, { text, inReplyToId }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  for (let i = 0; i < 150; i++) {
    const m = ((await api.get(`${ws()}/inbox/threads/${threadId}/messages?limit=100`, { token: owner.token })).body.data as Schema<'InboxMessage'>[]).find((x) => x.id === r.body.data.id);
    if (m?.delivery && m.delivery.state !== 'pending') return { ...m, delivery: m.delivery };
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('the reply did not settle');
}

/** An edition of the integration as the publishing engine leaves it: sent, with the platform's post id. */
async function sent(integrationId: string, platformPostId: string): Promise<string> {
  const c = server.owner;
  await c.query('begin');
  try {
    await c.query('set local session_replication_role = replica');
    const root = await c.query(`insert into app.content_roots (organization_id, workspace_id, caption) values ($1, $2, 'A post') returning id`, [owner.organizationId, owner.workspaceId]);
    const item = await c.query(
      `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, sent_at, platform_post_id)
       values ($1, $2, $3, $4, 'sent', now() - interval '2 hours', $5) returning id`,
      [owner.organizationId, owner.workspaceId, root.rows[0].id, integrationId, platformPostId],
    );
    await c.query('commit');
    return item.rows[0].id;
  } catch (e) {
    await c.query('rollback');
    throw e;
  }
}

describe('one token store: the inbox answers as the connected account', () => {
  it('a reply on a connected Mastodon account goes to its instance with the stored token', async () => {
    const alice = mastodon.alice;
    const id = await connectMastodon(alice.id);
    const token = (await stored(id)).accessToken;
    const bob = mastodon.createAccount({ username: 'bob', domain: 'elsewhere.example' });
    const ours = mastodon.postAs(alice.id, 'Our launch post');
    const comment = mastodon.postAs(bob.id, 'When does it ship?', { inReplyToId: ours.id });
    const { threadId, messageId } = await inbound(id, ours.id, comment.id, { id: bob.id, name: 'bob' }, comment.text);

    const m = await reply(threadId, 'Next week!', messageId);
    expect(m.delivery.state, JSON.stringify(m)).toBe('sent');
    const made = mastodon.statusesOf(alice.id).find((s) => s.inReplyToId === comment.id);
    expect(made, 'the reply is a status of the account in reply to the comment').toBeTruthy();
    expect(made!.text).toBe('@bob@elsewhere.example Next week!');
    expect(m.platformMessageId).toBe(made!.id);
    const post = mastodon.callsTo('POST', '/api/v1/statuses').at(-1)!;
    expect(post.headers.authorization).toBe(`Bearer ${token}`);
    expect(post.headers['idempotency-key']).toMatch(/^inbox-reply:/);
  });

  it('a token the instance refuses: the one refresh finds it revoked, the reply fails with the reconnect reason, the integration is reconnect_required', async () => {
    const carol = mastodon.createAccount({ username: 'carol' });
    const id = await connectMastodon(carol.id);
    const ours = mastodon.postAs(carol.id, 'Carol posts');
    const comment = mastodon.postAs(mastodon.alice.id, 'Hi Carol', { inReplyToId: ours.id });
    const { threadId, messageId } = await inbound(id, ours.id, comment.id, { id: mastodon.alice.id, name: 'alice' }, comment.text);
    mastodon.revokeToken((await stored(id)).accessToken);
    const before = mastodon.statusesOf(carol.id).length;

    const m = await reply(threadId, 'Hello', messageId);
    expect(m.delivery.state).toBe('failed');
    expect(m.delivery.error).toMatch(/must be reconnected/);
    expect(mastodon.statusesOf(carol.id)).toHaveLength(before);
    const detail = (await api.get(`${ws()}/integrations/${id}`, { token: owner.token })).body.data;
    expect(detail.connectionState).toBe('reconnect_required');
  });

  it('a hand-set platform token is refused for a connected account (its own credentials answer), and still taken by a sandbox integration', async () => {
    const { id } = await connectX();
    const put = (integrationId: string) => api.put(`${ws()}/integrations/${integrationId}/inbox-platform-token`, { accessToken: 'x-oauth2-user-token-0123456789abcdef' }, { token: owner.token });
    const refused = await put(id);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'PLATFORM_TOKEN_UNSUPPORTED', details: { connector: 'x' } });
    expect((await put(await sandbox('x'))).status).toBe(200);
  });

  it('an X reply after the access token expired: refreshed once (rotated), then sent with the new token', async () => {
    const { id, userId } = await connectX();
    const ours = xfake.seedTweet(userId, 'Our X post');
    const other = xfake.addUser({ username: `fan${n}`, name: 'Fan' });
    const comment = xfake.seedTweet(other.id, '@us nice', { inReplyTo: ours.id });
    const { threadId, messageId } = await inbound(id, ours.id, comment.id, { id: other.id, name: 'fan' }, 'nice');
    const old = await stored(id);
    xfake.expireAccessToken(old.accessToken);
    const before = refreshCalls().length;

    const m = await reply(threadId, 'Thanks!', messageId);
    expect(m.delivery.state, JSON.stringify(m)).toBe('sent');
    expect(refreshCalls().length).toBe(before + 1);
    const now = await stored(id);
    expect(now.accessToken).not.toBe(old.accessToken);
    expect(now.refreshToken).not.toBe(old.refreshToken);
    const posted = xfake.callsTo('POST', '/2/tweets').at(-1)!;
    expect(posted.headers.authorization).toBe(`Bearer ${now.accessToken}`);
    expect(posted.body).toMatchObject({ text: 'Thanks!', reply: { in_reply_to_tweet_id: comment.id } });
  });
});

describe('one token store: metrics of a connected account', () => {
  it('the sync reads an X post\'s public_metrics and the account\'s followers with the stored token; a 401 refreshes once', async () => {
    const { id, userId } = await connectX();
    const tweet = xfake.seedTweet(userId, 'Measured post');
    Object.assign(tweet.metrics, { like_count: 12, reply_count: 3, retweet_count: 4, quote_count: 1, bookmark_count: 2, impression_count: 900 });
    const contentId = await sent(id, tweet.id);
    const old = await stored(id);
    xfake.expireAccessToken(old.accessToken);
    const before = refreshCalls().length;

    await runMetricsSync(server.deps);
    const postSync = (await server.owner.query('select last_error, last_success_at from app.analytics_post_sync where content_item_id = $1', [contentId])).rows[0];
    expect(postSync.last_error).toBeNull();
    expect(postSync.last_success_at).not.toBeNull();
    expect(refreshCalls().length, 'one refresh for the post and the account together').toBe(before + 1);
    const latest = (await server.owner.query('select impressions, likes, comments, shares, saves from app.post_metrics_latest where content_item_id = $1', [contentId])).rows[0];
    expect(latest).toEqual({ impressions: '900', likes: '12', comments: '3', shares: '5', saves: '2' });
    const followers = (await server.owner.query('select followers from app.integration_metrics_daily where integration_id = $1', [id])).rows;
    expect(followers).toEqual([{ followers: '4321' }]);
    const now = await stored(id);
    expect(now.accessToken).not.toBe(old.accessToken);
    const read = xfake.callsTo('GET', `/2/tweets/${tweet.id}`).at(-1)!;
    expect(read.headers.authorization).toBe(`Bearer ${now.accessToken}`);
  });

  it('a revoked X grant: the sync fails with the reconnect reason and the integration is reconnect_required', async () => {
    const { id, userId } = await connectX();
    const contentId = await sent(id, xfake.seedTweet(userId, 'Revoked soon').id);
    xfake.revokeUser(userId);
    const r = await runMetricsSync(server.deps);
    expect(r.failed).toBeGreaterThanOrEqual(1);
    const postSync = (await server.owner.query('select last_error from app.analytics_post_sync where content_item_id = $1', [contentId])).rows[0];
    expect(postSync.last_error).toMatch(/must be reconnected/);
    const state = (await server.owner.query('select last_error from app.integration_sync_state where integration_id = $1', [id])).rows[0];
    expect(state.last_error).toMatch(/must be reconnected/);
    expect((await api.get(`${ws()}/integrations/${id}`, { token: owner.token })).body.data.connectionState).toBe('reconnect_required');
  });
});

describe("the account's own limits in the content checks", () => {
  const check = (integrationId: string, caption: string) => api.post(`${ws()}/content/check`, { caption, channels: [{ integrationId }] }, { token: owner.token });
  const codes = (r: any) => (r.body.data.channels[0].problems as { field: string; code: string }[]).map((p) => `${p.field}:${p.code}`);

  it('an instance of 1000 characters takes 800 that the platform default (500) refuses; reconnected at 300, 400 are refused', async () => {
    mastodon.options.maxCharacters = 1000;
    const dave = mastodon.createAccount({ username: 'dave' });
    const id = await connectMastodon(dave.id);
    const plain = await sandbox('mastodon');

    const on1000 = await check(id, 'a'.repeat(800));
    expect(on1000.status, JSON.stringify(on1000.body)).toBe(200);
    expect(on1000.body.data.valid, JSON.stringify(on1000.body)).toBe(true);
    const byDefault = await check(plain, 'a'.repeat(800));
    expect(codes(byDefault)).toEqual(['channels.0.caption:caption_too_long']);
    expect(byDefault.body.data.channels[0].problems[0].message).toMatch(/500/);
    // Scheduling holds the same rule (app.assert_publishable).
    const at = new Date(Date.now() + 86_400_000).toISOString();
    const scheduled = await api.post(`${ws()}/content`, { intent: 'schedule', scheduledAt: at, caption: 'b'.repeat(800), channels: [{ integrationId: id }] }, { token: owner.token });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);

    mastodon.options.maxCharacters = 300;
    await reconnect(id);
    const on300 = await check(id, 'a'.repeat(400));
    expect(codes(on300)).toEqual(['channels.0.caption:caption_too_long']);
    expect(on300.body.data.channels[0].problems[0].message).toMatch(/at most 300 characters/);
    expect((await check(plain, 'a'.repeat(400))).body.data.valid, 'the platform default still takes 400').toBe(true);
    const refused = await api.post(`${ws()}/content`, { intent: 'schedule', scheduledAt: at, caption: 'c'.repeat(400), channels: [{ integrationId: id }] }, { token: owner.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    mastodon.options.maxCharacters = 1000;
  });

  it("an X account's limits follow its subscription, read again at a refresh", async () => {
    const { id, userId } = await connectX();
    const limits = async () => (await server.owner.query('select limits from app.integration_limits where integration_id = $1', [id])).rows[0]?.limits;
    expect((await limits())?.captionMaxLength).toBe(280);
    expect(codes(await check(id, 'x'.repeat(1000)))).toEqual(['channels.0.caption:caption_too_long']);
    // The account subscribes; its next refresh (here: a 401 in the metrics sync) reads the limits again.
    xfake.users.get(userId)!.subscriptionType = 'Premium';
    await sent(id, xfake.seedTweet(userId, 'Before premium').id);
    xfake.expireAccessToken((await stored(id)).accessToken);
    await runMetricsSync(server.deps);
    expect((await limits())?.captionMaxLength).toBe(25_000);
    expect((await check(id, 'x'.repeat(1000))).body.data.valid).toBe(true);
  });
});
