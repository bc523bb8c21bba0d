// Lifecycle webhooks over real HTTP with the real pg-boss worker
// (server/jobs/lifecycle.ts) and a local receiver that verifies every request
// with the `standardwebhooks` library: subscriptions (manager role, secret
// shown once, rotation, workspace isolation), events written with the change,
// a receiver that is down for a while (nothing lost, order kept; the retry
// delays are settings so "a minute" takes seconds here), 5xx answers until
// the subscription pauses (webhook.paused in the log), resume, redelivery and
// the test event.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgBoss } from 'pg-boss';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLifecycleJobs } from '../../server/jobs/lifecycle.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let editor: string;
let channel: string;

interface Received {
  id: string;
  type: string;
  data: any;
  verified: boolean;
  headers: http.IncomingHttpHeaders;
}
/** The receiver: verifies with the secret it is given, answers `status`. */
const receiver = {
  secret: '',
  status: 200,
  got: [] as Received[],
};
let receiverServer: http.Server;
let receiverPort = 0;

function startReceiver(port = 0): Promise<void> {
  receiverServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let verified = false;
      try {
        new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      const payload = JSON.parse(body);
      if (receiver.status < 300) receiver.got.push({ id: String(req.headers['webhook-id']), type: payload.type, data: payload.data, verified, headers: req.headers });
      res.writeHead(receiver.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(receiver.status < 300 ? { ok: true } : { error: 'receiver is unhappy' }));
    });
  });
  return new Promise((r) => receiverServer.listen(port, '127.0.0.1', () => {
    receiverPort = (receiverServer.address() as AddressInfo).port;
    r();
  }));
}
function stopReceiver(): Promise<void> {
  if (!receiverServer?.listening) return Promise.resolve();
  receiverServer.closeAllConnections();
  return new Promise((r) => receiverServer.close(() => r()));
}

async function setting(key: string, value: number) {
  await server.owner.query(`update app.settings set value = to_jsonb($2::int) where key = $1`, [key, value]);
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const base = () => `/v1/workspaces/${owner.workspaceId}/webhooks`;

async function subscribe(events: string[], extra: Record<string, unknown> = {}) {
  const res = await api.post(base(), { url: `http://127.0.0.1:${receiverPort}/hook`, events, ...extra }, { token: owner.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; secret: string; active: boolean };
}

async function createPost(caption: string): Promise<string> {
  const res = await api.post(`/v1/workspaces/${owner.workspaceId}/content`, { caption, channels: [{ integrationId: channel }] }, { token: owner.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.editions[0].id as string;
}

beforeAll(async () => {
  server = await startTestServer('lifecycle-webhooks', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
  await startReceiver();
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerLifecycleJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
  owner = await signup(api);
  editor = (await createKey(api, owner.token, owner.workspaceId, { role: 'editor' })).key;
  const integ = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Our x' }, { token: owner.token });
  expect(integ.status).toBe(201);
  channel = integ.body.data.id;
  await setting('webhook_retry_base_ms', 100);
  await setting('webhook_retry_max_ms', 400);
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await stopReceiver().catch(() => {});
  await server?.close();
});

describe('lifecycle webhooks', () => {
  it('subscriptions need the manager role, show the secret once and stay in their workspace', async () => {
    expect((await api.post(base(), { url: 'http://127.0.0.1:9/x', events: ['content.created'] }, { token: editor })).body.error.code).toBe('ROLE_REQUIRED');
    expect((await api.get(base(), { token: editor })).status).toBe(403);
    const bad = await api.post(base(), { url: 'http://127.0.0.1:9/x', events: ['content.nope'] }, { token: owner.token });
    expect(bad.status).toBe(400);
    const ftp = await api.post(base(), { url: 'ftp://127.0.0.1/x', events: ['content.created'] }, { token: owner.token });
    expect(ftp.status).toBe(400);
    expect(ftp.body.error.code).toBe('INVALID_WEBHOOK_URL');

    const s = await subscribe(['content.deleted', 'content.created'], { description: 'CRUD' });
    expect(s.secret).toMatch(/^whsec_/);
    const got = await api.get(`${base()}/${s.id}`, { token: owner.token });
    expect(got.body.data).toMatchObject({ id: s.id, events: ['content.created', 'content.deleted'], active: true, description: 'CRUD' });
    expect(got.body.data).not.toHaveProperty('secret');
    expect((await api.get(base(), { token: owner.token })).body.data.map((x: any) => x.id)).toContain(s.id);

    const other = await signup(api);
    expect((await api.get(`/v1/workspaces/${other.workspaceId}/webhooks`, { token: other.token })).body.data).toEqual([]);
    expect((await api.get(`/v1/workspaces/${other.workspaceId}/webhooks/${s.id}`, { token: other.token })).status).toBe(404);
    expect((await api.delete(`/v1/workspaces/${other.workspaceId}/webhooks/${s.id}`, { token: other.token })).status).toBe(404);

    const upd = await api.patch(`${base()}/${s.id}`, { events: ['content.scheduled'], description: null }, { token: owner.token });
    expect(upd.body.data).toMatchObject({ events: ['content.scheduled'], description: null });
    expect((await api.delete(`${base()}/${s.id}`, { token: owner.token })).body.data).toEqual({ id: s.id, deleted: true });
    expect((await api.get(`${base()}/${s.id}`, { token: owner.token })).status).toBe(404);
  });

  it('signs every request the Standard Webhooks way; rotation switches the secret; redelivery keeps the webhook-id', async () => {
    const s = await subscribe(['content.created']);
    receiver.secret = s.secret;
    receiver.got.length = 0;
    const test = await api.post(`${base()}/${s.id}/test`, undefined, { token: owner.token });
    expect(test.status).toBe(202);
    const contentId = await createPost('signed');
    await waitFor('two deliveries', () => receiver.got.length >= 2);
    expect(receiver.got.map((g) => g.type)).toEqual(['webhook.test', 'content.created']);
    expect(receiver.got.every((g) => g.verified)).toBe(true);
    expect(receiver.got[0].id).toBe(test.body.data.eventId);
    expect(receiver.got[1].data).toMatchObject({ contentId, status: 'draft', integrationId: channel });
    for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) expect(receiver.got[1].headers[h]).toBeTruthy();

    const rotated = await api.post(`${base()}/${s.id}/rotate-secret`, undefined, { token: owner.token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).not.toBe(s.secret);
    receiver.got.length = 0;
    await createPost('after rotation');
    await waitFor('one delivery', () => receiver.got.length >= 1);
    expect(receiver.got[0].verified, 'the old secret no longer verifies').toBe(false);
    receiver.secret = rotated.body.data.secret;

    const deliveries = await api.get(`${base()}/${s.id}/deliveries?state=delivered`, { token: owner.token });
    expect(deliveries.body.meta.total).toBe(3);
    const first = deliveries.body.data.at(-1);
    receiver.got.length = 0;
    const again = await api.post(`${base()}/${s.id}/deliveries/${first.id}/redeliver`, undefined, { token: owner.token });
    expect(again.status).toBe(202);
    expect(again.body.data).toMatchObject({ eventId: first.eventId, redeliveryOf: first.id, state: 'pending' });
    await waitFor('the redelivery', () => receiver.got.length >= 1);
    expect(receiver.got[0]).toMatchObject({ id: first.eventId, verified: true });
    await api.delete(`${base()}/${s.id}`, { token: owner.token });
  });

  it('a receiver that is down loses nothing and gets the events in order', async () => {
    const s = await subscribe(['content.created', 'content.scheduled', 'content.deleted']);
    receiver.secret = s.secret;
    receiver.got.length = 0;
    await stopReceiver();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await createPost(`while down ${i}`));
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const sched = await api.patch(`/v1/workspaces/${owner.workspaceId}/content/${made[0]}/schedule`, { scheduledAt: later }, { token: owner.token });
    expect(sched.status, JSON.stringify(sched.body)).toBe(200);
    expect((await api.delete(`/v1/workspaces/${owner.workspaceId}/content/${made[1]}`, { token: owner.token })).status).toBe(204);
    // Down long enough for several failed attempts with growing delays.
    await waitFor('failed attempts', async () => {
      const log = await api.get(`${base()}/${s.id}/log?limit=100`, { token: owner.token });
      return log.body.meta.total >= 3;
    });
    await startReceiver(receiverPort);
    await waitFor('all seven events', () => receiver.got.length >= 7).catch(async (e) => {
      const d = await server.owner.query(`select d.state, d.attempts, d.next_attempt_at, e.type, s.active from app.webhook_deliveries d join app.webhook_events e on e.id = d.event_id join app.webhook_subscriptions s on s.id = d.subscription_id where d.subscription_id = $1 order by d.seq`, [s.id]);
      const j = await server.owner.query(`select state, start_after, singleton_key from pgboss.job where name = 'webhooks.deliver' order by created_on`);
      throw new Error(`${e.message}: got ${JSON.stringify(receiver.got.map((g) => g.type))}; deliveries ${JSON.stringify(d.rows)}; jobs ${JSON.stringify(j.rows)}; now ${new Date().toISOString()}`);
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.got.map((g) => `${g.type}:${g.data.contentId}`)).toEqual([
      ...made.map((id) => `content.created:${id}`),
      `content.scheduled:${made[0]}`,
      `content.deleted:${made[1]}`,
    ]);
    expect(new Set(receiver.got.map((g) => g.id)).size).toBe(7);
    expect(receiver.got.every((g) => g.verified)).toBe(true);
    const log = await api.get(`${base()}/${s.id}/log?limit=100`, { token: owner.token });
    const failures = log.body.data.filter((e: any) => e.kind === 'attempt' && e.error);
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(failures[0].error).toMatch(/could not be reached/);
    expect((await api.get(`${base()}/${s.id}`, { token: owner.token })).body.data).toMatchObject({ active: true, consecutiveFailures: 0, pendingDeliveries: 0 });
    await api.delete(`${base()}/${s.id}`, { token: owner.token });
  });

  it('5xx answers are retried, then pause the subscription after the configured run; resume sends the backlog', async () => {
    await setting('webhook_pause_after_failures', 3);
    const s = await subscribe(['content.created']);
    receiver.secret = s.secret;
    receiver.got.length = 0;
    receiver.status = 503;
    const a = await createPost('into a 503');
    await waitFor('the pause', async () => !(await api.get(`${base()}/${s.id}`, { token: owner.token })).body.data.active);
    const sub = (await api.get(`${base()}/${s.id}`, { token: owner.token })).body.data;
    expect(sub).toMatchObject({ active: false, pausedReason: 'failures', consecutiveFailures: 3, pendingDeliveries: 1 });
    const log = (await api.get(`${base()}/${s.id}/log`, { token: owner.token })).body.data;
    expect(log[0]).toMatchObject({ kind: 'webhook.paused' });
    const attempts = log.filter((e: any) => e.kind === 'attempt');
    expect(attempts.map((e: any) => e.attempt)).toEqual([3, 2, 1]);
    expect(attempts[0]).toMatchObject({ responseStatus: 503, responseExcerpt: '{"error":"receiver is unhappy"}', eventType: 'content.created' });
    expect(attempts[0].request).toMatchObject({ url: `http://127.0.0.1:${receiverPort}/hook`, body: { type: 'content.created' } });
    expect(attempts[0].request.headers).not.toHaveProperty('webhook-signature');
    expect(attempts[0].durationMs).toBeGreaterThanOrEqual(0);

    // Paused: events still queue, nothing is sent.
    const b = await createPost('while paused');
    receiver.status = 200;
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.got).toEqual([]);
    const resumed = await api.patch(`${base()}/${s.id}`, { active: true }, { token: owner.token });
    expect(resumed.body.data).toMatchObject({ active: true, pausedReason: null, consecutiveFailures: 0 });
    await waitFor('the backlog', () => receiver.got.length >= 2);
    expect(receiver.got.map((g) => g.data.contentId)).toEqual([a, b]);
    expect((await api.get(`${base()}/${s.id}/log`, { token: owner.token })).body.data.some((e: any) => e.kind === 'webhook.resumed')).toBe(true);
    await setting('webhook_pause_after_failures', 50);
    await api.delete(`${base()}/${s.id}`, { token: owner.token });
  });

  it('bounds pages and answers 404 for a delivery of another subscription', async () => {
    const s1 = await subscribe(['content.created']);
    const s2 = await subscribe(['content.created']);
    receiver.secret = s1.secret;
    expect((await api.get(`${base()}/${s1.id}/deliveries?limit=0`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base()}/${s1.id}/log?limit=101`, { token: owner.token })).status).toBe(400);
    const t = await api.post(`${base()}/${s1.id}/test`, undefined, { token: owner.token });
    const r = await api.post(`${base()}/${s2.id}/deliveries/${t.body.data.deliveryId}/redeliver`, undefined, { token: owner.token });
    expect(r.status).toBe(404);
    await api.delete(`${base()}/${s1.id}`, { token: owner.token });
    await api.delete(`${base()}/${s2.id}`, { token: owner.token });
  });
});
