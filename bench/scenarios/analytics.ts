// Scenario "analytics": do the analytics reads stay flat as a workspace grows?
// Two workspaces of one organization on one server:
//
//   large   10,000 sent editions, 1,000,000 metric snapshots (100 each)
//   small      100 sent editions,    10,000 metric snapshots (100 each)
//
// each with four sandbox channels, three tags, two campaigns and a year of
// account metrics. The same routes are timed on both, interleaved in slices,
// over HTTP:
//
//   GET {ws}/analytics/summary?from&to                      90 days, with the previous 90
//   GET {ws}/analytics/aggregates?from&to&interval=day      90 daily points
//   GET {ws}/analytics/aggregates?from&to&interval=day&groupBy=platform
//
// and the ratio large/small is the figure: the routes read the rollups
// (app.analytics_daily), whose size depends on days and channels, not on
// posts or snapshots, so p99 should stay well within 2x.
//
// The snapshots are inserted by the superuser with generate_series inside
// one transaction with `set local session_replication_role = replica`
// (triggers skipped: a million row triggers would take minutes), and the
// rollups then built in one pass by app.analytics_rebuild, which
// tests/db/93-analytics.test.sql proves equal to what the triggers keep.
import pg from 'pg';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const SIZES = { large: 10_000, small: 100 } as const;
const SNAPSHOTS_PER_POST = 100;
const CHANNELS = ['x', 'linkedin', 'instagram', 'facebook'];
const SERVER_ENV = {
  RATE_LIMIT_READ: '1000000000',
  RATE_LIMIT_WRITE: '1000000000',
  RATE_LIMIT_EXPENSIVE: '1000000000',
};

/**
 * One workspace's posts and snapshots. Post g is sent (g * 7919) minutes
 * into the last 360 days; its snapshot k (0..99) is captured k/100 of the way
 * from its sending to now, with counters growing towards figures fixed by
 * md5(g), so the data is the same on every run.
 */
const FIXTURE_SQL = `
with params as (
  select $1::uuid as org, $2::uuid as ws, $3::uuid[] as chans, $4::uuid[] as tags, $5::uuid[] as camps, $6::int as n
),
roots as (
  insert into app.content_roots (organization_id, workspace_id, caption, campaign_id)
  select p.org, p.ws, 'Bench post ' || g || ': what we shipped and why', case when g % 3 = 0 then p.camps[1 + g % 2] end
  from params p, generate_series(1, (select n from params)) g
  returning id, caption
),
numbered as (select r.id, row_number() over (order by r.id) as g from roots r),
tagged as (
  insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id)
  select n.id, p.tags[1 + n.g % 3], p.ws, p.org from numbered n, params p where n.g % 2 = 0
)
insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, sent_at, platform_post_id, permalink)
select p.org, p.ws, n.id, p.chans[1 + n.g % cardinality(p.chans)], 'sent',
       now() - make_interval(mins => ((n.g * 7919) % 518400)::int) - interval '1 hour',
       'bench-' || n.g, 'https://social.example.com/p/bench-' || n.g
from numbered n, params p
`;

const SNAPSHOTS_SQL = `
insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, day, source,
  impressions, reach, likes, comments, shares, saves, clicks, video_views)
select i.organization_id, i.workspace_id, i.id, i.integration_id, c.at, (c.at at time zone 'UTC')::date, 'sync',
       (f.imp * s.share)::bigint, (f.imp * 0.7 * s.share)::bigint, (f.imp * 0.05 * s.share)::bigint, (f.imp * 0.004 * s.share)::bigint,
       (f.imp * 0.006 * s.share)::bigint, (f.imp * 0.008 * s.share)::bigint, (f.imp * 0.02 * s.share)::bigint, (f.imp * 0.3 * s.share)::bigint
from app.content_items i
cross join lateral (select 200 + get_byte(decode(md5(i.id::text), 'hex'), 0) * 60 as imp) f
cross join generate_series(0, ${SNAPSHOTS_PER_POST - 1}) k
cross join lateral (select i.sent_at + (now() - i.sent_at) * (k::float8 / ${SNAPSHOTS_PER_POST}) as at) c
cross join lateral (select 1 - 0.9 ^ (k + 1) as share) s
where i.workspace_id = $1
`;

const ACCOUNTS_SQL = `
insert into app.integration_metrics_daily (organization_id, workspace_id, integration_id, day, captured_at, source, followers, profile_views, demographics)
select g.organization_id, g.workspace_id, g.id, d::date, d + interval '12 hours', 'sync', 5000 + (current_date - d::date) * -3 + 1200, 40,
       '{"age": {"18-24": 900, "25-34": 2100, "35-44": 1100}, "gender": {"female": 2300, "male": 1800}, "country": {"DE": 2000, "US": 1100}}'::jsonb
from app.integrations g, generate_series(current_date - 364, current_date, interval '1 day') d
where g.workspace_id = $1
`;

interface Workspace {
  id: string;
  posts: number;
  snapshots: number;
  seconds: number;
}

async function fillWorkspace(owner: pg.Client, organizationId: string, workspaceId: string, posts: number, log: (m: string) => void): Promise<Workspace> {
  const t0 = performance.now();
  const chans: string[] = [];
  for (const platform of CHANNELS) {
    chans.push((await owner.query(
      `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $4) returning id`,
      [organizationId, workspaceId, platform, `Bench ${platform}`])).rows[0].id);
  }
  const tags: string[] = [];
  for (const name of ['Launch', 'Tips', 'Hiring']) {
    tags.push((await owner.query(`insert into app.tags (organization_id, workspace_id, name) values ($1, $2, $3) returning id`, [organizationId, workspaceId, name])).rows[0].id);
  }
  const camps: string[] = [];
  for (const name of ['Spring', 'Autumn']) {
    camps.push((await owner.query(`insert into app.campaigns (organization_id, workspace_id, name) values ($1, $2, $3) returning id`, [organizationId, workspaceId, name])).rows[0].id);
  }
  await owner.query('begin');
  try {
    // Triggers (and foreign-key checks) skipped for this transaction only: the fixture's own rows.
    await owner.query('set local session_replication_role = replica');
    await owner.query(FIXTURE_SQL, [organizationId, workspaceId, chans, tags, camps, posts]);
    log(`analytics: ${posts} posts in; inserting ${posts * SNAPSHOTS_PER_POST} snapshots`);
    await owner.query(SNAPSHOTS_SQL, [workspaceId]);
    await owner.query(ACCOUNTS_SQL, [workspaceId]);
    await owner.query('commit');
  } catch (e) {
    await owner.query('rollback').catch(() => {});
    throw e;
  }
  const rebuilt = await owner.query('select app.analytics_rebuild($1) as n', [workspaceId]);
  const snapshots = Number(rebuilt.rows[0].n);
  const seconds = (performance.now() - t0) / 1000;
  log(`analytics: workspace with ${posts} posts, ${snapshots} snapshots, rollups rebuilt, in ${seconds.toFixed(1)} s`);
  return { id: workspaceId, posts, snapshots, seconds };
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  log('analytics: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'analytics');
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: SERVER_ENV }, cleanup);
  log(`analytics: server pid ${server.pid} on ${server.baseUrl}; creating the fixture`);

  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Large analytics workspace' },
  });
  const session: string = signup.data.session.token;
  const largeId: string = signup.data.workspace.id;
  const organizationId: string = signup.data.organization.id;
  const small = await jsonRequest(server.baseUrl, 'POST', '/v1/workspaces', { token: session, expect: 201, body: { name: 'Small analytics workspace', timezone: 'UTC' } });
  const smallId: string = small.data.id;
  const key = await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${largeId}/api-keys`, {
    token: session, expect: 201, body: { name: 'bench analytics key', workspaceIds: [largeId, smallId], role: 'viewer' },
  });
  const token: string = key.data.key;

  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const workspaces: Record<'large' | 'small', Workspace> = {} as never;
  try {
    workspaces.large = await fillWorkspace(owner, organizationId, largeId, SIZES.large, log);
    workspaces.small = await fillWorkspace(owner, organizationId, smallId, SIZES.small, log);
    await owner.query('vacuum (analyze) app.post_metric_snapshots, app.post_metrics_daily, app.post_metrics_latest, app.analytics_daily, app.integration_metrics_daily, app.content_items, app.content_roots');
  } finally {
    await owner.end();
  }

  const to = isoDay(new Date());
  const from = isoDay(new Date(Date.now() - 89 * 86_400_000));
  const routes = [
    { group: 'GET {ws}/analytics/summary (90 days)', path: (ws: string) => `/v1/workspaces/${ws}/analytics/summary?from=${from}&to=${to}` },
    { group: 'GET {ws}/analytics/aggregates (90 days, daily)', path: (ws: string) => `/v1/workspaces/${ws}/analytics/aggregates?from=${from}&to=${to}&interval=day` },
    { group: 'GET {ws}/analytics/aggregates (90 days, daily, by platform)', path: (ws: string) => `/v1/workspaces/${ws}/analytics/aggregates?from=${from}&to=${to}&interval=day&groupBy=platform` },
  ];
  // Each route answers as expected on both workspaces before anything is timed.
  for (const r of routes) {
    for (const [name, ws] of [['large', largeId], ['small', smallId]] as const) {
      const body = await jsonRequest(server.baseUrl, 'GET', r.path(ws), { token, expect: 200 });
      const ok = r.group.includes('summary')
        ? body.data.metrics.impressions.value > 0 && body.data.metrics.postsPublished.value > 0
        : body.data.series.length > 0 && body.data.series[0].points.length === 90;
      if (!ok) throw new Error(`${r.group} on ${name}: unexpected answer ${JSON.stringify(body.data).slice(0, 300)}`);
    }
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  for (const r of routes) {
    log(`analytics: ${r.group}: ${knobs.seconds} s per side, large and small interleaved`);
    const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
    try {
      const headers = { authorization: `Bearer ${token}` };
      const sides: Side[] = [
        { name: 'large', makeOp: () => client.getOp(r.path(largeId), headers), onStart: () => log('analytics:   large') },
        { name: 'small', makeOp: () => client.getOp(r.path(smallId), headers), onStart: () => log('analytics:   small') },
      ];
      const results = await measureSides(sides, loadOpts);
      for (const s of sides) {
        const w = workspaces[s.name as 'large' | 'small'];
        rows.push({ group: r.group, side: s.name, what: `GET over HTTP on the workspace with ${w.posts} posts and ${w.snapshots} snapshots`, result: results.get(s.name)! });
      }
    } finally {
      client.close();
    }
  }
  await server.release();
  await db.release();

  return {
    scenario: 'analytics',
    description: analytics.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: {
      database: db.name,
      serverPid: server.pid,
      serverEnv: { ...SERVER_ENV, DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false', LOG_LEVEL: 'silent' },
      fixture: {
        large: workspaces.large,
        small: workspaces.small,
        channels: CHANNELS,
        insertedWith: 'superuser, generate_series, one transaction with set local session_replication_role = replica; rollups by app.analytics_rebuild',
      },
    },
    rows,
    ratios: ratiosFor(rows, 'large', 'small'),
    notes: [
      `large: ${SIZES.large} posts x ${SNAPSHOTS_PER_POST} snapshots; small: ${SIZES.small} posts x ${SNAPSHOTS_PER_POST}; same channels, tags, campaigns and a year of account metrics.`,
      'ratio large/small: 1.00 = the routes do not slow down with posts and snapshots; the goal is p99 within 2x.',
      'Both sides over HTTP through the full pipeline (gate, validation, transaction, audit).',
    ],
  };
}

export const analytics: Scenario = {
  name: 'analytics',
  description: 'analytics summary and 90-day daily aggregates: 10,000 posts / 1,000,000 snapshots vs 100 posts',
  run,
};
