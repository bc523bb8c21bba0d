// Query plans of the lists at a realistic size: every list's common filters
// and sorts must be served by an index, never by a sequential scan of a large
// tenant table. A workspace gets 100,000 editions (over 4 integrations and
// every status), 100,000 media items, 2,000 campaigns and 2,000 labels, beside
// a neighbour workspace with 20,000 editions; then ANALYZE, as autovacuum
// would. Each list's api function is called exactly as a request does (role
// pressroom_request, the principal in the pressroom.* settings) with
// auto_explain logging every nested statement's plan (JSON, with ANALYZE) to
// the client; the test fails on a Seq Scan node of an app table holding
// 10,000 rows or more, or on any scan of such a table that touches more than
// MAX_ROWS_TOUCHED rows (an index scan that filters the whole workspace is a
// scan of the set all the same), and names the list, the filter and the statement.
// Offset pages are left out: a page at offset N reads N rows whatever the index.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let o: Awaited<ReturnType<typeof signup>>;
let igs: string[] = [];
let label = '';
let conn: pg.Client;
const plans: { statement: string; plan: any }[] = [];

beforeAll(async () => {
  server = await startTestServer('explain');
  const api = client(server);
  o = await signup(api);
  const other = await signup(api);
  const q = (text: string, params: unknown[] = []) => server.owner.query(text, params);
  await q('begin');
  await q('set local session_replication_role = replica');
  const fixture = async (ws: { organizationId: string; workspaceId: string }, editions: number, media: number, named: number) => {
    const ig = (
      await q(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name, settings)
         select $1, $2, 'sandbox', (array['x', 'linkedin', 'facebook', 'instagram'])[n], 'Channel ' || n, '{}' from generate_series(1, 4) n returning id`,
        [ws.organizationId, ws.workspaceId],
      )
    ).rows.map((r) => r.id as string);
    await q(
      `with r as (insert into app.content_roots (organization_id, workspace_id, caption, updated_at)
                  select $1, $2, 'Post ' || n, now() - n * interval '1 minute' from generate_series(1, $4::int) n returning id, updated_at),
            n as (select id, updated_at, row_number() over () as k from r)
       insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at, sent_at, created_at, updated_at)
       select $1, $2, n.id, ($3::uuid[])[1 + k % 4],
              (array['draft', 'scheduled', 'sent', 'sent', 'sent', 'failed', 'pending_approval', 'cancelled'])[1 + k % 8],
              -- scheduled: ahead (a handful due, being sent); sent and failed: in the past
              case when k % 8 = 1 then now() + (k - 40) * interval '1 minute'
                   when k % 8 in (2, 3, 4, 5) then now() - k * interval '1 minute' end,
              case when k % 8 in (2, 3, 4) then now() - k * interval '1 minute' end,
              n.updated_at, n.updated_at
       from n`,
      [ws.organizationId, ws.workspaceId, ig, editions],
    );
    await q(
      `insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key, alt_text, state, created_at)
       select $1, $2, case when n % 5 = 0 then 'video' else 'image' end,
              (array['sunset', 'beach', 'office', 'team', 'product', 'launch', 'winter', 'city'])[1 + n % 8] || '-' || n || '.jpg',
              case when n % 5 = 0 then 'video/mp4' else 'image/jpeg' end, 1000 + n, 'k/' || gen_random_uuid(),
              case when n % 3 = 0 then 'A photo of item ' || n end, 'active', now() - n * interval '1 minute'
       from generate_series(1, $3::int) n`,
      [ws.organizationId, ws.workspaceId, media],
    );
    await q(
      `insert into app.campaigns (organization_id, workspace_id, name) select $1, $2, 'Campaign ' || md5(n::text) from generate_series(1, $3::int) n`,
      [ws.organizationId, ws.workspaceId, named],
    );
    await q(
      `insert into app.media_labels (organization_id, workspace_id, name) select $1, $2, 'Label ' || md5(n::text) from generate_series(1, $3::int) n`,
      [ws.organizationId, ws.workspaceId, named],
    );
    return ig;
  };
  igs = await fixture(o, 100_000, 100_000, 2_000);
  await fixture(other, 20_000, 2_000, 200);
  // The counters the triggers keep (triggers were off for the bulk insert): rebuilt as the migration builds them.
  await q(`delete from app.content_item_counts`);
  await q(
    `insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
     select organization_id, workspace_id, integration_id, status, count(*) from app.content_items where deleted_at is null group by 1, 2, 3, 4`,
  );
  await q(`delete from app.content_root_counts`);
  await q(
    `insert into app.content_root_counts (organization_id, workspace_id, n)
     select organization_id, workspace_id, count(*) from app.content_roots where deleted_at is null group by 1, 2`,
  );
  await q('commit');
  await q('analyze');
  label = (await q(`select id from app.media_labels where workspace_id = $1 limit 1`, [o.workspaceId])).rows[0].id;

  conn = new pg.Client({ connectionString: server.db.ownerUrl });
  await conn.connect();
  conn.on('notice', (n) => {
    const m = /plan:\s*(\{[\s\S]*\})\s*$/.exec(n.message ?? '');
    if (!m) return;
    const parsed = JSON.parse(m[1]);
    plans.push({ statement: String(parsed['Query Text'] ?? ''), plan: parsed.Plan });
  });
  await conn.query(`load 'auto_explain'`);
  await conn.query(`set auto_explain.log_min_duration = 0`);
  await conn.query(`set auto_explain.log_nested_statements = on`);
  await conn.query(`set auto_explain.log_analyze = on`);
  await conn.query(`set auto_explain.log_format = json`);
  await conn.query(`set client_min_messages = log`);
}, 240_000);

afterAll(async () => {
  await conn?.end();
  await server?.close();
});

/**
 * The app tables big enough that a sequential scan of them is a bug. Below
 * that (2,000 campaigns or labels) reading the table is the cheapest plan and
 * the planner rightly takes it; their trigram indexes serve them once they grow.
 */
async function largeTables(): Promise<Set<string>> {
  const rows = (await server.owner.query(`select relname from pg_class where relnamespace = 'app'::regnamespace and relkind = 'r' and reltuples >= 10000`)).rows;
  return new Set(rows.map((r) => r.relname as string));
}

/** A page reads a few pages' worth of rows: a scan of a large table that touches more is a scan of the set, index or not. */
const MAX_ROWS_TOUCHED = 2000;

function badScans(plan: any, large: Set<string>, out: string[] = []): string[] {
  if (!plan) return out;
  const rel = plan['Relation Name'];
  if (rel && large.has(rel)) {
    const touched =
      (plan['Actual Rows'] ?? 0) * (plan['Actual Loops'] ?? 1) + (plan['Rows Removed by Filter'] ?? 0) + (plan['Rows Removed by Index Recheck'] ?? 0);
    if (plan['Node Type'] === 'Seq Scan') {
      out.push(`Seq Scan on ${rel} (rows ${plan['Actual Rows']}, filter ${plan.Filter ?? '-'})`);
    } else if (touched > MAX_ROWS_TOUCHED) {
      out.push(`${plan['Node Type']} on ${rel}${plan['Index Name'] ? ` using ${plan['Index Name']}` : ''} touched ${touched} rows (filter ${plan.Filter ?? '-'})`);
    }
  }
  for (const p of plan.Plans ?? []) badScans(p, large, out);
  return out;
}

/** Runs `select <call>` as the workspace owner's request would, and returns the plans of every statement it ran. */
async function plansOf(call: string, params: readonly unknown[]): Promise<{ statement: string; plan: any }[]> {
  plans.length = 0;
  await conn.query('begin');
  try {
    await conn.query(
      `select set_config('role', 'pressroom_request', true), set_config('pressroom.actor_kind', 'user', true),
              set_config('pressroom.user_id', $1, true), set_config('pressroom.session_id', '', true),
              set_config('pressroom.api_key_id', '', true), set_config('pressroom.organization_id', $2, true),
              set_config('pressroom.workspace_id', $3, true), set_config('pressroom.workspace_role', 'manager', true),
              set_config('pressroom.request_id', 'explain-test', true)`,
      [o.userId, o.organizationId, o.workspaceId],
    );
    const r = await conn.query(`select ${call} as result`, [...params]);
    expect(r.rows[0].result).toBeTruthy();
  } finally {
    await conn.query('rollback');
  }
  return [...plans];
}

const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();
const content = (query: Record<string, unknown>) => ['api.list_content($1::jsonb)', [JSON.stringify({ limit: 20, offset: 0, ...query })]] as const;
const media = (filters: Record<string, unknown>) => ['api.list_media($1::jsonb, null, 50)', [JSON.stringify(filters)]] as const;

const cases: [string, () => readonly [string, readonly unknown[]]][] = [
  ['content: default page', () => content({})],
  ['content: status=scheduled', () => content({ status: 'scheduled' })],
  ['content: status=scheduled, sortBy=scheduledAt', () => content({ status: 'scheduled', sortBy: 'scheduledAt' })],
  ['content: status=sent, sortBy=status', () => content({ status: 'sent', sortBy: 'status' })],
  ['content: integrationId', () => content({ integrationId: igs[1] })],
  ['content: integrationId, status=scheduled, sortBy=scheduledAt', () => content({ integrationId: igs[1], status: 'scheduled', sortBy: 'scheduledAt' })],
  ['content: sortBy=createdAt', () => content({ sortBy: 'createdAt' })],
  ['content: workflowStatuses=scheduled,publishing', () => content({ workflowStatuses: ['scheduled', 'publishing'] })],
  ['content: workflowStatus=published', () => content({ workflowStatus: 'published' })],
  // the calendar's visible range (GET content?scheduledFrom=&scheduledTo=)
  ['content: scheduledFrom/scheduledTo (a day ahead)', () => content({ scheduledFrom: inDays(1), scheduledTo: inDays(2) })],
  ['content: status=scheduled, a week ahead, sortBy=scheduledAt asc', () => content({ status: 'scheduled', scheduledFrom: inDays(1), scheduledTo: inDays(8), sortBy: 'scheduledAt', sortDirection: 'asc' })],
  ['content: status=sent, a day past, sortBy=scheduledAt asc', () => content({ status: 'sent', scheduledFrom: inDays(-3), scheduledTo: inDays(-2), sortBy: 'scheduledAt', sortDirection: 'asc' })],
  ['content roots: default page', () => ['api.list_content_roots(20, 0)', []]],
  ['media: default page', () => media({})],
  ['media: search', () => media({ search: 'sunset-12' })],
  ['media: search in alt text', () => media({ search: 'item 1234' })],
  ['media: sortBy=filename', () => media({ sortBy: 'filename', order: 'asc' })],
  ['media: type=video', () => media({ type: 'video' })],
  ['media: a label', () => media({ labelIds: [label] })],
  ['campaigns: search', () => ['api.list_campaigns($1, false)', ['c4ca4238']]],
  ['media labels: search', () => ['api.list_media_labels(null, false, $1)', ['eccbc87e']]],
];

describe('list plans at 100,000 editions: no sequential scan of a large tenant table', () => {
  it.each(cases)('%s', async (_name, make) => {
    const large = await largeTables();
    expect(large.has('content_items')).toBe(true);
    expect(large.has('media_items')).toBe(true);
    const [call, params] = make();
    const got = await plansOf(call, params);
    expect(got.length).toBeGreaterThan(0);
    const bad = got.flatMap((p) => badScans(p.plan, large).map((s) => `${s}\n    in: ${p.statement.replace(/\s+/g, ' ').slice(0, 300)}`));
    expect(bad, bad.join('\n')).toEqual([]);
  });

  it('the content total comes from the counters and is exact', async () => {
    const run = async (query: Record<string, unknown>) => {
      await conn.query('begin');
      try {
        await conn.query(
          `select set_config('role', 'pressroom_request', true), set_config('pressroom.actor_kind', 'user', true),
                  set_config('pressroom.user_id', $1, true), set_config('pressroom.organization_id', $2, true),
                  set_config('pressroom.workspace_id', $3, true), set_config('pressroom.workspace_role', 'manager', true)`,
          [o.userId, o.organizationId, o.workspaceId],
        );
        return (await conn.query(`select api.list_content($1::jsonb) as r`, [JSON.stringify({ limit: 1, offset: 0, ...query })])).rows[0].r.meta;
      } finally {
        await conn.query('rollback');
      }
    };
    const exact = async (where: string, params: unknown[] = []) =>
      Number((await server.owner.query(`select count(*) n from app.content_items i where i.workspace_id = $1 and i.deleted_at is null and ${where}`, [o.workspaceId, ...params])).rows[0].n);
    expect((await run({})).total).toBe(await exact(`i.status in ('draft', 'scheduled', 'sent', 'failed')`));
    expect((await run({ status: 'cancelled' })).total).toBe(await exact(`i.status = 'cancelled'`));
    expect((await run({ integrationId: igs[2] })).total).toBe(await exact(`i.status in ('draft', 'scheduled', 'sent', 'failed') and i.integration_id = $2`, [igs[2]]));
    expect((await run({ workflowStatuses: ['publishing'] })).total).toBe(await exact(`i.status = 'scheduled' and i.scheduled_at <= now()`));
    expect((await run({ workflowStatuses: ['scheduled'] })).total).toBe(await exact(`i.status = 'scheduled' and i.scheduled_at > now()`));
    expect((await run({ workflowStatuses: ['in_review', 'published'] })).total).toBe(await exact(`i.status in ('pending_approval', 'sent')`));
  });
});
