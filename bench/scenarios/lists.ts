// Scenario "lists": every list the issue names at 1,000 and at 100,000 rows in
// one run, through the whole HTTP pipeline, the two sizes interleaved in
// slices so a disturbance hits both alike; the ratio 100k/1k is what "lists
// that do not slow with size" means (1.00 = no slower at 100 times the rows).
//
// One server, one clone, two workspaces of one organization: "1k" holds 1,000
// content roots with one edition each (over 4 channels and every status),
// 1,000 media items, 1,000 campaigns and 1,000 media labels; "100k" the same
// with 100,000 of each. One API key (editor) is granted both. Lists:
//
//   GET {ws}/content                                   default page (20, updatedAt desc)
//   GET {ws}/content?status=scheduled&sortBy=scheduledAt
//   GET {ws}/content?integrationId=<one>
//   GET {ws}/content-roots?limit=20                    first page (the default limit is 250 roots with their editions)
//   GET {ws}/media                                     default page (50, createdAt desc)
//   GET {ws}/media?search=sunset-12                    substring of file name or alt text
//   GET {ws}/campaigns?search=<8 hex chars>            substring of the name
//   GET {ws}/media/labels?search=<8 hex chars>
//
// The fixture is inserted by the superuser with `session_replication_role =
// replica` (triggers skipped for that transaction only), the list counters
// rebuilt (bench/lib/counters.ts), then `vacuum analyze`.
import pg from 'pg';
import { rebuildListCounters } from '../lib/counters.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const SIZES = [
  { name: '1k', rows: 1_000 },
  { name: '100k', rows: 100_000 },
] as const;

const SERVER_ENV = {
  RATE_LIMIT_READ: '1000000000',
  RATE_LIMIT_WRITE: '1000000000',
  RATE_LIMIT_EXPENSIVE: '1000000000',
};

export const FIXTURE_SQL = `
with ig as (
  insert into app.integrations (organization_id, workspace_id, connector, platform, name)
  select $1, $2, 'sandbox', (array['x', 'linkedin', 'facebook', 'instagram'])[n], 'Channel ' || n from generate_series(1, 4) n
  returning id),
igs as (select array_agg(id order by id) a from ig),
r as (
  insert into app.content_roots (organization_id, workspace_id, caption, created_at, updated_at)
  select $1, $2, 'Post ' || n || ': ' || md5(n::text), now() - n * interval '1 minute', now() - n * interval '1 minute'
  from generate_series(1, $3::int) n returning id, created_at),
n as (select id, created_at, row_number() over (order by created_at desc) k from r),
e as (
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at, sent_at, created_at, updated_at)
  select $1, $2, n.id, igs.a[1 + n.k % 4],
    (array['draft', 'scheduled', 'sent', 'sent', 'sent', 'failed', 'pending_approval', 'draft'])[1 + n.k % 8],
    case when n.k % 8 = 1 then now() + n.k * interval '1 minute' when n.k % 8 in (2, 3, 4, 5) then n.created_at + interval '1 hour' end,
    case when n.k % 8 in (2, 3, 4) then n.created_at + interval '1 hour' end,
    n.created_at, n.created_at
  from n, igs returning 1),
m as (
  insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key, alt_text, created_at)
  select $1, $2, case when g % 5 = 0 then 'video' else 'image' end,
    (array['sunset', 'beach', 'office', 'team', 'product', 'launch', 'winter', 'city'])[1 + g % 8] || '-' || g || '.jpg',
    case when g % 5 = 0 then 'video/mp4' else 'image/jpeg' end, 1000 + g, 'bench/' || gen_random_uuid(),
    case when g % 3 = 0 then 'A photo of item ' || g end, now() - g * interval '1 minute'
  from generate_series(1, $3::int) g returning 1),
c as (insert into app.campaigns (organization_id, workspace_id, name)
      select $1, $2, 'Campaign ' || md5(g::text) from generate_series(1, $3::int) g returning 1),
l as (insert into app.media_labels (organization_id, workspace_id, name)
      select $1, $2, 'Label ' || md5(g::text) from generate_series(1, $3::int) g returning 1)
select (select count(*) from e) editions, (select count(*) from m) media, (select count(*) from c) campaigns, (select count(*) from l) labels,
       (select a[2] from igs) integration
`;

interface ListRoute {
  group: string;
  path: (ws: string, integration: string) => string;
  /** A search: also measured with one client alone. */
  search?: boolean;
}

const LISTS: ListRoute[] = [
  { group: 'GET {ws}/content (default page)', path: (ws) => `/v1/workspaces/${ws}/content` },
  { group: 'GET {ws}/content?status=scheduled&sortBy=scheduledAt', path: (ws) => `/v1/workspaces/${ws}/content?status=scheduled&sortBy=scheduledAt` },
  { group: 'GET {ws}/content?integrationId', path: (ws, ig) => `/v1/workspaces/${ws}/content?integrationId=${ig}` },
  { group: 'GET {ws}/content-roots?limit=20', path: (ws) => `/v1/workspaces/${ws}/content-roots?limit=20` },
  { group: 'GET {ws}/media (default page)', path: (ws) => `/v1/workspaces/${ws}/media` },
  { group: 'GET {ws}/media?search=sunset-12', path: (ws) => `/v1/workspaces/${ws}/media?search=sunset-12`, search: true },
  // md5('7') starts 8f14e45f: one campaign and one label in each size.
  { group: 'GET {ws}/campaigns?search=8f14e45f', path: (ws) => `/v1/workspaces/${ws}/campaigns?search=8f14e45f`, search: true },
  { group: 'GET {ws}/media/labels?search=8f14e45f', path: (ws) => `/v1/workspaces/${ws}/media/labels?search=8f14e45f`, search: true },
];

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  log('lists: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'lists');
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: SERVER_ENV }, cleanup);
  log(`lists: server pid ${server.pid} on ${server.baseUrl}; creating the fixture`);

  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@lists.bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Lists 1k' },
  });
  const session: string = signup.data.session.token;
  const organizationId: string = signup.data.organization.id;
  const second = await jsonRequest(server.baseUrl, 'POST', '/v1/workspaces', { token: session, expect: 201, body: { name: 'Lists 100k' } });
  const workspaces = [signup.data.workspace.id as string, second.data.id as string];
  const key = await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${workspaces[0]}/api-keys`, {
    token: session,
    expect: 201,
    body: { name: 'bench lists key', workspaceIds: workspaces, role: 'editor' },
  });
  const token: string = key.data.key;

  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  const fixture: Record<string, unknown>[] = [];
  const integrations: string[] = [];
  const t0 = performance.now();
  await owner.query('begin');
  await owner.query('set local session_replication_role = replica');
  for (const [i, size] of SIZES.entries()) {
    const r = (await owner.query(FIXTURE_SQL, [organizationId, workspaces[i], size.rows])).rows[0];
    integrations.push(r.integration);
    fixture.push({ size: size.name, ...r });
  }
  await rebuildListCounters(owner);
  await owner.query('commit');
  await owner.query('vacuum (analyze) app.content_roots, app.content_items, app.media_items, app.campaigns, app.media_labels, app.content_item_counts, app.content_root_counts');
  log(`lists: fixture in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(fixture)}`);
  await closeOwner();

  // Every list answers 200 at both sizes before anything is timed.
  for (const list of LISTS) {
    for (const [i] of SIZES.entries()) await jsonRequest(server.baseUrl, 'GET', list.path(workspaces[i], integrations[i]), { token, expect: 200 });
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  // Each list under the knobs' closed loops (throughput; latency mostly
  // queueing on 2 cores), then each search as one client alone: the latency
  // a person typing into a search box sees.
  const passes = [
    ...LISTS.map((list) => ({ list, loops: knobs.concurrency, group: list.group })),
    ...LISTS.filter((list) => list.search).map((list) => ({ list, loops: 1, group: `${list.group} (1 client)` })),
  ];
  for (const { list, loops, group } of passes) {
    log(`lists: ${group}: ${knobs.seconds} s per size, interleaved`);
    const client = new HttpClient(server.baseUrl, loops, knobs.requestTimeoutMs);
    try {
      const headers = { authorization: `Bearer ${token}` };
      const sides: Side[] = SIZES.map((size, i) => ({ name: size.name, makeOp: () => client.getOp(list.path(workspaces[i], integrations[i]), headers) }));
      const results = await measureSides(sides, { ...loadOpts, concurrency: loops });
      for (const [i, size] of SIZES.entries()) {
        rows.push({ group, side: size.name, what: `GET ${list.path('{ws}', '{integration}')} on the ${size.rows}-row workspace, ${loops} loop(s)`, result: results.get(SIZES[i].name)! });
      }
    } finally {
      client.close();
    }
  }
  await server.release();
  await db.release();
  return {
    scenario: 'lists',
    description: lists.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { database: db.name, serverEnv: { ...SERVER_ENV, DB_POOL_SIZE: String(knobs.poolSize) }, fixture },
    rows,
    ratios: ratiosFor(rows, '100k', '1k'),
    notes: [
      'ratio 100k/1k: req/s and latency of the same list on 100,000 rows against 1,000 (req/s 1.00 = no slower at 100 times the rows).',
      'content totals come from the counters (app.content_item_counts); media is a keyset list without a total.',
      '"(1 client)": the searches again with one closed loop, so p99 is the latency of a search, not of a queue of 16 (the goal: media search p99 <= 50 ms at 100,000 items).',
    ],
  };
}

export const lists: Scenario = {
  name: 'lists',
  description: 'every list at 1,000 and at 100,000 rows (content, roots, media, media search, campaign and label search): ratio 100k/1k',
  run,
};
