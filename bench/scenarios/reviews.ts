// Scenario "reviews": the reviewer inbox and summary of an approver with 100
// items waiting, in a workspace holding 100,000 review items beside the same
// calls in a workspace holding 1,000 (same organization, same approver, same
// server), interleaved in slices so a disturbance hits both alike.
//
//   GET /v1/workspaces/{ws}/reviews/inbox?platform=all&urgency=all   (100 items)
//   GET /v1/workspaces/{ws}/reviews/summary
//
// The question: does the inbox cost grow with the workspace's review items,
// or only with the caller's? (The inbox reads review_items.waiting_on through
// the GIN index review_items_waiting_on_idx; db/migrations/committed/000010-reviews-and-approval-workflows.sql.)
// Target: p99 of the large workspace within 1.5x of the small one's.
//
// Fixture: sign-up, a second workspace and a sandbox channel in each through
// the API; then, as the superuser with session_replication_role = replica
// (seconds instead of minutes), BENCH_REVIEWS_LARGE (100,000) and
// BENCH_REVIEWS_SMALL (1,000) draft editions in active reviews of 100 items
// each (one stage, one approver). The owner approves one review (100 items)
// of each workspace; every other item waits on another approver; a third of
// the other reviews are completed (their items approved).
import pg from 'pg';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import type { Ratio, Row, ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const LARGE = Math.max(200, Number(process.env.BENCH_REVIEWS_LARGE ?? 100_000));
const SMALL = Math.max(200, Number(process.env.BENCH_REVIEWS_SMALL ?? 1_000));
const WAITING = 100;
const PER_REVIEW = 100;

/** Inserts `items` review items in active reviews of 100, 100 of them waiting on `approver`. */
async function fill(owner: pg.Client, org: string, ws: string, channel: string, approver: string, items: number) {
  await owner.query('begin');
  await owner.query('set local session_replication_role = replica');
  await owner.query(
    `with r as (
       insert into app.content_roots (organization_id, workspace_id, caption)
       select $1, $2, 'Bench review ' || n from generate_series(1, $4::int) n returning id)
     insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, caption)
     select $1, $2, r.id, $3, 'pending_approval', null from r`,
    [org, ws, channel, items],
  );
  // Reviews of 100 items; review 1 waits on the approver, the others on someone else; every third is completed.
  await owner.query(
    `insert into app.reviews (organization_id, workspace_id, status, title, stages, sent_at, completed_at)
     select $1, $2, case when n > 1 and n % 3 = 0 then 'completed' else 'active' end, 'Bench review ' || n,
            jsonb_build_array(jsonb_build_object('name', 'Stage', 'rule', 'all', 'quorum', null, 'dueInHours', 24,
              'approvers', jsonb_build_array(jsonb_build_object('type', 'member', 'userId',
                case when n = 1 then $3::text else gen_random_uuid()::text end)))),
            now() - (n % 48) * interval '1 hour', case when n > 1 and n % 3 = 0 then now() end
     from generate_series(1, ceil($4::numeric / $5)::int) n`,
    [org, ws, approver, items, PER_REVIEW],
  );
  await owner.query(
    `with c as (select id, row_number() over (order by id) - 1 as k from app.content_items where workspace_id = $2),
          r as (select id, status, stages, row_number() over (order by title ~ '^Bench review 1$' desc, created_at, id) - 1 as k
                from app.reviews where workspace_id = $2)
     insert into app.review_items (organization_id, workspace_id, review_id, content_id, state, open, current_stage,
                                   stage_opened_at, waiting_on, prior_status, approved_version, decided_at)
     select $1, $2, r.id, c.id,
            case when r.status = 'completed' then 'approved' else 'pending' end,
            r.status = 'active', 0, now() - (c.k % 72) * interval '1 hour',
            case when r.status = 'active' then array['user:' || (r.stages -> 0 -> 'approvers' -> 0 ->> 'userId')] else '{}' end,
            'draft', case when r.status = 'completed' then 1 end, case when r.status = 'completed' then now() end
     from c join r on r.k = c.k / $3`,
    [org, ws, PER_REVIEW],
  );
  await owner.query('commit');
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  log('reviews: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'reviews');
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize }, cleanup);
  log(`reviews: server pid ${server.pid}; fixture through the API`);
  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'reviewer@bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Large' },
  });
  const token: string = signup.data.session.token;
  const org: string = signup.data.organization.id;
  const userId: string = signup.data.user.id;
  const large: string = signup.data.workspace.id;
  const small: string = (await jsonRequest(server.baseUrl, 'POST', '/v1/workspaces', { token, expect: 201, body: { name: 'Small' } })).data.id;
  const channel = async (ws: string) =>
    (await jsonRequest(server.baseUrl, 'POST', `/v1/workspaces/${ws}/integrations`, { token, expect: 201, body: { connector: 'sandbox', platform: 'x', name: 'Bench X' } }))
      .data.id as string;
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const closeOwner = cleanup.add('close the owner connection', () => owner.end());
  log(`reviews: ${LARGE} review items in the large workspace, ${SMALL} in the small one`);
  await fill(owner, org, large, await channel(large), userId, LARGE);
  await fill(owner, org, small, await channel(small), userId, SMALL);
  await owner.query('analyze');
  const counts = (
    await owner.query(`select workspace_id, count(*)::int n, count(*) filter (where waiting_on @> array[$1])::int waiting from app.review_items group by 1`, [`user:${userId}`])
  ).rows;
  const sizes = Object.fromEntries(counts.map((r) => [r.workspace_id, r]));

  // Both answer the approver's 100 items before anything is timed.
  for (const ws of [large, small]) {
    const inbox = await jsonRequest(server.baseUrl, 'GET', `/v1/workspaces/${ws}/reviews/inbox?platform=all&urgency=all`, { token, expect: 200 });
    const summary = await jsonRequest(server.baseUrl, 'GET', `/v1/workspaces/${ws}/reviews/summary`, { token, expect: 200 });
    if (inbox.data.length !== WAITING || summary.data.total !== WAITING) {
      throw new Error(`reviews: expected ${WAITING} waiting items in ${ws}, got inbox ${inbox.data.length}, summary ${JSON.stringify(summary.data)}`);
    }
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  const ratios: Ratio[] = [];
  const notes: string[] = [];
  const headers = { authorization: `Bearer ${token}` };
  for (const [group, suffix] of [
    ['GET reviews/inbox (100 waiting)', '/reviews/inbox?platform=all&urgency=all'],
    ['GET reviews/summary (100 waiting)', '/reviews/summary'],
  ] as const) {
    log(`reviews: ${group}: ${knobs.seconds} s per side, interleaved`);
    const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
    try {
      const sides: Side[] = [
        { name: `${LARGE} items`, makeOp: () => client.getOp(`/v1/workspaces/${large}${suffix}`, headers) },
        { name: `${SMALL} items`, makeOp: () => client.getOp(`/v1/workspaces/${small}${suffix}`, headers) },
      ];
      const results = await measureSides(sides, loadOpts);
      for (const s of sides) {
        rows.push({ group, side: s.name, what: `workspace with ${s.name.split(' ')[0]} review items`, result: results.get(s.name)! });
      }
      const big = results.get(sides[0].name)!;
      const little = results.get(sides[1].name)!;
      const p99 = big.latency.p99 / little.latency.p99;
      ratios.push({ group, numerator: sides[0].name, denominator: sides[1].name, rps: big.rps / little.rps, p50: big.latency.p50 / little.latency.p50, p99 });
      notes.push(
        `${group}: p99 ${big.latency.p99.toFixed(1)} ms with ${LARGE} items vs ${little.latency.p99.toFixed(1)} ms with ${SMALL}: ` +
          `${p99.toFixed(2)}x (target <= 1.5x) ${p99 <= 1.5 ? 'MET' : 'NOT MET'}`,
      );
    } finally {
      client.close();
    }
  }
  await closeOwner();
  await server.release();
  await db.release();
  return {
    scenario: 'reviews',
    description: reviews.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { database: db.name, serverPid: server.pid, large: { workspaceId: large, ...sizes[large] }, small: { workspaceId: small, ...sizes[small] }, waiting: WAITING },
    rows,
    ratios,
    notes,
  };
}

export const reviews: Scenario = {
  name: 'reviews',
  description: `reviewer inbox and summary (100 waiting): a workspace of ${LARGE} review items vs one of ${SMALL}`,
  run,
};
