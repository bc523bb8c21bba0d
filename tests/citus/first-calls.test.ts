// The service on a distributed database (docs/citus.md, "Where the schema stands"): a fresh
// database on the test cluster's coordinator, migrated, distributed by the real CLI
// (`pressroom distribute`), the internal roles given their worker logins, then the real server
// (server/main.ts) on it, called over HTTP as the README's first calls do. What answers here
// answers on Citus; what does not yet is listed in docs/citus.md.
//
// Environment: CITUS_URL (the coordinator; default `scripts/citus/cluster.sh url`);
// CITUS_KEEP_DB=1 keeps the database afterwards.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPool } from '../../server/db/pool.ts';
import { startOutboxSweep } from '../../server/db/topology.ts';
import { createLogger } from '../../server/log.ts';
import { client } from '../support/http.ts';
import { cluster, distributedDatabase, ROOT } from './support.ts';

const db = `pressroom_calls_${randomBytes(4).toString('hex')}`;
let ownerUrl = '';
let server: ChildProcess | null = null;
let serverLog = '';
/** Requests to the server, each answer checked against openapi.yaml (tests/support/http.ts). */
const running = { baseUrl: '' };
const api = client(running);

beforeAll(async () => {
  ownerUrl = await distributedDatabase(db);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of ['APP_DATABASE_URL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'METRICS_PORT']) delete env[v];
  server = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], {
    cwd: ROOT,
    env: { ...env, DATABASE_URL: ownerUrl, PORT: '0', HOST: '127.0.0.1', ALLOW_SIGNUP: 'true', RUN_WORKER: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stderr!.on('data', (c) => (serverLog += c));
  running.baseUrl = await new Promise<string>((resolve, reject) => {
    server!.stdout!.on('data', (c: Buffer) => {
      serverLog += c;
      // Whole lines only: a chunk may end inside one.
      for (const line of serverLog.split('\n').slice(0, -1)) {
        if (!line.startsWith('{')) continue;
        const l = JSON.parse(line) as { msg?: string; url?: string };
        if (l.msg === 'listening' && l.url) resolve(l.url);
      }
    });
    server!.once('exit', (code) => reject(new Error(`server/main.ts exited (${code}):\n${serverLog.slice(-4000)}`)));
  });
}, 900_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (process.env.CITUS_KEEP_DB !== '1' && ownerUrl) cluster('dropdb', db);
}, 120_000);

describe('the service on a distributed database', () => {
  const password = 'correct horse battery staple';
  let session = '';
  let ws = '';
  let channel = '';
  let scheduledId = '';
  let nowId = '';
  let otherSession = '';
  let otherWs = '';

  it('signs up an organization and lists its workspace with the session', async () => {
    const signup = await api.post('/v1/auth/signup', { email: 'ada@example.com', password, organizationName: 'Acme', workspaceName: 'Marketing' });
    expect(signup.status, JSON.stringify(signup.body)).toBe(201);
    session = signup.body.data.session.token;
    ws = signup.body.data.workspace.id;
    const list = await api.get('/v1/workspaces', { token: session });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id: ws, name: 'Marketing', role: 'manager' })]);
  });

  it('another organization sees only its own workspace', async () => {
    const other = await api.post('/v1/auth/signup', { email: 'grace@example.com', password, organizationName: 'Other', workspaceName: 'Sales' });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    otherSession = other.body.data.session.token;
    otherWs = other.body.data.workspace.id;
    const list = await api.get('/v1/workspaces', { token: other.body.data.session.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: { name: string }) => w.name)).toEqual(['Sales']);
    const foreign = await api.get(`/v1/workspaces/${ws}/api-keys`, { token: other.body.data.session.token });
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(403);
  });

  it('creates an API key, which then reads the workspace, its channels and content, is listed, and stops at its revocation', async () => {
    const created = await api.post(`/v1/workspaces/${ws}/api-keys`, { name: 'Getting started', workspaceIds: [ws], role: 'manager' }, { token: session });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key: string = created.body.data.key;
    expect(key).toMatch(/^prk_/);
    const withKey = await api.get('/v1/workspaces', { token: key });
    expect(withKey.status, JSON.stringify(withKey.body)).toBe(200);
    expect(withKey.body.data).toEqual([expect.objectContaining({ id: ws, role: 'manager' })]);
    const listed = await api.get(`/v1/workspaces/${ws}/api-keys`, { token: session });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([created.body.data.id]);
    // The lists a key reads first: channels and content (empty on a new workspace).
    const channels = await api.get(`/v1/workspaces/${ws}/integrations`, { token: key });
    expect(channels.status, JSON.stringify(channels.body)).toBe(200);
    expect(channels.body.data).toEqual([]);
    const content = await api.get(`/v1/workspaces/${ws}/content?status=scheduled`, { token: key });
    expect(content.status, JSON.stringify(content.body)).toBe(200);
    expect(content.body).toMatchObject({ data: [], meta: { total: 0, hasMore: false } });
    const revoked = await api.delete(`/v1/workspaces/${ws}/api-keys/${created.body.data.id}`, { token: session });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect((await api.get('/v1/workspaces', { token: key })).status).toBe(401);
  });

  it('connects a sandbox channel, which is then listed and read with its connection state', async () => {
    // The channel is written as the api functions' owner and answered by helpers that run as it
    // (migration 000055): Citus refuses a shard written in the transaction by another role.
    const created = await api.post(`/v1/workspaces/${ws}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Acme on X (sandbox)' }, { token: session });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ connector: 'sandbox', platform: 'x', connectionState: 'ok', rules: expect.any(Object) });
    const listed = await api.get(`/v1/workspaces/${ws}/integrations`, { token: session });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([created.body.data.id]);
    const read = await api.get(`/v1/workspaces/${ws}/integrations/${created.body.data.id}`, { token: session });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data).toMatchObject({ id: created.body.data.id, name: 'Acme on X (sandbox)', connectionState: 'ok' });
    channel = created.body.data.id;
  });

  it('writes a draft for the channel, which the content list and the content route show', async () => {
    // The edition's triggers run on its workspace's shard and read only that shard (000056, 000057):
    // the channel, the version record, the list counters, the grid tile.
    const created = await api.post(`/v1/workspaces/${ws}/content`, { intent: 'draft', caption: 'Hello from Pressroom', channels: [{ integrationId: channel }] }, { token: session });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const edition = created.body.data.editions[0];
    expect(edition).toMatchObject({ status: 'draft', integrationId: channel });
    const list = await api.get(`/v1/workspaces/${ws}/content?status=draft`, { token: session });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body).toMatchObject({ data: [expect.objectContaining({ id: edition.id, caption: 'Hello from Pressroom', version: 1 })], meta: { total: 1 } });
    const read = await api.get(`/v1/workspaces/${ws}/content/${edition.id}`, { token: session });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data).toMatchObject({ id: edition.id, status: 'draft' });
  });

  it('schedules a post, and "publish now" one: their publish jobs are queued on the coordinator through the workspace\'s outbox', async () => {
    // The publish job is queued by a trigger on the workspace's shard, on a worker without
    // pg-boss: it goes to app.job_outbox there, and the request applies it before it commits (000058).
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await api.post(`/v1/workspaces/${ws}/content`, { intent: 'schedule', scheduledAt: at, caption: 'Hello from Pressroom', channels: [{ integrationId: channel }] }, { token: session });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);
    // Scheduled at the request's time, which the trigger on the worker reads too (000059).
    const now = await api.post(`/v1/workspaces/${ws}/content`, { intent: 'publish_now', caption: 'Now from Pressroom', channels: [{ integrationId: channel }] }, { token: session });
    expect(now.status, JSON.stringify(now.body)).toBe(201);
    const ids = [scheduled.body.data.editions[0].id, now.body.data.editions[0].id];
    const owner = new pg.Client({ connectionString: ownerUrl });
    await owner.connect();
    try {
      const jobs = await owner.query<{ id: string; state: string; start_after: Date; scheduled_at: Date }>(
        `select i.id, j.state::text as state, j.start_after, i.scheduled_at from app.content_items i
           join pgboss.job j on j.name = 'content.publish' and j.id = i.publish_job_id
          where i.workspace_id = $1 and i.id = any ($2::uuid[]) order by i.scheduled_at desc`, [ws, ids]);
      expect(jobs.rows.map((r) => r.id)).toEqual(ids);
      expect(jobs.rows[0]).toMatchObject({ state: 'created' });
      expect(jobs.rows[0].start_after.toISOString()).toBe(at);
      expect((await owner.query(`select count(*)::int as n from app.job_outbox`)).rows[0].n).toBe(0);
    } finally {
      await owner.end();
    }
    const list = await api.get(`/v1/workspaces/${ws}/content?status=scheduled`, { token: session });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data.map((c: { id: string }) => c.id).sort()).toEqual([...ids].sort());
    scheduledId = ids[0];
    nowId = ids[1];
  });

  it('a change made outside a request leaves its job operations in the outbox, which the worker\'s sweep applies', async () => {
    // As an operator's SQL would: the edition moved by an hour, on the coordinator, outside any request.
    const owner = new pg.Client({ connectionString: ownerUrl });
    await owner.connect();
    const pool = await openPool(ownerUrl, 2);
    let stop: (() => Promise<void>) | null = null;
    try {
      const before = (await owner.query<{ job: string }>(`select publish_job_id as job from app.content_items where workspace_id = $1 and id = $2`, [ws, scheduledId])).rows[0].job;
      const at = new Date(Date.now() + 7_200_000);
      await owner.query(`update app.content_items set scheduled_at = $3 where workspace_id = $1 and id = $2`, [ws, scheduledId, at]);
      const waiting = await owner.query<{ op: string; job_id: string }>(`select op, job_id from app.job_outbox where workspace_id = $1 order by seq`, [ws]);
      const after = (await owner.query<{ job: string }>(`select publish_job_id as job from app.content_items where workspace_id = $1 and id = $2`, [ws, scheduledId])).rows[0].job;
      expect(waiting.rows).toEqual([{ op: 'cancel', job_id: before }, { op: 'send', job_id: after }]);
      // The sweep the worker runs (server/jobs/worker.ts), on its own pool.
      stop = await startOutboxSweep(pool, createLogger('silent'), 200);
      const until = Date.now() + 15_000;
      while ((await owner.query(`select 1 from app.job_outbox where workspace_id = $1`, [ws])).rowCount! > 0) {
        if (Date.now() > until) throw new Error('the sweep did not apply the outbox within 15 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      const jobs = await owner.query<{ id: string; state: string; start_after: Date }>(
        `select id, state::text as state, start_after from pgboss.job where name = 'content.publish' and id = any ($1::uuid[]) order by created_on`, [[before, after]]);
      expect(jobs.rows.map((j) => [j.id, j.state])).toEqual([[before, 'cancelled'], [after, 'created']]);
      expect(jobs.rows[1].start_after.getTime()).toBe(at.getTime());
    } finally {
      await stop?.();
      await pool.end();
      await owner.end();
    }
  });
  it('the publishing worker publishes each workspace\'s "publish now" edition once, in one claim batch', async () => {
    // A second workspace's edition due at the same time: the worker's batch holds both, and the
    // claim and the record read and lock each workspace's rows on its own shard (000065).
    const ch = await api.post(`/v1/workspaces/${otherWs}/integrations`, { connector: 'sandbox', platform: 'bluesky', name: 'Other on Bluesky' }, { token: otherSession });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    const other = await api.post(`/v1/workspaces/${otherWs}/content`, { intent: 'publish_now', caption: 'Now from the other workspace', channels: [{ integrationId: ch.body.data.id }] }, { token: otherSession });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const otherId: string = other.body.data.editions[0].id;
    // The worker alone (RUN_API=false), as a deployment runs it beside the API processes.
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const v of ['APP_DATABASE_URL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'METRICS_PORT']) delete env[v];
    let workerLog = '';
    const worker = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], {
      cwd: ROOT,
      // One fetch loop: both due jobs come in its first batch (two loops may split them).
      env: { ...env, DATABASE_URL: ownerUrl, RUN_API: 'false', RUN_WORKER: 'true', ALLOW_SIGNUP: 'true', LOG_LEVEL: 'info', PUBLISH_FETCH_LOOPS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (c) => (workerLog += c));
    worker.stderr!.on('data', (c) => (workerLog += c));
    const owner = new pg.Client({ connectionString: ownerUrl });
    await owner.connect();
    try {
      const until = Date.now() + 60_000;
      const states = async () =>
        (await owner.query<{ id: string; status: string }>(
          `select id, status from app.content_items where (workspace_id, id) in (($1::uuid, $2::uuid), ($3::uuid, $4::uuid)) order by id`,
          [ws, nowId, otherWs, otherId])).rows;
      while ((await states()).some((r) => r.status !== 'sent')) {
        if (Date.now() > until) throw new Error(`not published within 60 s: ${JSON.stringify(await states())}\n${workerLog.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      for (const [space, id, token] of [[ws, nowId, session], [otherWs, otherId, otherSession]]) {
        const read = await api.get(`/v1/workspaces/${space}/content/${id}`, { token });
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.data).toMatchObject({ status: 'sent', permalink: expect.stringMatching(/^https:\/\/sandbox\./) });
        // Once: one attempt, one post on the platform, delivered once.
        const attempts = await owner.query(`select outcome from app.publish_attempts where workspace_id = $1 and content_item_id = $2`, [space, id]);
        expect(attempts.rows).toEqual([{ outcome: 'published' }]);
        const posts = await owner.query(`select deliveries from app.sandbox_posts where workspace_id = $1 and content_item_id = $2`, [space, id]);
        expect(posts.rows).toEqual([{ deliveries: 1 }]);
      }
      const batches = await owner.query(`select distinct claim_batch from app.publish_attempts where content_item_id = any ($1::uuid[])`, [[nowId, otherId]]);
      expect(batches.rowCount).toBe(1);
      // The edition scheduled for later is left alone.
      const later = await owner.query(`select status from app.content_items where workspace_id = $1 and id = $2`, [ws, scheduledId]);
      expect(later.rows).toEqual([{ status: 'scheduled' }]);
    } finally {
      await owner.end();
      const exited = new Promise((r) => worker.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
    }
  }, 120_000);
});
