// Scenario "webhooks": lifecycle webhook delivery (server/jobs/lifecycle.ts).
//
// One pg-boss worker in this process (registerLifecycleJobs, localConcurrency
// 1, polling every 0.5 s as in production) delivers to a local receiver on
// 127.0.0.1 that answers 200 at once and notes when each webhook-id arrived.
// Events are written as the triggers write them: app.webhook_emit in a
// transaction of the superuser, one subscription wanting them.
//
// 1. Throughput: a backlog of BURST events committed in batches of 100, then
//    the time until the receiver has them all: events delivered per second by
//    one worker ("worker": batches of up to 50 claimed and recorded in one
//    transaction each, POSTed in order over one kept-alive connection). Beside it, "direct": the same signed POSTs
//    (standardwebhooks, one connection each) sent to the same receiver in a
//    loop, without the database (claim and record): the ratio worker/direct
//    is the share of the bare HTTP rate the delivery keeps.
// 2. Latency: PACED events, one per transaction every PACE_MS, and for each
//    the time from the return of its COMMIT to its arrival at the receiver,
//    p50/p99. The job returns once the queue is empty; the next event's
//    commit wakes the idle worker through LISTEN pressroom_webhooks (as
//    startWorker sets it up), pg-boss's 0.5 s polling being the floor.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { createAppDeps } from '../../server/deps.ts';
import { registerLifecycleJobs } from '../../server/jobs/lifecycle.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { createLogger } from '../../server/log.ts';
import { encryptSubscriptionSecret, newSubscriptionSecret } from '../../server/webhooks/secret.ts';
import { latencyStats, type LoadResult } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench } from '../lib/stack.ts';

// BENCH_WEBHOOKS_BURST, BENCH_WEBHOOKS_PACED: smaller runs while working on it.
const BURST = Number(process.env.BENCH_WEBHOOKS_BURST ?? 2000);
const PACED = Number(process.env.BENCH_WEBHOOKS_PACED ?? 300);
const PACE_MS = 20;

function resultOf(ctx: ScenarioContext, requests: number, seconds: number, samples: number[]): LoadResult {
  return {
    concurrency: 1,
    seconds,
    slices: 1,
    requests,
    errors: 0,
    rps: requests / seconds,
    latency: latencyStats(Float64Array.from(samples)),
    cpu: { cores: ctx.machine.cpus, machineBusyCores: null, otherCores: null, perRequestMs: { bench: NaN, server: null, postgres: null } },
  };
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { cleanup, knobs, log } = ctx;
  const startedAt = new Date().toISOString();
  const db = await cloneForBench(ctx.cluster, cleanup, 'webhooks');
  const config = loadConfig({ LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } as NodeJS.ProcessEnv);
  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('close the webhooks pool', () => pool.end());
  const deps = createAppDeps({ pool, config, log: createLogger('silent') });
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner client', () => owner.end());

  // The receiver: arrival time per webhook-id.
  const arrived = new Map<string, number>();
  let waiting: { n: number; resolve: () => void } | null = null;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.set(String(req.headers['webhook-id']), performance.now());
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
      if (waiting && arrived.size >= waiting.n) waiting.resolve();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const closeReceiver = cleanup.add('close the receiver', () => new Promise<void>((r) => receiver.close(() => r())));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const until = (n: number) => (arrived.size >= n ? Promise.resolve() : new Promise<void>((resolve) => (waiting = { n, resolve })));

  // A workspace with one subscription to content.created.
  const org = (await owner.query(`insert into app.organizations (name, plan) values ('Bench webhooks', 'standard') returning id`)).rows[0].id as string;
  const ws = (await owner.query(`insert into app.workspaces (organization_id, name) values ($1, 'Bench webhooks') returning id`, [org])).rows[0].id as string;
  const subId = (await owner.query(`select gen_random_uuid() as id`)).rows[0].id as string;
  const secret = newSubscriptionSecret();
  const ciphertext = await encryptSubscriptionSecret(deps.storage.secrets, subId, secret);
  await owner.query(
    `insert into app.webhook_subscriptions (id, organization_id, workspace_id, url, events, secret_ciphertext) values ($1, $2, $3, $4, array['content.created'], $5)`,
    [subId, org, ws, url, ciphertext],
  );
  const emit = (n: number) =>
    owner.query(
      `select app.webhook_emit($1, $2, 'content.created', gen_random_uuid(), jsonb_build_object('contentId', gen_random_uuid(), 'caption', 'bench', 'n', i))
       from generate_series(1, $3) i`,
      [org, ws, n],
    );

  const boss = new PgBoss({ connectionString: db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 10 });
  boss.on('error', () => {});
  await boss.start();
  const stopBoss = cleanup.add('stop pg-boss', () => boss.stop({ graceful: false, close: true, timeout: 2000 }));
  const rows: Row[] = [];

  // 1. Throughput: the backlog is committed first, then the worker starts.
  log('webhooks: burst');
  for (let i = 0; i < BURST; i += 100) await emit(Math.min(100, BURST - i));
  const t0 = performance.now();
  // as startWorker registers it: woken by the LISTEN on pressroom_webhooks at each commit
  const lifecycle = await registerLifecycleJobs(boss, deps, { pollingIntervalSeconds: 0.5, localConcurrency: 1, listenUrl: db.ownerUrl });
  const stopListening = cleanup.add('stop the wake-up listener', () => lifecycle.stop());
  await until(BURST);
  const burstSeconds = (performance.now() - t0) / 1000;
  rows.push({ group: `delivery of a ${BURST}-event backlog`, side: 'worker', what: 'one pg-boss worker: app.webhook_claim_batch (up to 50), signed POSTs in order over one kept-alive connection, app.webhook_record_attempts (one transaction per batch)', result: resultOf(ctx, BURST, burstSeconds, []) });

  log('webhooks: direct');
  const wh = new Webhook(secret);
  const body = JSON.stringify({ type: 'content.created', timestamp: new Date().toISOString(), workspaceId: ws, data: { contentId: subId, caption: 'bench' } });
  const t1 = performance.now();
  for (let i = 0; i < BURST; i++) {
    const id = `direct-${i}`;
    const now = new Date();
    await new Promise<void>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': wh.sign(id, now, body) },
      }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  const directSeconds = (performance.now() - t1) / 1000;
  rows.push({ group: `delivery of a ${BURST}-event backlog`, side: 'direct', what: 'the same signed POSTs in a loop from this process, no database', result: resultOf(ctx, BURST, directSeconds, []) });

  // 2. Commit-to-delivery latency, paced.
  log('webhooks: paced');
  const committed = new Map<string, number>();
  const before = arrived.size;
  for (let i = 0; i < PACED; i++) {
    const r = await owner.query(`select app.webhook_emit($1, $2, 'content.created', gen_random_uuid(), '{"paced": true}'::jsonb) as id`, [org, ws]);
    committed.set(r.rows[0].id as string, performance.now());
    await new Promise((r) => setTimeout(r, PACE_MS));
  }
  await until(before + PACED);
  const lags = [...committed].map(([id, at]) => arrived.get(id)! - at);
  const pacedSeconds = (PACED * PACE_MS) / 1000;
  rows.push({ group: 'commit to delivery', side: 'paced', what: `one event per transaction every ${PACE_MS} ms; time from COMMIT returning to arrival at the receiver`, result: resultOf(ctx, PACED, pacedSeconds, lags) });

  await stopListening();
  await stopBoss();
  await closeReceiver();
  await closeOwner();
  await endPool();
  await db.release();
  const lag = rows[2].result.latency;
  return {
    scenario: 'webhooks',
    description: webhooks.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { database: db.name, burst: BURST, paced: PACED, paceMs: PACE_MS, pollingIntervalSeconds: 0.5, localConcurrency: 1 },
    rows,
    ratios: ratiosFor(rows, 'worker', 'direct'),
    notes: [
      `worker: ${(BURST / burstSeconds).toFixed(0)} events/s delivered by one worker; direct (bare signed POSTs): ${(BURST / directSeconds).toFixed(0)}/s.`,
      `commit to delivery over ${PACED} paced events: p50 ${lag.p50.toFixed(0)} ms, p99 ${lag.p99.toFixed(0)} ms (the worker is woken by NOTIFY pressroom_webhooks at the commit; pg-boss's 0.5 s polling is the floor).`,
    ],
  };
}

export const webhooks: Scenario = {
  name: 'webhooks',
  description: 'lifecycle webhook delivery: events per second by one worker vs bare signed POSTs, commit-to-delivery p50/p99',
  run,
};
