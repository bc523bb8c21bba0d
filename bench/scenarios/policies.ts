// Scenario "policies": the row-level security policies as they are (no
// subqueries, so Citus can distribute the tables: docs/citus.md) against the
// same policies written the old way, each context helper wrapped in a scalar
// subquery that PostgreSQL evaluates once per query, side by side in one run.
//
// Two clones of the template with the same fixture (the "lists" scenario's
// 100,000-row workspace: content, media, campaigns, labels), each with its own
// API server. On the "wrapped" clone every policy is rewritten back:
//
//   app.current_x()                                  -> (SELECT app.current_x())
//   workspace_id = app.current_accessible_workspace_id()
//     -> workspace_id = (SELECT app.current_workspace_id()) AND (SELECT app.current_workspace_accessible())
//
// The two servers are driven alternately in slices (the same routes: the
// content and media lists, one edition by id, and creating a draft), so a
// disturbance hits both alike. ratio plain/wrapped: 1.00 = the policies
// without subqueries cost nothing.
import pg from 'pg';
import { rebuildListCounters } from '../lib/counters.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';
import { FIXTURE_SQL } from './lists.ts';

const ROWS = 100_000;
const SIDES = ['plain', 'wrapped'] as const;

/** Rewrites every policy of the clone back to the wrapped form (what the policies were before 000036). */
const WRAP_SQL = `
do $$
declare
  p record;
  v_using text;
  v_check text;
  v_sql text;
begin
  for p in
    select n.nspname, c.relname, pol.polname, pg_get_expr(pol.polqual, pol.polrelid) as qual, pg_get_expr(pol.polwithcheck, pol.polrelid) as with_check
    from pg_policy pol join pg_class c on c.oid = pol.polrelid join pg_namespace n on n.oid = c.relnamespace
  loop
    v_using := replace(p.qual, 'app.current_accessible_workspace_id()', 'app.current_workspace_id()) AND (app.current_workspace_accessible()');
    v_check := replace(p.with_check, 'app.current_accessible_workspace_id()', 'app.current_workspace_id()) AND (app.current_workspace_accessible()');
    v_using := regexp_replace(v_using, 'app\\.(current_\\w+)\\(\\)', '(SELECT app.\\1())', 'g');
    v_check := regexp_replace(v_check, 'app\\.(current_\\w+)\\(\\)', '(SELECT app.\\1())', 'g');
    if v_using is distinct from p.qual or v_check is distinct from p.with_check then
      v_sql := format('alter policy %I on %I.%I', p.polname, p.nspname, p.relname);
      if v_using is not null then v_sql := v_sql || format(' using (%s)', v_using); end if;
      if v_check is not null then v_sql := v_sql || format(' with check (%s)', v_check); end if;
      execute v_sql;
    end if;
  end loop;
end
$$`;

interface Prepared {
  baseUrl: string;
  pid: number;
  workspace: string;
  integration: string;
  token: string;
}

async function prepare(ctx: ScenarioContext, side: (typeof SIDES)[number]): Promise<Prepared & { release: () => Promise<void> }> {
  const { knobs, cleanup, log } = ctx;
  const db = await cloneForBench(ctx.cluster, cleanup, `policies_${side}`);
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize }, cleanup);
  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: `owner@${side}.policies.bench.example.com`, password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Policies' },
  });
  const workspace: string = signup.data.workspace.id;
  const key = await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${workspace}/api-keys`, {
    token: signup.data.session.token,
    expect: 201,
    body: { name: 'bench policies key', workspaceIds: [workspace], role: 'editor' },
  });
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  try {
    const t0 = performance.now();
    await owner.query('begin');
    await owner.query('set local session_replication_role = replica');
    const r = (await owner.query(FIXTURE_SQL, [signup.data.organization.id, workspace, ROWS])).rows[0];
    await rebuildListCounters(owner);
    if (side === 'wrapped') await owner.query(WRAP_SQL);
    await owner.query('commit');
    await owner.query('vacuum (analyze) app.content_roots, app.content_items, app.media_items, app.campaigns, app.media_labels, app.content_item_counts, app.content_root_counts');
    const wrapped = Number((await owner.query(`select count(*) from pg_policies where qual ~ 'SELECT app' or with_check ~ 'SELECT app'`)).rows[0].count);
    log(`policies: ${side}: fixture in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${wrapped} policies with subqueries`);
    if ((side === 'wrapped') !== wrapped > 0) throw new Error(`policies: the ${side} clone has ${wrapped} policies with subqueries`);
    return {
      baseUrl: server.baseUrl,
      pid: server.pid,
      workspace,
      integration: r.integration,
      token: key.data.key,
      release: async () => {
        await server.release();
        await db.release();
      },
    };
  } finally {
    await owner.end();
  }
}

interface Route {
  group: string;
  op: (client: HttpClient, p: Prepared, edition: string) => ReturnType<HttpClient['getOp']>;
}

const ROUTES: Route[] = [
  { group: 'GET {ws}/content (default page)', op: (c, p) => c.getOp(`/v1/workspaces/${p.workspace}/content`, { authorization: `Bearer ${p.token}` }) },
  {
    group: 'GET {ws}/content?status=scheduled&sortBy=scheduledAt',
    op: (c, p) => c.getOp(`/v1/workspaces/${p.workspace}/content?status=scheduled&sortBy=scheduledAt`, { authorization: `Bearer ${p.token}` }),
  },
  { group: 'GET {ws}/content?integrationId', op: (c, p) => c.getOp(`/v1/workspaces/${p.workspace}/content?integrationId=${p.integration}`, { authorization: `Bearer ${p.token}` }) },
  { group: 'GET {ws}/content-roots?limit=20', op: (c, p) => c.getOp(`/v1/workspaces/${p.workspace}/content-roots?limit=20`, { authorization: `Bearer ${p.token}` }) },
  { group: 'GET {ws}/media (default page)', op: (c, p) => c.getOp(`/v1/workspaces/${p.workspace}/media`, { authorization: `Bearer ${p.token}` }) },
  { group: 'GET {ws}/content/{id}', op: (c, p, edition) => c.getOp(`/v1/workspaces/${p.workspace}/content/${edition}`, { authorization: `Bearer ${p.token}` }) },
  {
    group: 'POST {ws}/content (a draft)',
    op: (c, p) =>
      c.jsonOp('POST', `/v1/workspaces/${p.workspace}/content`, p.token, { intent: 'draft', caption: 'Bench draft', channels: [{ integrationId: p.integration }] }, 201),
  },
];

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, log } = ctx;
  const startedAt = new Date().toISOString();
  const prepared = new Map<string, Prepared & { release: () => Promise<void> }>();
  for (const side of SIDES) {
    log(`policies: cloning the template and filling ${ROWS} rows (${side})`);
    prepared.set(side, await prepare(ctx, side));
  }
  const editions = new Map<string, string>();
  for (const side of SIDES) {
    const p = prepared.get(side)!;
    const list = await jsonRequest(p.baseUrl, 'GET', `/v1/workspaces/${p.workspace}/content?limit=1`, { token: p.token, expect: 200 });
    editions.set(side, list.data[0].id);
  }
  const rows: Row[] = [];
  for (const route of ROUTES) {
    log(`policies: ${route.group}: ${knobs.seconds} s per side, interleaved`);
    const clients = new Map(SIDES.map((side) => [side, new HttpClient(prepared.get(side)!.baseUrl, knobs.concurrency, knobs.requestTimeoutMs)]));
    try {
      // Each side's CPU is its own server's; PostgreSQL serves both (its whole CPU is counted).
      const watchOf = (side: (typeof SIDES)[number]) => ({ serverPid: prepared.get(side)!.pid, postgresPid: ctx.machine.postmasterPid });
      const loadOpts = loadOptions(knobs, watchOf('plain'));
      const sides: Side[] = SIDES.map((side) => ({
        name: side,
        watch: watchOf(side),
        makeOp: () => route.op(clients.get(side)!, prepared.get(side)!, editions.get(side)!),
      }));
      const results = await measureSides(sides, loadOpts);
      for (const side of SIDES) {
        rows.push({ group: route.group, side, what: `${route.group} on ${ROWS} editions, policies ${side}`, result: results.get(side)! });
      }
    } finally {
      for (const c of clients.values()) c.close();
    }
  }
  for (const p of prepared.values()) await p.release();
  return {
    scenario: 'policies',
    description: policies.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { rows: ROWS, sides: SIDES, wrap: 'every app.current_*() wrapped in (SELECT ...); the accessible-workspace scope split back into its two terms' },
    rows,
    ratios: ratiosFor(rows, 'plain', 'wrapped'),
    notes: [
      'ratio plain/wrapped: req/s and latency with the policies as migrated (no subqueries) against the same policies with each helper in a scalar subquery (req/s 1.00 = no cost).',
      'The two sides are two databases and two API servers on one PostgreSQL; "server" is the side\'s own server, "postgres" all of PostgreSQL, "other" includes the idle other server.',
    ],
  };
}

export const policies: Scenario = {
  name: 'policies',
  description: 'row-level security without subqueries (as migrated) against the old wrapped form, content and media lists, reads and a create at 100,000 editions: ratio plain/wrapped',
  run,
};
