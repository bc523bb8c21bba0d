// Scenario "platforms": the real-platform connectors at a realistic platform
// latency, against the local fakes of the tests (tests/support/fakes/mastodon.ts,
// x.ts), which run in the bench process on 127.0.0.1 and answer every request
// BENCH_PLATFORMS_LATENCY_MS (150) after it took effect.
//
//   publish   BENCH_PLATFORMS_EDITIONS (2,000) text editions due at one instant,
//             spread over BENCH_PLATFORMS_INTEGRATIONS (100) connected accounts
//             of one platform, published by the real publish worker
//             (server/jobs/publish.ts in child processes, as the publishing
//             scenario runs it, with the accounts' encrypted credentials),
//             Mastodon and X, 1 worker and 2 workers, each worker with
//             PUBLISH_CONCURRENCY = BENCH_PLATFORMS_CONCURRENCY (64): at 150 ms a
//             call, 64 calls in flight allow about 400 editions/s per worker, so
//             the platform's latency is not what bounds it. The connectors' own
//             limits stay as they are (Mastodon 2 posts in flight per account, X 1
//             and 100 per 15 minutes): 100 accounts give 200 and 100 slots.
//   refresh   BENCH_PLATFORMS_REFRESH (1,000) X integrations whose access tokens
//             expire in the same minute (10 to 11 minutes from now, so all are due
//             for refresh at once: app.credentials_due), refreshed by the refresh
//             job as deployed (server/jobs/credentials.ts: pg-boss cron every
//             minute, REFRESH_BATCH per run) in 2 worker processes, against the X
//             fake, which rotates refresh tokens (a spent one is refused). Then
//             every integration is checked: its stored refresh token is the live
//             one at X (tokenState), the previous one is spent, and one call with
//             its stored access token (GET /2/users/me) works.
//   overlap   (diagnostic) two runs of the refresh job's work (refreshDue) started
//             at the same instant over REFRESH_BATCH grants due at once: no grant
//             may be lost; the token calls show how many were refreshed twice.
//
// Figures: editions/s from the due time to the last edition sent, lateness,
// CPU per edition of PostgreSQL and of the workers (as the publishing
// scenario measures them), posts made on the fake and duplicates; for the
// refresh, the time from due to the last refresh, each job run's duration,
// refreshes per second within a run, failures and grants lost.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { cpuDelta, postmasterOf, procSeconds, snapshot } from '../lib/cpu.ts';
import { latencyStats, type LoadResult } from '../lib/load.ts';
import type { Ratio, Row, ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, nodeBinary } from '../lib/stack.ts';
import { credentialPayload } from '../../server/platforms/credentials.ts';
import type { IntegrationCredentials } from '../../server/platforms/types.ts';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { REFRESH_BATCH } from '../../server/jobs/credentials.ts';
import { startFakeMastodon, type FakeMastodon } from '../../tests/support/fakes/mastodon.ts';
import { startFakeX, type FakeX } from '../../tests/support/fakes/x.ts';

const num = (name: string, def: number) => Math.max(1, Number(process.env[name] ?? def));
const EDITIONS = num('BENCH_PLATFORMS_EDITIONS', 2000);
const INTEGRATIONS = num('BENCH_PLATFORMS_INTEGRATIONS', 100);
const CONCURRENCY = num('BENCH_PLATFORMS_CONCURRENCY', 64);
const LATENCY_MS = Math.max(0, Number(process.env.BENCH_PLATFORMS_LATENCY_MS ?? 150));
const REFRESH = Math.max(0, Number(process.env.BENCH_PLATFORMS_REFRESH ?? 1000));
const PARTS = (process.env.BENCH_PLATFORMS_PARTS ?? 'publish,refresh,overlap').split(',');
const KEY = randomBytes(32);
const KEYS = `1:${KEY.toString('base64')}`;
const vault = new CredentialVault(new Map([[1, KEY]]), 'env');

type Platform = 'mastodon' | 'x';
const SHAPES: { platform: Platform; workers: number }[] = [
  { platform: 'mastodon', workers: 1 },
  { platform: 'mastodon', workers: 2 },
  { platform: 'x', workers: 1 },
  { platform: 'x', workers: 2 },
];

// One worker process: the publish jobs, or the refresh job as server/jobs/worker.ts registers it.
const CHILD = (root: string) => `
import { PgBoss } from ${JSON.stringify(pathToFileURL(path.join(root, 'node_modules/pg-boss/dist/index.js')).href)};
import { loadConfig } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/config.ts')).href)};
import { openPool } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/db/pool.ts')).href)};
import { createLogger } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/log.ts')).href)};
import { registerPublishJobs } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/jobs/publish.ts')).href)};
import { registerCredentialJobs } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/jobs/credentials.ts')).href)};
import { createAppDeps } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/deps.ts')).href)};
import { createCredentialService } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/platforms/credentials.ts')).href)};
const [ownerUrl, appUrl, mode, concurrency, xUrl, xId, xSecret, goAt] = process.argv.slice(2);
const config = loadConfig({ LOG_LEVEL: 'silent' }, {
  PUBLISH_CONCURRENCY: Number(concurrency), WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
  CREDENTIALS_KEYS: process.env.CREDENTIALS_KEYS, X_API_BASE_URL: xUrl, X_CLIENT_ID: xId, X_CLIENT_SECRET: xSecret,
});
const pool = await openPool(appUrl, 8);
if (mode === 'refresh-now') {
  // One run of the refresh job's work (what its handler calls), started at goAt (epoch ms).
  const service = createCredentialService({ pool, config, log: createLogger('silent') });
  process.stdout.write('ready\\n');
  await new Promise((r) => setTimeout(r, Math.max(0, Number(goAt) - Date.now())));
  const counts = await service.refreshDue(Number(concurrency));
  process.stdout.write('result ' + JSON.stringify(counts) + '\\n');
  await pool.end();
  process.exit(0);
}
const boss = new PgBoss({ connectionString: ownerUrl, schema: 'pgboss', max: 4, superviseIntervalSeconds: 15 });
boss.on('error', () => {});
await boss.start();
const deps = createAppDeps({ pool, config, log: createLogger('silent') });
if (mode === 'publish') await registerPublishJobs(boss, deps, { pollingIntervalSeconds: 0.5 });
else await registerCredentialJobs(boss, deps);
process.stdout.write('ready\\n');
`;

function startWorker(script: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(nodeBinary(), [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CREDENTIALS_KEYS: KEYS } });
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`worker exited (${code}): ${err}`)));
  });
}

/** Stores each integration's credential as connecting it does (app.credentials_put: encrypted, next refresh planned). */
async function storeCredentials(owner: pg.Client, items: { id: string; credentials: IntegrationCredentials; refreshable: boolean }[]) {
  const payload = items.map((c) => ({ id: c.id, credential: credentialPayload(vault, c.id, c.credentials, c.refreshable) }));
  await owner.query(`select count(app.credentials_put((e ->> 'id')::uuid, e -> 'credential')) from jsonb_array_elements($1::jsonb) e`, [JSON.stringify(payload)]);
}

async function newWorkspace(owner: pg.Client): Promise<{ org: string; ws: string }> {
  const [{ org, ws }] = (
    await owner.query(`
      with o as (insert into app.organizations (name, plan) values ('Bench org', 'basic') returning id),
           w as (insert into app.workspaces (organization_id, name) select id, 'Bench ws' from o returning id, organization_id)
      select (select id from o) org, (select id from w) ws`)
  ).rows;
  return { org, ws };
}

/** `n` connected accounts on the fake, as integrations with their stored credentials. */
async function connectAccounts(owner: pg.Client, org: string, ws: string, platform: Platform, n: number, fake: { mastodon?: FakeMastodon; x?: FakeX }, expiresAt: (k: number) => string) {
  const accounts: { accountId: string; username: string; credentials: IntegrationCredentials; refreshable: boolean }[] = [];
  for (let k = 0; k < n; k++) {
    if (platform === 'mastodon') {
      const a = fake.mastodon!.createAccount({ username: `bench${k}` });
      const accessToken = fake.mastodon!.issueToken(a.id);
      accounts.push({ accountId: a.id, username: a.username, refreshable: false,
        credentials: { accessToken, refreshToken: null, expiresAt: null, scopes: ['profile', 'read:statuses', 'write:statuses', 'write:media'], extra: { instanceUrl: fake.mastodon!.url } } });
    } else {
      const u = fake.x!.addUser({ username: `bench${k}` });
      const t = fake.x!.issueTokens(u.id);
      accounts.push({ accountId: u.id, username: u.username, refreshable: true,
        credentials: { accessToken: t.accessToken, refreshToken: t.refreshToken, expiresAt: expiresAt(k), scopes: ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'], extra: { userId: u.id, username: u.username } } });
    }
  }
  // Triggers off, as the publishing scenario's fixture (no plan limit on the bench's many accounts).
  await owner.query('begin');
  await owner.query(`set local session_replication_role = replica`);
  const ids = (
    await owner.query(
      `insert into app.integrations (organization_id, workspace_id, connector, platform, name, username, account_id, instance_url)
       select $1, $2, $3, $3, 'Bench ' || a.username, a.username, a.account_id, $5
       from jsonb_to_recordset($4::jsonb) as a(account_id text, username text, k int) order by a.k returning id, account_id`,
      [org, ws, platform, JSON.stringify(accounts.map((a, k) => ({ account_id: a.accountId, username: a.username, k }))), platform === 'mastodon' ? fake.mastodon!.url : null],
    )
  ).rows as { id: string; account_id: string }[];
  const byAccount = new Map(ids.map((r) => [r.account_id, r.id]));
  const out = accounts.map((a) => ({ ...a, id: byAccount.get(a.accountId)! }));
  await storeCredentials(owner, out);
  await owner.query('commit');
  return out;
}

async function publishOnce(ctx: ScenarioContext, shape: { platform: Platform; workers: number }, script: string) {
  const { cleanup, log } = ctx;
  const tag = `platforms ${shape.platform} x${shape.workers}`;
  const mastodon = shape.platform === 'mastodon' ? await startFakeMastodon({ latencyMs: LATENCY_MS, requestLimit: 1_000_000 }) : undefined;
  const x = shape.platform === 'x' ? await startFakeX({ latencyMs: LATENCY_MS }) : undefined;
  const closeFake = cleanup.add('stop the platform fake', () => (mastodon ?? x)!.close());
  const db = await cloneForBench(ctx.cluster, cleanup, `platforms_${shape.platform}_${shape.workers}`);
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  const children: ChildProcess[] = [];
  const stopAll = cleanup.add(`stop ${shape.workers} publish worker(s)`, () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  try {
    log(`${tag}: ${INTEGRATIONS} connected accounts, ${EDITIONS} scheduled editions`);
    const { org, ws } = await newWorkspace(owner);
    const accounts = await connectAccounts(owner, org, ws, shape.platform, INTEGRATIONS, { mastodon, x }, () => new Date(Date.now() + 2 * 3600_000).toISOString());
    const igs = accounts.map((a) => a.id);
    // The editions and their jobs, as the publishing scenario writes them (triggers off: seconds instead of minutes).
    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    await owner.query(
      `with r as (
         insert into app.content_roots (organization_id, workspace_id, caption)
         select $1, $2, 'Bench post ' || n || ' on ' || $5 from generate_series(1, $4::int) n returning id),
       n as (select id, row_number() over () - 1 as k from r)
       insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
       select $1, $2, n.id, ($3::uuid[])[1 + n.k % cardinality($3::uuid[])], 'scheduled', now() + interval '1 day' from n`,
      [org, ws, igs, EDITIONS, shape.platform],
    );
    await owner.query(
      `with q as (select * from pgboss.queue where name = 'content.publish'),
       j as (
         insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
           keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
         select gen_random_uuid(), 'content.publish',
           jsonb_build_object('contentId', i.id, 'workspaceId', i.workspace_id, 'version', i.version),
           0, i.scheduled_at, i.id::text, q.expire_seconds, q.deletion_seconds,
           i.scheduled_at + q.retention_seconds * interval '1 second', q.retry_limit, q.retry_delay, q.retry_backoff,
           q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds
         from app.content_items i, q where i.workspace_id = $1
         returning id, singleton_key)
       update app.content_items i set publish_job_id = j.id from j where i.id = j.singleton_key::uuid`,
      [ws],
    );
    await owner.query(`select count(app.record_content_version(workspace_id, id, 'create')) from app.content_items where workspace_id = $1`, [ws]);
    await owner.query('commit');
    await owner.query('vacuum analyze');
    await owner.query('checkpoint');

    for (let i = 0; i < shape.workers; i++) {
      children.push(await startWorker(script, [db.ownerUrl, db.appUrl, 'publish', String(CONCURRENCY), x?.url ?? 'http://127.0.0.1:1', x?.clientId ?? 'none', x?.clientSecret ?? 'none']));
    }
    const [{ pid, dir }] = (await owner.query(`select pg_backend_pid() pid, current_setting('data_directory') dir`)).rows;
    const postgresPid = postmasterOf(Number(pid), dir);
    const workerSeconds = () => children.reduce((t, c) => t + (procSeconds(c.pid!) ?? 0), 0);

    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    const [{ due }] = (
      await owner.query(
        `with t as (select date_trunc('second', clock_timestamp()) + interval '3 s' as due),
         u as (update app.content_items i set scheduled_at = t.due from t where i.workspace_id = $1 returning i.publish_job_id, i.scheduled_at),
         v as (update pgboss.job j set start_after = u.scheduled_at from u where j.id = u.publish_job_id and j.name = 'content.publish' returning 1)
         select (select due from t) due, (select count(*) from v) jobs`,
        [ws],
      )
    ).rows;
    await owner.query('commit');
    log(`${tag}: ${EDITIONS} editions due at ${due.toISOString()}`);
    await new Promise((r) => setTimeout(r, Math.max(0, due.getTime() - Date.now())));
    const cpuStart = snapshot({ serverPid: null, postgresPid });
    const workersStart = workerSeconds();
    const deadline = Date.now() + 20 * 60_000;
    for (;;) {
      const [{ n }] = (await owner.query(`select count(*)::int n from app.content_items where workspace_id = $1 and status <> 'scheduled'`, [ws])).rows;
      if (n >= EDITIONS) break;
      if (Date.now() > deadline) throw new Error(`${tag}: only ${n} of ${EDITIONS} published after 20 min`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const cpu = cpuDelta(cpuStart, snapshot({ serverPid: null, postgresPid }));
    const workersCpu = workerSeconds() - workersStart;
    await stopAll();

    const rows = (await owner.query(`select extract(epoch from (sent_at - scheduled_at)) * 1000 as late_ms, status from app.content_items where workspace_id = $1`, [ws])).rows;
    const [{ last }] = (await owner.query(`select extract(epoch from (max(sent_at) - min(scheduled_at))) last from app.content_items where workspace_id = $1`, [ws])).rows;
    const [{ attempts, batches, deferred }] = (
      await owner.query(
        `select count(*)::int attempts, count(distinct claim_batch)::int batches,
                (select count(*)::int from pgboss.job j join app.content_items i on i.publish_job_id = j.id where i.workspace_id = $1 and j.retry_count > 0) deferred
         from app.publish_attempts where workspace_id = $1`,
        [ws],
      )
    ).rows;
    const late = Float64Array.from(rows.filter((r) => r.status === 'sent').map((r) => Number(r.late_ms)));
    const sent = late.length;
    // What the platform got: posts made, and any text posted twice on one account.
    let posts = 0;
    let duplicates = 0;
    let postCalls = 0;
    for (const a of accounts) {
      const texts = mastodon ? mastodon.statusesOf(a.accountId).map((s) => s.text) : x!.postsBy(a.accountId).map((t) => t.text);
      posts += texts.length;
      duplicates += texts.length - new Set(texts).size;
    }
    postCalls = mastodon ? mastodon.callsTo('POST', '/api/v1/statuses').length : x!.callsTo('POST', '/2/tweets').length;
    const calls = (mastodon ?? x)!.calls.length;
    return {
      platform: shape.platform, workers: shape.workers, editions: EDITIONS, sent, failed: EDITIONS - sent, posts, duplicates, postCalls, calls,
      attempts, claimBatches: batches, jobsPutBack: deferred, lastSeconds: Number(last), perSecond: sent / Number(last), lateness: latencyStats(late),
      cpuMsPerEdition: { postgres: cpu.postgres === null ? null : (cpu.postgres * 1000) / EDITIONS, workers: (workersCpu * 1000) / EDITIONS },
      machineBusyCores: cpu.machine === null ? null : cpu.machine / cpu.wall,
    };
  } finally {
    await stopAll();
    await closeOwner();
    await db.release();
    await closeFake();
  }
}

async function refreshOnce(ctx: ScenarioContext, script: string) {
  const { cleanup, log } = ctx;
  const WORKERS = 2;
  const x = await startFakeX({ latencyMs: LATENCY_MS });
  // The fake's token endpoint window (1,000 per 15 minutes for the app) is not what is measured here.
  x.setLimit('POST /2/oauth2/token', 1_000_000);
  const closeFake = cleanup.add('stop the X fake', () => x.close());
  const db = await cloneForBench(ctx.cluster, cleanup, 'platforms_refresh');
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  const children: ChildProcess[] = [];
  const stopAll = cleanup.add('stop the refresh workers', () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  try {
    log(`platforms refresh: ${REFRESH} X integrations whose tokens expire within the same minute`);
    const { org, ws } = await newWorkspace(owner);
    // Expiring 10 to 11 minutes from now: next_refresh_at (10 minutes before expiry) is now to a minute from now.
    const base = Date.now() + 10 * 60_000;
    const accounts = await connectAccounts(owner, org, ws, 'x', REFRESH, { x }, (k) => new Date(base + Math.floor((k * 60_000) / Math.max(REFRESH, 1))).toISOString());
    const [{ due_within }] = (
      await owner.query(`select extract(epoch from max(next_refresh_at) - min(next_refresh_at))::float8 due_within from app.integration_credentials where workspace_id = $1`, [ws])
    ).rows;
    const startedAt = new Date();
    for (let i = 0; i < WORKERS; i++) children.push(await startWorker(script, [db.ownerUrl, db.appUrl, 'refresh', '1', x.url, x.clientId, x.clientSecret]));
    const [{ pid, dir }] = (await owner.query(`select pg_backend_pid() pid, current_setting('data_directory') dir`)).rows;
    const postgresPid = postmasterOf(Number(pid), dir);
    const cpuStart = snapshot({ serverPid: null, postgresPid });
    log(`platforms refresh: ${WORKERS} workers with the refresh job (cron every minute, at most ${REFRESH_BATCH} a run); due within ${Number(due_within).toFixed(1)} s`);
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const [s] = (
        await owner.query(
          `select count(*) filter (where refreshed_at > $2)::int refreshed, count(*) filter (where refresh_failures > 0)::int failing,
                  (select count(*)::int from app.integrations where workspace_id = $1 and connection_state <> 'ok') reconnect
           from app.integration_credentials where workspace_id = $1`,
          [ws, startedAt],
        )
      ).rows;
      if (s.refreshed >= REFRESH) break;
      if (Date.now() > deadline) throw new Error(`platforms refresh: only ${s.refreshed} of ${REFRESH} refreshed after 30 min (${JSON.stringify(s)})`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const cpu = cpuDelta(cpuStart, snapshot({ serverPid: null, postgresPid }));
    await stopAll();
    const [t] = (
      await owner.query(
        `select extract(epoch from max(refreshed_at) - $2::timestamptz)::float8 as all_s,
                extract(epoch from max(refreshed_at) - min(refreshed_at))::float8 as span_s,
                count(*) filter (where refresh_failures > 0)::int failing,
                (select count(*)::int from app.integrations where workspace_id = $1 and connection_state <> 'ok') reconnect
         from app.integration_credentials where workspace_id = $1`,
        [ws, startedAt],
      )
    ).rows;
    const runs = (
      await owner.query(
        `select extract(epoch from (completed_on - started_on))::float8 s, output from pgboss.job
         where name = 'integrations.refresh-credentials' and state = 'completed' and started_on >= $1 order by started_on`,
        [startedAt],
      )
    ).rows as { s: number; output: Record<string, number> }[];
    const byState: Record<string, number> = {};
    for (const r of runs) for (const [k, v] of Object.entries(r.output ?? {})) byState[k] = (byState[k] ?? 0) + Number(v);
    // Every grant survived: the stored refresh token is the live one, the one it replaced is spent,
    // and one call with the stored access token works.
    const stored = (await owner.query(`select integration_id, ciphertext from app.integration_credentials where workspace_id = $1`, [ws])).rows;
    const now = new Map(stored.map((r) => [r.integration_id as string, vault.decryptJson<IntegrationCredentials>(`integration:${r.integration_id}`, r.ciphertext)]));
    let lost = 0;
    let oldAlive = 0;
    let callsFailed = 0;
    const queue = [...accounts];
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let a = queue.shift(); a; a = queue.shift()) {
          const c = now.get(a.id)!;
          if (!c.refreshToken || x.tokenState(c.refreshToken) !== 'live') lost++;
          if (x.tokenState(a.credentials.refreshToken!) === 'live') oldAlive++;
          const r = await fetch(`${x.url}/2/users/me`, { headers: { authorization: `Bearer ${c.accessToken}` } });
          const body = (await r.json()) as { data?: { id?: string } };
          if (r.status !== 200 || body.data?.id !== a.accountId) callsFailed++;
        }
      }),
    );
    const tokenCalls = x.callsTo('POST', '/2/oauth2/token').length;
    return {
      integrations: REFRESH, workers: WORKERS, dueWithinSeconds: Number(due_within), allRefreshedSeconds: Number(t.all_s), refreshSpanSeconds: Number(t.span_s),
      runs: runs.map((r) => ({ seconds: r.s, ...r.output })), outcomes: byState, tokenCalls, failing: t.failing, reconnectRequired: t.reconnect,
      grantsLost: lost, previousTokensStillLive: oldAlive, callsFailed,
      perSecondWithinRuns: runs.length ? (byState.ok ?? 0) / runs.reduce((s, r) => s + r.s, 0) : NaN,
      cpuMsPerRefresh: { postgres: cpu.postgres === null ? null : (cpu.postgres * 1000) / REFRESH },
    };
  } finally {
    await stopAll();
    await closeOwner();
    await db.release();
    await closeFake();
  }
}

/**
 * Diagnostic: two runs of the refresh job's work at the same instant (what happens when a run
 * is still working as the next minute's starts: a slow platform, a large backlog) over
 * REFRESH_BATCH grants due at once. Each grant must survive; the token calls show how many
 * were refreshed twice.
 */
async function overlapOnce(ctx: ScenarioContext, script: string) {
  const { cleanup, log } = ctx;
  const n = REFRESH_BATCH;
  const x = await startFakeX({ latencyMs: LATENCY_MS });
  x.setLimit('POST /2/oauth2/token', 1_000_000);
  const closeFake = cleanup.add('stop the X fake', () => x.close());
  const db = await cloneForBench(ctx.cluster, cleanup, 'platforms_overlap');
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  const children: ChildProcess[] = [];
  const stopAll = cleanup.add('stop the refresh runs', () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  try {
    log(`platforms overlap: two refresh runs at once over ${n} X grants due now`);
    const { org, ws } = await newWorkspace(owner);
    const accounts = await connectAccounts(owner, org, ws, 'x', n, { x }, () => new Date(Date.now() + 9 * 60_000).toISOString());
    const goAt = Date.now() + 3000;
    const results: Promise<Record<string, number>>[] = [];
    for (let i = 0; i < 2; i++) {
      const child = spawn(nodeBinary(), [script, db.ownerUrl, db.appUrl, 'refresh-now', String(n), x.url, x.clientId, x.clientSecret, String(goAt)], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CREDENTIALS_KEYS: KEYS },
      });
      children.push(child);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
      results.push(
        new Promise((resolve, reject) =>
          child.on('exit', (code) => {
            const line = out.split('\n').find((l) => l.startsWith('result '));
            if (code === 0 && line) resolve(JSON.parse(line.slice(7)));
            else reject(new Error(`refresh run exited (${code}): ${err}`));
          }),
        ),
      );
    }
    const outcomes = await Promise.all(results);
    const seconds = (Date.now() - goAt) / 1000;
    const stored = (await owner.query(`select integration_id, ciphertext from app.integration_credentials where workspace_id = $1`, [ws])).rows;
    const now = new Map(stored.map((r) => [r.integration_id as string, vault.decryptJson<IntegrationCredentials>(`integration:${r.integration_id}`, r.ciphertext)]));
    const lost = accounts.filter((a) => { const c = now.get(a.id)!; return !c.refreshToken || x.tokenState(c.refreshToken) !== 'live'; }).length;
    const [{ failing, reconnect }] = (
      await owner.query(
        `select count(*) filter (where refresh_failures > 0)::int failing,
                (select count(*)::int from app.integrations where workspace_id = $1 and connection_state <> 'ok') reconnect
         from app.integration_credentials where workspace_id = $1`,
        [ws],
      )
    ).rows;
    return { grants: n, runs: outcomes, seconds, tokenCalls: x.callsTo('POST', '/2/oauth2/token').length, grantsLost: lost, failing, reconnectRequired: reconnect };
  } finally {
    await stopAll();
    await closeOwner();
    await db.release();
    await closeFake();
  }
}

const noCpu = (cores: number) => ({ cores, machineBusyCores: null, otherCores: null, perRequestMs: { bench: NaN, server: null, postgres: null } });

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const startedAt = new Date().toISOString();
  const tmp = mkdtempSync(path.join(tmpdir(), 'bench-platforms-'));
  const script = path.join(tmp, 'worker.mjs');
  writeFileSync(script, CHILD(path.resolve('.')));
  const removeTmp = ctx.cleanup.add('remove the worker script', () => rmSync(tmp, { recursive: true, force: true }));
  const pubs = [];
  let refresh: Awaited<ReturnType<typeof refreshOnce>> | null = null;
  let overlap: Awaited<ReturnType<typeof overlapOnce>> | null = null;
  try {
    if (PARTS.includes('publish')) for (const s of SHAPES) pubs.push(await publishOnce(ctx, s, script));
    if (PARTS.includes('refresh') && REFRESH > 0) refresh = await refreshOnce(ctx, script);
    if (PARTS.includes('overlap')) overlap = await overlapOnce(ctx, script);
  } finally {
    await removeTmp();
  }
  const rows: Row[] = pubs.map((r) => ({
    group: `publish ${r.editions} to ${r.platform} (${LATENCY_MS} ms)`,
    side: `${r.workers} worker${r.workers > 1 ? 's' : ''}`,
    what: `lateness (sent_at - scheduled_at) of ${r.editions} editions over ${INTEGRATIONS} accounts; req/s = editions published per second until the last one`,
    result: { concurrency: CONCURRENCY * r.workers, seconds: r.lastSeconds, slices: 1, requests: r.sent, errors: r.failed, rps: r.perSecond, latency: r.lateness, cpu: noCpu(ctx.machine.cpus) } satisfies LoadResult,
  }));
  const ratios: Ratio[] = [];
  for (const p of ['mastodon', 'x'] as const) {
    const one = pubs.find((r) => r.platform === p && r.workers === 1);
    const two = pubs.find((r) => r.platform === p && r.workers === 2);
    if (one && two) ratios.push({ group: `publish to ${p}`, numerator: '2 workers', denominator: '1 worker', rps: two.perSecond / one.perSecond, p50: two.lateness.p50 / one.lateness.p50, p99: two.lateness.p99 / one.lateness.p99 });
  }
  const notes = pubs.map(
    (r) =>
      `${r.platform}, ${r.workers} worker(s), ${INTEGRATIONS} accounts, ${LATENCY_MS} ms a call: ${r.sent}/${r.editions} sent in ${r.lastSeconds.toFixed(1)} s, ${r.perSecond.toFixed(0)} editions/s ` +
      `(${(r.perSecond / r.workers).toFixed(0)} per worker); lateness p50 ${(r.lateness.p50 / 1000).toFixed(2)} s, p99 ${(r.lateness.p99 / 1000).toFixed(2)} s; ` +
      `posts on the fake ${r.posts}, posted twice ${r.duplicates}, post calls ${r.postCalls}, calls in all ${r.calls}; ${r.attempts} attempts in ${r.claimBatches} claim batches, ${r.jobsPutBack} jobs put back by a limit at least once; ` +
      `CPU per edition: PostgreSQL ${r.cpuMsPerEdition.postgres?.toFixed(3) ?? '-'} ms, worker(s) ${r.cpuMsPerEdition.workers.toFixed(3)} ms; machine busy ${r.machineBusyCores?.toFixed(2) ?? '-'} cores`,
  );
  if (refresh) {
    rows.push({
      group: `refresh ${refresh.integrations} X grants due in one minute (${LATENCY_MS} ms)`,
      side: `${refresh.workers} workers, cron`,
      what: 'seconds from the workers start (every grant due) to the last refresh stored; req/s = refreshes per second of job run time',
      result: { concurrency: 4, seconds: refresh.allRefreshedSeconds, slices: refresh.runs.length, requests: refresh.outcomes.ok ?? 0, errors: refresh.failing + refresh.reconnectRequired, rps: refresh.perSecondWithinRuns,
        latency: latencyStats(Float64Array.from(refresh.runs.map((r) => r.seconds * 1000))), cpu: noCpu(ctx.machine.cpus) } satisfies LoadResult,
    });
    notes.push(
      `refresh: ${refresh.integrations} X integrations due within ${refresh.dueWithinSeconds.toFixed(0)} s, ${refresh.workers} workers running the refresh job (cron every minute, at most ${REFRESH_BATCH} a run, 4 at a time): ` +
        `all refreshed ${refresh.allRefreshedSeconds.toFixed(0)} s after the workers started (first to last refresh ${refresh.refreshSpanSeconds.toFixed(0)} s) in ${refresh.runs.length} runs of ` +
        `${refresh.runs.map((r) => r.seconds.toFixed(1)).join(', ')} s (${refresh.perSecondWithinRuns.toFixed(1)} refreshes/s while a run works); outcomes ${JSON.stringify(refresh.outcomes)}; ` +
        `${refresh.tokenCalls} token calls; refresh failures ${refresh.failing}, reconnect_required ${refresh.reconnectRequired}, grants lost ${refresh.grantsLost}, ` +
        `replaced refresh tokens still live ${refresh.previousTokensStillLive}; one GET /2/users/me each with the stored token: ${refresh.integrations - refresh.callsFailed} ok, ${refresh.callsFailed} failed; ` +
        `PostgreSQL CPU per refresh ${refresh.cpuMsPerRefresh.postgres?.toFixed(3) ?? '-'} ms`,
    );
  }
  if (overlap) {
    notes.push(
      `overlap (diagnostic): two refresh runs started at the same instant over ${overlap.grants} X grants due at once: done in ${overlap.seconds.toFixed(1)} s, ` +
        `outcomes ${overlap.runs.map((r) => JSON.stringify(r)).join(' and ')}; ${overlap.tokenCalls} token calls for ${overlap.grants} grants ` +
        `(${overlap.tokenCalls - overlap.grants} refreshed a second time); refresh failures ${overlap.failing}, reconnect_required ${overlap.reconnectRequired}, grants lost ${overlap.grantsLost}`,
    );
  }
  return {
    scenario: 'platforms',
    description: platforms.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs: ctx.knobs,
    machine: ctx.machine,
    setup: { editions: EDITIONS, integrations: INTEGRATIONS, concurrencyPerWorker: CONCURRENCY, latencyMs: LATENCY_MS, refreshIntegrations: REFRESH, parts: PARTS, publish: pubs, refresh, overlap },
    rows,
    ratios,
    notes,
  };
}

export const platforms: Scenario = {
  name: 'platforms',
  description: `${EDITIONS} editions over ${INTEGRATIONS} connected Mastodon and X accounts on the fakes answering in ${LATENCY_MS} ms (1 and 2 workers); ${REFRESH} X grants due for refresh in one minute, refreshed by the refresh job with no grant lost`,
  run,
};
