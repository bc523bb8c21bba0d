// Slow work runs outside request transactions (server/http/pipeline.ts,
// phased routes; db/migrations/committed/000003-house-rulebook.sql, split 60-slow-work-outside-transactions.sql):
// with a request pool of 4 connections, ten webhook calls that each take
// seconds (caption edits, platform drafts) are all in flight at once while a
// plain GET answers at once, and each still completes and is recorded. A
// concurrent duplicate waits for the claim instead of doubling the work, and
// a failing slow step leaves nothing claimed, so a retry works. Upload
// completion: concurrent completions make one item, a failed verification
// leaves the session retryable, and a claimed session is neither aborted nor
// expired under the completion.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerPublishJobs } from '../../server/jobs/publish.ts';
import { runUploadSessionExpiry } from '../../server/jobs/media.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { verifyWebhookSignature } from '../../server/platforms/webhook.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png, sha256, startUpload } from './media-fixtures.ts';

const SECRET = 'whsec_' + Buffer.from('a-test-secret-of-32-bytes-length').toString('base64');
const POOL = 4;
const SLOW = 10;
const DELAY_MS = 3000;

let server: TestServer;
let api: ReturnType<typeof client>;
let dataDir = '';

// --- a webhook receiver that takes its time ------------------------------------
interface Call {
  event: string;
  key: string;
  caption?: string;
  valid: boolean;
  start: number;
  end: number;
}
const calls: Call[] = [];
let inFlight = 0;
let maxInFlight = 0;
let receiver: Server;
let receiverUrl = '';

function startReceiver() {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const json = JSON.parse(raw);
      const valid = verifyWebhookSignature(
        SECRET,
        { id: req.headers['webhook-id'] as string, timestamp: req.headers['webhook-timestamp'] as string, signature: req.headers['webhook-signature'] as string },
        raw,
      );
      const answer = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      // Publishing (the fixture) answers at once; the routes under test wait.
      if (json.event === 'content.publish') return answer(200, { platformPostId: `wh-${json.contentId}` });
      const call: Call = {
        event: json.event,
        key: json.event === 'content.caption.edit' ? json.post.platformPostId : json.article.contentId,
        caption: json.post?.caption,
        valid,
        start: Date.now(),
        end: 0,
      };
      calls.push(call);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        call.end = Date.now();
        if (call.caption === 'refuse me') return answer(503, { error: 'try later' });
        if (json.event === 'article.draft.create') return answer(200, { articleId: `wh-${json.article.contentId}` });
        answer(200, {});
      }, DELAY_MS);
    });
  });
  return new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve)).then(() => {
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
}

beforeAll(async () => {
  await startReceiver();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-slow-work-'));
  server = await startTestServer('slow_work', {
    DATA_DIR: dataDir,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    DB_POOL_SIZE: POOL,
    PUBLISH_TIMEOUT_MS: 15_000,
    JOB_HEARTBEAT_SECONDS: 10,
  });
  api = client(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// --- fixtures -------------------------------------------------------------------
async function workspace() {
  const o = await signup(api);
  const integration = async (platform: string) =>
    (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
         values ($1, $2, 'webhook', $3, 'hook', $4, $5) returning id`,
        [o.organizationId, o.workspaceId, platform, `${receiverUrl}/hook`, SECRET],
      )
    ).rows[0].id as string;
  return { ...o, integration };
}

/** `count` editions published through the real publish worker (the receiver answers publishes at once). */
async function publishedEditions(ws: Awaited<ReturnType<typeof workspace>>, count: number): Promise<string[]> {
  const hook = await ws.integration('linkedin');
  const base = `/v1/workspaces/${ws.workspaceId}/content`;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.post(base, { intent: 'publish_now', caption: `Post ${i}`, channels: [{ integrationId: hook }] }, { token: ws.token });
    expect(res.status).toBe(201);
    ids.push(res.body.data.editions[0].id);
  }
  const boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 2, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  try {
    await registerPublishJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
    const until = Date.now() + 30_000;
    for (;;) {
      const sent = (await server.owner.query(`select count(*)::int as n from app.content_items where id = any($1::uuid[]) and status = 'sent'`, [ids])).rows[0].n;
      if (sent === count) break;
      if (Date.now() > until) throw new Error(`only ${sent} of ${count} editions were published`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    // The worker is gone before the requests under test start: the pool is theirs alone.
    await boss.stop({ graceful: false, close: true, timeout: 2000 });
  }
  return ids;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}

async function waitUntil(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const claims = async (subject: string) =>
  (await server.owner.query(`select kind, claimed_until > now() as live from app.work_claims where subject_id = $1`, [subject])).rows;

// --- the pool is not held while a platform is called -------------------------------
describe(`${SLOW} slow webhook calls with a pool of ${POOL} connections`, () => {
  it('published-caption edits: all in flight at once, a plain GET answers quickly, every edit is recorded', async () => {
    const ws = await workspace();
    const ids = await publishedEditions(ws, SLOW);
    const base = `/v1/workspaces/${ws.workspaceId}/content`;
    calls.length = 0;
    maxInFlight = 0;
    const edits = ids.map((id, i) => api.patch(`${base}/${id}/published-caption`, { caption: `Edited ${i}` }, { token: ws.token }));
    await waitUntil(`${SLOW} caption edits at the receiver`, () => inFlight === SLOW);
    // Ten requests wait on the platform, more than the pool holds: nothing waits on the pool.
    const get = await timed(() => api.get(`${base}/${ids[0]}`, { token: ws.token }));
    expect(get.value.status).toBe(200);
    expect(get.ms).toBeLessThan(DELAY_MS / 3);
    expect(inFlight).toBe(SLOW);
    const done = await Promise.all(edits);
    expect(done.map((r) => r.status)).toEqual(Array(SLOW).fill(200));
    done.forEach((r, i) => expect(r.body.data).toMatchObject({ id: ids[i], status: 'sent', caption: `Post ${i}`, publishedCaption: `Edited ${i}` }));
    expect(maxInFlight).toBe(SLOW);
    expect(calls.filter((c) => c.event === 'content.caption.edit' && c.valid)).toHaveLength(SLOW);
    const stored = await server.owner.query(`select caption from app.published_captions where content_item_id = any($1::uuid[]) order by caption`, [ids]);
    expect(stored.rows.map((r) => r.caption)).toEqual(ids.map((_, i) => `Edited ${i}`).sort());
    expect((await server.owner.query(`select count(*)::int as n from app.work_claims where subject_id = any($1::uuid[])`, [ids])).rows[0].n).toBe(0);
    const audit = await server.owner.query(
      `select status, count(*)::int as n from audit.api_calls where workspace_id = $1 and route = '/v1/workspaces/{workspaceId}/content/{id}/published-caption' group by status`,
      [ws.workspaceId],
    );
    expect(audit.rows).toEqual([{ status: 200, n: SLOW }]);
  }, 60_000);

  it('platform drafts: all in flight at once, a plain GET answers quickly; an Idempotency-Key replays without calling again', async () => {
    const ws = await workspace();
    const hook = await ws.integration('x');
    const base = `/v1/workspaces/${ws.workspaceId}/articles`;
    const articles: string[] = [];
    for (let i = 0; i < SLOW; i++) {
      const r = await api.post(base, { integrationId: hook, title: `Article ${i}`, bodyHtml: `<p>Body ${i}</p>` }, { token: ws.token, headers: { 'idempotency-key': randomUUID() } });
      expect(r.status).toBe(201);
      articles.push(r.body.data.article.contentId);
    }
    calls.length = 0;
    maxInFlight = 0;
    const keys = articles.map(() => randomUUID());
    const drafts = articles.map((id, i) => api.post(`${base}/${id}/platform-draft`, undefined, { token: ws.token, headers: { 'idempotency-key': keys[i] } }));
    await waitUntil(`${SLOW} drafts at the receiver`, () => inFlight === SLOW);
    const get = await timed(() => api.get(`${base}/${articles[0]}`, { token: ws.token }));
    expect(get.value.status).toBe(200);
    expect(get.ms).toBeLessThan(DELAY_MS / 3);
    const done = await Promise.all(drafts);
    expect(done.map((r) => r.status)).toEqual(Array(SLOW).fill(200));
    done.forEach((r, i) => expect(r.body.data).toEqual({ contentId: articles[i], articleId: `wh-${articles[i]}`, draftUrl: null }));
    expect(maxInFlight).toBe(SLOW);
    const recorded = await server.owner.query(`select count(*)::int as n from app.articles where content_item_id = any($1::uuid[]) and platform_draft_article_id is not null`, [articles]);
    expect(recorded.rows[0].n).toBe(SLOW);
    // The key's answer was recorded with the draft: a replay answers it, the platform is not called again.
    const before = calls.length;
    const replay = await api.post(`${base}/${articles[3]}/platform-draft`, undefined, { token: ws.token, headers: { 'idempotency-key': keys[3] } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data).toEqual(done[3].body.data);
    expect(calls.length).toBe(before);
  }, 60_000);
});

// --- claims: duplicates and failures ------------------------------------------------
describe('claims', () => {
  it('two concurrent edits of one caption take turns at the platform; both are recorded', async () => {
    const ws = await workspace();
    const [id] = await publishedEditions(ws, 1);
    const base = `/v1/workspaces/${ws.workspaceId}/content`;
    calls.length = 0;
    const [a, b] = await Promise.all(['First', 'Second'].map((caption) => api.patch(`${base}/${id}/published-caption`, { caption }, { token: ws.token })));
    expect([a.status, b.status]).toEqual([200, 200]);
    const edits = calls.filter((c) => c.event === 'content.caption.edit').sort((x, y) => x.start - y.start);
    expect(edits).toHaveLength(2);
    // The second reached the platform only after the first was answered.
    expect(edits[1].start).toBeGreaterThanOrEqual(edits[0].end);
    const row = (await server.owner.query(`select caption, edits from app.published_captions where content_item_id = $1`, [id])).rows[0];
    expect(row).toEqual({ caption: edits[1].caption, edits: 2 });
  }, 60_000);

  it('a platform failure gives the claim up and records nothing; a retry goes through', async () => {
    const ws = await workspace();
    const [id] = await publishedEditions(ws, 1);
    const path = `/v1/workspaces/${ws.workspaceId}/content/${id}/published-caption`;
    const refused = await api.patch(path, { caption: 'refuse me' }, { token: ws.token });
    expect(refused.status).toBe(502);
    expect(refused.body.error.code).toBe('PLATFORM_REFUSED');
    expect(await claims(id)).toEqual([]);
    expect((await server.owner.query(`select 1 from app.published_captions where content_item_id = $1`, [id])).rowCount).toBe(0);
    const retry = await api.patch(path, { caption: 'Accepted' }, { token: ws.token });
    expect(retry.status).toBe(200);
    expect(retry.body.data.publishedCaption).toBe('Accepted');
  }, 60_000);
});

// --- upload completion ---------------------------------------------------------------
describe('completing an upload outside the request transaction', () => {
  const completePath = (ws: string, session: string) => `/v1/workspaces/${ws}/media/upload/${session}/complete`;

  it('concurrent completions of one session make one item and all answer it', async () => {
    const ws = await workspace();
    const bytes = png(64, 48, 7);
    const { session, put } = await startUpload(api, ws.token, ws.workspaceId, bytes, 'image/png', 'a.png');
    expect(put.status).toBe(200);
    const all = await Promise.all(Array.from({ length: 5 }, () => api.post(completePath(ws.workspaceId, session.sessionId), undefined, { token: ws.token })));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(all.map((r) => r.body.data.id))).toEqual(new Set([session.sessionId]));
    expect(all.every((r) => r.body.data.checksumSha256 === sha256(bytes))).toBe(true);
    expect((await server.owner.query(`select count(*)::int as n from app.media_items where id = $1`, [session.sessionId])).rows[0].n).toBe(1);
    expect(await claims(session.sessionId)).toEqual([]);
  });

  it('while a completion holds the claim: a second waits for it, abort is refused, expiry leaves the session alone', async () => {
    const ws = await workspace();
    const { session } = await startUpload(api, ws.token, ws.workspaceId, png(8, 8, 3), 'image/png', 'b.png');
    // Another request's claim, as api.claim_media_upload_completion takes it.
    await server.owner.query(
      `insert into app.work_claims (kind, subject_id, organization_id, workspace_id, token, claimed_until)
       values ('media_upload_completion', $1, $2, $3, gen_random_uuid(), now() + interval '1 minute')`,
      [session.sessionId, ws.organizationId, ws.workspaceId],
    );
    const abort = await api.post(`/v1/workspaces/${ws.workspaceId}/media/upload/${session.sessionId}/abort`, undefined, { token: ws.token });
    expect([abort.status, abort.body.error?.code]).toEqual([409, 'UPLOAD_COMPLETION_IN_PROGRESS']);
    await server.owner.query(`update app.media_upload_sessions set expires_at = now() - interval '1 second' where id = $1`, [session.sessionId]);
    await runUploadSessionExpiry(server.deps);
    const s = (await server.owner.query(`select state, upload_swept_at from app.media_upload_sessions where id = $1`, [session.sessionId])).rows[0];
    expect(s).toEqual({ state: 'pending', upload_swept_at: null });
    await server.owner.query(`update app.media_upload_sessions set expires_at = now() + interval '1 hour' where id = $1`, [session.sessionId]);

    let answered = false;
    const waiting = api.post(completePath(ws.workspaceId, session.sessionId), undefined, { token: ws.token }).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 700));
    expect(answered).toBe(false);
    // The other request gives its claim up (it failed): the waiting one claims and completes.
    await server.owner.query(`delete from app.work_claims where subject_id = $1`, [session.sessionId]);
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(done.body.data.id).toBe(session.sessionId);
  });

  it('a lapsed claim (its process died) does not block a completion', async () => {
    const ws = await workspace();
    const { session } = await startUpload(api, ws.token, ws.workspaceId, png(8, 8, 4), 'image/png', 'c.png');
    await server.owner.query(
      `insert into app.work_claims (kind, subject_id, organization_id, workspace_id, token, claimed_until)
       values ('media_upload_completion', $1, $2, $3, gen_random_uuid(), now() - interval '1 second')`,
      [session.sessionId, ws.organizationId, ws.workspaceId],
    );
    const done = await timed(() => api.post(completePath(ws.workspaceId, session.sessionId), undefined, { token: ws.token }));
    expect(done.value.status).toBe(200);
    expect(done.ms).toBeLessThan(2000);
    expect(await claims(session.sessionId)).toEqual([]);
  });

  it('a failed verification leaves the session pending and unclaimed: the bytes are sent again and the retry completes', async () => {
    const ws = await workspace();
    const bytes = png(16, 16, 5);
    const { session } = await startUpload(api, ws.token, ws.workspaceId, bytes, 'image/png', 'd.png');
    const path = completePath(ws.workspaceId, session.sessionId);
    const wrong = await api.post(path, { checksumSha256: '0'.repeat(64) }, { token: ws.token });
    expect([wrong.status, wrong.body.error.code]).toEqual([400, 'CHECKSUM_MISMATCH']);
    expect(await claims(session.sessionId)).toEqual([]);
    expect((await server.owner.query(`select state from app.media_upload_sessions where id = $1`, [session.sessionId])).rows[0].state).toBe('pending');
    expect((await server.owner.query(`select 1 from app.media_items where id = $1`, [session.sessionId])).rowCount).toBe(0);
    const again = await fetch(session.uploadUrl, { method: 'PUT', headers: session.headers, body: bytes });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    const ok = await api.post(path, { checksumSha256: sha256(bytes) }, { token: ws.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ id: session.sessionId, checksumSha256: sha256(bytes), fileSize: bytes.length });
  });
});
