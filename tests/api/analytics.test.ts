// Analytics over HTTP: the sync job fetches the sandbox's deterministic
// numbers into snapshots, and every route reads what the rollups hold;
// webhook integrations push theirs; roles and tenants. Editions are inserted
// as the superuser, as the publishing engine leaves them (status sent, with
// a platform post id): publishing is another area.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMetricsSync } from '../../server/jobs/analytics.ts';
import { sandboxAccountMetrics, sandboxPostMetrics } from '../../server/platforms/sandbox.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('analytics');
  api = client(server);
});
afterAll(async () => server?.close());

type Owner = Awaited<ReturnType<typeof signup>>;
const DAY = 86_400_000;
const METRICS = ['impressions', 'reach', 'likes', 'comments', 'shares', 'saves', 'clicks', 'videoViews'] as const;

async function integration(owner: Owner, platform: string, behavior = 'succeed') {
  const r = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name: `${platform} ${behavior}`, settings: { behavior } }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: string; name: string; platform: string };
}

/** A sent edition of a new root, as the engine leaves it. */
async function sent(owner: Owner, integrationId: string, sentAt: Date, opts: { caption?: string; tagId?: string; campaignId?: string } = {}) {
  const c = server.owner;
  await c.query('begin');
  try {
    await c.query('set local session_replication_role = replica');
    const root = await c.query(`insert into app.content_roots (organization_id, workspace_id, caption, campaign_id) values ($1, $2, $3, $4) returning id`,
      [owner.organizationId, owner.workspaceId, opts.caption ?? 'A post', opts.campaignId ?? null]);
    const rootId = root.rows[0].id as string;
    if (opts.tagId) {
      await c.query(`insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id) values ($1, $2, $3, $4)`,
        [rootId, opts.tagId, owner.workspaceId, owner.organizationId]);
    }
    const item = await c.query(
      `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, sent_at, platform_post_id, permalink)
       values ($1, $2, $3, $4, 'sent', $5, 'sb-' || gen_random_uuid(), 'https://sandbox.pressroom.invalid/p') returning id, platform_post_id`,
      [owner.organizationId, owner.workspaceId, rootId, integrationId, sentAt.toISOString()]);
    await c.query('commit');
    return { id: item.rows[0].id as string, rootId, platformPostId: item.rows[0].platform_post_id as string, sentAt };
  } catch (e) {
    await c.query('rollback');
    throw e;
  }
}

/** Makes every edition and account of the workspace due again (as if the sync interval had passed). */
async function makeDue(owner: Owner) {
  await server.owner.query(`update app.analytics_post_sync set last_attempt_at = last_attempt_at - interval '2 days' where workspace_id = $1`, [owner.workspaceId]);
  await server.owner.query(`update app.integration_sync_state set account_attempt_at = account_attempt_at - interval '2 days' where workspace_id = $1`, [owner.workspaceId]);
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

describe('analytics', () => {
  let owner: Owner;
  let x: { id: string; name: string };
  let ig: { id: string; name: string };
  let posts: Awaited<ReturnType<typeof sent>>[];
  let tagId: string;
  const today = new Date();
  const d0 = new Date(today.getTime() - 3 * DAY);
  const d1 = new Date(today.getTime() - 1 * DAY);
  const period = `from=${isoDay(new Date(today.getTime() - 9 * DAY))}&to=${isoDay(today)}`;
  const base = () => `/v1/workspaces/${owner.workspaceId}/analytics`;

  beforeAll(async () => {
    owner = await signup(api);
    x = await integration(owner, 'x');
    ig = await integration(owner, 'instagram');
    tagId = (await api.post(`/v1/workspaces/${owner.workspaceId}/tags`, { name: 'Launch' }, { token: owner.token })).body.data.id;
    posts = [
      await sent(owner, x.id, new Date(today.getTime() - 4 * DAY), { caption: 'First on X', tagId }),
      await sent(owner, x.id, new Date(today.getTime() - 2 * DAY), { caption: 'Second on X' }),
      await sent(owner, ig.id, new Date(today.getTime() - 4 * DAY), { caption: 'On Instagram', tagId }),
    ];
    // Two sync runs on two days: snapshots grow as the sandbox's numbers do.
    const first = await runMetricsSync(server.deps, { at: () => d0 });
    expect(first).toMatchObject({ posts: 3, snapshots: 3, accounts: 2, failed: 0 });
    expect((await runMetricsSync(server.deps, { at: () => d1 })).posts, 'nothing is due right after a sync').toBe(0);
    await makeDue(owner);
    expect(await runMetricsSync(server.deps, { at: () => d1 })).toMatchObject({ posts: 3, snapshots: 3, accounts: 2 });
  });

  it('the sync job keeps the sandbox numbers as a time series: same post, same day, same numbers', async () => {
    const snaps = await server.owner.query(
      `select content_item_id, captured_at, impressions, likes, video_views from app.post_metric_snapshots where workspace_id = $1 order by captured_at`,
      [owner.workspaceId]);
    expect(snaps.rows).toHaveLength(6);
    const ref = { id: x.id, connector: 'sandbox' as const, platform: 'x', name: x.name, username: null, settings: { behavior: 'succeed' } };
    const expected = sandboxPostMetrics(ref, { platformPostId: posts[0].platformPostId, publishedAt: posts[0].sentAt.toISOString(), at: d1 });
    const got = snaps.rows.find((r) => r.content_item_id === posts[0].id && new Date(r.captured_at).getTime() === d1.getTime());
    expect(Number(got.impressions)).toBe(expected.impressions);
    expect(sandboxPostMetrics(ref, { platformPostId: posts[0].platformPostId, publishedAt: posts[0].sentAt.toISOString(), at: new Date(d1.getTime() + 1000) }))
      .toMatchObject({ impressions: expected.impressions, likes: expected.likes });
    const earlier = snaps.rows.find((r) => r.content_item_id === posts[0].id && new Date(r.captured_at).getTime() === d0.getTime());
    expect(Number(earlier.impressions)).toBeLessThan(expected.impressions);
    const account = sandboxAccountMetrics(ref, d1);
    expect(Object.values(account.demographics!.age).reduce((a, b) => a + b, 0)).toBe(account.followers);
  });

  it('summary: the gains of the period equal the latest counters, with the previous period', async () => {
    const r = await api.get(`${base()}/summary?${period}`, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const latest = await server.owner.query(`select sum(impressions)::int as i, sum(likes + comments + shares + saves)::int as e from app.post_metrics_latest where workspace_id = $1`, [owner.workspaceId]);
    expect(r.body.data.metrics.impressions).toMatchObject({ value: latest.rows[0].i, previous: 0, change: latest.rows[0].i, changePercent: null });
    expect(r.body.data.metrics.engagements.value).toBe(latest.rows[0].e);
    expect(r.body.data.metrics.postsPublished.value).toBe(3);
    expect(r.body.data.metrics.followers.value).toBeGreaterThan(0);
    expect(r.body.data.period).toMatchObject({ days: 10, timezone: 'UTC' });
    const onlyX = await api.get(`${base()}/summary?${period}&integrationIds=${x.id}`, { token: owner.token });
    expect(onlyX.body.data.integrationIds).toEqual([x.id]);
    expect(onlyX.body.data.metrics.postsPublished.value).toBe(2);
    expect(onlyX.body.data.metrics.impressions.value).toBeLessThan(r.body.data.metrics.impressions.value);
    // Default period: the 30 days ending today.
    const def = await api.get(`${base()}/summary`, { token: owner.token });
    expect(def.body.data.period).toMatchObject({ to: isoDay(today), days: 30 });
    expect(def.body.data.metrics.impressions.value).toBe(latest.rows[0].i);
    // Bad input.
    expect((await api.get(`${base()}/summary?from=2026-02-01&to=2026-01-01`, { token: owner.token })).body.error.code).toBe('VALIDATION_FAILED');
    expect((await api.get(`${base()}/summary?from=2024-01-01&to=2026-01-01`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base()}/summary?from=yesterday`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base()}/summary?integrationIds=nope`, { token: owner.token })).status).toBe(400);
    const missing = await api.get(`${base()}/summary?integrationIds=${crypto.randomUUID()}`, { token: owner.token });
    expect([missing.status, missing.body.error.code]).toEqual([404, 'INTEGRATION_NOT_FOUND']);
  });

  it('aggregates: daily, weekly and monthly series by platform, integration and tag add up to the summary', async () => {
    const summary = (await api.get(`${base()}/summary?${period}`, { token: owner.token })).body.data;
    for (const interval of ['day', 'week', 'month']) {
      const r = await api.get(`${base()}/aggregates?${period}&interval=${interval}&groupBy=platform`, { token: owner.token });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data.series.map((s: any) => s.key).sort()).toEqual(['instagram', 'x']);
      const sum = r.body.data.series.flatMap((s: any) => s.points).reduce((a: number, p: any) => a + p.impressions, 0);
      expect(sum, interval).toBe(summary.metrics.impressions.value);
      if (interval === 'day') expect(r.body.data.series[0].points).toHaveLength(10);
    }
    const none = await api.get(`${base()}/aggregates?${period}`, { token: owner.token });
    expect(none.body.data).toMatchObject({ interval: 'day', groupBy: 'none' });
    expect(none.body.data.series).toHaveLength(1);
    expect(none.body.data.series[0]).toMatchObject({ key: null, label: 'All' });
    const byIntegration = await api.get(`${base()}/aggregates?${period}&groupBy=integration`, { token: owner.token });
    expect(byIntegration.body.data.series.map((s: any) => s.label).sort()).toEqual([ig.name, x.name].sort());
    const byTag = await api.get(`${base()}/aggregates?${period}&groupBy=tag`, { token: owner.token });
    expect(byTag.body.data.series.map((s: any) => [s.key, s.label])).toEqual([[tagId, 'Launch']]);
    const tagged = await server.owner.query(`select sum(impressions)::int as i from app.post_metrics_latest where content_item_id = any($1)`, [[posts[0].id, posts[2].id]]);
    expect(byTag.body.data.series[0].points.reduce((a: number, p: any) => a + p.impressions, 0)).toBe(tagged.rows[0].i);
    expect((await api.get(`${base()}/aggregates?interval=hour`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base()}/aggregates?groupBy=author`, { token: owner.token })).status).toBe(400);
  });

  it('the per-post table sorts, filters and pages; the detail has the daily series', async () => {
    const r = await api.get(`${base()}/posts?${period}&sortBy=impressions&order=desc&limit=2`, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.meta).toEqual({ limit: 2, offset: 0, total: 3, hasMore: true });
    expect(r.body.data[0].impressions).toBeGreaterThanOrEqual(r.body.data[1].impressions);
    const rest = await api.get(`${base()}/posts?${period}&sortBy=impressions&order=desc&limit=2&offset=2`, { token: owner.token });
    expect(rest.body.meta).toEqual({ limit: 2, offset: 2, total: 3, hasMore: false });
    expect(rest.body.data[0].impressions).toBeLessThanOrEqual(r.body.data[1].impressions);
    const asc = await api.get(`${base()}/posts?${period}&sortBy=sentAt&order=asc`, { token: owner.token });
    expect(asc.body.data.map((p: any) => p.contentId).at(-1)).toBe(posts[1].id);
    const insta = await api.get(`${base()}/posts?${period}&platform=instagram`, { token: owner.token });
    expect(insta.body.data.map((p: any) => p.contentId)).toEqual([posts[2].id]);
    expect(insta.body.data[0].videoViews).toBeGreaterThan(0);
    const tagged = await api.get(`${base()}/posts?${period}&tagId=${tagId}&sortBy=engagements`, { token: owner.token });
    expect(tagged.body.data.map((p: any) => p.contentId).sort()).toEqual([posts[0].id, posts[2].id].sort());
    const byId = await api.get(`${base()}/posts?${period}&integrationIds=${x.id}`, { token: owner.token });
    expect(byId.body.meta.total).toBe(2);
    expect((await api.get(`${base()}/posts?limit=101`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base()}/posts?sortBy=caption`, { token: owner.token })).status).toBe(400);

    const detail = await api.get(`${base()}/posts/${posts[0].id}`, { token: owner.token });
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
    const d = detail.body.data;
    expect(d.snapshots).toBe(2);
    expect(d.period.from).toBe(isoDay(posts[0].sentAt));
    expect(d.series).toHaveLength(5);
    for (const m of METRICS) expect(d.series.at(-1).total[m], m).toBe(d[m]);
    expect(d.series.find((p: any) => p.day === isoDay(d0)).gained.impressions).toBeGreaterThan(0);
    expect(d.series.find((p: any) => p.day === isoDay(d1)).gained.impressions)
      .toBe(d.impressions - d.series.find((p: any) => p.day === isoDay(d0)).total.impressions);
    const draft = await api.get(`${base()}/posts/${crypto.randomUUID()}`, { token: owner.token });
    expect([draft.status, draft.body.error.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('demographics: each integration and combined, shares adding up', async () => {
    const r = await api.get(`${base()}/demographics`, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.integrations).toHaveLength(2);
    const one = r.body.data.integrations[0];
    expect(one.age.reduce((a: number, b: any) => a + b.count, 0)).toBe(one.followers);
    expect(one.age[0].count).toBeGreaterThanOrEqual(one.age[1].count);
    const followers = r.body.data.integrations.reduce((a: number, i: any) => a + i.followers, 0);
    expect(r.body.data.combined.gender.reduce((a: number, b: any) => a + b.count, 0)).toBe(followers);
    expect(Math.round(r.body.data.combined.country.reduce((a: number, b: any) => a + b.sharePercent, 0))).toBe(100);
    const onlyX = await api.get(`${base()}/demographics?integrationIds=${x.id}`, { token: owner.token });
    expect(onlyX.body.data.integrations.map((i: any) => i.integrationId)).toEqual([x.id]);
    const before = await api.get(`${base()}/demographics?on=2020-01-01`, { token: owner.token });
    expect(before.body.data.integrations).toEqual([]);
  });

  it('health: last syncs, failures, rate-limit hits, publishing over 30 days', async () => {
    const failing = await integration(owner, 'threads', 'fail');
    const limited = await integration(owner, 'bluesky', 'transient-then-succeed');
    await sent(owner, failing.id, new Date(today.getTime() - DAY));
    await runMetricsSync(server.deps);
    const r = await api.get(`${base()}/health`, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const byId = Object.fromEntries(r.body.data.map((h: any) => [h.integrationId, h]));
    expect(byId[x.id]).toMatchObject({ connectionState: 'active', lastSyncError: null, awaitingConfirmation: 0 });
    expect(byId[x.id].lastSuccessfulSyncAt).not.toBeNull();
    expect(byId[x.id].sync.successes).toBeGreaterThanOrEqual(4);
    expect(byId[failing.id].lastSuccessfulSyncAt).toBeNull();
    expect(byId[failing.id].lastSyncError).toMatch(/refused/);
    expect(byId[failing.id].sync.failures).toBe(2);
    expect(byId[limited.id].sync.rateLimitHits).toBe(1);
    expect(byId[limited.id].lastSyncError).toMatch(/rate-limiting/);
    // Publishing over 30 days, from the engine's attempts.
    await server.owner.query(
      `insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, connector, idempotency_token, finished_at, outcome)
       values ($1, $2, $3, 1, 1, 'sandbox', 't1', now(), 'failed'), ($1, $2, $3, 2, 1, 'sandbox', 't2', now(), 'published'),
              ($1, $2, $4, 1, 1, 'sandbox', 't3', now(), 'published'), ($1, $2, $5, 1, 1, 'sandbox', 't4', now(), 'published')`,
      [owner.organizationId, owner.workspaceId, posts[0].id, posts[1].id, posts[2].id]);
    const again = (await api.get(`${base()}/health`, { token: owner.token })).body.data.find((h: any) => h.integrationId === x.id);
    expect(again.publishing).toMatchObject({ succeeded: 2, failed: 1, successRatePercent: 66.7 });
  });

  it('webhook integrations push metrics: editors only, all or nothing, re-delivery harmless', async () => {
    const hook = await server.owner.query(
      `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
       values ($1, $2, 'webhook', 'linkedin', 'Hooked', 'https://hooks.example.test/in', 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3') returning id`,
      [owner.organizationId, owner.workspaceId]);
    const hookId = hook.rows[0].id as string;
    const post = await sent(owner, hookId, new Date(today.getTime() - 2 * DAY));
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    const path = `/v1/workspaces/${owner.workspaceId}/integrations/${hookId}/metrics`;
    const body = {
      posts: [
        { platformPostId: post.platformPostId, capturedAt: new Date(today.getTime() - DAY).toISOString(), impressions: 500, likes: 20, comments: 2 },
        { contentId: post.id, capturedAt: today.toISOString(), impressions: 800, likes: 31, comments: 3, clicks: 9 },
      ],
      account: { capturedAt: today.toISOString(), followers: 4200, profileViews: 17, demographics: { age: { '25-34': 3000, '35-44': 1200 }, country: { DE: 4200 } } },
    };
    expect((await api.post(path, body, { token: viewer.key })).body.error.code).toBe('ROLE_REQUIRED');
    const r = await api.post(path, body, { token: editor.key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ integrationId: hookId, postsReceived: 2, postsRecorded: 2, postsAlreadyRecorded: 0, accountRecorded: true });
    const again = await api.post(path, body, { token: editor.key });
    expect(again.body.data).toMatchObject({ postsRecorded: 0, postsAlreadyRecorded: 2 });
    const detail = (await api.get(`${base()}/posts/${post.id}`, { token: viewer.key })).body.data;
    expect(detail).toMatchObject({ impressions: 800, likes: 31, clicks: 9, snapshots: 2 });
    expect(detail.series.at(-1).gained.impressions).toBe(300);
    const demo = (await api.get(`${base()}/demographics?integrationIds=${hookId}`, { token: viewer.key })).body.data;
    expect(demo.integrations[0]).toMatchObject({ followers: 4200, age: [{ key: '25-34', count: 3000, sharePercent: 71.4 }, { key: '35-44', count: 1200, sharePercent: 28.6 }] });

    const bad = await api.post(path, { posts: [
      { platformPostId: 'nope', capturedAt: today.toISOString() },
      { contentId: post.id, capturedAt: new Date(today.getTime() + DAY).toISOString() },
      { contentId: posts[0].id, capturedAt: today.toISOString() },
    ] }, { token: editor.key });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: any) => [f.field, f.code])).toEqual([
      ['body.posts[0]', 'post_not_found'], ['body.posts[1].capturedAt', 'in_future'], ['body.posts[2]', 'post_not_found'],
    ]);
    expect((await api.post(path, { posts: [{ contentId: post.id, capturedAt: today.toISOString(), likes: -1 }] }, { token: editor.key })).status).toBe(400);
    expect((await api.post(path, { posts: [{ contentId: post.id }] }, { token: editor.key })).status).toBe(400);
    const sandbox = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations/${x.id}/metrics`, { posts: [] }, { token: editor.key });
    expect([sandbox.status, sandbox.body.error.code]).toEqual([409, 'METRICS_INGESTION_NOT_SUPPORTED']);
    const unknown = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations/${crypto.randomUUID()}/metrics`, { posts: [] }, { token: editor.key });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'INTEGRATION_NOT_FOUND']);
  });

  it('other organizations see nothing; viewers read every route', async () => {
    const other = await signup(api);
    for (const p of ['summary', 'aggregates', 'posts', 'demographics', 'health']) {
      const r = await api.get(`/v1/workspaces/${owner.workspaceId}/analytics/${p}`, { token: other.token });
      expect(r.status, p).toBe(403);
    }
    const theirs = await api.get(`/v1/workspaces/${other.workspaceId}/analytics/posts/${posts[0].id}`, { token: other.token });
    expect(theirs.status).toBe(404);
    const summary = (await api.get(`/v1/workspaces/${other.workspaceId}/analytics/summary`, { token: other.token })).body.data;
    expect(summary.metrics.impressions.value).toBe(0);
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    for (const p of ['summary', 'aggregates', 'posts', 'demographics', 'health', `posts/${posts[0].id}`]) {
      expect((await api.get(`${base()}/${p}`, { token: viewer.key })).status, p).toBe(200);
    }
  });
});
