// Scenario "content": the content API on a workspace holding 100,000
// editions (50,000 roots with two editions each, over four channels and the
// statuses draft/scheduled/sent/failed), each route through the whole HTTP
// pipeline and, beside it, the same SQL done directly through the driver:
//
//   GET  /v1/workspaces/{ws}/content                                   default page (20, updatedAt desc)
//   GET  /v1/workspaces/{ws}/content?status=scheduled&integrationId=<one>&sortBy=scheduledAt
//   POST /v1/workspaces/{ws}/content                                   a draft with two channels
//
// Direct side, per request, what server/http/pipeline.ts sends for a request
// without idempotency key: `select api.gate(...)` on the pool; a transaction
// with setContext() (imported) and the route's own handler (imported from
// server/routes, so the very same `select api.list_content($1)` /
// `select api.create_content($1)`), given the query as the pipeline's
// OpenAPI validation leaves it (coerced, defaults filled in);
// `select audit.record(...)` on the pool.
//
// The fixture's editions are inserted by the superuser with generate_series
// inside one transaction with `set local session_replication_role = replica`:
// that skips the tables' triggers (and foreign-key checks) for that
// transaction only, which is what lets a fixture hold sent and failed
// editions without going through the publishing engine, and keeps the
// insert at seconds instead of minutes (no status guard, publish job,
// publishability check or version row per edition). Everything measured
// afterwards runs with all triggers.
import pg from 'pg';
import { loadConfig } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { loadOpenApi } from '../../server/http/openapi.ts';
import { routes } from '../../server/routes/index.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Op, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';
import { directOp, operation, type DirectRoute } from '../lib/direct.ts';
import { rebuildListCounters } from '../lib/counters.ts';

const ROOTS = 50_000;
const EDITIONS_PER_ROOT = 2;
const EDITIONS = ROOTS * EDITIONS_PER_ROOT;
/** The workspace's channels; each root gets two consecutive ones. */
const CHANNELS = [
  { platform: 'x', name: 'Bench X' },
  { platform: 'linkedin', name: 'Bench LinkedIn' },
  { platform: 'facebook', name: 'Bench Facebook' },
  { platform: 'threads', name: 'Bench Threads' },
];

const SERVER_ENV = {
  RATE_LIMIT_READ: '1000000000',
  RATE_LIMIT_WRITE: '1000000000',
  RATE_LIMIT_EXPENSIVE: '1000000000',
};

interface Fixture {
  apiKey: string;
  workspaceId: string;
  organizationId: string;
  integrationIds: string[];
  counts: Record<string, number>;
  /** Live editions of the filtered route's channel in status scheduled. */
  filteredTotal: number;
  insertSeconds: number;
}

/**
 * The fixture's bulk insert, as the superuser on the clone. md5 of the row
 * number picks words, so the data is the same on every run. Statuses by
 * edition: 40 % draft, 20 % scheduled (in the next 90 days), 35 % sent, 5 %
 * failed (in the last year); every other root has a caption of its own per
 * edition, the others publish the root's.
 */
const FIXTURE_SQL = `
with params as (
  select $1::uuid as org, $2::uuid as ws, $3::uuid as usr, $4::uuid[] as chans, $5::int as n_roots
),
roots as (
  insert into app.content_roots (id, organization_id, workspace_id, title, caption, organizational_title, created_by,
                                 created_at, updated_at)
  select gen_random_uuid(), p.org, p.ws,
    initcap(w.topic) || ': ' || w.angle,
    w.opener || ' ' || w.topic || ' ' || w.body || ' ' || w.cta || ' #' || replace(w.topic, ' ', '') || ' #' || w.tag,
    'Q' || (1 + g % 4) || ' ' || w.topic || ' #' || g,
    p.usr,
    now() - make_interval(mins => (g * 7) % 525600) - interval '1 day',
    now() - make_interval(mins => (g * 7) % 525600)
  from params p, generate_series(1, (select n_roots from params)) g,
  lateral (select
    (array['product launch', 'spring sale', 'customer story', 'hiring update', 'release notes', 'team offsite',
           'webinar', 'case study', 'holiday hours', 'community meetup', 'feature tip', 'industry report'])[1 + get_byte(decode(md5(g::text), 'hex'), 0) % 12] as topic,
    (array['what changed and why', 'three things to know', 'behind the scenes', 'a quick recap', 'the numbers',
           'lessons learned', 'what is next'])[1 + get_byte(decode(md5(g::text), 'hex'), 1) % 7] as angle,
    (array['Big news!', 'We have been busy.', 'Quick one for you today.', 'Ever wondered how we do it?',
           'Thank you to everyone who joined.', 'Save the date.', 'Here is the short version.'])[1 + get_byte(decode(md5(g::text), 'hex'), 2) % 7] as opener,
    (array['is here, and it took a village to get it out the door. Read on for the details that did not fit in the changelog.',
           'went better than any of us expected: 2,400 sign-ups, 18 countries and one very tired support team.',
           'comes with a few changes to how you plan your week; nothing breaks, but the shortcuts moved.',
           'is now open to everyone. Bring a colleague, bring questions, and bring coffee.',
           'taught us to ship smaller, measure earlier and say no more often.'])[1 + get_byte(decode(md5(g::text), 'hex'), 3) % 5] as body,
    (array['Link in bio.', 'Tell us what you think below.', 'Sign up at the link.', 'More on our blog.', 'Share it with your team.'])[1 + get_byte(decode(md5(g::text), 'hex'), 4) % 5] as cta,
    (array['marketing', 'smallbusiness', 'saas', 'community', 'productivity', 'news'])[1 + get_byte(decode(md5(g::text), 'hex'), 5) % 6] as tag
  ) w
  returning id, created_at, updated_at, caption
),
numbered as (
  select r.*, row_number() over (order by r.id) as rn from roots r
)
insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at,
  intended_publish_at, caption, sent_at, permalink, platform_post_id, error, created_by, created_at, updated_at)
select p.org, p.ws, n.id, p.chans[1 + ((n.rn * 2 + e) % cardinality(p.chans))],
  s.status,
  case s.status when 'scheduled' then now() + make_interval(mins => 60 + (n.rn::int * 13 + e * 17) % 129600)
                when 'draft' then null
                else n.created_at + interval '1 hour' end,
  case when s.status = 'draft' and n.rn % 3 = 0 then now() + make_interval(days => 1 + (n.rn::int % 60)) end,
  case when n.rn % 2 = 0 then left(n.caption, 200) || case e when 0 then ' (short cut for this channel)' else ' - full story on the blog.' end end,
  case s.status when 'sent' then n.created_at + interval '1 hour' end,
  case s.status when 'sent' then 'https://social.example.com/p/' || md5(n.id::text || e) end,
  case s.status when 'sent' then md5(n.id::text || e) end,
  case s.status when 'failed' then 'The platform refused the post: rate limited (429), retries exhausted.' end,
  p.usr, n.created_at, n.updated_at - make_interval(secs => e)
from params p, numbered n, generate_series(0, ${EDITIONS_PER_ROOT - 1}) e,
lateral (select case when x < 40 then 'draft' when x < 60 then 'scheduled' when x < 95 then 'sent' else 'failed' end as status
         from (select (n.rn * 31 + e * 47) % 100 as x) y) s
`;

export async function createFixture(baseUrl: string, ownerUrl: string, log: (m: string) => void): Promise<Fixture> {
  const signup = await jsonRequest(baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: {
      email: 'owner@bench.example.com',
      password: 'bench password 0123456789',
      organizationName: 'Bench Org',
      workspaceName: 'Bench content workspace',
    },
  });
  const sessionToken: string = signup.data.session.token;
  const workspaceId: string = signup.data.workspace.id;
  const key = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${workspaceId}/api-keys`, {
    token: sessionToken,
    expect: 201,
    body: { name: 'bench content key', workspaceIds: [workspaceId], role: 'editor' },
  });

  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const ws = await owner.query('select organization_id from app.workspaces where id = $1', [workspaceId]);
    const organizationId: string = ws.rows[0].organization_id;
    const usr = await owner.query('select id from app.users where email = $1', ['owner@bench.example.com']);
    const userId: string = usr.rows[0].id;
    const integrationIds: string[] = [];
    for (const c of CHANNELS) {
      const r = await owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $4) returning id`,
        [organizationId, workspaceId, c.platform, c.name],
      );
      integrationIds.push(r.rows[0].id);
    }
    log(`content: inserting ${ROOTS} roots and ${EDITIONS} editions (superuser, one transaction, session_replication_role = replica)`);
    const t0 = performance.now();
    await owner.query('begin');
    try {
      // Skips triggers (and foreign-key checks) for this transaction only: the fixture's own rows.
      await owner.query('set local session_replication_role = replica');
      await owner.query(FIXTURE_SQL, [organizationId, workspaceId, userId, integrationIds, ROOTS]);
      // The triggers that keep the list totals were skipped too.
      await rebuildListCounters(owner);
      await owner.query('commit');
    } catch (e) {
      await owner.query('rollback').catch(() => {});
      throw e;
    }
    // As autovacuum would leave the tables after such an insert: statistics, and the visibility map
    // set, without which the planner never picks an index-only scan (the list's count).
    await owner.query('vacuum (analyze) app.content_roots, app.content_items');
    const insertSeconds = (performance.now() - t0) / 1000;
    const counts: Record<string, number> = {};
    for (const r of (await owner.query('select status, count(*)::int as n from app.content_items where workspace_id = $1 group by status', [workspaceId])).rows) {
      counts[r.status] = r.n;
    }
    const filtered = await owner.query(
      `select count(*)::int as n from app.content_items where workspace_id = $1 and integration_id = $2 and status = 'scheduled' and deleted_at is null`,
      [workspaceId, integrationIds[0]],
    );
    log(`content: fixture in ${insertSeconds.toFixed(1)} s (with vacuum analyze): ${JSON.stringify(counts)}`);
    return { apiKey: key.data.key, workspaceId, organizationId, integrationIds, counts, filteredTotal: filtered.rows[0].n, insertSeconds };
  } finally {
    await owner.end();
  }
}

interface BenchRoute extends DirectRoute {
  method: 'GET' | 'POST';
  /** Concrete path with its query string. */
  path: string;
  query: Record<string, string>;
}

function listCheck(group: string, expectItems: number, minTotal: number, itemCheck?: (item: any) => boolean) {
  return (status: number, data: any, meta: any) => {
    if (status !== 200 || !Array.isArray(data) || data.length !== expectItems || !meta || meta.total < minTotal) {
      throw new Error(`${group}: status ${status}, ${Array.isArray(data) ? data.length : typeof data} items, total ${meta?.total} (expected ${expectItems} items, total >= ${minTotal})`);
    }
    if (itemCheck && !data.every(itemCheck)) throw new Error(`${group}: an item does not match the filter: ${JSON.stringify(data.find((i: any) => !itemCheck(i)))}`);
  };
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const config = loadConfig({ ...SERVER_ENV, LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize) } as NodeJS.ProcessEnv);

  log('content: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'content');
  log(`content: starting the API server (DB_POOL_SIZE=${knobs.poolSize})`);
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: SERVER_ENV }, cleanup);
  log(`content: server pid ${server.pid} on ${server.baseUrl}; creating the fixture`);
  const fixture = await createFixture(server.baseUrl, db.ownerUrl, log);

  const { operations } = loadOpenApi();
  const ws = fixture.workspaceId;
  const base = `/v1/workspaces/${ws}/content`;
  const one = fixture.integrationIds[0];
  const liveDefault = ['draft', 'scheduled', 'sent', 'failed'].reduce((t, s) => t + (fixture.counts[s] ?? 0), 0);
  const filterQuery = { status: 'scheduled', integrationId: one, sortBy: 'scheduledAt' };
  const postBody = {
    title: 'Bench launch',
    organizationalTitle: 'Bench draft',
    caption: 'We shipped something new this week: faster lists, fewer clicks. Details on the blog. #release',
    channels: [{ integrationId: fixture.integrationIds[0] }, { integrationId: fixture.integrationIds[1], caption: 'A longer cut for LinkedIn: what we shipped and why it matters.' }],
  };
  const benchRoutes: BenchRoute[] = [
    {
      group: 'GET {ws}/content (default page)',
      operation: operation(operations, 'listContent_v1'),
      handler: routes.listContent_v1,
      method: 'GET',
      path: base,
      params: { workspaceId: ws },
      query: {},
      token: fixture.apiKey,
      check: listCheck('GET content', 20, liveDefault),
    },
    {
      group: 'GET {ws}/content?status=scheduled&integrationId&sortBy=scheduledAt',
      operation: operation(operations, 'listContent_v1'),
      handler: routes.listContent_v1,
      method: 'GET',
      path: `${base}?${new URLSearchParams(filterQuery).toString()}`,
      params: { workspaceId: ws },
      query: filterQuery,
      token: fixture.apiKey,
      check: listCheck('GET content filtered', Math.min(20, fixture.filteredTotal), fixture.filteredTotal, (i) => i.status === 'scheduled' && i.integrationId === one),
    },
    {
      group: 'POST {ws}/content (draft, 2 channels)',
      operation: operation(operations, 'createContent_v1'),
      handler: routes.createContent_v1,
      method: 'POST',
      path: base,
      params: { workspaceId: ws },
      query: {},
      body: postBody,
      token: fixture.apiKey,
      check: (status, data) => {
        if (status !== 201 || !Array.isArray(data?.editions) || data.editions.length !== 2 || data.editions.some((e: any) => e.status !== 'draft')) {
          throw new Error(`POST content: status ${status}, ${JSON.stringify(data).slice(0, 300)}`);
        }
      },
    },
  ];
  if (fixture.filteredTotal < 20) throw new Error(`the filtered route would return only ${fixture.filteredTotal} items`);

  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());

  // Every route answers as expected over HTTP and directly before anything is timed.
  for (const route of benchRoutes) {
    const body = await jsonRequest(server.baseUrl, route.method, route.path, {
      token: route.token,
      body: route.body,
      expect: route.method === 'POST' ? 201 : 200,
    });
    route.check(route.method === 'POST' ? 201 : 200, body?.data, body?.meta);
    await directOp(pool, route, config)();
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  for (const route of benchRoutes) {
    const how = `${knobs.concurrency} loops, ${knobs.warmupSeconds} s warm-up`;
    log(
      `content: ${route.group}: ${knobs.seconds} s per side` +
        (knobs.sliceSeconds > 0 && knobs.sliceSeconds < knobs.seconds ? `, sides interleaved in ${knobs.sliceSeconds} s slices` : ''),
    );
    const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
    try {
      const headers = { authorization: `Bearer ${route.token}` };
      const httpOp = () => (route.method === 'GET' ? client.getOp(route.path, headers) : client.jsonOp('POST', route.path, route.token, route.body, 201));
      const sides: Side[] = [
        { name: 'http', makeOp: httpOp, onStart: () => log(`content:   http (${how})`) },
        { name: 'direct', makeOp: () => directOp(pool, route, config), onStart: () => log(`content:   direct (${how})`) },
      ];
      const results = await measureSides(sides, loadOpts);
      const what: Record<string, string> = {
        http: `${route.method} ${route.path} to the server child, keep-alive node:http`,
        direct: 'gate; transaction { setContext; handler }; audit.record, slonik openPool()',
      };
      for (const s of sides) rows.push({ group: route.group, side: s.name, what: what[s.name], result: results.get(s.name)! });
    } finally {
      client.close();
    }
  }

  await endPool();
  await server.release();
  await db.release();

  return {
    scenario: 'content',
    description: content.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: {
      database: db.name,
      serverPid: server.pid,
      serverEnv: { ...SERVER_ENV, DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false', LOG_LEVEL: 'silent' },
      fixture: {
        roots: ROOTS,
        editions: EDITIONS,
        channels: CHANNELS.map((c) => c.platform),
        statuses: fixture.counts,
        filteredTotal: fixture.filteredTotal,
        insertSeconds: Number(fixture.insertSeconds.toFixed(1)),
        insertedWith: 'superuser, generate_series, one transaction with set local session_replication_role = replica (triggers skipped for the fixture only)',
      },
      httpClient: 'node:http Agent keepAlive, one socket per loop',
    },
    rows,
    ratios: ratiosFor(rows, 'http', 'direct'),
    notes: [
      `fixture: ${EDITIONS} editions (${ROOTS} roots x ${EDITIONS_PER_ROOT} channels of ${CHANNELS.length}) in one workspace; the POST rows add drafts as the run goes.`,
      'http: full request through the API server child (Express, gate, validation, transaction, audit, JSON envelope).',
      'direct: the same SQL statements through slonik openPool() in this process, no HTTP; the database-side limit for that work.',
      'ratio http/direct req/s = share of the database-side limit the HTTP stack delivers (1.00 = no overhead).',
    ],
  };
}

export const content: Scenario = {
  name: 'content',
  description: 'content list (default, filtered) and create on 100k editions: HTTP API vs the same SQL through the driver',
  run,
};
