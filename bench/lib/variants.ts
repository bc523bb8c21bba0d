// Two forms of the schema side by side in one run, on the "lists" scenario's
// 100,000-row workspace (content, media, campaigns, labels): scenarios
// "policies" and "plpgsql". Each side is a clone of the template with the same
// fixture and its own API server; a side's `rewrite` SQL turns its clone into
// the form it measures (in the fixture's transaction), and `verify` reads back
// that it did. The servers are driven alternately in slices over the same
// routes (content and media lists, one edition by id, creating a draft), so a
// disturbance hits both alike.
import pg from 'pg';
import { rebuildListCounters } from './counters.ts';
import { HttpClient, jsonRequest } from './http.ts';
import { loadOptions, measureSides, type Side } from './load.ts';
import { ratiosFor, type Row, type ScenarioReport } from './report.ts';
import type { ScenarioContext } from './scenario.ts';
import { cloneForBench, startServer } from './stack.ts';
import { FIXTURE_SQL } from '../scenarios/lists.ts';

export const VARIANT_ROWS = 100_000;

export interface Variant {
  name: string;
  /** SQL run on this side's clone after the fixture, in its transaction; none: the schema as migrated. */
  rewrite?: string;
  /** Reads back what the rewrite did; returns a line for the log, throws when the clone is not in its form. */
  verify(owner: pg.Client): Promise<string>;
}

export interface VariantsRun {
  scenario: string;
  description: string;
  /** [the side as migrated, the side it is compared with]: ratios are first / second. */
  variants: [Variant, Variant];
  setup: Record<string, unknown>;
  notes: string[];
}

interface Prepared {
  baseUrl: string;
  pid: number;
  workspace: string;
  integration: string;
  token: string;
  release: () => Promise<void>;
}

async function prepare(ctx: ScenarioContext, scenario: string, v: Variant): Promise<Prepared> {
  const { knobs, cleanup, log } = ctx;
  const db = await cloneForBench(ctx.cluster, cleanup, `${scenario}_${v.name}`);
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize }, cleanup);
  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: `owner@${v.name}.${scenario}.bench.example.com`, password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: scenario },
  });
  const workspace: string = signup.data.workspace.id;
  const key = await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${workspace}/api-keys`, {
    token: signup.data.session.token,
    expect: 201,
    body: { name: `bench ${scenario} key`, workspaceIds: [workspace], role: 'editor' },
  });
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  try {
    const t0 = performance.now();
    await owner.query('begin');
    await owner.query('set local session_replication_role = replica');
    const r = (await owner.query(FIXTURE_SQL, [signup.data.organization.id, workspace, VARIANT_ROWS])).rows[0];
    await rebuildListCounters(owner);
    if (v.rewrite) await owner.query(v.rewrite);
    await owner.query('commit');
    await owner.query('vacuum (analyze) app.content_roots, app.content_items, app.media_items, app.campaigns, app.media_labels, app.content_item_counts, app.content_root_counts');
    log(`${scenario}: ${v.name}: fixture in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${await v.verify(owner)}`);
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

export async function runVariants(ctx: ScenarioContext, run: VariantsRun): Promise<ScenarioReport> {
  const { knobs, log } = ctx;
  const startedAt = new Date().toISOString();
  const names = run.variants.map((v) => v.name);
  const prepared = new Map<string, Prepared>();
  for (const v of run.variants) {
    log(`${run.scenario}: cloning the template and filling ${VARIANT_ROWS} rows (${v.name})`);
    prepared.set(v.name, await prepare(ctx, run.scenario, v));
  }
  const editions = new Map<string, string>();
  for (const name of names) {
    const p = prepared.get(name)!;
    const list = await jsonRequest(p.baseUrl, 'GET', `/v1/workspaces/${p.workspace}/content?limit=1`, { token: p.token, expect: 200 });
    editions.set(name, list.data[0].id);
  }
  const rows: Row[] = [];
  for (const route of ROUTES) {
    log(`${run.scenario}: ${route.group}: ${knobs.seconds} s per side, interleaved`);
    const clients = new Map(names.map((name) => [name, new HttpClient(prepared.get(name)!.baseUrl, knobs.concurrency, knobs.requestTimeoutMs)]));
    try {
      // Each side's CPU is its own server's; PostgreSQL serves both (its whole CPU is counted).
      const watchOf = (name: string) => ({ serverPid: prepared.get(name)!.pid, postgresPid: ctx.machine.postmasterPid });
      const loadOpts = loadOptions(knobs, watchOf(names[0]));
      const sides: Side[] = names.map((name) => ({
        name,
        watch: watchOf(name),
        makeOp: () => route.op(clients.get(name)!, prepared.get(name)!, editions.get(name)!),
      }));
      const results = await measureSides(sides, loadOpts);
      for (const name of names) {
        rows.push({ group: route.group, side: name, what: `${route.group} on ${VARIANT_ROWS} editions, ${name}`, result: results.get(name)! });
      }
    } finally {
      for (const c of clients.values()) c.close();
    }
  }
  for (const p of prepared.values()) await p.release();
  return {
    scenario: run.scenario,
    description: run.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { rows: VARIANT_ROWS, sides: names, ...run.setup },
    rows,
    ratios: ratiosFor(rows, names[0], names[1]),
    notes: [
      ...run.notes,
      'The two sides are two databases and two API servers on one PostgreSQL; "server" is the side\'s own server, "postgres" all of PostgreSQL, "other" includes the idle other server.',
    ],
  };
}
