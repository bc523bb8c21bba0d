// The inbox's replies and moderation through the platforms' own APIs (an
// integration with a platform token: PUT .../inbox-platform-token), over real
// HTTP with the real pg-boss worker, against local fakes of the Graph API and
// X API v2 that follow their published formats (tests/support/fake-platforms.ts).
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldInbox, registerInboxJobs } from '../../server/jobs/inbox.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { startFakePlatforms, type FakePlatforms } from '../support/fake-platforms.ts';
import { client, createKey, signup } from '../support/http.ts';
import { deliver, hookIntegration, metaDelivery, xDelivery } from '../support/inbox.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let fake: FakePlatforms;
let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let editor: string;
const META_TOKEN = 'EAAG-page-token-0123456789abcdef';
const X_TOKEN = 'x-oauth2-user-token-0123456789abcdef';

beforeAll(async () => {
  fake = await startFakePlatforms();
  fake.tokens.meta.add(META_TOKEN);
  fake.tokens.x.add(X_TOKEN);
  server = await startTestServer('inbox-platforms', { META_GRAPH_BASE_URL: fake.metaBaseUrl, X_API_BASE_URL: fake.url });
  api = client(server);
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerInboxJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
  owner = await signup(api);
  editor = (await createKey(api, owner.token, owner.workspaceId, { role: 'editor' })).key;
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
  await fake?.close();
});

const ws = () => `/v1/workspaces/${owner.workspaceId}`;
const t0 = Math.floor(Date.now() / 1000) - 600;
const setToken = (integrationId: string, accessToken: string, token = owner.token) =>
  api.put(`${ws()}/integrations/${integrationId}/inbox-platform-token`, { accessToken }, { token });

async function feed(source: string, integrationId: string, d: ReturnType<typeof metaDelivery>) {
  const r = await deliver(server, source, integrationId, d);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await foldInbox(server.deps, integrationId);
}
async function threadOf(platformThreadId: string) {
  const list = await api.get(`${ws()}/inbox/threads?search=${encodeURIComponent(platformThreadId)}&limit=100`, { token: owner.token });
  const t = list.body.data.find((x: any) => x.platformThreadId === platformThreadId);
  expect(t, `thread ${platformThreadId}`).toBeTruthy();
  return t;
}
const messages = async (threadId: string) => (await api.get(`${ws()}/inbox/threads/${threadId}/messages?limit=100`, { token: owner.token })).body.data as any[];
async function settled(threadId: string, messageId: string) {
  for (let i = 0; i < 150; i++) {
    const m = (await messages(threadId)).find((x) => x.id === messageId);
    if (m && m.moderationPending === null && (m.direction !== 'outbound' || m.delivery.state !== 'pending')) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`message ${messageId} did not settle`);
}
async function reply(threadId: string, text: string, inReplyToId?: string) {
  const r = await api.post(`${ws()}/inbox/threads/${threadId}/replies`, inReplyToId ? { text, inReplyToId } : { text }, { token: editor });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return settled(threadId, r.body.data.id);
}
async function moderate(threadId: string, messageId: string, action: string) {
  const r = await api.post(`${ws()}/inbox/threads/${threadId}/messages/${messageId}/moderation`, { action }, { token: editor });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return settled(threadId, messageId);
}
const lastCall = () => fake.calls[fake.calls.length - 1];

const fbComment = (post: string, id: string, text: string) =>
  metaDelivery({ object: 'page', entry: [{ id: '1', time: t0, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: id, post_id: post, parent_id: post, from: { id: 'u1', name: 'Ada' }, message: text, created_time: t0 } }] }] });
const fbMessage = (psid: string, mid: string, text: string) =>
  metaDelivery({ object: 'page', entry: [{ id: '1', time: t0, messaging: [{ sender: { id: psid }, recipient: { id: '1' }, timestamp: t0 * 1000, message: { mid, text } }] }] });
const igComment = (media: string, id: string, text: string) =>
  metaDelivery({ object: 'instagram', entry: [{ id: '17841400000', time: t0, changes: [{ field: 'comments', value: { id, text, from: { id: 'ig-u1', username: 'ada' }, media: { id: media, media_product_type: 'FEED' } } }] }] });
const xReply = (id: string, parent: string, text: string) =>
  xDelivery({ for_user_id: '99', tweet_create_events: [{ id_str: id, text, created_at: 'Wed Oct 10 20:19:24 +0000 2018', timestamp_ms: String(t0 * 1000), in_reply_to_status_id_str: parent, user: { id_str: '6253282', screen_name: 'ada', name: 'Ada' } }] });
const xDm = (id: string, sender: string, text: string) =>
  xDelivery({ for_user_id: '99', direct_message_events: [{ type: 'message_create', id, created_timestamp: String(t0 * 1000), message_create: { sender_id: sender, target: { recipient_id: '99' }, message_data: { text } } }] });

describe('the platform token', () => {
  it('is set by managers only, for facebook, instagram and x; stored encrypted; removed with DELETE', async () => {
    const fb = await hookIntegration(api, owner, 'facebook', 'facebook', 'token rules');
    expect((await setToken(fb, META_TOKEN, editor)).status).toBe(403);
    const ok = await setToken(fb, META_TOKEN);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data).toMatchObject({ integrationId: fb, platform: 'facebook' });
    const stored = await server.owner.query(`select token_ciphertext from app.inbox_platform_tokens where integration_id = $1`, [fb]);
    expect(stored.rows).toHaveLength(1);
    expect(Buffer.from(stored.rows[0].token_ciphertext).includes(Buffer.from(META_TOKEN))).toBe(false);
    const short = await setToken(fb, 'short');
    expect(short.status).toBe(400);
    expect(short.body.error.code).toBe('VALIDATION_FAILED');
    const li = await hookIntegration(api, owner, 'linkedin', 'sandbox', 'not a platform token');
    const refused = await setToken(li, META_TOKEN);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'PLATFORM_TOKEN_UNSUPPORTED', details: { platform: 'linkedin' } });
    expect((await api.delete(`${ws()}/integrations/${fb}/inbox-platform-token`, { token: editor })).status).toBe(403);
    expect((await api.delete(`${ws()}/integrations/${fb}/inbox-platform-token`, { token: owner.token })).status).toBe(204);
    expect((await api.delete(`${ws()}/integrations/${fb}/inbox-platform-token`, { token: owner.token })).status).toBe(404);
    const other = await signup(api);
    expect((await api.put(`/v1/workspaces/${other.workspaceId}/integrations/${fb}/inbox-platform-token`, { accessToken: META_TOKEN }, { token: other.token })).status).toBe(404);
  });
});

describe('facebook through the Graph API', () => {
  it('replies to a comment and a Messenger conversation, hides, unhides and deletes a comment', async () => {
    const fb = await hookIntegration(api, owner, 'facebook', 'facebook', 'graph');
    expect((await setToken(fb, META_TOKEN)).status).toBe(200);
    await feed('facebook', fb, fbComment('1_g1', '1_g1_c1', 'question?'));
    const t = await threadOf('1_g1');
    const [comment] = await messages(t.id);
    const sent = await reply(t.id, 'Thanks!', comment.id);
    expect(sent.delivery).toMatchObject({ state: 'sent', error: null });
    expect(lastCall()).toMatchObject({ api: 'meta', method: 'POST', path: '/v21.0/1_g1_c1/comments', body: { message: 'Thanks!', access_token: META_TOKEN } });
    expect(sent.platformMessageId).toMatch(/^1_g1_c1_fake/);

    const top = await reply(t.id, 'To everyone');
    expect(top.delivery.state).toBe('sent');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v21.0/1_g1/comments', body: { message: 'To everyone' } });

    expect((await moderate(t.id, comment.id, 'hide')).moderation).toBe('hidden');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v21.0/1_g1_c1', body: { is_hidden: 'true', access_token: META_TOKEN } });
    expect((await moderate(t.id, comment.id, 'unhide')).moderation).toBe('visible');
    expect(lastCall()).toMatchObject({ body: { is_hidden: 'false' } });
    expect((await moderate(t.id, comment.id, 'delete')).moderation).toBe('deleted');
    expect(lastCall()).toMatchObject({ method: 'DELETE', path: '/v21.0/1_g1_c1', query: { access_token: META_TOKEN } });

    await feed('facebook', fb, fbMessage('psid-g1', 'mid-g1', 'hello in private'));
    const dm = await threadOf('psid-g1');
    const dmReply = await reply(dm.id, 'Hello back');
    expect(dmReply.delivery.state).toBe('sent');
    expect(lastCall()).toMatchObject({
      method: 'POST',
      path: '/v21.0/me/messages',
      query: { access_token: META_TOKEN },
      body: { recipient: { id: 'psid-g1' }, messaging_type: 'RESPONSE', message: { text: 'Hello back' } },
    });
    expect(dmReply.platformMessageId).toMatch(/^m_fake/);
  });

  it('a refused token fails the reply with the platform\'s reason; a 503 fails it for a retry, which then sends it', async () => {
    const fb = await hookIntegration(api, owner, 'facebook', 'facebook', 'graph failures');
    expect((await setToken(fb, 'EAAG-revoked-token-0000000000')).status).toBe(200);
    await feed('facebook', fb, fbComment('1_g2', '1_g2_c1', 'anyone?'));
    const t = await threadOf('1_g2');
    const failed = await reply(t.id, 'Will not go');
    expect(failed.delivery.state).toBe('failed');
    expect(failed.delivery.error).toContain('Invalid OAuth access token');

    expect((await setToken(fb, META_TOKEN)).status).toBe(200);
    fake.failNext(503, { error: { message: 'Service temporarily unavailable', type: 'OAuthException', code: 2, fbtrace_id: 'Afake' } });
    const r = await api.post(`${ws()}/inbox/threads/${t.id}/replies`, { text: 'Second try' }, { token: editor });
    const unavailable = await settled(t.id, r.body.data.id);
    expect(unavailable.delivery).toMatchObject({ state: 'failed' });
    expect(unavailable.delivery.error).toContain('503');
    const retry = await api.post(`${ws()}/inbox/threads/${t.id}/messages/${r.body.data.id}/retry`, undefined, { token: editor });
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    const after = await settled(t.id, r.body.data.id);
    expect(after.delivery).toMatchObject({ state: 'sent', attempts: 2 });
  });
});

describe('instagram through the Graph API', () => {
  it('replies to a comment (/replies) and to the media (/comments), hides with hide=true', async () => {
    const ig = await hookIntegration(api, owner, 'instagram', 'instagram', 'ig graph');
    expect((await setToken(ig, META_TOKEN)).status).toBe(200);
    await feed('instagram', ig, igComment('media-g1', '17890000000000001', 'nice'));
    const t = await threadOf('media-g1');
    const [comment] = await messages(t.id);
    expect((await reply(t.id, 'Thank you', comment.id)).delivery.state).toBe('sent');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v21.0/17890000000000001/replies', body: { message: 'Thank you', access_token: META_TOKEN } });
    expect((await reply(t.id, 'Hi all')).delivery.state).toBe('sent');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v21.0/media-g1/comments', body: { message: 'Hi all' } });
    expect((await moderate(t.id, comment.id, 'hide')).moderation).toBe('hidden');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v21.0/17890000000000001', body: { hide: 'true' } });
  });
});

describe('x through X API v2', () => {
  it('replies to a post and in a DM conversation, hides and unhides a reply; a refused token fails with X\'s reason', async () => {
    const xi = await hookIntegration(api, owner, 'x', 'x', 'x api');
    expect((await setToken(xi, X_TOKEN)).status).toBe(200);
    await feed('x', xi, xReply('1850000000000000001', '1840000000000000000', '@brand hello'));
    const t = await threadOf('1840000000000000000');
    const [tweet] = await messages(t.id);
    const sent = await reply(t.id, 'Hello to you', tweet.id);
    expect(sent.delivery.state).toBe('sent');
    const call = lastCall();
    expect(call).toMatchObject({ api: 'x', method: 'POST', path: '/2/tweets', body: { text: 'Hello to you', reply: { in_reply_to_tweet_id: '1850000000000000001' } } });
    expect(call.headers.authorization).toBe(`Bearer ${X_TOKEN}`);
    expect(sent.platformMessageId).toMatch(/^19\d+$/);

    expect((await moderate(t.id, tweet.id, 'hide')).moderation).toBe('hidden');
    expect(lastCall()).toMatchObject({ method: 'PUT', path: '/2/tweets/1850000000000000001/hidden', body: { hidden: true } });
    expect((await moderate(t.id, tweet.id, 'unhide')).moderation).toBe('visible');
    expect(lastCall()).toMatchObject({ body: { hidden: false } });

    await feed('x', xi, xDm('dm-g1', '4242', 'a private question'));
    const dm = await threadOf('4242');
    const dmReply = await reply(dm.id, 'A private answer');
    expect(dmReply.delivery.state).toBe('sent');
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/2/dm_conversations/with/4242/messages', body: { text: 'A private answer' } });
    expect(dmReply.platformMessageId).toMatch(/^dm-event-/);

    expect((await setToken(xi, 'x-revoked-token-000000000000')).status).toBe(200);
    const refused = await reply(t.id, 'Not with this token');
    expect(refused.delivery.state).toBe('failed');
    expect(refused.delivery.error).toBe('The platform answered 401: Unauthorized');
  });

  it('an integration without a token replies through its connector, never the platform', async () => {
    const xi = await hookIntegration(api, owner, 'x', 'x', 'x sandbox');
    await feed('x', xi, xReply('1850000000000000009', '1840000000000000009', 'sandboxed'));
    const t = await threadOf('1840000000000000009');
    const before = fake.calls.length;
    const sent = await reply(t.id, 'From the sandbox');
    expect(sent.delivery.state).toBe('sent');
    expect(sent.platformMessageId).toMatch(/^sb-reply-/);
    expect(fake.calls.length).toBe(before);
  });
});
