// The inbox routes over real HTTP, fed by signed deliveries, with the real
// pg-boss worker sending replies and moderation through the sandbox and
// webhook connectors: lists, filters and cursors, read state per member,
// assign and archive, replies (rules, idempotency, failure and retry),
// notes, moderation, roles and workspace isolation.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldInbox, registerInboxJobs } from '../../server/jobs/inbox.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { verifyWebhookSignature } from '../../server/platforms/webhook.ts';
import { client, createKey, signup } from '../support/http.ts';
import { deliver, hookIntegration, metaDelivery, sandboxDelivery, xDelivery } from '../support/inbox.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let viewer: string;
let editor: string;
let fb: string;
let xi: string;

// A local receiver for the webhook connector: records what it got, answers as told.
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let receiverStatus = 200;
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    received.push({ headers: req.headers, body });
    res.writeHead(receiverStatus, { 'content-type': 'application/json' });
    res.end(JSON.stringify(receiverStatus < 300 ? { platformMessageId: `wh-${received.length}` } : { error: 'nope' }));
  });
});
let receiverUrl: string;

beforeAll(async () => {
  server = await startTestServer('inbox', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerInboxJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
  owner = await signup(api);
  viewer = (await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' })).key;
  editor = (await createKey(api, owner.token, owner.workspaceId, { role: 'editor' })).key;
  fb = await hookIntegration(api, owner, 'facebook', 'facebook');
  xi = await hookIntegration(api, owner, 'x', 'x');
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  receiver.close();
  await server?.close();
});

const base = () => `/v1/workspaces/${owner.workspaceId}/inbox`;
const t0 = Math.floor(Date.now() / 1000) - 3600;
const fbComment = (post: string, id: string, user: string, text: string, at = t0) =>
  metaDelivery({ object: 'page', entry: [{ id: '1', time: at, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: id, post_id: post, parent_id: post, from: { id: user, name: `Name ${user}` }, message: text, created_time: at } }] }] });
const fbMessage = (psid: string, mid: string, text: string, atMs: number) =>
  metaDelivery({ object: 'page', entry: [{ id: '1', time: Math.floor(atMs / 1000), messaging: [{ sender: { id: psid }, recipient: { id: '1' }, timestamp: atMs, message: { mid, text } }] }] });

async function feed(source: string, integrationId: string, d: ReturnType<typeof metaDelivery>) {
  const r = await deliver(server, source, integrationId, d);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await foldInbox(server.deps, integrationId);
}

async function threadOf(platformThreadId: string, token = owner.token) {
  const list = await api.get(`${base()}/threads?search=${encodeURIComponent(platformThreadId)}&limit=100`, { token });
  expect(list.status).toBe(200);
  const t = list.body.data.find((x: any) => x.platformThreadId === platformThreadId);
  expect(t, `thread ${platformThreadId}`).toBeTruthy();
  return t;
}

async function messages(threadId: string, token = owner.token) {
  const r = await api.get(`${base()}/threads/${threadId}/messages?limit=100`, { token });
  expect(r.status).toBe(200);
  return r.body.data as any[];
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 15000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('threads', () => {
  it('lists newest first with filters and a signed cursor; gets one; 404 in another workspace', async () => {
    for (let i = 0; i < 5; i++) await feed('facebook', fb, fbComment(`1_p${i}`, `1_p${i}_c`, 'u1', `post ${i} comment`, t0 + i));
    await feed('facebook', fb, fbMessage('psid-1', 'mid-1', 'hello in private', (t0 + 10) * 1000));
    const all = await api.get(`${base()}/threads?integrationId=${fb}&limit=2`, { token: viewer });
    expect(all.status).toBe(200);
    expect(all.body.data.map((t: any) => t.platformThreadId)).toEqual(['psid-1', '1_p4']);
    expect(all.body.meta.hasMore).toBe(true);
    const seen: string[] = all.body.data.map((t: any) => t.platformThreadId);
    let cursor = all.body.meta.nextCursor;
    while (cursor) {
      const next = await api.get(`${base()}/threads?integrationId=${fb}&limit=2&cursor=${encodeURIComponent(cursor)}`, { token: viewer });
      seen.push(...next.body.data.map((t: any) => t.platformThreadId));
      cursor = next.body.meta.nextCursor;
    }
    expect(seen).toEqual(['psid-1', '1_p4', '1_p3', '1_p2', '1_p1', '1_p0']);
    // The cursor is bound to its filters.
    const other = await api.get(`${base()}/threads?integrationId=${fb}&kind=comment&cursor=${encodeURIComponent(all.body.meta.nextCursor)}`, { token: viewer });
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('INVALID_CURSOR');

    const comments = await api.get(`${base()}/threads?kind=comment&platform=facebook`, { token: viewer });
    expect(comments.body.data.every((t: any) => t.kind === 'comment' && t.platform === 'facebook')).toBe(true);
    const dm = (await api.get(`${base()}/threads?kind=message`, { token: viewer })).body.data[0];
    expect(dm).toMatchObject({ kind: 'message', platformThreadId: 'psid-1', post: null, unreadCount: 1, status: 'open', assigneeId: null });
    const one = await api.get(`${base()}/threads/${dm.id}`, { token: viewer });
    expect(one.body.data.id).toBe(dm.id);
    const search = await api.get(`${base()}/threads?search=PRIVATE`, { token: viewer });
    expect(search.body.data.map((t: any) => t.id)).toEqual([dm.id]);
    expect((await api.get(`${base()}/threads?limit=0`, { token: viewer })).status).toBe(400);

    const stranger = await signup(api);
    const cross = await api.get(`/v1/workspaces/${stranger.workspaceId}/inbox/threads/${dm.id}`, { token: stranger.token });
    expect(cross.status).toBe(404);
    expect((await api.get(`/v1/workspaces/${stranger.workspaceId}/inbox/threads`, { token: stranger.token })).body.data).toEqual([]);
  });

  it('read state is per member: read and unread for one principal leave the other\'s counts alone', async () => {
    await feed('facebook', fb, fbComment('1_rs', '1_rs_c1', 'u7', 'first', t0 + 20));
    await feed('facebook', fb, fbComment('1_rs', '1_rs_c2', 'u8', 'second', t0 + 21));
    const t = await threadOf('1_rs');
    expect(t.unreadCount).toBe(2);
    const read = await api.post(`${base()}/threads/${t.id}/read`, undefined, { token: viewer });
    expect(read.status).toBe(200);
    expect(read.body.data.unreadCount).toBe(0);
    expect((await threadOf('1_rs', viewer)).unreadCount).toBe(0);
    expect((await threadOf('1_rs', owner.token)).unreadCount).toBe(2);
    expect((await api.get(`${base()}/threads?unread=false&search=1_rs`, { token: viewer })).body.data.map((x: any) => x.id)).toEqual([t.id]);
    expect((await api.get(`${base()}/threads?unread=true&search=1_rs`, { token: viewer })).body.data).toEqual([]);
    // A new message is unread again for the viewer only.
    await feed('facebook', fb, fbComment('1_rs', '1_rs_c3', 'u7', 'third', t0 + 22));
    expect((await threadOf('1_rs', viewer)).unreadCount).toBe(1);
    expect((await threadOf('1_rs', owner.token)).unreadCount).toBe(3);
    const unread = await api.post(`${base()}/threads/${t.id}/read`, undefined, { token: viewer });
    expect(unread.body.data.unreadCount).toBe(0);
    expect((await api.post(`${base()}/threads/${t.id}/unread`, undefined, { token: viewer })).body.data.unreadCount).toBe(1);
    const counts = await api.get(`${base()}/unread-counts`, { token: viewer });
    expect(counts.status).toBe(200);
    expect(counts.body.data.byIntegration[fb]).toBe(counts.body.data.messages);
    expect(counts.body.data.byKind.comment).toBeGreaterThanOrEqual(1);
  });

  it('assigns to a member, refuses a non-member, archives and reopens on a new inbound message; viewers cannot change threads', async () => {
    await feed('facebook', fb, fbComment('1_as', '1_as_c1', 'u9', 'assign me', t0 + 30));
    const t = await threadOf('1_as');
    const assigned = await api.patch(`${base()}/threads/${t.id}`, { assigneeId: owner.userId }, { token: editor });
    expect(assigned.status).toBe(200);
    expect(assigned.body.data.assigneeId).toBe(owner.userId);
    expect((await api.get(`${base()}/threads?assigneeId=${owner.userId}`, { token: viewer })).body.data.map((x: any) => x.id)).toContain(t.id);
    expect((await api.get(`${base()}/threads?unassigned=true`, { token: viewer })).body.data.map((x: any) => x.id)).not.toContain(t.id);
    const stranger = await signup(api);
    const bad = await api.patch(`${base()}/threads/${t.id}`, { assigneeId: stranger.userId }, { token: editor });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('ASSIGNEE_NOT_MEMBER');
    expect((await api.patch(`${base()}/threads/${t.id}`, { status: 'archived' }, { token: viewer })).status).toBe(403);
    expect((await api.patch(`${base()}/threads/${t.id}`, {}, { token: editor })).status).toBe(400);
    const archived = await api.patch(`${base()}/threads/${t.id}`, { status: 'archived', assigneeId: null }, { token: editor });
    expect(archived.body.data).toMatchObject({ status: 'archived', assigneeId: null });
    expect((await api.get(`${base()}/threads?status=archived`, { token: viewer })).body.data.map((x: any) => x.id)).toEqual([t.id]);
    await feed('facebook', fb, fbComment('1_as', '1_as_c2', 'u9', 'hello again', Math.floor(Date.now() / 1000) + 5));
    expect((await api.get(`${base()}/threads/${t.id}`, { token: viewer })).body.data.status).toBe('open');
  });
});

describe('replies, notes, moderation', () => {
  it('replies through the sandbox connector (202, then sent by the job); Idempotency-Key replays; viewers may not reply', async () => {
    await feed('facebook', fb, fbComment('1_re', '1_re_c1', 'u10', 'question?', t0 + 40));
    const t = await threadOf('1_re');
    const [first] = await messages(t.id);
    const path = `${base()}/threads/${t.id}/replies`;
    expect((await api.post(path, { text: 'hi' }, { token: viewer })).status).toBe(403);
    const r = await api.post(path, { text: 'Thanks!', inReplyToId: first.id }, { token: editor, headers: { 'Idempotency-Key': 'reply-1' } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.data).toMatchObject({ direction: 'outbound', text: 'Thanks!', inReplyToId: first.id, delivery: { state: 'pending', error: null }, author: { kind: 'api_key' } });
    const replay = await api.post(path, { text: 'Thanks!', inReplyToId: first.id }, { token: editor, headers: { 'Idempotency-Key': 'reply-1' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.id).toBe(r.body.data.id);
    const sent = await until(() => messages(t.id), (ms) => ms.find((m) => m.id === r.body.data.id)?.delivery.state === 'sent');
    const mine = sent.find((m) => m.id === r.body.data.id);
    expect(mine.delivery).toEqual({ state: 'sent', error: null, attempts: 1 });
    expect(mine.platformMessageId).toMatch(/^sb-reply-/);
    expect((await api.post(path, { text: '' }, { token: editor })).status).toBe(400);
  });

  it('a failed reply keeps its reason and is retried; retrying a sent one is 409', async () => {
    const failing = await hookIntegration(api, owner, 'facebook', 'facebook', 'failing');
    await server.owner.query(`update app.integrations set settings = '{"behavior":"fail"}' where id = $1`, [failing]);
    await feed('facebook', failing, fbComment('1_fl', '1_fl_c1', 'u11', 'hello', t0 + 50));
    const t = await threadOf('1_fl');
    const r = await api.post(`${base()}/threads/${t.id}/replies`, { text: 'will fail' }, { token: editor });
    expect(r.status).toBe(202);
    const failed = (await until(() => messages(t.id), (ms) => ms.some((m) => m.delivery?.state === 'failed'))).find((m) => m.id === r.body.data.id);
    expect(failed.delivery).toMatchObject({ state: 'failed', attempts: 1 });
    expect(failed.delivery.error).toMatch(/behavior: fail/);
    await server.owner.query(`update app.integrations set settings = '{"behavior":"succeed"}' where id = $1`, [failing]);
    const retry = await api.post(`${base()}/threads/${t.id}/messages/${r.body.data.id}/retry`, undefined, { token: editor });
    expect(retry.status).toBe(202);
    expect(retry.body.data.delivery.state).toBe('pending');
    const ok = (await until(() => messages(t.id), (ms) => ms.some((m) => m.delivery?.state === 'sent'))).find((m) => m.id === r.body.data.id);
    expect(ok.delivery).toMatchObject({ state: 'sent', attempts: 2, error: null });
    const again = await api.post(`${base()}/threads/${t.id}/messages/${r.body.data.id}/retry`, undefined, { token: editor });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('NOT_RETRYABLE');
  });

  it('refuses what the platform forbids with the reason: a Messenger reply after 24 hours, replying to a note', async () => {
    await feed('facebook', fb, fbMessage('psid-old', 'mid-old', 'old question', Date.now() - 30 * 3600 * 1000));
    const t = await threadOf('psid-old');
    const r = await api.post(`${base()}/threads/${t.id}/replies`, { text: 'too late' }, { token: editor });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('REPLY_NOT_ALLOWED');
    expect(r.body.error.details).toMatchObject({ reason: 'reply_window', windowHours: 24 });
    const note = await api.post(`${base()}/threads/${t.id}/notes`, { text: 'customer called us instead' }, { token: editor });
    expect(note.status).toBe(201);
    expect(note.body.data).toMatchObject({ direction: 'note', delivery: null, platformMessageId: null });
    expect((await api.post(`${base()}/threads/${t.id}/notes`, { text: 'x' }, { token: viewer })).status).toBe(403);
    await feed('facebook', fb, fbComment('1_nt', '1_nt_c1', 'u12', 'hi', t0 + 60));
    const c = await threadOf('1_nt');
    const n2 = await api.post(`${base()}/threads/${c.id}/notes`, { text: 'internal' }, { token: editor });
    const toNote = await api.post(`${base()}/threads/${c.id}/replies`, { text: 'reply to note', inReplyToId: n2.body.data.id }, { token: editor });
    expect(toNote.status).toBe(400);
    expect(toNote.body.error.details.reason).toBe('parent_not_on_platform');
    // Notes count in no message total and are never sent.
    expect((await api.get(`${base()}/threads/${c.id}`, { token: viewer })).body.data.messageCount).toBe(1);
  });

  it('moderates where the platform allows it, through the job; refuses elsewhere with the reason', async () => {
    await feed('facebook', fb, fbComment('1_md', '1_md_c1', 'u13', 'rude words', t0 + 70));
    const t = await threadOf('1_md');
    const [m] = await messages(t.id);
    const path = `${base()}/threads/${t.id}/messages/${m.id}/moderation`;
    expect((await api.post(path, { action: 'hide' }, { token: viewer })).status).toBe(403);
    const hide = await api.post(path, { action: 'hide' }, { token: editor });
    expect(hide.status).toBe(202);
    expect(hide.body.data).toMatchObject({ moderation: 'visible', moderationPending: 'hide' });
    const busy = await api.post(path, { action: 'delete' }, { token: editor });
    expect([202, 409]).toContain(busy.status);
    const done = await until(() => messages(t.id), (ms) => ms[0].moderationPending === null);
    expect(done[0].moderation).toBe(busy.status === 409 ? 'hidden' : 'deleted');

    // X direct messages cannot be moderated; X replies cannot be deleted.
    await feed('x', xi, xDelivery({ for_user_id: '99', direct_message_events: [{ type: 'message_create', id: 'dm-1', created_timestamp: String(Date.now()), message_create: { sender_id: '42', target: { recipient_id: '99' }, message_data: { text: 'hi there' } } }] }));
    const dm = await threadOf('42');
    const [dmMessage] = await messages(dm.id);
    const refused = await api.post(`${base()}/threads/${dm.id}/messages/${dmMessage.id}/moderation`, { action: 'hide' }, { token: editor });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('MODERATION_NOT_ALLOWED');
    await feed('x', xi, xDelivery({ for_user_id: '99', tweet_create_events: [{ id_str: '777', text: '@acme meh', timestamp_ms: String(Date.now()), in_reply_to_status_id_str: '700', user: { id_str: '43', screen_name: 'meh' } }] }));
    const tw = await threadOf('700');
    const [reply] = await messages(tw.id);
    const del = await api.post(`${base()}/threads/${tw.id}/messages/${reply.id}/moderation`, { action: 'delete' }, { token: editor });
    expect(del.status).toBe(400);
    expect(del.body.error.details).toMatchObject({ reason: 'platform', allowedActions: ['hide', 'unhide'] });
  });

  it('the webhook connector POSTs replies signed (Standard Webhooks) to the integration\'s URL', async () => {
    const created = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'webhook', platform: 'facebook', name: 'Hooked', url: `${receiverUrl}/inbox` }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const wh = created.body.data.id;
    const secret = created.body.data.secret as string;
    // Deliveries for it come from Meta as for any facebook account.
    const set = await api.put(`/v1/workspaces/${owner.workspaceId}/integrations/${wh}/inbox-hooks/facebook`, { secret: 'meta-app-secret-0123456789abcdef', verifyToken: 'meta-verify-token-2026' }, { token: owner.token });
    expect(set.status).toBe(200);
    await feed('facebook', wh, fbComment('1_wh', '1_wh_c1', 'u14', 'via webhook', t0 + 80));
    const t = await threadOf('1_wh');
    received.length = 0;
    const r = await api.post(`${base()}/threads/${t.id}/replies`, { text: 'answered by webhook' }, { token: editor });
    expect(r.status).toBe(202);
    const ok = (await until(() => messages(t.id), (ms) => ms.some((m) => m.delivery?.state === 'sent'))).find((m) => m.id === r.body.data.id);
    expect(ok.platformMessageId).toBe('wh-1');
    expect(received).toHaveLength(1);
    const h = received[0].headers;
    expect(h['x-pressroom-event']).toBe('inbox.reply');
    expect(verifyWebhookSignature(secret, { id: h['webhook-id'] as string, timestamp: h['webhook-timestamp'] as string, signature: h['webhook-signature'] as string }, received[0].body)).toBe(true);
    expect(JSON.parse(received[0].body).reply).toMatchObject({ text: 'answered by webhook', threadKind: 'comment', platformThreadId: '1_wh' });
    // A 4xx of the receiver is a permanent failure with its reason.
    receiverStatus = 422;
    const bad = await api.post(`${base()}/threads/${t.id}/replies`, { text: 'refused' }, { token: editor });
    const failed = (await until(() => messages(t.id), (ms) => ms.some((m) => m.id === bad.body.data.id && m.delivery.state === 'failed'))).find((m) => m.id === bad.body.data.id);
    expect(failed.delivery.error).toMatch(/HTTP 422/);
    receiverStatus = 200;
  });

  it('a sandbox integration takes sandbox-signed events of its own platform', async () => {
    const sb = await hookIntegration(api, owner, 'linkedin', 'sandbox', 'sandbox inbox');
    const ev = (id: string, type: string, data: Record<string, unknown>) =>
      sandboxDelivery(id, { type, data: { threadKind: 'comment', threadKey: 'li-post-1', messageId: 'li-c1', occurredAt: new Date().toISOString(), ...data } });
    await feed('sandbox', sb, ev('msg_a', 'message.created', { author: { id: 'p1', name: 'Pat' }, text: 'Nice post' }));
    await feed('sandbox', sb, ev('msg_b', 'reaction.added', { reaction: 'like', reactorId: 'p2' }));
    const t = await threadOf('li-post-1');
    expect(t).toMatchObject({ platform: 'linkedin', kind: 'comment', participants: [{ id: 'p1', name: 'Pat' }] });
    expect((await messages(t.id))[0]).toMatchObject({ text: 'Nice post', reactions: { like: 1 } });
  });
});
