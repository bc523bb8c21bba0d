// Scenario "publishing": 10,000 editions due at the same instant, published
// by the real publish worker (server/jobs/publish.ts, registerPublishJobs) in
// child processes (pg-boss on the owner URL, SQL as pressroom_worker through
// the app pool) through the sandbox connector (which records each post in
// app.sandbox_posts), with one worker process and with two.
//
// Figures per run: lateness of each publication (sent_at - scheduled_at:
// p50/p90/p99/max) and editions published per second (editions / (last
// sent_at - due time)).
//
// Fixture (per run, a fresh clone): one organization, workspace and sandbox
// integration (platform x, behavior succeed); BENCH_PUBLISH_EDITIONS
// (default 10,000) roots with one scheduled edition each, inserted by the
// superuser with `session_replication_role = replica` (no triggers, seconds
// instead of minutes), and for each edition the pg-boss job exactly as the
// content trigger (content_items_30_publish_job in db/schema.sql) writes it,
// with the queue's settings. The due time is set a few seconds after the
// workers are ready. Each worker runs PUBLISH_CONCURRENCY (default 8) jobs
// at a time, pg-boss polling every 0.5 s.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { latencyStats, type LoadResult } from '../lib/load.ts';
import type { Row, ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, nodeBinary } from '../lib/stack.ts';

const EDITIONS = Math.max(1, Number(process.env.BENCH_PUBLISH_EDITIONS ?? 10_000));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_PUBLISH_CONCURRENCY ?? 8));
const WORKER_COUNTS = [1, 2];

const CHILD = (root: string) => `
import { PgBoss } from ${JSON.stringify(pathToFileURL(path.join(root, 'node_modules/pg-boss/dist/index.js')).href)};
import { loadConfig } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/config.ts')).href)};
import { openPool } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/db/pool.ts')).href)};
import { createLogger } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/log.ts')).href)};
import { registerPublishJobs } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/jobs/publish.ts')).href)};
import { createAppDeps } from ${JSON.stringify(pathToFileURL(path.join(root, 'server/deps.ts')).href)};
const [ownerUrl, appUrl, concurrency] = process.argv.slice(2);
const config = loadConfig({ LOG_LEVEL: 'silent' }, { PUBLISH_CONCURRENCY: Number(concurrency) });
const pool = await openPool(appUrl, Number(concurrency) + 2);
const boss = new PgBoss({ connectionString: ownerUrl, schema: 'pgboss', max: 4, superviseIntervalSeconds: 15 });
boss.on('error', () => {});
await boss.start();
await registerPublishJobs(boss, createAppDeps({ pool, config, log: createLogger('silent') }), { pollingIntervalSeconds: 0.5 });
process.stdout.write('ready\\n');
`;

function startWorker(script: string, ownerUrl: string, appUrl: string): Promise<ChildProcess> {
  const child = spawn(nodeBinary(), [script, ownerUrl, appUrl, String(CONCURRENCY)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`publish worker exited (${code}): ${err}`)));
  });
}

async function runOnce(ctx: ScenarioContext, workers: number, script: string) {
  const { cleanup, log } = ctx;
  const db = await cloneForBench(ctx.cluster, cleanup, `publishing_${workers}`);
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  try {
    log(`publishing x${workers}: fixture of ${EDITIONS} scheduled editions`);
    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    const [{ org, ws, ig }] = (
      await owner.query(`
      with o as (insert into app.organizations (name, plan) values ('Bench org', 'basic') returning id),
           w as (insert into app.workspaces (organization_id, name) select id, 'Bench ws' from o returning id, organization_id),
           g as (insert into app.integrations (organization_id, workspace_id, connector, platform, name, settings)
                 select organization_id, id, 'sandbox', 'x', 'Bench sandbox', '{"behavior":"succeed"}' from w returning id)
      select (select id from o) org, (select id from w) ws, (select id from g) ig`)
    ).rows;
    // Due far ahead for now; moved to the real due time once the workers are ready.
    await owner.query(
      `with r as (
         insert into app.content_roots (organization_id, workspace_id, caption)
         select $1, $2, 'Bench post ' || n from generate_series(1, $4::int) n returning id)
       insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
       select $1, $2, r.id, $3, 'scheduled', now() + interval '1 day' from r`,
      [org, ws, ig, EDITIONS],
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
    await owner.query('commit');
    await owner.query('analyze');

    const children: ChildProcess[] = [];
    const stopAll = cleanup.add(`stop ${workers} publish worker(s)`, () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
    for (let i = 0; i < workers; i++) children.push(await startWorker(script, db.ownerUrl, db.appUrl));

    // Everything due at one instant, 3 s from now (triggers off: the jobs are moved here).
    await owner.query('begin');
    await owner.query(`set local session_replication_role = replica`);
    const [{ due }] = (
      await owner.query(
        `with t as (select date_trunc('second', clock_timestamp()) + interval '3 s' as due),
         u as (update app.content_items set scheduled_at = t.due from t where workspace_id = $1 returning 1),
         v as (update pgboss.job j set start_after = t.due from t, app.content_items i
               where i.workspace_id = $1 and j.id = i.publish_job_id and j.name = 'content.publish' returning 1)
         select (select due from t) due, (select count(*) from u) items, (select count(*) from v) jobs`,
        [ws],
      )
    ).rows;
    await owner.query('commit');
    log(`publishing x${workers}: ${EDITIONS} editions due at ${due.toISOString()}`);
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const [{ n }] = (await owner.query(`select count(*)::int n from app.content_items where workspace_id = $1 and status <> 'scheduled'`, [ws])).rows;
      if (n >= EDITIONS) break;
      if (Date.now() > deadline) throw new Error(`publishing x${workers}: only ${n} of ${EDITIONS} published after 30 min`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await stopAll();

    const rows = (
      await owner.query(
        `select extract(epoch from (sent_at - scheduled_at)) * 1000 as late_ms, status from app.content_items where workspace_id = $1`,
        [ws],
      )
    ).rows;
    const [{ posts, duplicates, last }] = (
      await owner.query(
        `select count(*)::int posts, count(*) filter (where deliveries > 1)::int duplicates,
                (select extract(epoch from (max(sent_at) - min(scheduled_at))) from app.content_items where workspace_id = $1) last
         from app.sandbox_posts where workspace_id = $1`,
        [ws],
      )
    ).rows;
    const late = Float64Array.from(rows.filter((r) => r.status === 'sent').map((r) => Number(r.late_ms)));
    const sent = late.length;
    return { workers, editions: EDITIONS, sent, failed: EDITIONS - sent, posts, duplicates, lastSeconds: Number(last), lateness: latencyStats(late), perSecond: sent / Number(last), database: db.name };
  } finally {
    await closeOwner();
    await db.release();
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
    for (const w of WORKER_COUNTS) runs.push(await runOnce(ctx, w, script));
  } finally {
    await removeTmp();
  }
  const rows: Row[] = runs.map((r) => ({
    group: 'publish 10k due at once',
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
    setup: { editions: EDITIONS, concurrencyPerWorker: CONCURRENCY, connector: 'sandbox (succeed)', runs },
    rows,
    ratios: [],
    notes: runs.map(
      (r) =>
        `${r.workers} worker(s): ${r.sent}/${r.editions} sent, last ${r.lastSeconds.toFixed(1)} s after the due time; ` +
        `lateness p50 ${(r.lateness.p50 / 1000).toFixed(1)} s, p99 ${(r.lateness.p99 / 1000).toFixed(1)} s; ${r.perSecond.toFixed(0)} editions/s; ` +
        `sandbox posts ${r.posts}, re-sent ${r.duplicates}`,
    ),
  };
}

export const publishing: Scenario = {
  name: 'publishing',
  description: `${EDITIONS} editions due at the same instant: publication lateness and editions/s, 1 and 2 workers`,
  run,
};
