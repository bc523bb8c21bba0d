// Publishing to real platforms end to end: accounts connected through the
// HTTP API (OAuth against the local fakes of Mastodon and X,
// tests/support/fakes/*.ts; an app password on the real Bluesky PDS,
// tests/support/pds.ts), media uploaded through the media API, content
// scheduled through the content API, and the real publish worker
// (server/jobs/publish.ts, pg-boss on the test database). What is checked is
// what the platforms received: the file's bytes with its alt text, threads
// chained, exactly one post after a timeout that committed (X looks before it
// sends again: Connector.findPublished), a 429 waited out until its reset
// without spending an attempt (app.publish_record_rate_limited), a revoked
// grant failing the edition with the reason and publishing after a reconnect.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { createPublishEngine, registerPublishJobs } from '../../server/jobs/publish.ts';
import { StorageError } from '../../server/storage/driver.ts';
import { S3Driver } from '../../server/storage/s3.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { startFakeMastodon, type FakeMastodon } from '../support/fakes/mastodon.ts';
import { startFakeX, type FakeX } from '../support/fakes/x.ts';
import { client, signup } from '../support/http.ts';
import { startPds, type TestPds } from '../support/pds.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png, upload } from './media-fixtures.ts';

const KEYS = `1:${randomBytes(32).toString('base64')}`;
let server: TestServer;
let api: ReturnType<typeof client>;
let mastodon: FakeMastodon;
let xfake: FakeX;
let pds: TestPds;
let boss: PgBoss;
let owner: Awaited<ReturnType<typeof signup>>;
let n = 0;

beforeAll(async () => {
  [mastodon, xfake, pds] = await Promise.all([startFakeMastodon(), startFakeX(), startPds({ appViewUrl: null })]);
  server = await startTestServer('publish_real_platforms', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    X_API_BASE_URL: xfake.url,
    X_CLIENT_ID: xfake.clientId,
    X_CLIENT_SECRET: xfake.clientSecret,
    CREDENTIALS_KEYS: KEYS,
    PUBLISH_TIMEOUT_MS: 1500,
    PUBLISH_RETRY_BASE_MS: 200,
    PUBLISH_MAX_ATTEMPTS: 3,
  });
  (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
  api = client(server);
  owner = await signup(api);
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 4, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerPublishJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 120_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
  await mastodon?.close();
  await xfake?.close();
  await pds?.stop();
});

const base = () => `/v1/workspaces/${owner.workspaceId}`;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The browser: the platform's consent page sends it to our callback, which sends it back with the integration. */
async function browse(authorizeUrl: string): Promise<string> {
  const toCallback = (await fetch(authorizeUrl, { redirect: 'manual' })).headers.get('location')!;
  const back = new URL((await fetch(toCallback, { redirect: 'manual' })).headers.get('location')!);
  const id = back.searchParams.get('integration');
  expect(id, back.toString()).toBeTruthy();
  return id!;
}

/** Connects a fresh account of the fake instance (one account connects once per workspace). */
async function connectMastodon(): Promise<string> {
  mastodon.signedIn = mastodon.createAccount({ username: `pub${++n}` }).id;
  const start = await api.post(`${base()}/integrations/connect`, { platform: 'mastodon', instanceUrl: mastodon.url }, { token: owner.token });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  return browse(start.body.data.authorizeUrl);
}

async function connectX(): Promise<{ id: string; userId: string }> {
  const user = xfake.addUser({ username: `pub${++n}${Date.now() % 100000}`, name: `Publisher ${n}` });
  xfake.consent.userId = user.id;
  const start = await api.post(`${base()}/integrations/connect`, { platform: 'x' }, { token: owner.token });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  return { id: await browse(start.body.data.authorizeUrl), userId: user.id };
}

async function schedule(channel: Record<string, unknown>, caption: string): Promise<string> {
  const r = await api.post(`${base()}/content`, { intent: 'publish_now', caption, channels: [channel] }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.editions[0].id;
}

const publishing = async (id: string) => (await server.owner.query(`select app.publishing_json($1) as p`, [id])).rows[0].p;
const attempts = async (id: string) =>
  (await server.owner.query(`select attempt, run_attempt, outcome, error, started_at, finished_at from app.publish_attempts where content_item_id = $1 order by attempt`, [id])).rows;

async function settled(id: string, states = ['published', 'failed', 'awaiting_confirmation'], timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const p = await publishing(id);
    if (p && states.includes(p.state)) return (await api.get(`${base()}/content/${id}`, { token: owner.token })).body.data;
    if (Date.now() > until) throw new Error(`timed out: ${JSON.stringify(p)} ${JSON.stringify(await attempts(id))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('Mastodon', () => {
  it('publishes an uploaded image with its alt text and a chained thread; the edition is sent with the status id and URL', async () => {
    const id = await connectMastodon();
    const bytes = png(64, 48, 7);
    const { media } = await upload(api, owner.token, owner.workspaceId, bytes, { filename: 'chart.png', altText: 'A bar chart of Q3 sign-ups' });
    const second = png(32, 32, 9);
    const { media: media2 } = await upload(api, owner.token, owner.workspaceId, second, { filename: 'detail.png', altText: 'The detail of week 3' });
    const edition = await schedule(
      { integrationId: id, mediaIds: [media.id], thread: [{ caption: 'Second message', mediaIds: [media2.id] }, { caption: 'Third message' }] },
      `Quarterly numbers ${randomBytes(3).toString('hex')}`,
    );
    const c = await settled(edition);
    expect(c.status, c.error).toBe('sent');
    const mine = mastodon.statusesOf(mastodon.signedIn).filter((s) => s.text.includes('Quarterly numbers') || s.text.includes('message'));
    const first = mastodon.statuses.get(c.platformPostId)!;
    expect(first, `no status ${c.platformPostId}`).toBeTruthy();
    expect(c.permalink).toContain(c.platformPostId);
    // The file: its bytes as stored, with the alt text of the media item.
    expect(first.mediaIds).toHaveLength(1);
    const m1 = mastodon.media.get(first.mediaIds[0]!)!;
    expect(m1).toMatchObject({ description: 'A bar chart of Q3 sign-ups', size: bytes.length, bytesSha256: sha(bytes) });
    // The thread: each reply to the one before.
    const two = mine.find((s) => s.text.includes('Second message'))!;
    const three = mine.find((s) => s.text.includes('Third message'))!;
    expect(two.inReplyToId).toBe(first.id);
    expect(three.inReplyToId).toBe(two.id);
    expect(mastodon.media.get(two.mediaIds[0]!)).toMatchObject({ description: 'The detail of week 3', bytesSha256: sha(second) });
    expect(three.mediaIds).toEqual([]);
    expect((await attempts(edition)).map((a) => a.outcome)).toEqual(['published']);
  });

  it('edits a published caption through the connected account (PUT /api/v1/statuses/:id with its token); a revoked grant is 409 RECONNECT_REQUIRED', async () => {
    const id = await connectMastodon();
    const edition = await schedule({ integrationId: id }, `Launch day ${randomBytes(3).toString('hex')}`);
    const c = await settled(edition);
    expect(c.status, c.error).toBe('sent');
    const puts = () => mastodon.callsTo('PUT', new RegExp(`/api/v1/statuses/${c.platformPostId}$`)).length;
    const before = puts();
    const r = await api.patch(`${base()}/content/${edition}/published-caption`, { caption: 'Launch day, edited' }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(puts()).toBe(before + 1);
    expect(mastodon.statuses.get(c.platformPostId)!.text).toContain('Launch day, edited');
    // The account's grant revoked at the instance: no edit, and the answer says why.
    for (const t of mastodon.tokens.values()) if (t.accountId === mastodon.signedIn) mastodon.revokeToken(t.token);
    const refused = await api.patch(`${base()}/content/${edition}/published-caption`, { caption: 'Launch day, edited twice' }, { token: owner.token });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('RECONNECT_REQUIRED');
    expect(JSON.stringify(refused.body)).not.toMatch(/access_token|Bearer/i);
    expect(puts()).toBe(before + 1); // the lookup before the PUT was refused (401): no second PUT
    expect(mastodon.statuses.get(c.platformPostId)!.text).not.toContain('edited twice');
  });

  it('a 429 with its reset puts the edition back until the reset, without spending an attempt', async () => {
    const id = await connectMastodon();
    mastodon.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 3 });
    const caption = `Rate limited ${randomBytes(3).toString('hex')}`;
    const started = Date.now();
    const edition = await schedule({ integrationId: id }, caption);
    const waiting = await settled(edition, ['retrying']);
    expect(waiting.status).toBe('scheduled');
    const p = await publishing(edition);
    const reset = Date.parse(p.nextAttemptAt);
    // The platform's reset (about 3 s), not the 200 ms backoff.
    expect(reset - started).toBeGreaterThan(2000);
    const c = await settled(edition);
    expect(c.status).toBe('sent');
    const a = await attempts(edition);
    expect(a.map((x) => x.outcome)).toEqual(['transient', 'published']);
    expect(a[0].error).toMatch(/rate|429|too many/i);
    // Not before the reset; the same run attempt (none spent).
    expect(a[1].started_at.getTime()).toBeGreaterThanOrEqual(reset - 5);
    expect(a.map((x) => x.run_attempt)).toEqual([1, 1]);
    expect(mastodon.statusesOf(mastodon.signedIn).filter((s) => s.text.includes(caption))).toHaveLength(1);
  });
});

describe('X', () => {
  it('a timeout after X committed: the retry finds the post (findPublished) and records it; exactly one tweet', async () => {
    const { id, userId } = await connectX();
    xfake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'timeout-after-commit' });
    const caption = `Committed then silent ${randomBytes(3).toString('hex')}`;
    const edition = await schedule({ integrationId: id }, caption);
    const c = await settled(edition);
    expect(c.status, c.error).toBe('sent');
    const posts = xfake.postsBy(userId);
    expect(posts.map((t) => t.text)).toEqual([caption]);
    expect(c.platformPostId).toBe(posts[0]!.id);
    const a = await attempts(edition);
    // The unknown outcome was retried (not left awaiting confirmation), and the retry sent nothing.
    expect(a.map((x) => x.outcome)).toEqual(['transient', 'published']);
    expect(xfake.callsTo('POST', '/2/tweets').filter((x) => x.body.text === caption)).toHaveLength(1);
  });

  it('a 429 with its reset: published after the reset, not before, on the same run attempt', async () => {
    const { id, userId } = await connectX();
    xfake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'rate-limited', resetInSeconds: 3 });
    const caption = `After the reset ${randomBytes(3).toString('hex')}`;
    const edition = await schedule({ integrationId: id }, caption);
    await settled(edition, ['retrying']);
    const reset = Date.parse((await publishing(edition)).nextAttemptAt);
    // Another edition of the account due now waits for the reset too (its window is spent), without an attempt.
    const next = await schedule({ integrationId: id }, `${caption} (next)`);
    const c = await settled(edition);
    expect(c.status, c.error).toBe('sent');
    expect((await settled(next)).status).toBe('sent');
    const posts = xfake.postsBy(userId);
    expect(posts).toHaveLength(2);
    for (const p of posts) expect(p.createdAt.getTime()).toBeGreaterThanOrEqual(reset - 5);
    const a = await attempts(edition);
    expect(a.map((x) => x.outcome)).toEqual(['transient', 'published']);
    expect(a.map((x) => x.run_attempt)).toEqual([1, 1]);
    const b = await attempts(next);
    expect(b.map((x) => x.outcome)).toEqual(['published']);
    expect(b[0].started_at.getTime()).toBeGreaterThanOrEqual(reset - 5);
    expect(xfake.callsTo('POST', '/2/tweets').filter((x) => String(x.body.text).startsWith(caption) && x.status === 429)).toHaveLength(1);
  });

  it('a revoked grant: reconnect_required and the edition failed with the reason; after a reconnect the retry publishes', async () => {
    const { id, userId } = await connectX();
    xfake.revokeUser(userId);
    const caption = `Revoked ${randomBytes(3).toString('hex')}`;
    const edition = await schedule({ integrationId: id }, caption);
    const failed = await settled(edition);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/reconnect/i);
    const integration = (await api.get(`${base()}/integrations/${id}`, { token: owner.token })).body.data;
    expect(integration.connectionState).toBe('reconnect_required');
    expect(xfake.postsBy(userId)).toHaveLength(0);
    // Reconnect the same account (a fresh consent), then retry the edition.
    xfake.consent.userId = userId;
    const start = await api.post(`${base()}/integrations/${id}/reconnect`, {}, { token: owner.token });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    expect(await browse(start.body.data.authorizeUrl)).toBe(id);
    expect((await api.get(`${base()}/integrations/${id}`, { token: owner.token })).body.data.connectionState).toBe('ok');
    const retry = await api.post(`${base()}/content/${edition}/retry`, undefined, { token: owner.token });
    expect(retry.status, JSON.stringify(retry.body)).toBeLessThan(300);
    const c = await settled(edition, ['published', 'failed']);
    expect(c.status, c.error).toBe('sent');
    expect(xfake.postsBy(userId).map((t) => t.text)).toEqual([caption]);
  });

  it('a claim recovered after a worker died: X is asked first; a post it has is recorded, not sent again; none is sent once', async () => {
    const engine = createPublishEngine(server.deps);
    /** An edition scheduled later (the queue leaves it), claimed as a worker that then died would have. */
    const claimedAndLost = async (integrationId: string, caption: string) => {
      const r = await api.post(`${base()}/content`, { intent: 'schedule', caption, scheduledAt: new Date(Date.now() + 3600_000).toISOString(), channels: [{ integrationId }] }, { token: owner.token });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const contentId: string = r.body.data.editions[0].id;
      const { rows } = await server.owner.query(`select publish_job_id, workspace_id from app.content_items where id = $1`, [contentId]);
      const jobId: string = rows[0].publish_job_id;
      const workspaceId: string = rows[0].workspace_id;
      await server.owner.query('begin');
      await server.owner.query(`select set_config('role', 'pressroom_worker', true)`);
      const claim = (await server.owner.query(`select app.publish_claim_batch($1::jsonb, $2::text[]) as c`, [JSON.stringify([{ jobId, contentId, workspaceId }]), ['sandbox']])).rows[0].c;
      await server.owner.query('commit');
      expect(claim.claims[0].action).toBe('send');
      return { contentId, jobId };
    };
    const { id, userId } = await connectX();
    // 1: the dead worker's call reached X.
    const posted = `Posted before the crash ${randomBytes(3).toString('hex')}`;
    const one = await claimedAndLost(id, posted);
    const made = xfake.seedTweet(userId, posted);
    const [r1] = await engine.publishBatch([{ id: one.jobId, data: { contentId: one.contentId, workspaceId: owner.workspaceId, version: 1 } }]);
    expect(r1).toMatchObject({ outcome: 'published' });
    const c1 = (await api.get(`${base()}/content/${one.contentId}`, { token: owner.token })).body.data;
    expect(c1).toMatchObject({ status: 'sent', platformPostId: made.id });
    expect(xfake.callsTo('POST', '/2/tweets').filter((x) => x.body.text === posted)).toHaveLength(0);
    // 2: it did not: sent now, once.
    const lost = `Lost in the crash ${randomBytes(3).toString('hex')}`;
    const two = await claimedAndLost(id, lost);
    const [r2] = await engine.publishBatch([{ id: two.jobId, data: { contentId: two.contentId, workspaceId: owner.workspaceId, version: 1 } }]);
    expect(r2).toMatchObject({ outcome: 'published' });
    expect(xfake.postsBy(userId).filter((t) => t.text === lost)).toHaveLength(1);
    const a2 = await attempts(two.contentId);
    expect(a2.map((x) => x.outcome)).toEqual(['published']);
    // 3: X cannot be asked now: retried later, never sent blind.
    const unsure = `Unsure ${randomBytes(3).toString('hex')}`;
    const three = await claimedAndLost(id, unsure);
    xfake.inject({ method: 'GET', path: /^\/2\/users\/[^/]+\/tweets$/, times: 1 }, { type: 'status', status: 503 });
    const [r3] = await engine.publishBatch([{ id: three.jobId, data: { contentId: three.contentId, workspaceId: owner.workspaceId, version: 1 } }]);
    expect(r3).toMatchObject({ outcome: 'transient' });
    expect(xfake.callsTo('POST', '/2/tweets').filter((x) => x.body.text === unsure)).toHaveLength(0);
    expect((await publishing(three.contentId)).state).toBe('retrying');
    // Still not on the run's last attempt (PUBLISH_MAX_ATTEMPTS 3): awaiting a confirmation, not failed, not sent.
    xfake.inject({ method: 'GET', path: /^\/2\/users\/[^/]+\/tweets$/, times: 2 }, { type: 'status', status: 503 });
    const again = () => engine.publishBatch([{ id: three.jobId, data: { contentId: three.contentId, workspaceId: owner.workspaceId, version: 1 } }]);
    expect((await again())[0]).toMatchObject({ outcome: 'transient' });
    expect((await again())[0]).toMatchObject({ outcome: 'unknown' });
    expect(await publishing(three.contentId)).toMatchObject({ state: 'awaiting_confirmation', attempts: 3 });
    expect(xfake.callsTo('POST', '/2/tweets').filter((x) => x.body.text === unsure)).toHaveLength(0);
  });
});

describe('Bluesky on the reference PDS', () => {
  it('connects with an app password and publishes an image with alt text and aspect ratio, read back from the PDS', async () => {
    const account = await pds.createAccount(`pr${randomBytes(3).toString('hex')}`);
    const connected = await api.post(`${base()}/integrations/connect-password`, { platform: 'bluesky', serviceUrl: pds.url, identifier: account.handle, appPassword: account.appPassword }, { token: owner.token });
    expect(connected.status, JSON.stringify(connected.body)).toBe(201);
    const bytes = png(80, 40, 3);
    const { media } = await upload(api, owner.token, owner.workspaceId, bytes, { filename: 'wide.png', altText: 'A wide gradient' });
    const caption = `Hello from Pressroom ${randomBytes(3).toString('hex')}`;
    const edition = await schedule({ integrationId: connected.body.data.id, mediaIds: [media.id] }, caption);
    const c = await settled(edition);
    expect(c.status, c.error).toBe('sent');
    expect(c.platformPostId).toMatch(new RegExp(`^at://${account.did}/app\\.bsky\\.feed\\.post/`));
    const rkey = c.platformPostId.split('/').pop();
    const got = await pds.xrpc('GET', 'com.atproto.repo.getRecord', { params: { repo: account.did, collection: 'app.bsky.feed.post', rkey } });
    expect(got.status).toBe(200);
    expect(got.json.value.text).toBe(caption);
    const image = got.json.value.embed.images[0];
    expect(image.alt).toBe('A wide gradient');
    expect(image.aspectRatio).toEqual({ width: 80, height: 40 });
    const blob = await fetch(`${pds.url}/xrpc/com.atproto.sync.getBlob?did=${encodeURIComponent(account.did)}&cid=${image.image.ref.$link}`);
    expect(blob.status).toBe(200);
    expect(sha(Buffer.from(await blob.arrayBuffer()))).toBe(sha(bytes));
  });
});

describe('media storage: a bounded read for the connectors that upload files', () => {
  it('disk: the bytes, null for no object, and 413 for more than the bound', async () => {
    const bytes = png(20, 20, 1);
    const { media } = await upload(api, owner.token, owner.workspaceId, bytes);
    const { rows } = await server.owner.query('select storage_key from app.media_items where id = $1', [media.id]);
    const driver = server.deps.storage.driver;
    expect(sha((await driver.read(rows[0].storage_key, bytes.length))!)).toBe(sha(bytes));
    await expect(driver.read(rows[0].storage_key, bytes.length - 1)).rejects.toMatchObject({ status: 413 });
    expect(await driver.read(`media/${owner.workspaceId}/${randomUUID()}`, 100)).toBeNull();
  });

  it('S3: a ranged GetObject, null for NoSuchKey, and 413 for more than the bound', async () => {
    const objects = new Map<string, Buffer>();
    const ranges: (string | undefined)[] = [];
    const s3 = createServer((req, res) => {
      const key = decodeURIComponent(new URL(req.url!, 'http://x').pathname.replace(/^\/bucket\//, ''));
      const o = objects.get(key);
      if (req.method !== 'GET' || !o) {
        res.writeHead(404, { 'content-type': 'application/xml' });
        return res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>');
      }
      const range = req.headers.range;
      ranges.push(range);
      const m = range ? /^bytes=(\d+)-(\d+)$/.exec(range) : null;
      if (!m) {
        res.writeHead(200, { 'content-length': String(o.length) });
        return res.end(o);
      }
      const end = Math.min(Number(m[2]), o.length - 1);
      const part = o.subarray(Number(m[1]), end + 1);
      res.writeHead(206, { 'content-length': String(part.length), 'content-range': `bytes ${m[1]}-${end}/${o.length}` });
      res.end(part);
    });
    await new Promise<void>((r) => s3.listen(0, '127.0.0.1', r));
    try {
      const driver = new S3Driver(loadConfig({ STORAGE_DRIVER: 's3', S3_ENDPOINT: `http://127.0.0.1:${(s3.address() as AddressInfo).port}`, S3_BUCKET: 'bucket',
        S3_REGION: 'eu-central-1', S3_FORCE_PATH_STYLE: 'true', S3_ACCESS_KEY_ID: 'id', S3_SECRET_ACCESS_KEY: 'secret' } as NodeJS.ProcessEnv));
      const key = `media/${randomUUID()}/${randomUUID()}`;
      const bytes = randomBytes(5000);
      objects.set(key, bytes);
      expect(sha((await driver.read(key, 5000))!)).toBe(sha(bytes));
      expect(ranges.at(-1)).toBe('bytes=0-5000');
      const over = await driver.read(key, 4999).catch((e) => e);
      expect(over).toBeInstanceOf(StorageError);
      expect(over.status).toBe(413);
      expect(await driver.read(`media/${randomUUID()}/${randomUUID()}`, 10)).toBeNull();
    } finally {
      s3.closeAllConnections();
      await new Promise<void>((r) => s3.close(() => r()));
    }
  });
});
