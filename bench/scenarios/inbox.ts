// Scenario "inbox": inbound platform webhooks and the thread list.
//
// 1. Deliveries accepted per second by one API process (the server child,
//    RUN_WORKER=true as `npm start` runs it, so the fold job runs beside the
//    intake): signed Facebook Page deliveries (one new comment each, on 500
//    posts) POSTed to /v1/hooks/facebook/{integrationId}, 10% of them a
//    redelivery of an earlier one. Beside it, "direct": the same inserts
//    straight through the driver, i.e. the SQL the hook route sends
//    (api.inbox_hook_target, api.inbox_receive with the same events,
//    audit.record) on a pool of the same size, without HTTP, signature or
//    parsing.
// 2. Fold lag at that rate: for every event stored during (1), the time from
//    its receipt to its fold (inbox_events.folded_at - received_at), p50/p99.
// 3. The thread list (GET {ws}/inbox/threads?limit=25) of a workspace with
//    1,000 messages (20 threads) against one with 100,000 (2,000 threads),
//    written by the superuser; the ratio 100k/1k of p99 is the figure to hold
//    within 1.5.
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../../server/config.ts';
import { jsonResult, openPool, sql } from '../../server/db/pool.ts';
import { normalizeDelivery } from '../../server/inbox/normalize.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { latencyStats, loadOptions, measureSides, type LoadResult, type Op } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const APP_SECRET = 'bench-meta-app-secret-0123456789';
const DUPLICATE_EVERY = 10;
const POSTS = 500;

/** Deliveries numbered from a shared counter; every DUPLICATE_EVERY-th repeats an earlier one. */
class DeliveryStream {
  private n = 0;
  private readonly recent: string[] = [];
  private readonly prefix: string;
  constructor(prefix: string) {
    this.prefix = prefix;
  }
  next(): string {
    this.n++;
    if (this.n % DUPLICATE_EVERY === 0 && this.recent.length) return this.recent[(this.n * 7919) % this.recent.length];
    const t = 1_790_000_000 + this.n;
    const post = `900_${this.n % POSTS}`;
    const body = JSON.stringify({
      object: 'page',
      entry: [{ id: '900', time: t, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: `${post}_${this.prefix}${this.n}`, post_id: post, parent_id: post, from: { id: `u${this.n % 997}`, name: `Person ${this.n % 997}` }, message: `comment ${this.n}`, created_time: t } }] }],
    });
    if (this.recent.length < 1000) this.recent.push(body);
    else this.recent[this.n % 1000] = body;
    return body;
  }
}

const sign = (body: string) => `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}`;

function postOp(client: HttpClient, path: string, stream: DeliveryStream): Op {
  return client.requestOp('POST', path, 200, () => {
    const body = stream.next();
    return { headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-hub-signature-256': sign(body) }, body };
  });
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const config = loadConfig({ LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize) } as NodeJS.ProcessEnv);
  const db = await cloneForBench(ctx.cluster, cleanup, 'inbox');
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: { RUN_WORKER: 'true' } }, cleanup);
  log(`inbox: server pid ${server.pid} on ${server.baseUrl} (worker on); fixture through the API`);
  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Intake' },
  });
  const token: string = signup.data.session.token;
  const wsIntake: string = signup.data.workspace.id;
  const ws1k: string = (await jsonRequest(server.baseUrl, 'POST', '/v1/workspaces', { token, expect: 201, body: { name: 'Inbox 1k', timezone: 'UTC' } })).data.id;
  const ws100k: string = (await jsonRequest(server.baseUrl, 'POST', '/v1/workspaces', { token, expect: 201, body: { name: 'Inbox 100k', timezone: 'UTC' } })).data.id;
  const intake: string = (await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${wsIntake}/integrations`, { token, expect: 201, body: { connector: 'sandbox', platform: 'facebook', name: 'Bench page' } })).data.id;
  await jsonRequest(server.baseUrl, 'PUT', `/v1/workspaces/${wsIntake}/integrations/${intake}/inbox-hooks/facebook`, { token, body: { secret: APP_SECRET, verifyToken: 'bench-verify-token' } });

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());

  // 1. Intake.
  const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
  const httpStream = new DeliveryStream('h');
  const directStream = new DeliveryStream('d');
  const hookPath = `/v1/hooks/facebook/${intake}`;
  const directOp: Op = async () => {
    const body = directStream.next();
    const raw = Buffer.from(body);
    const started = performance.now();
    await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_target('facebook', ${intake}) as result`);
    const events = normalizeDelivery('facebook', raw, {}).events;
    await pool.oneFirst(sql.type(jsonResult)`select api.inbox_receive('facebook', ${intake}, ${sql.binary(raw)}, ${sql.jsonb({ 'x-hub-signature-256': sign(body) })},
      ${sql.jsonb(events as unknown as Parameters<typeof sql.jsonb>[0])}) as result`);
    await pool.query(sql.unsafe`select audit.record('platform_webhook', ${intake}, null, ${signup.data.organization.id}, ${wsIntake}, 'POST',
      '/v1/hooks/{source}/{integrationId}', 200, ${Number((performance.now() - started).toFixed(3))}, null, 'bench')`);
  };
  log(`inbox: intake, ${knobs.seconds} s per side, 1 in ${DUPLICATE_EVERY} a redelivery`);
  const intakeStart = (await owner.query('select clock_timestamp() t')).rows[0].t;
  try {
    const results = await measureSides(
      [
        { name: 'http', makeOp: () => postOp(client, hookPath, httpStream), onStart: () => log('inbox:   http') },
        { name: 'direct', makeOp: () => directOp, onStart: () => log('inbox:   direct') },
      ],
      loadOpts,
    );
    rows.push({ group: 'inbound delivery (10% redelivered)', side: 'http', what: `signed POST ${hookPath}: signature, raw storage, de-duplication, 200`, result: results.get('http')! });
    rows.push({ group: 'inbound delivery (10% redelivered)', side: 'direct', what: 'api.inbox_hook_target; api.inbox_receive; audit.record through slonik', result: results.get('direct')! });
  } finally {
    client.close();
  }

  // 2. Fold lag of what came in.
  log('inbox: waiting for the fold job to catch up');
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    const [{ n }] = (await owner.query(`select count(*)::int n from app.inbox_events where integration_id = $1 and folded_at is null`, [intake])).rows;
    if (n === 0) break;
    if (Date.now() > deadline) throw new Error(`inbox: ${n} events still unfolded after 10 min`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const lags = (await owner.query(`select extract(epoch from (folded_at - received_at)) * 1000 as ms from app.inbox_events where integration_id = $1 and received_at >= $2`, [intake, intakeStart])).rows;
  const lag = latencyStats(Float64Array.from(lags.map((r) => Number(r.ms))));
  const [{ events, threads }] = (await owner.query(`select (select count(*)::int from app.inbox_events where integration_id = $1) events, (select count(*)::int from app.inbox_threads where integration_id = $1) threads`, [intake])).rows;

  // 3. Thread lists of 1k and 100k messages.
  log('inbox: writing 1,000 and 100,000 messages');
  const fill = async (ws: string, threadCount: number, perThread: number) => {
    await owner.query(
      `with o as (select organization_id from app.workspaces where id = $1),
       i as (insert into app.integrations (organization_id, workspace_id, connector, platform, name) select organization_id, $1, 'sandbox', 'instagram', 'List bench' from o returning id, organization_id),
       t as (insert into app.inbox_threads (organization_id, workspace_id, integration_id, platform, kind, thread_key, participants, last_message_at, last_inbound_at, message_count)
             select i.organization_id, $1, i.id, 'instagram', 'comment', 'media-' || n, jsonb_build_array(jsonb_build_object('id', 'p' || n, 'name', 'Person ' || n)),
                    now() - n * interval '1 minute', now() - n * interval '1 minute', $3
             from i, generate_series(1, $2::int) n returning id, organization_id, integration_id, last_message_at)
       insert into app.inbox_messages (organization_id, workspace_id, integration_id, thread_id, direction, message_key, author, body, occurred_at)
       select t.organization_id, $1, t.integration_id, t.id, 'inbound', t.id || '-' || m, '{"id":"p","name":"P"}', 'message ' || m, t.last_message_at - m * interval '1 second'
       from t, generate_series(1, $3::int) m`,
      [ws, threadCount, perThread],
    );
  };
  await fill(ws1k, 20, 50);
  await fill(ws100k, 2000, 50);
  await owner.query('analyze');
  const lists = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
  try {
    const headers = { authorization: `Bearer ${token}` };
    const results = await measureSides(
      [
        { name: '1k', makeOp: () => lists.getOp(`/v1/workspaces/${ws1k}/inbox/threads?limit=25`, headers), onStart: () => log('inbox:   list 1k') },
        { name: '100k', makeOp: () => lists.getOp(`/v1/workspaces/${ws100k}/inbox/threads?limit=25`, headers), onStart: () => log('inbox:   list 100k') },
      ],
      loadOpts,
    );
    rows.push({ group: 'GET inbox/threads?limit=25', side: '1k', what: 'workspace with 1,000 messages in 20 threads', result: results.get('1k')! });
    rows.push({ group: 'GET inbox/threads?limit=25', side: '100k', what: 'workspace with 100,000 messages in 2,000 threads', result: results.get('100k')! });
  } finally {
    lists.close();
  }

  await closeOwner();
  await endPool();
  await server.release();
  await db.release();
  const lagRow: LoadResult = {
    concurrency: knobs.concurrency,
    seconds: NaN,
    slices: 1,
    requests: lags.length,
    errors: 0,
    rps: NaN,
    latency: lag,
    cpu: { cores: ctx.machine.cpus, machineBusyCores: null, otherCores: null, perRequestMs: { bench: NaN, server: null, postgres: null } },
  };
  rows.push({ group: 'fold lag', side: 'http+direct', what: 'inbox_events.folded_at - received_at of every event stored during the intake', result: lagRow });
  const ratios = [...ratiosFor(rows, 'http', 'direct'), ...ratiosFor(rows, '100k', '1k')];
  return {
    scenario: 'inbox',
    description: inbox.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { database: db.name, serverPid: server.pid, serverEnv: { RUN_WORKER: 'true', DB_POOL_SIZE: String(knobs.poolSize) }, duplicateEvery: DUPLICATE_EVERY, posts: POSTS, events, threads, config: { pool: config.DB_POOL_SIZE } },
    rows,
    ratios,
    notes: [
      'http: signed Facebook Page delivery through the hook route (raw body, HMAC check, normalize, api.inbox_receive, audit row), the fold job running in the same process.',
      'direct: the same SQL through slonik in this process, no HTTP, no signature; ratio http/direct = share of the database-side limit the route delivers.',
      `fold lag over ${lags.length} events: p50 ${lag.p50.toFixed(0)} ms, p99 ${lag.p99.toFixed(0)} ms (pg-boss polls every 0.5 s; one queued fold per integration).`,
      'thread list: ratio 100k/1k p99 is the figure to keep within 1.5 (keyset on inbox_threads_list_idx).',
    ],
  };
}

export const inbox: Scenario = {
  name: 'inbox',
  description: 'inbound webhook intake (HTTP vs driver, 10% redelivered), fold lag, thread list at 1k vs 100k messages',
  run,
};
