// Scenario "grid": the grid planner on an Instagram channel of 1,000 tiles
// (300 published, 300 scheduled, 100 drafts, 300 placeholders) beside one of
// 100 tiles (the same shares), each route through the whole HTTP pipeline
// and, beside it, the same SQL done directly through the driver:
//
//   GET  .../integrations/{id}/grid                     first page (60), 1,000 tiles and 100 tiles
//   GET  .../integrations/{id}/grid?cursor=...          the last page (60) of the 1,000 tiles
//   GET  .../integrations/{id}/grid?limit=200           200 tiles, 1,000-tile grid
//   POST .../integrations/{id}/grid/tiles/{t}/move      a placeholder back and forth (serialized per channel)
//
// Direct side, per request, what server/http/pipeline.ts sends (bench/lib/direct.ts),
// with the route's own handler from server/routes/grid.ts (covers signed alike).
//
// The fixture is inserted by the superuser in one transaction with
// `set local session_replication_role = replica` (content rows without their
// triggers, as in the content scenario), and the tiles with evenly spaced keys
// (app.grid_key_at): the state the placement trigger would leave.
import pg from 'pg';
import { loadConfig } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { loadOpenApi } from '../../server/http/openapi.ts';
import { routes } from '../../server/routes/index.ts';
import { directOp, operation, type DirectRoute } from '../lib/direct.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Op, type Side } from '../lib/load.ts';
import { ratiosFor, type Ratio, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const SERVER_ENV = {
  RATE_LIMIT_READ: '1000000000',
  RATE_LIMIT_WRITE: '1000000000',
  RATE_LIMIT_EXPENSIVE: '1000000000',
};

/** Shares of a grid's tiles by kind. */
const SHARES = { published: 0.3, scheduled: 0.3, draft: 0.1, placeholder: 0.3 };
const SIZES = [1000, 100];
const MEDIA = 20;

/** One channel's grid of `n` tiles: roots with one media item, editions, tiles, placeholders. */
const GRID_SQL = `
with p as (
  select $1::uuid org, $2::uuid ws, $3::uuid usr, $4::uuid g, $5::uuid[] media,
         $6::int n_pub, $7::int n_sched, $8::int n_draft, $9::int n_ph
),
roots as (
  insert into app.content_roots (id, organization_id, workspace_id, caption, created_by)
  select gen_random_uuid(), p.org, p.ws, 'Grid post ' || x, p.usr
  from p, generate_series(1, (select n_pub + n_sched + n_draft from p)) x
  returning id
),
numbered as (select r.id, row_number() over (order by r.id) rn from roots r),
root_media as (
  insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
  select n.id, p.media[1 + (n.rn % cardinality(p.media))::int], p.ws, p.org, 0 from numbered n, p
),
items as (
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at, sent_at,
    permalink, platform_post_id, created_by)
  select p.org, p.ws, n.id, p.g,
    case when n.rn <= p.n_pub then 'sent' when n.rn <= p.n_pub + p.n_sched then 'scheduled' else 'draft' end,
    case when n.rn <= p.n_pub then now() - make_interval(hours => n.rn::int)
         when n.rn <= p.n_pub + p.n_sched then now() + make_interval(hours => (n.rn - p.n_pub)::int) end,
    case when n.rn <= p.n_pub then now() - make_interval(hours => n.rn::int) end,
    case when n.rn <= p.n_pub then 'https://instagram.example.com/p/' || n.rn end,
    case when n.rn <= p.n_pub then 'ig-' || n.rn end,
    p.usr
  from numbered n, p
  returning id, status, scheduled_at
)
insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key, created_by)
select p.org, p.ws, p.g, i.id,
  case when i.status = 'sent' then null
       else app.grid_key_at(row_number() over (order by i.status = 'draft', i.scheduled_at, i.id)) end,
  p.usr
from items i, p
`;
const PLACEHOLDER_SQL = `
with p as (select $1::uuid org, $2::uuid ws, $3::uuid usr, $4::uuid g, $5::uuid[] media, $6::int n_ph, $7::int first_key),
tiles as (
  insert into app.grid_tiles (organization_id, workspace_id, integration_id, position_key, note, created_by)
  select p.org, p.ws, p.g, app.grid_key_at(p.first_key + x), 'idea ' || x, p.usr
  from p, generate_series(1, (select n_ph from p)) x
  returning id
)
insert into app.grid_tile_media (tile_id, position, media_id, workspace_id, organization_id)
select t.id, k, p.media[1 + ((row_number() over (order by t.id) + k) % cardinality(p.media))::int], p.ws, p.org
from tiles t, p, generate_series(0, 1) k
`;

interface Fixture {
  apiKey: string;
  workspaceId: string;
  grids: { size: number; integrationId: string; published: number; placeholders: string[] }[];
  insertSeconds: number;
}

async function createFixture(baseUrl: string, ownerUrl: string, log: (m: string) => void): Promise<Fixture> {
  const signup = await jsonRequest(baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@grid.bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Bench grid workspace' },
  });
  const workspaceId: string = signup.data.workspace.id;
  const key = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${workspaceId}/api-keys`, {
    token: signup.data.session.token,
    expect: 201,
    body: { name: 'bench grid key', workspaceIds: [workspaceId], role: 'editor' },
  });
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const org = (await owner.query('select organization_id from app.workspaces where id = $1', [workspaceId])).rows[0].organization_id;
    const usr = (await owner.query('select id from app.users where email = $1', ['owner@grid.bench.example.com'])).rows[0].id;
    const media: string[] = [];
    for (let i = 0; i < MEDIA; i++) {
      const r = await owner.query(
        `insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key, width, height)
         values ($1, $2, 'image', $3, 'image/jpeg', 250000, $4, 1080, 1350) returning id`,
        [org, workspaceId, `photo-${i}.jpg`, `media/bench/photo-${i}.jpg`],
      );
      media.push(r.rows[0].id);
    }
    const grids: Fixture['grids'] = [];
    const t0 = performance.now();
    for (const size of SIZES) {
      const g = (await owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'instagram', $3) returning id`,
        [org, workspaceId, `Bench Instagram ${size}`],
      )).rows[0].id as string;
      const n = {
        pub: Math.round(size * SHARES.published),
        sched: Math.round(size * SHARES.scheduled),
        draft: Math.round(size * SHARES.draft),
        ph: Math.round(size * SHARES.placeholder),
      };
      log(`grid: inserting a ${size}-tile grid (${JSON.stringify(n)})`);
      await owner.query('begin');
      try {
        await owner.query('set local session_replication_role = replica');
        await owner.query(GRID_SQL, [org, workspaceId, usr, g, media, n.pub, n.sched, n.draft, n.ph]);
        await owner.query(PLACEHOLDER_SQL, [org, workspaceId, usr, g, media, n.ph, n.sched + n.draft + n.pub + 10]);
        await owner.query('commit');
      } catch (e) {
        await owner.query('rollback').catch(() => {});
        throw e;
      }
      const ph = await owner.query('select id from app.grid_tiles where integration_id = $1 and content_item_id is null order by position_key', [g]);
      grids.push({ size, integrationId: g, published: n.pub, placeholders: ph.rows.map((r: any) => r.id) });
    }
    await owner.query('vacuum (analyze) app.content_roots, app.content_items, app.content_root_media, app.grid_tiles, app.grid_tile_media');
    return { apiKey: key.data.key, workspaceId, grids, insertSeconds: (performance.now() - t0) / 1000 };
  } finally {
    await owner.end();
  }
}

interface BenchRoute extends DirectRoute {
  method: 'GET' | 'POST';
  path: string;
  query: Record<string, string>;
}

/** Alternates between ops (a move there and back). */
function alternate(ops: Op[]): Op {
  let i = 0;
  return () => ops[i++ % ops.length]!();
}

function pageCheck(group: string, items: number, total: number) {
  return (status: number, data: any, meta: any) => {
    if (status !== 200 || !Array.isArray(data) || data.length !== items || meta?.total !== total) {
      throw new Error(`${group}: status ${status}, ${Array.isArray(data) ? data.length : typeof data} tiles, total ${meta?.total} (expected ${items}, total ${total})`);
    }
    if (!data.every((t: any) => t.cover === null || typeof t.cover.url === 'string')) throw new Error(`${group}: a cover without its URL`);
  };
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const config = loadConfig({ ...SERVER_ENV, LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize) } as NodeJS.ProcessEnv);
  log('grid: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'grid');
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: SERVER_ENV }, cleanup);
  log(`grid: server pid ${server.pid} on ${server.baseUrl}; creating the fixture`);
  const fixture = await createFixture(server.baseUrl, db.ownerUrl, log);
  const { operations } = loadOpenApi();
  const ws = fixture.workspaceId;
  const [big, small] = fixture.grids as [Fixture['grids'][number], Fixture['grids'][number]];
  const gridPath = (g: typeof big) => `/v1/workspaces/${ws}/integrations/${g.integrationId}/grid`;

  // The cursor of the last page of the big grid.
  const lastFrom = big.size - 60;
  // limit is at most 200: walk pages of 200 to the start of the last page.
  let cursor: string | null = null;
  for (let seen = 0; seen < lastFrom; ) {
    const step = Math.min(200, lastFrom - seen);
    const q: string = `${gridPath(big)}?limit=${step}${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await jsonRequest(server.baseUrl, 'GET', q, { token: fixture.apiKey, expect: 200 });
    cursor = page.meta.nextCursor;
    seen += page.data.length;
  }
  if (!cursor) throw new Error('grid: no cursor for the last page');

  const get = (group: string, g: typeof big, query: Record<string, string>, items: number): BenchRoute => ({
    group,
    operation: operation(operations, 'getGrid_v1'),
    handler: routes.getGrid_v1,
    method: 'GET',
    path: `${gridPath(g)}${Object.keys(query).length ? `?${new URLSearchParams(query).toString()}` : ''}`,
    params: { workspaceId: ws, id: g.integrationId },
    query,
    token: fixture.apiKey,
    check: pageCheck(group, items, g.size),
  });
  const move = (tileId: string, position: number): BenchRoute => ({
    group: 'POST grid/tiles/{t}/move (placeholder, 1,000 tiles)',
    operation: operation(operations, 'moveGridTile_v1'),
    handler: routes.moveGridTile_v1,
    method: 'POST',
    path: `${gridPath(big)}/tiles/${tileId}/move`,
    params: { workspaceId: ws, id: big.integrationId, tileId },
    query: {},
    body: { position },
    token: fixture.apiKey,
    check: (status, data) => {
      if (status !== 200 || data?.tile?.position !== position || data.rescheduled.length !== 0) {
        throw new Error(`move: status ${status}, ${JSON.stringify(data).slice(0, 300)}`);
      }
    },
  });

  const reads: BenchRoute[] = [
    get('GET grid first page (60 of 1,000 tiles)', big, {}, 60),
    get('GET grid first page (60 of 100 tiles)', small, {}, 60),
    get('GET grid last page (cursor, 60 of 1,000 tiles)', big, { cursor }, 60),
    get('GET grid?limit=200 (200 of 1,000 tiles)', big, { limit: '200' }, 200),
  ];
  // One placeholder moved between the middle of the planned tiles and the end.
  const mover = big.placeholders[0]!;
  const moves = [move(mover, big.published + 350), move(mover, big.size - 1)];

  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());
  for (const route of [...reads, ...moves]) {
    const body = await jsonRequest(server.baseUrl, route.method, route.path, { token: route.token, body: route.body, expect: 200 });
    route.check(200, body?.data, body?.meta);
    await directOp(pool, route, config)();
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  const how = `${knobs.concurrency} loops, ${knobs.warmupSeconds} s warm-up`;
  const groups: { group: string; http: (c: HttpClient) => Op; direct: () => Op; what: string }[] = [
    ...reads.map((r) => ({
      group: r.group,
      http: (c: HttpClient) => c.getOp(r.path, { authorization: `Bearer ${r.token}` }),
      direct: () => directOp(pool, r, config),
      what: `GET ${r.path}`,
    })),
    {
      group: moves[0]!.group,
      http: (c: HttpClient) => alternate(moves.map((m) => c.jsonOp('POST', m.path, m.token, m.body, 200))),
      direct: () => alternate(moves.map((m) => directOp(pool, m, config))),
      what: `POST ${moves[0]!.path} with position ${big.published + 350} and ${big.size - 1} in turn`,
    },
  ];
  for (const g of groups) {
    log(`grid: ${g.group}: ${knobs.seconds} s per side`);
    const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
    try {
      const sides: Side[] = [
        { name: 'http', makeOp: () => g.http(client), onStart: () => log(`grid:   http (${how})`) },
        { name: 'direct', makeOp: g.direct, onStart: () => log(`grid:   direct (${how})`) },
      ];
      const results = await measureSides(sides, loadOpts);
      rows.push({ group: g.group, side: 'http', what: `${g.what} to the server child, keep-alive node:http`, result: results.get('http')! });
      rows.push({ group: g.group, side: 'direct', what: 'gate; transaction { setContext; handler }; audit.record, slonik openPool()', result: results.get('direct')! });
    } finally {
      client.close();
    }
  }
  await endPool();
  await server.release();
  await db.release();

  // The grid's size: the first page of 1,000 tiles against the first page of 100, per side.
  const sizeRatios: Ratio[] = [];
  for (const side of ['http', 'direct']) {
    const a = rows.find((r) => r.group === reads[0]!.group && r.side === side)!;
    const b = rows.find((r) => r.group === reads[1]!.group && r.side === side)!;
    sizeRatios.push({
      group: `first page: 1,000 tiles / 100 tiles (${side})`,
      numerator: '1,000 tiles',
      denominator: '100 tiles',
      rps: a.result.rps / b.result.rps,
      p50: a.result.latency.p50 / b.result.latency.p50,
      p99: a.result.latency.p99 / b.result.latency.p99,
    });
  }

  return {
    scenario: 'grid',
    description: grid.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: {
      database: db.name,
      serverPid: server.pid,
      serverEnv: { ...SERVER_ENV, DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false', LOG_LEVEL: 'silent' },
      fixture: {
        grids: fixture.grids.map((g) => ({ size: g.size, published: g.published, placeholders: g.placeholders.length })),
        shares: SHARES,
        media: MEDIA,
        insertSeconds: Number(fixture.insertSeconds.toFixed(1)),
        insertedWith: 'superuser, generate_series, one transaction per grid with set local session_replication_role = replica; keys app.grid_key_at',
      },
    },
    rows,
    ratios: [...ratiosFor(rows, 'http', 'direct'), ...sizeRatios],
    notes: [
      'grids: one Instagram channel of 1,000 tiles and one of 100 (30 % published, 30 % scheduled, 10 % drafts, 30 % placeholders of two media items).',
      'every answer signs each tile cover URL (disk driver HMAC), on both sides.',
      'the move row is serialized by the channel grid lock: its latency is mostly queueing behind the other loops.',
      'ratio http/direct = share of the database-side limit the HTTP stack delivers; "1,000 / 100 tiles" compares the first page of both grids (the window over the whole grid is what grows).',
    ],
  };
}

export const grid: Scenario = {
  name: 'grid',
  description: 'grid planner reads (first, last, 200-tile pages) on a 1,000-tile grid beside a 100-tile one, and moves: HTTP API vs the same SQL through the driver',
  run,
};
