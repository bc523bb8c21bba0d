// The publishing engine over real HTTP with a real pg-boss worker on the
// test database, the sandbox connector and a local Standard-Webhooks
// receiver: every outcome (published, permanent failure, transient then
// published, transient until the attempts run out, unknown then resolved),
// locks while publishing, and the publishing routes (when they are wired
// into server/routes/index.ts).
import { png, upload } from './media-fixtures.ts';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerPublishJobs } from '../../server/jobs/publish.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { createLogger } from '../../server/log.ts';
import { verifyWebhookSignature } from '../../server/platforms/webhook.ts';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { sealSecretsInTheClear } from '../../server/platforms/rekey.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const SECRET = 'whsec_' + Buffer.from('a-test-secret-of-32-bytes-length').toString('base64');

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;

// --- the local webhook receiver --------------------------------------------
interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: any;
  valid: boolean;
}
const received: Received[] = [];
const flakyCount = new Map<string, number>();
let receiver: Server;
let receiverUrl = '';

function startReceiver() {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const valid = verifyWebhookSignature(
        SECRET,
        { id: req.headers['webhook-id'] as string, timestamp: req.headers['webhook-timestamp'] as string, signature: req.headers['webhook-signature'] as string },
        body,
      );
      const json = JSON.parse(body);
      received.push({ path: req.url ?? '', headers: req.headers, body, json, valid });
      // /any: the test verifies the signature itself (a secret other than SECRET).
      if (!valid && req.url !== '/any') return void res.writeHead(401).end();
      const answer = (status: number, b?: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(b === undefined ? '' : JSON.stringify(b));
      };
      const id = json.contentId ?? json.post?.platformPostId;
      switch (req.url) {
        case '/any':
        case '/ok':
          return answer(200, { platformPostId: `wh-${id}`, permalink: `https://social.example/p/${id}` });
        case '/reject':
          return answer(422, { error: 'caption not allowed' });
        case '/down':
          return answer(503);
        case '/flaky': {
          const n = (flakyCount.get(id) ?? 0) + 1;
          flakyCount.set(id, n);
          return n === 1 ? answer(500) : answer(201, { id: `wh-${id}` });
        }
        case '/slow':
          return void setTimeout(() => answer(200, { platformPostId: `wh-${id}` }), 1500);
        case '/silent':
          return; // never answers: the connector times out after sending
        default:
          return answer(404);
      }
    });
  });
  return new Promise<void>((resolve) =>
    receiver.listen(0, '127.0.0.1', () => {
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
      resolve();
    }),
  );
}

beforeAll(async () => {
  await startReceiver();
  server = await startTestServer('publishing', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    PUBLISH_RETRY_BASE_MS: 50,
    PUBLISH_MAX_ATTEMPTS: 3,
    PUBLISH_TIMEOUT_MS: 700,
    PUBLISH_CONCURRENCY: 8,
  });
  api = client(server);
  // Outside a request the worker signs media links for PUBLIC_BASE_URL (the port is known only now).
  (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 4, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerPublishJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 60_000);

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

// --- fixtures -----------------------------------------------------------------
interface Ws {
  id: string;
  token: string;
  base: string;
  sandbox(behavior?: string, platform?: string): Promise<string>;
  webhook(path: string, platform?: string): Promise<string>;
  publishNow(integrationId: string, caption?: string): Promise<string>;
}

async function workspace(): Promise<Ws> {
  const o = await signup(api);
  const insert = async (connector: string, platform: string, settings: object, url: string | null, secret: string | null) =>
    (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name, settings, webhook_url, webhook_secret)
         values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
        [o.organizationId, o.workspaceId, connector, platform, `${connector} ${platform}`, settings, url, secret],
      )
    ).rows[0].id as string;
  const ws: Ws = {
    id: o.workspaceId,
    token: o.token,
    base: `/v1/workspaces/${o.workspaceId}/content`,
    sandbox: (behavior = 'succeed', platform = 'x') => insert('sandbox', platform, { behavior }, null, null),
    webhook: (path, platform = 'linkedin') => insert('webhook', platform, {}, `${receiverUrl}${path}`, SECRET),
    publishNow: async (integrationId, caption = 'Hello from the engine') => {
      const res = await api.post(ws.base, { intent: 'publish_now', caption, channels: [{ integrationId }] }, { token: o.token });
      expect(res.status).toBe(201);
      return res.body.data.editions[0].id as string;
    },
  };
  return ws;
}

const publishing = async (id: string) => (await server.owner.query(`select app.publishing_json($1) as p`, [id])).rows[0].p;

async function waitFor<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function settled(ws: Ws, id: string, states = ['published', 'failed', 'awaiting_confirmation']) {
  await waitFor(`publishing of ${id}`, () => publishing(id), (p) => states.includes(p.state));
  return (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
}

const attempts = async (id: string) =>
  (await server.owner.query(`select attempt, run_attempt, outcome, error, started_at, finished_at from app.publish_attempts where content_item_id = $1 order by attempt`, [id])).rows;

// --- the engine -----------------------------------------------------------------
describe('publishing engine: sandbox', () => {
  it('publish_now publishes: sent, sentAt, permalink, platform post id; the sandbox received it once', async () => {
    const ws = await workspace();
    const sb = await ws.sandbox('succeed');
    const id = await ws.publishNow(sb, 'Sandbox hello');
    const c = await settled(ws, id);
    expect(c.status).toBe('sent');
    expect(c.sentAt).toBeTruthy();
    expect(c.permalink).toMatch(/^https:\/\/sandbox\.pressroom\.invalid\/x\//);
    expect(c.platformPostId).toMatch(/^sb-x-/);
    expect(await publishing(id)).toEqual({ state: 'published', attempts: 1, lastError: null, nextAttemptAt: null });
    const posts = (await server.owner.query(`select * from app.sandbox_posts where integration_id = $1`, [sb])).rows;
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ content_item_id: id, caption: 'Sandbox hello', deliveries: 1, platform_post_id: c.platformPostId });
    const a = await attempts(id);
    expect(a).toHaveLength(1);
    expect(a[0].outcome).toBe('published');
    expect(a[0].started_at.getTime()).toBeLessThanOrEqual(a[0].finished_at.getTime());
  });

  it('a permanent failure fails at once, with the reason on get and list, counted by failed-count', async () => {
    const ws = await workspace();
    const id = await ws.publishNow(await ws.sandbox('fail'));
    const c = await settled(ws, id);
    expect(c.status).toBe('failed');
    expect(c.error).toMatch(/refused/);
    const list = await api.get(`${ws.base}?status=failed`, { token: ws.token });
    expect(list.body.data.find((x: any) => x.id === id)?.error).toMatch(/refused/);
    expect((await api.get(`${ws.base}/failed-count`, { token: ws.token })).body.data.count).toBe(1);
    expect(await publishing(id)).toMatchObject({ state: 'failed', attempts: 1 });
    // A refused post is not kept by the sandbox platform (server/platforms/sandbox.ts, behavior fail).
    expect((await server.owner.query(`select count(*)::int n from app.sandbox_posts where content_item_id = $1`, [id])).rows[0].n).toBe(0);
  });

  it('a transient failure is retried with backoff, then published', async () => {
    const ws = await workspace();
    const id = await ws.publishNow(await ws.sandbox('transient-then-succeed'));
    const c = await settled(ws, id, ['published', 'failed']);
    expect(c.status).toBe('sent');
    const a = await attempts(id);
    expect(a.map((x) => x.outcome)).toEqual(['transient', 'published']);
    // The retry waited at least PUBLISH_RETRY_BASE_MS.
    expect(a[1].started_at.getTime() - a[0].finished_at.getTime()).toBeGreaterThanOrEqual(45);
  });

  it('an unknown outcome stays scheduled, awaiting confirmation, and is never retried automatically', async () => {
    const ws = await workspace();
    const id = await ws.publishNow(await ws.sandbox('unknown'));
    const c = await settled(ws, id);
    expect(c.status).toBe('scheduled');
    expect(await publishing(id)).toMatchObject({ state: 'awaiting_confirmation', attempts: 1, nextAttemptAt: null });
    await new Promise((r) => setTimeout(r, 1500));
    expect(await attempts(id)).toHaveLength(1);
  });
});

describe('publishing engine: webhook', () => {
  it('a signed Standard-Webhooks POST; 2xx publishes with the answered permalink', async () => {
    const ws = await workspace();
    const wh = await ws.webhook('/ok');
    const id = await ws.publishNow(wh, 'Webhook hello');
    const c = await settled(ws, id);
    expect(c.status).toBe('sent');
    expect(c.permalink).toBe(`https://social.example/p/${id}`);
    expect(c.platformPostId).toBe(`wh-${id}`);
    const got = received.filter((r) => r.json.contentId === id);
    expect(got).toHaveLength(1);
    expect(got[0].valid).toBe(true);
    expect(got[0].headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(got[0].headers['webhook-id']).toBe(got[0].json.idempotencyToken);
    expect(got[0].json).toMatchObject({
      event: 'content.publish',
      contentId: id,
      rootId: c.rootId,
      platform: 'linkedin',
      caption: 'Webhook hello',
      thread: [],
      mediaUrls: [],
      scheduledAt: expect.any(String),
      idempotencyToken: expect.stringMatching(/^pr_/),
    });
    // Tampered bodies do not verify.
    expect(verifyWebhookSignature(SECRET, { id: got[0].headers['webhook-id'] as string, timestamp: got[0].headers['webhook-timestamp'] as string, signature: got[0].headers['webhook-signature'] as string }, got[0].body + ' ')).toBe(false);
  });

  it('a webhook created through the API with an issued whsec_ secret: its deliveries verify with the standardwebhooks library as is', async () => {
    const ws = await workspace();
    const created = await api.post(`/v1/workspaces/${ws.id}/integrations`, { connector: 'webhook', platform: 'linkedin', name: 'Issued', url: `${receiverUrl}/any` }, { token: ws.token });
    expect(created.status).toBe(201);
    const issued: string = created.body.data.secret;
    const id = await ws.publishNow(created.body.data.id, 'Verified by the library');
    expect((await settled(ws, id)).status).toBe('sent');
    const got = received.filter((r) => r.json.contentId === id);
    expect(got).toHaveLength(1);
    // What README.md "Publishing" documents: new Webhook(secret).verify(rawBody, headers).
    const payload = new Webhook(issued).verify(got[0].body, got[0].headers as Record<string, string>);
    expect(payload).toMatchObject({ event: 'content.publish', contentId: id, caption: 'Verified by the library' });
    expect(() => new Webhook(issued).verify(got[0].body.replace('Verified', 'Forged'), got[0].headers as Record<string, string>)).toThrow(WebhookVerificationError);
    // An integration of earlier days with a raw secret keeps being signed with its UTF-8 bytes.
    const raw = 'a-raw-secret-of-earlier-days';
    const legacy = (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
         select organization_id, id, 'webhook', 'linkedin', 'Legacy', $2, $3 from app.workspaces where id = $1 returning id`,
        [ws.id, `${receiverUrl}/any`, raw],
      )
    ).rows[0].id as string;
    const legacyId = await ws.publishNow(legacy, 'Raw secret');
    expect((await settled(ws, legacyId)).status).toBe('sent');
    const old = received.filter((r) => r.json.contentId === legacyId)[0];
    expect(new Webhook(raw, { format: 'raw' }).verify(old.body, old.headers as Record<string, string>)).toMatchObject({ contentId: legacyId });
    // The API stored the issued secret sealed; the one stored in the clear is sealed at the server's
    // next start (server/platforms/rekey.ts), once, and keeps signing the same.
    const stored = async (iid: string) => (await server.owner.query('select webhook_secret from app.integrations where id = $1', [iid])).rows[0].webhook_secret as string;
    expect(await stored(created.body.data.id)).toMatch(/^prv1:/);
    expect(await stored(legacy)).toBe(raw);
    expect(await sealSecretsInTheClear(server.db.ownerUrl, server.config)).toBeGreaterThanOrEqual(1);
    expect(await stored(legacy)).toMatch(/^prv1:/);
    expect(await stored(legacy)).not.toContain(raw);
    expect(await sealSecretsInTheClear(server.db.ownerUrl, server.config)).toBe(0);
    const sealedId = await ws.publishNow(legacy, 'Raw secret, sealed');
    expect((await settled(ws, sealedId)).status).toBe('sent');
    const after = received.filter((r) => r.json.contentId === sealedId)[0];
    expect(new Webhook(raw, { format: 'raw' }).verify(after.body, after.headers as Record<string, string>)).toMatchObject({ contentId: sealedId });
  });

  it('sends signed download URLs of the media, which serve the uploaded bytes', async () => {
    const ws = await workspace();
    const wh = await ws.webhook('/ok');
    const bytes = png(64, 48, 7);
    const { media } = await upload(api, ws.token, ws.id, bytes, { filename: 'cover.png' });
    const res = await api.post(ws.base, { intent: 'publish_now', caption: 'With a picture', channels: [{ integrationId: wh, mediaIds: [media.id] }] }, { token: ws.token });
    expect(res.status).toBe(201);
    const id = res.body.data.editions[0].id as string;
    expect((await settled(ws, id)).status).toBe('sent');
    const got = received.filter((r) => r.json.contentId === id);
    expect(got).toHaveLength(1);
    expect(got[0].json.mediaUrls).toHaveLength(1);
    const url = got[0].json.mediaUrls[0] as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const fetched = await fetch(url);
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('4xx fails for good; 5xx retries until PUBLISH_MAX_ATTEMPTS, then fails; 5xx then 2xx publishes', async () => {
    const ws = await workspace();
    const rejected = await ws.publishNow(await ws.webhook('/reject'));
    const down = await ws.publishNow(await ws.webhook('/down'));
    const flaky = await ws.publishNow(await ws.webhook('/flaky'));
    const r = await settled(ws, rejected, ['published', 'failed']);
    expect(r.status).toBe('failed');
    expect(r.error).toBe('The webhook answered HTTP 422: caption not allowed.');
    expect(await attempts(rejected)).toHaveLength(1);
    const d = await settled(ws, down, ['published', 'failed']);
    expect(d.status).toBe('failed');
    expect((await attempts(down)).map((a) => a.outcome)).toEqual(['transient', 'transient', 'transient']);
    const f = await settled(ws, flaky, ['published', 'failed']);
    expect(f.status).toBe('sent');
    expect((await attempts(flaky)).map((a) => a.outcome)).toEqual(['transient', 'published']);
  });

  it('a timeout after sending is an unknown outcome: awaiting confirmation', async () => {
    const ws = await workspace();
    const id = await ws.publishNow(await ws.webhook('/silent'));
    const c = await settled(ws, id);
    expect(c.status).toBe('scheduled');
    expect(await publishing(id)).toMatchObject({ state: 'awaiting_confirmation', lastError: expect.stringMatching(/did not answer/) });
  });

  it('revert and delete are refused while publishing and while the outcome is unknown', async () => {
    const ws = await workspace();
    const wh = await ws.webhook('/slow');
    // PUBLISH_TIMEOUT_MS is 700 and /slow answers after 1.5 s: the attempt is in flight, then
    // its outcome is unknown. Either way the content is locked.
    const id = await ws.publishNow(wh);
    await waitFor('the attempt to start', () => publishing(id), (p) => p.state === 'publishing');
    const locked = ['PUBLISHING_IN_PROGRESS', 'PUBLISHING_AWAITS_CONFIRMATION'];
    const rev = await api.post(`${ws.base}/${id}/revert-to-draft`, {}, { token: ws.token });
    expect(rev.status).toBe(409);
    expect(locked).toContain(rev.body.error.code);
    const del = await api.delete(`${ws.base}/${id}`, { token: ws.token });
    expect(del.status).toBe(409);
    expect(locked).toContain(del.body.error.code);
    expect((await settled(ws, id)).status).toBe('scheduled');
    expect(await publishing(id)).toMatchObject({ state: 'awaiting_confirmation' });
    // Awaiting confirmation: still locked, with its own code, until the outcome is recorded.
    const del2 = await api.delete(`${ws.base}/${id}`, { token: ws.token });
    expect(del2.status).toBe(409);
    expect(del2.body.error.code).toBe('PUBLISHING_AWAITS_CONFIRMATION');
    const resolved = await api.post(`${ws.base}/${id}/resolve-publishing-result`, { outcome: 'failed', error: 'never arrived' }, { token: ws.token });
    expect(resolved.status).toBe(201);
    expect((await api.delete(`${ws.base}/${id}`, { token: ws.token })).status).toBe(204);
  });

});

// --- routes (once publishingRoutes is wired) ----------------------------------
describe('publishing routes', () => {
  it('publish: draft -> published; other statuses 400; unknown id 404; Idempotency-Key replays', async () => {
    const ws = await workspace();
    const sb = await ws.sandbox('succeed');
    const draft = await api.post(ws.base, { caption: 'Draft first', channels: [{ integrationId: sb }] }, { token: ws.token });
    const id = draft.body.data.editions[0].id;
    const res = await api.post(`${ws.base}/${id}/publish`, undefined, { token: ws.token, headers: { 'idempotency-key': 'pub-1' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ editions: [{ id, status: 'scheduled' }] });
    expect((await publishing(id)).state).toMatch(/queued|publishing|published/);
    const again = await api.post(`${ws.base}/${id}/publish`, undefined, { token: ws.token, headers: { 'idempotency-key': 'pub-1' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await settled(ws, id)).status).toBe('sent');
    const sent = await api.post(`${ws.base}/${id}/publish`, undefined, { token: ws.token });
    expect(sent.status).toBe(400);
    expect(sent.body.error.code).toBe('INVALID_CONTENT_STATUS');
    const missing = await api.post(`${ws.base}/00000000-0000-4000-8000-000000000000/publish`, undefined, { token: ws.token });
    expect(missing.status).toBe(404);
  });

  it('retry: failed only; a failed edition published again', async () => {
    const ws = await workspace();
    const sb = await ws.sandbox('fail');
    const id = await ws.publishNow(sb);
    expect((await settled(ws, id)).status).toBe('failed');
    await server.owner.query(`update app.integrations set settings = '{"behavior":"succeed"}' where id = $1`, [sb]);
    const res = await api.post(`${ws.base}/${id}/retry`, undefined, { token: ws.token, headers: { 'idempotency-key': 'retry-1' } });
    expect(res.status).toBe(200);
    expect(res.body.data.editions[0]).toMatchObject({ id, status: 'scheduled' });
    const c = await settled(ws, id, ['published']);
    expect(c.status).toBe('sent');
    expect(c.error).toBeNull();
    const again = await api.post(`${ws.base}/${id}/retry`, undefined, { token: ws.token });
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('INVALID_CONTENT_STATUS');
  });

  it('resolve-publishing-result: only while awaiting confirmation (409 otherwise); published or failed', async () => {
    const ws = await workspace();
    const a = await ws.publishNow(await ws.sandbox('unknown'));
    const b = await ws.publishNow(await ws.webhook('/silent'));
    await settled(ws, a);
    await settled(ws, b);
    const bad = await api.post(`${ws.base}/${a}/resolve-publishing-result`, { outcome: 'maybe' }, { token: ws.token });
    expect(bad.status).toBe(400);
    const ra = await api.post(`${ws.base}/${a}/resolve-publishing-result`, { outcome: 'published', permalink: 'https://x.example/1', platformPostId: 'p1' }, { token: ws.token });
    expect(ra.status).toBe(201);
    expect(ra.body.data).toMatchObject({ status: 'sent', permalink: 'https://x.example/1', platformPostId: 'p1', publishing: { state: 'published' } });
    const rb = await api.post(`${ws.base}/${b}/resolve-publishing-result`, { outcome: 'failed', error: 'Not on the platform' }, { token: ws.token });
    expect(rb.status).toBe(201);
    expect(rb.body.data).toMatchObject({ status: 'failed', error: 'Not on the platform' });
    const again = await api.post(`${ws.base}/${a}/resolve-publishing-result`, { outcome: 'published' }, { token: ws.token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('NOTHING_TO_RESOLVE');
  });

  it('published-caption: sent content on sandbox and webhook; 400 otherwise; 409 where the platform cannot edit', async () => {
    const ws = await workspace();
    const sb = await ws.sandbox('succeed', 'linkedin');
    const id = await ws.publishNow(sb, 'Original');
    await settled(ws, id);
    const res = await api.patch(`${ws.base}/${id}/published-caption`, { caption: 'Corrected' }, { token: ws.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'sent', caption: 'Original', publishedCaption: 'Corrected' });
    expect((await server.owner.query(`select caption, caption_edits from app.sandbox_posts where content_item_id = $1`, [id])).rows[0]).toEqual({ caption: 'Corrected', caption_edits: 1 });
    const wid = await ws.publishNow(await ws.webhook('/ok'), 'Hook original');
    await settled(ws, wid);
    const w = await api.patch(`${ws.base}/${wid}/published-caption`, { caption: 'Hook corrected' }, { token: ws.token });
    expect(w.status).toBe(200);
    expect(received.some((r) => r.json.event === 'content.caption.edit' && r.json.post?.caption === 'Hook corrected' && r.valid)).toBe(true);
    // x cannot edit a published caption
    const xid = await ws.publishNow(await ws.sandbox('succeed', 'x'));
    await settled(ws, xid);
    const x = await api.patch(`${ws.base}/${xid}/published-caption`, { caption: 'No' }, { token: ws.token });
    expect(x.status).toBe(409);
    expect(x.body.error.code).toBe('CAPTION_EDIT_NOT_SUPPORTED');
    const draft = await api.post(ws.base, { caption: 'Draft', channels: [{ integrationId: sb }] }, { token: ws.token });
    const d = await api.patch(`${ws.base}/${draft.body.data.editions[0].id}/published-caption`, { caption: 'No' }, { token: ws.token });
    expect(d.status).toBe(400);
    expect(d.body.error.code).toBe('INVALID_CONTENT_STATUS');
  });

  it('sandbox/posts: the posts received, paginated; 404 for a webhook integration', async () => {
    const ws = await workspace();
    const sb = await ws.sandbox('succeed');
    const ids = [await ws.publishNow(sb, 'one')];
    const sb2 = await ws.sandbox('succeed', 'linkedin');
    ids.push(await ws.publishNow(sb2, 'two'));
    for (const id of ids) await settled(ws, id);
    const page = await api.get(`/v1/workspaces/${ws.id}/integrations/${sb}/sandbox/posts?limit=10`, { token: ws.token });
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0]).toMatchObject({ contentId: ids[0], caption: 'one', deliveries: 1 });
    expect(page.body.meta).toEqual({ total: 1, limit: 10, offset: 0 });
    const wh = await ws.webhook('/ok');
    expect((await api.get(`/v1/workspaces/${ws.id}/integrations/${wh}/sandbox/posts`, { token: ws.token })).status).toBe(404);
    expect((await api.get(`/v1/workspaces/${ws.id}/integrations/${sb}/sandbox/posts?limit=0`, { token: ws.token })).status).toBe(400);
  });
});
