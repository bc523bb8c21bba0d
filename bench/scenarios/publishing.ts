// Scenario "publishing": 10,000 editions published by the real publish
// worker (server/jobs/publish.ts, registerPublishJobs: batched claim, platform
// calls outside transactions, grouped records) in child processes (pg-boss on
// the owner URL, SQL as pressroom_worker through the app pool) through the
// sandbox connector (which records each post in app.sandbox_posts). Shapes:
//
//   at-once x1, at-once x2   all due at the same instant, 1 and 2 worker processes
//   100 integrations         all due at once, spread over 100 sandbox integrations,
//                            each limited (app.integration_publish_limits) to
//                            BENCH_PUBLISH_LIMIT_IN_FLIGHT in flight and
//                            BENCH_PUBLISH_LIMIT_PER_SECOND per 1 s window
//   spread over 60 s         due times evenly spread over one minute, 1 worker
//                            (what calendars produce)
//   100 webhooks, 100 ms     all due at once over 100 webhook integrations whose
//                            receiver (an HTTP server in this process, 127.0.0.1)
//                            answers each signed POST after BENCH_PUBLISH_PLATFORM_MS,
//                            1 and 2 workers: the platform's latency, not the cores,
//                            bounds each worker, as with real platforms
//
// Figures per run: lateness of each publication (sent_at - scheduled_at:
// p50/p90/p99/max) and editions published per second (editions / (last
// sent_at - first due time)); for the limited run, the most posts one
// integration started in one calendar second and the jobs put back by a limit.
//
// Fixture (per run, a fresh clone): one organization and workspace, the
// sandbox integration(s) (platform x, behavior succeed); BENCH_PUBLISH_EDITIONS
// (default 10,000) roots with one scheduled edition each, inserted by the
// superuser with `session_replication_role = replica` (no triggers, seconds
// instead of minutes), each edition's first version (as its creation records
// it), and for each edition the pg-boss job exactly as the
// content trigger (content_items_30_publish_job in db/schema.sql) writes it,
// with the queue's settings. The due time is set a few seconds after the
// workers are ready. Each worker runs with the server's defaults
// (PUBLISH_CONCURRENCY, PUBLISH_BATCH_SIZE, PUBLISH_FETCH_LOOPS;
// BENCH_PUBLISH_CONCURRENCY, BENCH_PUBLISH_BATCH_SIZE and
// BENCH_PUBLISH_FETCH_LOOPS override them), pg-boss polling every 0.5 s.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { cpuDelta, postmasterOf, procSeconds, snapshot } from '../lib/cpu.ts';
import { latencyStats, type LoadResult } from '../lib/load.ts';
import type { Row, ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, nodeBinary } from '../lib/stack.ts';
import { loadConfig } from '../../server/config.ts';
import { issueWebhookSecret } from '../../server/platforms/webhook.ts';

const EDITIONS = Math.max(1, Number(process.env.BENCH_PUBLISH_EDITIONS ?? 10_000));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_PUBLISH_CONCURRENCY ?? loadConfig({}).PUBLISH_CONCURRENCY));
const BATCH_SIZE = Math.max(1, Number(process.env.BENCH_PUBLISH_BATCH_SIZE ?? loadConfig({}).PUBLISH_BATCH_SIZE));
const FETCH_LOOPS = Math.max(1, Number(process.env.BENCH_PUBLISH_FETCH_LOOPS ?? loadConfig({}).PUBLISH_FETCH_LOOPS));
const LIMIT_IN_FLIGHT = Math.max(1, Number(process.env.BENCH_PUBLISH_LIMIT_IN_FLIGHT ?? 8));
const LIMIT_PER_SECOND = Math.max(1, Number(process.env.BENCH_PUBLISH_LIMIT_PER_SECOND ?? 20));
const PLATFORM_MS = Math.max(0, Number(process.env.BENCH_PUBLISH_PLATFORM_MS ?? 100));

interface Shape {
  label: string;
  workers: number;
  integrations: number;
  /** Due times evenly spread over this many seconds (0: all at one instant). */
  spreadSeconds: number;
  limited: boolean;
  /** Published through the webhook connector to a local receiver that answers after this many ms (else the sandbox). */
  platformMs?: number;
  /** Editions of another channel (sandbox, no limits) due this many seconds into the burst: are they held back? */
  bystanders?: { editions: number; afterSeconds: number };
}
const SHAPES: Shape[] = [
  { label: 'at once', workers: 1, integrations: 1, spreadSeconds: 0, limited: false },
  { label: 'at once', workers: 2, integrations: 1, spreadSeconds: 0, limited: false },
  { label: '100 integrations, limited', workers: 1, integrations: 100, spreadSeconds: 0, limited: true },
  { label: 'spread over 60 s', workers: 1, integrations: 1, spreadSeconds: 60, limited: false },
  // Diagnostic (BENCH_PUBLISH_SHAPES=4): the 100 channels without limits, to tell their cost from the limits'.
  { label: '100 integrations, no limits', workers: 1, integrations: 100, spreadSeconds: 0, limited: false },
  // 100 webhook channels (the connector allows 8 posts in flight per integration), due at once.
  { label: `100 webhooks, platform ${PLATFORM_MS} ms`, workers: 1, integrations: 100, spreadSeconds: 0, limited: false, platformMs: PLATFORM_MS },
  { label: `100 webhooks, platform ${PLATFORM_MS} ms`, workers: 2, integrations: 100, spreadSeconds: 0, limited: false, platformMs: PLATFORM_MS },
  // Diagnostic (BENCH_PUBLISH_SHAPES=7): one webhook channel, so 8 in flight bound the burst and most claims put
  // jobs back; 100 editions of another channel fall due 5 s into it.
  { label: `1 webhook, platform ${PLATFORM_MS} ms`, workers: 1, integrations: 1, spreadSeconds: 0, limited: false, platformMs: PLATFORM_MS,
    bystanders: { editions: 100, afterSeconds: 5 } },
];
const SHAPE_FILTER = process.env.BENCH_PUBLISH_SHAPES ?? '0,1,2,3,5,6'; // e.g. "0,3": run only those
// 1: per-function profile of the publishing window (track_functions = 'all', pg_stat_user_functions) in the JSON.
const PROFILE = process.env.BENCH_PUBLISH_PROFILE === '1';

const CHILD = (root: string) => `
import { PgBoss } from ${JSON.stringify(pathToFileURL(path.join(root, 'node_modules/pg-boss/dist/index.js')).href)};
import { loadConfig } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/config.ts')).href)};
import { openPool } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/db/pool.ts')).href)};
import { createLogger } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/log.ts')).href)};
import { registerPublishJobs } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/jobs/publish.ts')).href)};
import { createAppDeps } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/deps.ts')).href)};
const [ownerUrl, appUrl, concurrency, batchSize, fetchLoops] = process.argv.slice(2);
// The webhook shapes' receiver listens on 127.0.0.1.
const config = loadConfig({ LOG_LEVEL: 'silent' }, { PUBLISH_CONCURRENCY: Number(concurrency), PUBLISH_BATCH_SIZE: Number(batchSize), PUBLISH_FETCH_LOOPS: Number(fetchLoops), WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
const pool = await openPool(appUrl, 8);
const boss = new PgBoss({ connectionString: ownerUrl, schema: 'pgboss', max: 4, superviseIntervalSeconds: 15 });
boss.on('error', () => {});
await boss.start();
await registerPublishJobs(boss, createAppDeps({ pool, config, log: createLogger('silent') }), { pollingIntervalSeconds: 0.5 });
process.stdout.write('ready\\n');
`;

function startWorker(script: string, ownerUrl: string, appUrl: string): Promise<ChildProcess> {
  const child = spawn(nodeBinary(), [script, ownerUrl, appUrl, String(CONCURRENCY), String(BATCH_SIZE), String(FETCH_LOOPS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`publish worker exited (${code}): ${err}`)));
  });
}

/**
 * A platform that answers each webhook POST after `delayMs`, as the webhook connector expects
 * (2xx with `id` and `permalink`), counting deliveries per message id (the `webhook-id` header,
 * the same for every re-send of one publication).
 */
async function startReceiver(delayMs: number) {
  const deliveries = new Map<string, number>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      const n = (deliveries.get(id) ?? 0) + 1;
      deliveries.set(id, n);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `${id}-${n}`, permalink: `https://platform.example.test/p/${encodeURIComponent(id)}` }));
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    posts: () => deliveries.size,
    duplicates: () => [...deliveries.values()].filter((n) => n > 1).length,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

async function runOnce(ctx: ScenarioContext, shape: Shape, script: string) {
  const { cleanup, log } = ctx;
  const { workers } = shape;
  const tag = `publishing ${shape.label} x${workers}`;
  const receiver = shape.platformMs === undefined ? null : await startReceiver(shape.platformMs);
  const closeReceiver = receiver ? cleanup.add('stop the webhook receiver', () => receiver.close()) : async () => {};
  const db = await cloneForBench(ctx.cluster, cleanup, `publishing_${workers}_${shape.integrations}_${shape.spreadSeconds}`);
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  try {
    log(`${tag}: fixture of ${EDITIONS} scheduled editions`);
    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    const [{ org, ws }] = (
      await owner.query(`
      with o as (insert into app.organizations (name, plan) values ('Bench org', 'basic') returning id),
           w as (insert into app.workspaces (organization_id, name) select id, 'Bench ws' from o returning id, organization_id)
      select (select id from o) org, (select id from w) ws`)
    ).rows;
    const igs = (
      await owner.query(
        receiver
          ? `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
             select $1, $2, 'webhook', 'x', 'Bench webhook ' || n, $4, $5 from generate_series(1, $3::int) n returning id`
          : `insert into app.integrations (organization_id, workspace_id, connector, platform, name, settings)
             select $1, $2, 'sandbox', 'x', 'Bench sandbox ' || n, '{"behavior":"succeed"}' from generate_series(1, $3::int) n returning id`,
        receiver ? [org, ws, shape.integrations, receiver.url, issueWebhookSecret()] : [org, ws, shape.integrations],
      )
    ).rows.map((r) => r.id as string);
    if (shape.limited) {
      await owner.query(
        `insert into app.integration_publish_limits (integration_id, organization_id, workspace_id, max_in_flight, max_per_window, window_seconds)
         select id, organization_id, workspace_id, $2, $3, 1 from app.integrations where id = any($1::uuid[])`,
        [igs, LIMIT_IN_FLIGHT, LIMIT_PER_SECOND],
      );
    }
    // Due far ahead for now; moved to the real due time once the workers are ready.
    await owner.query(
      `with r as (
         insert into app.content_roots (organization_id, workspace_id, caption)
         select $1, $2, 'Bench post ' || n from generate_series(1, $4::int) n returning id),
       n as (select id, row_number() over () - 1 as k from r)
       insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
       select $1, $2, n.id, ($3::uuid[])[1 + n.k % cardinality($3::uuid[])], 'scheduled', now() + interval '1 day' from n`,
      [org, ws, igs, EDITIONS],
    );
    const bystanderIg = shape.bystanders
      ? (
          await owner.query(
            `with g as (insert into app.integrations (organization_id, workspace_id, connector, platform, name, settings)
                        values ($1, $2, 'sandbox', 'x', 'Bench bystander', '{"behavior":"succeed"}') returning id),
             r as (insert into app.content_roots (organization_id, workspace_id, caption)
                   select $1, $2, 'Bench bystander ' || n from generate_series(1, $3::int) n returning id),
             i as (insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
                   select $1, $2, r.id, g.id, 'scheduled', now() + interval '1 day' from r, g returning 1)
             select (select id from g) id, (select count(*) from i) n`,
            [org, ws, shape.bystanders.editions],
          )
        ).rows[0].id as string
      : null;
    const TOTAL = EDITIONS + (shape.bystanders?.editions ?? 0);
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
    // Each edition's grid tile, as scheduling places it (app.grid_place_editions): X is a feed-grid
    // platform, and the tiles are in time order (the due times below follow the editions' ids).
    await owner.query(
      `insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key)
       select organization_id, workspace_id, integration_id, id,
         app.grid_key_at(row_number() over (partition by integration_id order by id))
       from app.content_items where workspace_id = $1`,
      [ws],
    );
    // Each edition's first version, as creating it records (app.record_content_version): the move to
    // sent then compares with it instead of writing a first version.
    await owner.query(`select count(app.record_content_version(workspace_id, id, 'create')) from app.content_items where workspace_id = $1`, [ws]);
    await owner.query('commit');
    // Repeatable runs: nothing left for autovacuum to do on the fixture's tables during the
    // window (the cluster's CPU, autovacuum's included, is measured), and a checkpoint now
    // rather than one started by the fixture's WAL in the middle of the window.
    await owner.query('vacuum analyze');
    await owner.query('checkpoint');
    // Before the workers connect: their sessions count calls and time per function.
    if (PROFILE) await owner.query(`alter database "${db.name}" set track_functions = 'all'`);

    const children: ChildProcess[] = [];
    const stopAll = cleanup.add(`stop ${workers} publish worker(s)`, () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
    for (let i = 0; i < workers; i++) children.push(await startWorker(script, db.ownerUrl, db.appUrl));

    // CPU of the cluster (postmaster and children) and of the workers over the publishing window.
    const [{ pid, dir }] = (await owner.query(`select pg_backend_pid() pid, current_setting('data_directory') dir`)).rows;
    const postgresPid = postmasterOf(Number(pid), dir);
    // With pg_stat_statements preloaded on the cluster (shared_preload_libraries), its statements too.
    const statements =
      PROFILE && (await owner.query(`select current_setting('shared_preload_libraries') ~ 'pg_stat_statements' as on`)).rows[0].on;
    if (PROFILE) await owner.query('select pg_stat_reset()');
    if (statements) await owner.query('create extension if not exists pg_stat_statements; select pg_stat_statements_reset()');
    const workerSeconds = () => children.reduce((t, c) => t + (procSeconds(c.pid!) ?? 0), 0);

    // Due 3 s from now, at one instant or evenly spread (triggers off: the jobs are moved here).
    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    const [{ due }] = (
      await owner.query(
        `with t as (select date_trunc('second', clock_timestamp()) + interval '3 s' as due),
         n as (select id, row_number() over (order by id) - 1 as k from app.content_items where workspace_id = $1),
         u as (update app.content_items i set scheduled_at = t.due + (n.k * $2::float8 / $3::int) * interval '1 s'
                 + case when i.integration_id = $4::uuid then $5::float8 * interval '1 s' else interval '0' end
               from t, n where i.id = n.id returning i.id, i.publish_job_id, i.scheduled_at),
         v as (update pgboss.job j set start_after = u.scheduled_at from u
               where j.id = u.publish_job_id and j.name = 'content.publish' returning 1)
         select (select due from t) due, (select count(*) from u) items, (select count(*) from v) jobs`,
        [ws, shape.spreadSeconds, EDITIONS, bystanderIg, shape.bystanders?.afterSeconds ?? 0],
      )
    ).rows;
    await owner.query('commit');
    log(`${tag}: ${EDITIONS} editions due from ${due.toISOString()}${shape.spreadSeconds ? ` over ${shape.spreadSeconds} s` : ''}`);
    // The CPU window opens at the due time (before it the workers only poll) and closes when the
    // last edition is seen sent (polled every 100 ms), so "machine busy" is the publishing's own.
    await new Promise((r) => setTimeout(r, Math.max(0, due.getTime() - Date.now())));
    const cpuStart = snapshot({ serverPid: null, postgresPid });
    const workersStart = workerSeconds();
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const [{ n }] = (await owner.query(`select count(*)::int n from app.content_items where workspace_id = $1 and status <> 'scheduled'`, [ws])).rows;
      if (n >= TOTAL) break;
      if (Date.now() > deadline) throw new Error(`${tag}: only ${n} of ${TOTAL} published after 30 min`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const cpu = cpuDelta(cpuStart, snapshot({ serverPid: null, postgresPid }));
    const workersCpu = workerSeconds() - workersStart;
    await stopAll();
    let profile: { name: string; calls: number; selfMs: number; totalMs: number }[] = [];
    if (PROFILE) {
      await new Promise((r) => setTimeout(r, 1500)); // the workers' backends flush their statistics on exit
      profile = (
        await owner.query(
          `select schemaname || '.' || funcname as name, calls::int, round(self_time::numeric, 1)::float8 as "selfMs",
                  round(total_time::numeric, 1)::float8 as "totalMs"
           from pg_stat_user_functions order by self_time desc limit 40`,
        )
      ).rows;
      for (const f of profile)
        log(`  ${f.name.padEnd(48)} calls ${String(f.calls).padStart(7)}  self ${(f.selfMs / EDITIONS).toFixed(3)} ms/ed  total ${(f.totalMs / EDITIONS).toFixed(3)} ms/ed`);
      if (statements) {
        const top = (
          await owner.query(
            `select calls::int, toplevel, round(total_exec_time::numeric, 1)::float8 as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
             from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
             order by total_exec_time desc limit 30`,
          )
        ).rows;
        for (const t of top) log(`  ${(t.ms / EDITIONS).toFixed(3)} ms/ed ${String(t.calls).padStart(7)} calls ${t.toplevel ? 'top' : 'nested'} ${t.query}`);
        profile.push(...top.map((t) => ({ name: `statement: ${t.query}`, calls: t.calls, selfMs: t.ms, totalMs: t.ms })));
      }
    }

    const rows = (
      await owner.query(
        `select extract(epoch from (sent_at - scheduled_at)) * 1000 as late_ms, status, integration_id is not distinct from $2::uuid as bystander
         from app.content_items where workspace_id = $1`,
        [ws, bystanderIg],
      )
    ).rows;
    const [{ posts, duplicates, last }] = (
      await owner.query(
        `select count(*)::int posts, count(*) filter (where deliveries > 1)::int duplicates,
                (select extract(epoch from (max(sent_at) - min(scheduled_at))) from app.content_items
                 where workspace_id = $1 and integration_id is distinct from $2::uuid) last
         from app.sandbox_posts where workspace_id = $1 and integration_id is distinct from $2::uuid`,
        [ws, bystanderIg],
      )
    ).rows;
    const received = receiver ? { posts: receiver.posts(), duplicates: receiver.duplicates() } : { posts, duplicates };
    const late = Float64Array.from(rows.filter((r) => r.status === 'sent' && !r.bystander).map((r) => Number(r.late_ms)));
    const bystanders = shape.bystanders
      ? { ...shape.bystanders, sent: rows.filter((r) => r.status === 'sent' && r.bystander).length,
          lateness: latencyStats(Float64Array.from(rows.filter((r) => r.status === 'sent' && r.bystander).map((r) => Number(r.late_ms)))) }
      : null;
    const sent = late.length;
    // Limits: the most attempts one integration started in one calendar second (a fixed
    // window of 1 s not aligned to seconds allows up to twice the limit across a boundary).
    const [{ max_per_second }] = (
      await owner.query(
        `select coalesce(max(n), 0)::int max_per_second from (
           select count(*) n from app.publish_attempts where workspace_id = $1 group by integration_id, date_trunc('second', started_at)) s`,
        [ws],
      )
    ).rows;
    const attempts = Number((await owner.query(`select count(*)::int n from app.publish_attempts where workspace_id = $1`, [ws])).rows[0].n);
    const [{ batches, avg_batch }] = (
      await owner.query(
        `select count(distinct claim_batch)::int batches, round(count(*)::numeric / nullif(count(distinct claim_batch), 0), 1)::float8 avg_batch
         from app.publish_attempts where workspace_id = $1`,
        [ws],
      )
    ).rows;
    return {
      shape: shape.label, connector: receiver ? 'webhook' : 'sandbox', workers, integrations: shape.integrations, spreadSeconds: shape.spreadSeconds, limited: shape.limited,
      editions: EDITIONS, sent, failed: EDITIONS - sent, posts: received.posts, duplicates: received.duplicates, attempts, claimBatches: batches, avgClaimBatch: avg_batch,
      maxPerIntegrationSecond: max_per_second, bystanders,
      lastSeconds: Number(last), lateness: latencyStats(late),
      // Spread runs: the rate is bounded by the calendar, so editions/s is over the whole span.
      perSecond: sent / Number(last), database: db.name,
      // CPU milliseconds per edition over the window from the due time to the last edition.
      cpuMsPerEdition: { postgres: cpu.postgres === null ? null : (cpu.postgres * 1000) / EDITIONS, workers: (workersCpu * 1000) / EDITIONS },
      machineBusyCores: cpu.machine === null ? null : cpu.machine / cpu.wall,
      profile,
    };
  } finally {
    await closeOwner();
    await db.release();
    await closeReceiver();
  }
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const startedAt = new Date().toISOString();
  const tmp = mkdtempSync(path.join(tmpdir(), 'bench-publishing-'));
  const script = path.join(tmp, 'worker.mjs');
  writeFileSync(script, CHILD(path.resolve('.')));
  const removeTmp = ctx.cleanup.add('remove the worker script', () => rmSync(tmp, { recursive: true, force: true }));
  const runs = [];
  try {
    const wanted = new Set(SHAPE_FILTER.split(',').map(Number));
    for (const [i, shape] of SHAPES.entries()) if (wanted.has(i)) runs.push(await runOnce(ctx, shape, script));
  } finally {
    await removeTmp();
  }
  const rows: Row[] = runs.map((r) => ({
    group: `publish ${r.editions} ${r.shape}`,
    side: `${r.workers} worker${r.workers > 1 ? 's' : ''}`,
    what: `lateness (sent_at - scheduled_at) of ${r.editions} editions; req/s = editions published per second until the last one`,
    result: {
      concurrency: CONCURRENCY * r.workers,
      seconds: r.lastSeconds,
      slices: 1,
      requests: r.sent,
      errors: r.failed,
      rps: r.perSecond,
      latency: r.lateness,
      cpu: { cores: ctx.machine.cpus, machineBusyCores: null, otherCores: null, perRequestMs: { bench: NaN, server: null, postgres: null } },
    } satisfies LoadResult,
  }));
  return {
    scenario: 'publishing',
    description: publishing.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs: ctx.knobs,
    machine: ctx.machine,
    setup: { editions: EDITIONS, concurrencyPerWorker: CONCURRENCY, batchSize: BATCH_SIZE, fetchLoops: FETCH_LOOPS, limits: { inFlight: LIMIT_IN_FLIGHT, perSecond: LIMIT_PER_SECOND }, connector: `sandbox (succeed); webhook shapes: a local receiver answering after ${PLATFORM_MS} ms`, runs },
    rows,
    ratios: [],
    notes: runs.map(
      (r) =>
        `${r.shape}, ${r.workers} worker(s), ${r.integrations} integration(s): ${r.sent}/${r.editions} sent, last ${r.lastSeconds.toFixed(1)} s after the first due time; ` +
        `lateness p50 ${(r.lateness.p50 / 1000).toFixed(2)} s, p99 ${(r.lateness.p99 / 1000).toFixed(2)} s; ${r.perSecond.toFixed(0)} editions/s; ` +
        `${r.connector === 'webhook' ? 'webhook posts' : 'sandbox posts'} ${r.posts}, re-sent ${r.duplicates}; ${r.attempts} attempts in ${r.claimBatches} claim batches (avg ${r.avgClaimBatch}); ` +
        `CPU per edition: PostgreSQL ${r.cpuMsPerEdition.postgres?.toFixed(3) ?? '-'} ms, worker(s) ${r.cpuMsPerEdition.workers.toFixed(3)} ms; machine busy ${r.machineBusyCores?.toFixed(2) ?? '-'} cores` +
        (r.bystanders
          ? `; another channel's ${r.bystanders.editions} editions due ${r.bystanders.afterSeconds} s into the burst: ${r.bystanders.sent} sent, lateness p50 ${(r.bystanders.lateness.p50 / 1000).toFixed(2)} s, p99 ${(r.bystanders.lateness.p99 / 1000).toFixed(2)} s`
          : '') +
        (r.limited ? `; limits ${LIMIT_IN_FLIGHT} in flight, ${LIMIT_PER_SECOND}/s per integration: at most ${r.maxPerIntegrationSecond} attempts of one integration in one calendar second` : ''),
    ),
  };
}

export const publishing: Scenario = {
  name: 'publishing',
  description: `${EDITIONS} editions: due at one instant (1 and 2 workers), over 100 limited integrations, spread over one minute, to a webhook platform answering in ${PLATFORM_MS} ms (1 and 2 workers): publication lateness and editions/s`,
  run,
};
