// Recurring series over HTTP: creation with a fixed local wall-clock time
// across a daylight-saving change, occurrences made ahead (at creation and by
// the materialize job), recurringMetadata on list items, and the occurrence
// and series cancel routes with their seriesVersion checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { materializeRecurringSeries } from '../../server/jobs/recurring.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('recurring');
  api = client(server);
});
afterAll(async () => server?.close());

async function workspace(timezone = 'UTC') {
  const o = await signup(api);
  await server.owner.query('update app.workspaces set timezone = $1 where id = $2', [timezone, o.workspaceId]);
  const integration = async (platform: string) =>
    (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $3) returning id`,
        [o.organizationId, o.workspaceId, platform],
      )
    ).rows[0].id as string;
  return { ...o, integration, base: `/v1/workspaces/${o.workspaceId}/content` };
}

async function liveJobs(contentIds: string[]) {
  const r = await server.owner.query(
    `select singleton_key, start_after from pgboss.job where name = 'content.publish' and state in ('created', 'retry') and singleton_key = any ($1)`,
    [contentIds],
  );
  return r.rows;
}

async function listBySeries(ws: { base: string; token: string }, seriesId: string, query = 'status=scheduled') {
  const r = await api.get(`${ws.base}?${query}&limit=100&sortBy=scheduledAt&sortDirection=asc`, { token: ws.token });
  expect(r.status).toBe(200);
  return r.body.data.filter((i: any) => i.recurringMetadata?.seriesId === seriesId);
}

describe('creating a recurring series', () => {
  it('"Mondays 09:00 Europe/Berlin" stays 09:00 local across the DST change, one scheduled edition and job per occurrence', async () => {
    const ws = await workspace('Europe/Berlin');
    const x = await ws.integration('x');
    // Monday 18 March 2030, 09:00 in Berlin (CET, UTC+1); DST starts on 31 March.
    const res = await api.post(
      ws.base,
      { intent: 'schedule', scheduledAt: '2030-03-18T08:00:00Z', caption: 'Weekly tip', channels: [{ integrationId: x }], recurrence: { frequency: 'weekly', byWeekday: ['MO'] } },
      { token: ws.token },
    );
    expect(res.status).toBe(201);
    const series = res.body.data.series;
    expect(series.seriesVersion).toBe(1);
    // Far ahead of the 30-day horizon: the minimum of 3 occurrences is made.
    expect(series.occurrences.map((o: any) => [new Date(o.startsAt).toISOString(), o.status])).toEqual([
      ['2030-03-18T08:00:00.000Z', 'materialized'],
      ['2030-03-25T08:00:00.000Z', 'materialized'],
      ['2030-04-01T07:00:00.000Z', 'materialized'],
    ]);
    expect(res.body.data.rootId).toBe(series.occurrences[0].rootId);
    expect(res.body.data.editions).toEqual([{ id: expect.any(String), integrationId: x, status: 'scheduled', scheduledAt: expect.any(String) }]);
    const items = await listBySeries(ws, series.seriesId);
    expect(items.map((i: any) => new Date(i.scheduledAt).toISOString())).toEqual(['2030-03-18T08:00:00.000Z', '2030-03-25T08:00:00.000Z', '2030-04-01T07:00:00.000Z']);
    for (const [n, i] of items.entries()) {
      expect(i.caption).toBe('Weekly tip');
      expect(i.recurringMetadata).toMatchObject({ seriesId: series.seriesId, occurrenceId: series.occurrences[n].occurrenceId, seriesVersion: 1, effectiveOccurrenceId: series.occurrences[n].occurrenceId });
    }
    const jobs = await liveJobs(items.map((i: any) => i.id));
    expect(jobs.map((j: any) => new Date(j.start_after).toISOString()).sort()).toEqual(['2030-03-18T08:00:00.000Z', '2030-03-25T08:00:00.000Z', '2030-04-01T07:00:00.000Z']);
    // The detail and the root carry the metadata too.
    const detail = await api.get(`${ws.base}/${items[1].id}`, { token: ws.token });
    expect(detail.body.data.recurringMetadata.occurrenceId).toBe(series.occurrences[1].occurrenceId);
    const root = await api.get(`/v1/workspaces/${ws.workspaceId}/content-roots/${series.occurrences[2].rootId}`, { token: ws.token });
    expect(root.body.data.recurringMetadata).toMatchObject({ seriesId: series.seriesId, occurrenceStatus: 'materialized', seriesStatus: 'active' });
  });

  it('drafts series keep the local time too, without jobs; timezone in the rule wins over the workspace', async () => {
    const ws = await workspace('UTC');
    const li = await ws.integration('linkedin');
    const res = await api.post(
      ws.base,
      { intendedPublishAt: '2030-10-21T15:30:00Z', caption: 'Draft series', channels: [{ integrationId: li }], recurrence: { frequency: 'weekly', interval: 1, count: 3, timezone: 'America/New_York' } },
      { token: ws.token },
    );
    expect(res.status).toBe(201);
    // 11:30 in New York; DST ends there on 3 November 2030.
    expect(res.body.data.series.occurrences.map((o: any) => new Date(o.startsAt).toISOString())).toEqual([
      '2030-10-21T15:30:00.000Z',
      '2030-10-28T15:30:00.000Z',
      '2030-11-04T16:30:00.000Z',
    ]);
    const items = (await listBySeries(ws, res.body.data.series.seriesId, 'status=draft')).sort((a: any, b: any) => a.intendedPublishAt.localeCompare(b.intendedPublishAt));
    expect(items.map((i: any) => [i.status, i.scheduledAt, new Date(i.intendedPublishAt).toISOString()])).toEqual([
      ['draft', null, '2030-10-21T15:30:00.000Z'],
      ['draft', null, '2030-10-28T15:30:00.000Z'],
      ['draft', null, '2030-11-04T16:30:00.000Z'],
    ]);
    expect(await liveJobs(items.map((i: any) => i.id))).toEqual([]);
    // count reached: the series is complete.
    const status = await server.owner.query('select status from app.recurring_series where id = $1', [res.body.data.series.seriesId]);
    expect(status.rows[0].status).toBe('completed');
  });

  it('refuses bad rules', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const base = { intent: 'schedule', scheduledAt: '2030-01-07T09:00:00Z', caption: 'r', channels: [{ integrationId: x }] };
    const cases: [any, string, string][] = [
      [{ ...base, recurrence: { frequency: 'daily', byWeekday: ['MO'] } }, 'recurrence.byWeekday', 'not_allowed'],
      [{ ...base, recurrence: { frequency: 'daily', count: 3, until: '2030-02-01T00:00:00Z' } }, 'recurrence.until', 'not_allowed'],
      [{ ...base, recurrence: { frequency: 'daily', until: '2029-02-01T00:00:00Z' } }, 'recurrence.until', 'before_start'],
      [{ ...base, recurrence: { frequency: 'daily', timezone: 'Mars/Olympus' } }, 'recurrence.timezone', 'invalid_timezone'],
      [{ intent: 'publish_now', caption: 'r', channels: [{ integrationId: x }], recurrence: { frequency: 'daily' } }, 'recurrence', 'not_allowed'],
      [{ caption: 'r', recurrence: { frequency: 'daily' } }, 'channels', 'required'],
      [{ caption: 'r', channels: [{ integrationId: x }], recurrence: { frequency: 'daily' } }, 'intendedPublishAt', 'required'],
      [{ ...base, recurrence: { frequency: 'hourly' } }, 'body.recurrence.frequency', 'enum'],
      [{ ...base, recurrence: { frequency: 'weekly', byWeekday: ['XX'] } }, 'body.recurrence.byWeekday.0', 'enum'],
      [{ ...base, recurrence: { frequency: 'daily', interval: 0 } }, 'body.recurrence.interval', 'minimum'],
    ];
    for (const [body, field, code] of cases) {
      const r = await api.post(ws.base, body, { token: ws.token });
      expect(r.status, JSON.stringify(body.recurrence)).toBe(400);
      expect(r.body.error.details.fields.map((f: any) => `${f.field}:${f.code}`), JSON.stringify(body.recurrence)).toContain(`${field}:${code}`);
    }
    expect((await server.owner.query('select count(*)::int as n from app.recurring_series where workspace_id = $1', [ws.workspaceId])).rows[0].n).toBe(0);
  });
});

describe('the materialize job', () => {
  it('extends the series ahead, skips channels that went away, completes at count, and never makes anything twice', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const start = new Date(Date.now() + 3600_000);
    start.setUTCSeconds(0, 0);
    const res = await api.post(
      ws.base,
      { intent: 'schedule', scheduledAt: start.toISOString(), caption: 'Daily', channels: [{ integrationId: x }, { integrationId: li }], recurrence: { frequency: 'daily', count: 40 } },
      { token: ws.token },
    );
    expect(res.status).toBe(201);
    const seriesId = res.body.data.series.seriesId;
    const made = res.body.data.series.occurrences.length;
    // Within 30 days of now.
    expect(made).toBeGreaterThanOrEqual(30);
    expect(made).toBeLessThan(40);
    // LinkedIn goes away before the job runs.
    await server.owner.query('update app.integrations set deleted_at = now() where id = $1', [li]);
    const run = await materializeRecurringSeries(server.pool, 60);
    expect(run).toMatchObject({ failed: 0 });
    expect(run.occurrences).toBe(40 - made);
    const occ = await server.owner.query(
      `select o.occurrence_index, o.starts_at, o.status,
              (select array_agg(g.platform order by g.platform) from app.content_items i join app.integrations g on g.id = i.integration_id where i.root_id = o.root_id) as platforms,
              (select array_agg(i.status) from app.content_items i where i.root_id = o.root_id) as statuses
       from app.recurring_occurrences o where o.series_id = $1 order by o.occurrence_index`,
      [seriesId],
    );
    expect(occ.rows).toHaveLength(40);
    expect(occ.rows.map((r: any) => r.occurrence_index)).toEqual([...Array(40).keys()]);
    expect(occ.rows[made - 1].platforms).toEqual(['linkedin', 'x']);
    expect(occ.rows[made].platforms).toEqual(['x']);
    expect(occ.rows[39].statuses).toEqual(['scheduled']);
    expect(new Date(occ.rows[39].starts_at).getTime() - start.getTime()).toBe(39 * 86400_000);
    expect((await server.owner.query('select status from app.recurring_series where id = $1', [seriesId])).rows[0].status).toBe('completed');
    // Idempotent.
    const again = await materializeRecurringSeries(server.pool, 60);
    expect(again.occurrences).toBe(0);
    expect((await server.owner.query('select count(*)::int as n from app.recurring_occurrences where series_id = $1', [seriesId])).rows[0].n).toBe(40);
  });
});

describe('cancelling', () => {
  it('cancels one occurrence, checks seriesVersion, refuses published and cancelled ones, then cancels the series onward', async () => {
    const ws = await workspace('Europe/Berlin');
    const x = await ws.integration('x');
    const res = await api.post(
      ws.base,
      { intent: 'schedule', scheduledAt: '2031-01-06T08:00:00Z', caption: 'Monday', channels: [{ integrationId: x }], recurrence: { frequency: 'weekly', byWeekday: ['MO', 'TH'] } },
      { token: ws.token },
    );
    expect(res.status).toBe(201);
    const { seriesId, occurrences } = res.body.data.series;
    expect(occurrences).toHaveLength(3);
    const items = await listBySeries(ws, seriesId);
    expect(items).toHaveLength(3);
    const [o1, o2, o3] = items;
    const cancelUrl = (occurrenceId: string) => `${ws.base}/recurring-occurrences/${occurrenceId}/cancel`;

    const c2 = await api.post(cancelUrl(o2.recurringMetadata.occurrenceId), { seriesVersion: 1 }, { token: ws.token });
    expect(c2.status).toBe(200);
    expect(c2.body.data).toEqual({
      seriesId,
      seriesVersion: 2,
      seriesStatus: 'active',
      cancelledOccurrenceIds: [o2.recurringMetadata.occurrenceId],
      cancelledContentIds: [o2.id],
      keptContentIds: [],
    });
    expect(await liveJobs([o2.id])).toEqual([]);
    expect((await api.get(`${ws.base}/${o2.id}`, { token: ws.token })).body.data.status).toBe('cancelled');

    const stale = await api.post(cancelUrl(o3.recurringMetadata.occurrenceId), { seriesVersion: 1 }, { token: ws.token });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('SERIES_VERSION_STALE');
    expect(stale.body.error.details.seriesVersion).toBe(2);
    const twice = await api.post(cancelUrl(o2.recurringMetadata.occurrenceId), { seriesVersion: 2 }, { token: ws.token });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('OCCURRENCE_ALREADY_CANCELLED');

    // The first occurrence is published (by the engine; here by SQL).
    await server.owner.query(`update app.content_items set status = 'sent' where id = $1`, [o1.id]);
    const published = await api.post(cancelUrl(o1.recurringMetadata.occurrenceId), { seriesVersion: 2 }, { token: ws.token });
    expect(published.status).toBe(409);
    expect(published.body.error.code).toBe('OCCURRENCE_ALREADY_PUBLISHED');
    // Its effective occurrence is now the next one not published nor cancelled.
    const sent = (await api.get(`${ws.base}/${o1.id}`, { token: ws.token })).body.data.recurringMetadata;
    expect(sent).toMatchObject({ occurrenceStatus: 'published', seriesVersion: 2, effectiveOccurrenceId: o3.recurringMetadata.occurrenceId });

    const seriesUrl = `${ws.base}/recurring-series/${seriesId}/cancel`;
    expect((await api.post(seriesUrl, { seriesVersion: 1 }, { token: ws.token })).body.error.code).toBe('SERIES_VERSION_STALE');
    const foreign = await api.post(seriesUrl, { seriesVersion: 2, effectiveOccurrenceId: '00000000-0000-4000-8000-000000000000' }, { token: ws.token });
    expect(foreign.status).toBe(404);
    const all = await api.post(seriesUrl, { seriesVersion: 2, effectiveOccurrenceId: sent.effectiveOccurrenceId }, { token: ws.token });
    expect(all.status).toBe(200);
    expect(all.body.data).toEqual({
      seriesId,
      seriesVersion: 3,
      seriesStatus: 'cancelled',
      cancelledOccurrenceIds: [o3.recurringMetadata.occurrenceId],
      cancelledContentIds: [o3.id],
      keptContentIds: [],
    });
    expect(await liveJobs([o3.id])).toEqual([]);
    expect((await api.get(`${ws.base}/${o1.id}`, { token: ws.token })).body.data.status).toBe('sent');
    const again = await api.post(seriesUrl, { seriesVersion: 3 }, { token: ws.token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('SERIES_ALREADY_CANCELLED');
    // A cancelled series makes nothing more.
    await server.owner.query('update app.recurring_series set materialized_until = now() - interval \'1 day\' where id = $1', [seriesId]);
    await materializeRecurringSeries(server.pool, 3650);
    expect((await server.owner.query('select count(*)::int as n from app.recurring_occurrences where series_id = $1', [seriesId])).rows[0].n).toBe(3);
  });

  it('defaults the series cancel to the next unpublished occurrence; 404 for others; viewers cannot cancel', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: '2031-06-02T10:00:00Z', caption: 'Monthly', channels: [{ integrationId: x }], recurrence: { frequency: 'monthly', until: '2031-12-31T00:00:00Z' } }, { token: ws.token });
    const { seriesId, occurrences } = res.body.data.series;
    expect(occurrences.map((o: any) => new Date(o.startsAt).toISOString())).toEqual(['2031-06-02T10:00:00.000Z', '2031-07-02T10:00:00.000Z', '2031-08-02T10:00:00.000Z']);
    const other = await workspace();
    expect((await api.post(`${other.base}/recurring-series/${seriesId}/cancel`, { seriesVersion: 1 }, { token: other.token })).status).toBe(404);
    expect((await api.post(`${other.base}/recurring-occurrences/${occurrences[0].occurrenceId}/cancel`, { seriesVersion: 1 }, { token: other.token })).status).toBe(404);
    expect((await api.post(`${ws.base}/recurring-occurrences/${occurrences[0].occurrenceId}/cancel`, {}, { token: ws.token })).status).toBe(400);
    const viewerKey = await api.post(`/v1/workspaces/${ws.workspaceId}/api-keys`, { name: 'v', workspaceIds: [ws.workspaceId], role: 'viewer' }, { token: ws.token });
    const denied = await api.post(`${ws.base}/recurring-series/${seriesId}/cancel`, { seriesVersion: 1 }, { token: viewerKey.body.data.key });
    expect(denied.status).toBe(403);
    const all = await api.post(`${ws.base}/recurring-series/${seriesId}/cancel`, { seriesVersion: 1 }, { token: ws.token });
    expect(all.status).toBe(200);
    expect(all.body.data.cancelledOccurrenceIds).toEqual(occurrences.map((o: any) => o.occurrenceId));
    expect(all.body.data.cancelledContentIds).toHaveLength(3);
  });
});
