// Content over HTTP: create (draft, schedule, publish_now, ideas), the list
// with every filter and `since`, counts, detail, edits, versions, schedule,
// revert-to-draft, intended time, metadata, notes, delete; platform rules;
// the publish job read from pg-boss; roles and idempotency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('content');
  api = client(server);
});
afterAll(async () => server?.close());

const inHours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();

interface Ws {
  id: string;
  orgId: string;
  token: string;
  base: string;
  integration(platform: string, name?: string): Promise<string>;
  media(type?: 'image' | 'video' | 'gif', bytes?: number): Promise<string>;
}

async function workspace(): Promise<Ws> {
  const o = await signup(api);
  return {
    id: o.workspaceId,
    orgId: o.organizationId,
    token: o.token,
    base: `/v1/workspaces/${o.workspaceId}/content`,
    integration: async (platform, name = `${platform} account`) =>
      (
        await server.owner.query(
          `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $4) returning id`,
          [o.organizationId, o.workspaceId, platform, name],
        )
      ).rows[0].id,
    media: async (type = 'image', bytes = 1000) =>
      (
        await server.owner.query(
          `insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key)
           values ($1, $2, $3, $4, $5, $6, $7) returning id`,
          [o.organizationId, o.workspaceId, type, `f.${type === 'video' ? 'mp4' : 'png'}`, type === 'video' ? 'video/mp4' : 'image/png', bytes, `k/${Math.random()}`],
        )
      ).rows[0].id,
  };
}

/** Live (created or retry) publish jobs of an edition, and all of them. */
async function jobs(contentId: string) {
  const r = await server.owner.query(
    `select id, state::text as state, start_after, data from pgboss.job where name = 'content.publish' and singleton_key = $1 order by created_on`,
    [contentId],
  );
  return { all: r.rows, live: r.rows.filter((j: any) => j.state === 'created' || j.state === 'retry') };
}

async function jobIdOf(contentId: string) {
  return (await server.owner.query('select publish_job_id from app.content_items where id = $1', [contentId])).rows[0].publish_job_id;
}

describe('POST {ws}/content', () => {
  it('creates drafts by default: the root caption serves channels without their own', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const res = await api.post(ws.base, { caption: 'Root caption', title: 'Launch', channels: [{ integrationId: x }, { integrationId: li, caption: 'LinkedIn caption' }] }, { token: ws.token });
    expect(res.status).toBe(201);
    expect(res.body.data.editions).toHaveLength(2);
    for (const e of res.body.data.editions) expect(e).toMatchObject({ status: 'draft', scheduledAt: null });
    const [ex, el] = res.body.data.editions;
    expect(ex.integrationId).toBe(x);
    const gx = await api.get(`${ws.base}/${ex.id}`, { token: ws.token });
    expect(gx.body.data).toMatchObject({ id: ex.id, rootId: res.body.data.rootId, caption: 'Root caption', captionOverride: null, platform: 'x', title: 'Launch', status: 'draft', workflowStatus: 'draft' });
    const gl = await api.get(`${ws.base}/${el.id}`, { token: ws.token });
    expect(gl.body.data.caption).toBe('LinkedIn caption');
    // Drafts have no publish job.
    expect((await jobs(ex.id)).all).toHaveLength(0);
  });

  it('a create without channels makes an idea: a root without editions', async () => {
    const ws = await workspace();
    const res = await api.post(ws.base, { caption: 'An idea', organizationalTitle: 'Idea 1' }, { token: ws.token });
    expect(res.status).toBe(201);
    expect(res.body.data.editions).toEqual([]);
    const root = await api.get(`/v1/workspaces/${ws.id}/content-roots/${res.body.data.rootId}`, { token: ws.token });
    expect(root.body.data).toMatchObject({ id: res.body.data.rootId, caption: 'An idea', organizationalTitle: 'Idea 1', editions: [] });
    // Ideas are not content items.
    expect((await api.get(ws.base, { token: ws.token })).body.meta.total).toBe(0);
  });

  it('intent schedule: scheduled at the time, with exactly one publish job carrying {contentId, workspaceId, version}', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const at = inHours(2);
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: at, caption: 'Soon', channels: [{ integrationId: x }] }, { token: ws.token });
    expect(res.status).toBe(201);
    const e = res.body.data.editions[0];
    expect(e.status).toBe('scheduled');
    expect(new Date(e.scheduledAt).toISOString()).toBe(at);
    const j = await jobs(e.id);
    expect(j.all).toHaveLength(1);
    expect(j.live).toHaveLength(1);
    expect(j.live[0].data).toEqual({ contentId: e.id, workspaceId: ws.id, version: 1 });
    expect(new Date(j.live[0].start_after).toISOString()).toBe(at);
    expect(await jobIdOf(e.id)).toBe(j.live[0].id);
  });

  it('intent publish_now: scheduled for now, job queued with near-zero delay', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const before = Date.now();
    const res = await api.post(ws.base, { intent: 'publish_now', caption: 'Now', channels: [{ integrationId: x }] }, { token: ws.token });
    expect(res.status).toBe(201);
    const e = res.body.data.editions[0];
    expect(e.status).toBe('scheduled');
    const j = await jobs(e.id);
    expect(j.live).toHaveLength(1);
    const start = new Date(j.live[0].start_after).getTime();
    expect(start).toBeGreaterThanOrEqual(before - 5000);
    expect(start).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('refuses inconsistent intents with one entry per problem', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const noTime = await api.post(ws.base, { intent: 'schedule', caption: 'x', channels: [{ integrationId: x }] }, { token: ws.token });
    expect(noTime.status).toBe(400);
    expect(noTime.body.error.details.fields).toEqual([expect.objectContaining({ field: 'scheduledAt', code: 'required' })]);
    const past = await api.post(ws.base, { intent: 'schedule', scheduledAt: new Date(Date.now() - 60_000).toISOString(), caption: 'x', channels: [{ integrationId: x }] }, { token: ws.token });
    expect(past.status).toBe(400);
    expect(past.body.error.details.fields.map((f: any) => [f.field, f.code])).toEqual([['scheduledAt', 'in_past']]);
    const draftWithTime = await api.post(ws.base, { scheduledAt: inHours(1), caption: 'x', channels: [{ integrationId: x }] }, { token: ws.token });
    expect(draftWithTime.status).toBe(400);
    expect(draftWithTime.body.error.details.fields[0]).toMatchObject({ field: 'scheduledAt', code: 'not_allowed' });
    const noChannels = await api.post(ws.base, { intent: 'publish_now', caption: 'x' }, { token: ws.token });
    expect(noChannels.status).toBe(400);
    expect(noChannels.body.error.details.fields[0]).toMatchObject({ field: 'channels', code: 'required' });
    const badIntent = await api.post(ws.base, { intent: 'later' }, { token: ws.token });
    expect(badIntent.status).toBe(400);
    expect(badIntent.body.error.details.fields[0].field).toBe('body.intent');
    const unknownProp = await api.post(ws.base, { caption: 'x', colour: 'red' }, { token: ws.token });
    expect(unknownProp.status).toBe(400);
    expect(unknownProp.body.error.details.fields[0]).toMatchObject({ field: 'body.colour', code: 'unknown_property' });
    // Nothing was created by any refusal.
    expect((await server.owner.query('select count(*)::int as n from app.content_roots where workspace_id = $1', [ws.id])).rows[0].n).toBe(0);
  });

  it('refuses unknown references: channels, duplicate channels, media, settings, campaign, tags', async () => {
    const ws = await workspace();
    const other = await workspace();
    const x = await ws.integration('x');
    const foreign = await other.integration('x');
    const foreignMedia = await other.media();
    const res = await api.post(
      ws.base,
      {
        caption: 'x',
        mediaIds: [foreignMedia],
        campaignId: '00000000-0000-4000-8000-000000000001',
        tagIds: ['00000000-0000-4000-8000-000000000002'],
        channels: [{ integrationId: foreign }, { integrationId: x, settings: { colour: 'red' } }, { integrationId: x }],
      },
      { token: ws.token },
    );
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields.map((f: any) => `${f.field}:${f.code}`).sort()).toEqual([
      'campaignId:campaign_not_found',
      'channels.0.integrationId:integration_not_found',
      'channels.1.settings.colour:unknown_setting',
      'channels.2.integrationId:duplicate_channel',
      'mediaIds.0:media_not_found',
      'tagIds.0:not_found',
    ]);
  });

  it('validates against the platform rules when scheduling, not for drafts', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const ig = await ws.integration('instagram');
    const pin = await ws.integration('pinterest');
    const video = await ws.media('video', 2000);
    const long = 'a'.repeat(281);
    const body = {
      caption: long,
      channels: [{ integrationId: x }, { integrationId: ig }, { integrationId: pin, mediaIds: [video, await ws.media()], settings: { title: 'Pin' } }],
    };
    const refused = await api.post(ws.base, { ...body, intent: 'schedule', scheduledAt: inHours(1) }, { token: ws.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    expect(refused.body.error.details.fields.map((f: any) => `${f.field}:${f.code}`).sort()).toEqual([
      'channels.0.caption:caption_too_long',
      'channels.1.mediaIds:media_required',
      'channels.2.mediaIds:mixed_media_not_allowed',
      'channels.2.mediaIds:too_many_media',
      'channels.2.settings.boardId:required_setting_missing',
    ]);
    expect(refused.body.error.details.fields[0].message).toMatch(/280/);
    // Nothing scheduled, no job.
    expect((await server.owner.query(`select count(*)::int as n from pgboss.job where name = 'content.publish' and data ->> 'workspaceId' = $1`, [ws.id])).rows[0].n).toBe(0);
    // The same content as drafts is fine ...
    const draft = await api.post(ws.base, body, { token: ws.token });
    expect(draft.status).toBe(201);
    // ... and promoting a draft to scheduled runs the rules.
    const promote = await api.patch(`${ws.base}/${draft.body.data.editions[0].id}/schedule`, { scheduledAt: inHours(1) }, { token: ws.token });
    expect(promote.status).toBe(400);
    expect(promote.body.error.details.fields).toEqual([expect.objectContaining({ field: 'caption', code: 'caption_too_long' })]);
    // Fix the caption, then it schedules.
    expect((await api.patch(`${ws.base}/${draft.body.data.editions[0].id}`, { caption: 'short' }, { token: ws.token })).status).toBe(200);
    const ok = await api.patch(`${ws.base}/${draft.body.data.editions[0].id}/schedule`, { scheduledAt: inHours(1) }, { token: ws.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data.editions[0].status).toBe('scheduled');
  });

  it('checks thread messages against the platform: threads, lengths', async () => {
    const ws = await workspace();
    const li = await ws.integration('linkedin');
    const x = await ws.integration('x');
    const res = await api.post(
      ws.base,
      {
        intent: 'schedule',
        scheduledAt: inHours(1),
        caption: 'Thread start',
        channels: [
          { integrationId: li, thread: [{ caption: 'more' }] },
          { integrationId: x, thread: [{ caption: 'b'.repeat(300) }, { caption: 'fine' }] },
        ],
      },
      { token: ws.token },
    );
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: any) => `${f.field}:${f.code}`).sort()).toEqual([
      'channels.0.thread:threads_not_supported',
      'channels.1.thread.0.caption:caption_too_long',
    ]);
    const ok = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 'Thread start', channels: [{ integrationId: x, thread: [{ caption: 'second' }, { caption: 'third' }] }] }, { token: ws.token });
    expect(ok.status).toBe(201);
    const detail = await api.get(`${ws.base}/${ok.body.data.editions[0].id}`, { token: ws.token });
    expect(detail.body.data.thread.map((m: any) => m.caption)).toEqual(['second', 'third']);
  });

  it('Idempotency-Key: a retry replays the first answer and creates nothing more', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const body = { intent: 'schedule', scheduledAt: inHours(3), caption: 'Once', channels: [{ integrationId: x }] };
    const first = await api.post(ws.base, body, { token: ws.token, headers: { 'idempotency-key': 'create-1' } });
    expect(first.status).toBe(201);
    const again = await api.post(ws.base, body, { token: ws.token, headers: { 'idempotency-key': 'create-1' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const changed = await api.post(ws.base, { ...body, caption: 'Twice' }, { token: ws.token, headers: { 'idempotency-key': 'create-1' } });
    expect(changed.status).toBe(422);
    expect((await server.owner.query('select count(*)::int as n from app.content_roots where workspace_id = $1', [ws.id])).rows[0].n).toBe(1);
    expect((await server.owner.query(`select count(*)::int as n from pgboss.job where name = 'content.publish' and data ->> 'workspaceId' = $1`, [ws.id])).rows[0].n).toBe(1);
  });
});

describe('GET {ws}/content', () => {
  it('lists with defaults, filters, sorting and offset meta', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const ids: Record<string, string> = {};
    const make = async (name: string, body: any) => {
      const r = await api.post(ws.base, { caption: name, ...body }, { token: ws.token });
      expect(r.status).toBe(201);
      ids[name] = r.body.data.editions[0].id;
    };
    await make('draft-x', { channels: [{ integrationId: x }] });
    await make('sched-li', { intent: 'schedule', scheduledAt: inHours(5), channels: [{ integrationId: li }] });
    await make('sched-x', { intent: 'schedule', scheduledAt: inHours(1), channels: [{ integrationId: x }] });
    await make('review', { channels: [{ integrationId: li }] });
    await make('cancelled', { channels: [{ integrationId: li }] });
    await make('failed', { intent: 'schedule', scheduledAt: inHours(2), channels: [{ integrationId: li }] });
    // Moves the API does not offer yet, as the database allows them.
    await server.owner.query(`update app.content_items set status = 'pending_approval' where id = $1`, [ids.review]);
    await server.owner.query(`update app.content_items set status = 'cancelled' where id = $1`, [ids.cancelled]);
    await server.owner.query(`update app.content_items set status = 'failed', error = 'boom' where id = $1`, [ids.failed]);

    const all = await api.get(ws.base, { token: ws.token });
    expect(all.status).toBe(200);
    // Default: draft, scheduled, sent, failed; most recently changed first.
    expect(all.body.data.map((i: any) => i.id).sort()).toEqual([ids['draft-x'], ids['sched-li'], ids['sched-x'], ids.failed].sort());
    expect(all.body.meta).toEqual({ limit: 20, offset: 0, total: 4, hasMore: false });
    const first = all.body.data[0];
    expect(first).toHaveProperty('updatedAt');
    expect(first).not.toHaveProperty('reviewLifecycle');
    expect(all.body.data.find((i: any) => i.id === ids.failed)).toMatchObject({ status: 'failed', workflowStatus: 'failed', error: 'boom' });

    const q = async (query: string) => {
      const r = await api.get(`${ws.base}?${query}`, { token: ws.token });
      expect(r.status, query).toBe(200);
      return r.body;
    };
    expect((await q('status=pending_approval')).data.map((i: any) => i.id)).toEqual([ids.review]);
    expect((await q('status=cancelled')).data.map((i: any) => i.id)).toEqual([ids.cancelled]);
    expect((await q('workflowStatus=in_review')).data.map((i: any) => i.id)).toEqual([ids.review]);
    const comma = await q('workflowStatuses=draft,in_review');
    expect(comma.data.map((i: any) => i.id).sort()).toEqual([ids['draft-x'], ids.review].sort());
    const repeated = await q('workflowStatuses=draft&workflowStatuses=in_review&workflowStatus=failed');
    expect(repeated.data.map((i: any) => i.id).sort()).toEqual([ids['draft-x'], ids.review].sort());
    expect((await q(`integrationId=${x}`)).data.map((i: any) => i.id).sort()).toEqual([ids['draft-x'], ids['sched-x']].sort());
    const bySchedule = await q('sortBy=scheduledAt&sortDirection=asc');
    expect(bySchedule.data.map((i: any) => i.id)).toEqual([ids['sched-x'], ids.failed, ids['sched-li'], ids['draft-x']]);
    const withReview = await q('includeReviewLifecycle=true&status=pending_approval');
    expect(withReview.data[0].reviewLifecycle).toMatchObject({ phase: 'review', state: 'pending', blocksPublishing: true }); // reviews: more fields since 10c
    const page = await q('limit=2&offset=1&sortBy=createdAt&sortDirection=asc');
    expect(page.data.map((i: any) => i.id)).toEqual([ids['sched-li'], ids['sched-x']]);
    expect(page.meta).toEqual({ limit: 2, offset: 1, total: 4, hasMore: true });
    const far = await q('offset=9007199254740991');
    expect(far.data).toEqual([]);
    expect(far.meta.hasMore).toBe(false);

    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'offset=9007199254740992', 'status=published', 'workflowStatuses=', 'workflowStatuses=draft,nope', 'sortBy=name', 'since=yesterday', 'integrationId=nope', 'unknown=1']) {
      const r = await api.get(`${ws.base}?${bad}`, { token: ws.token });
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('since: items changed after the instant, deletions as tombstones', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const a = (await api.post(ws.base, { caption: 'A', channels: [{ integrationId: x }] }, { token: ws.token })).body.data.editions[0].id;
    const b = (await api.post(ws.base, { caption: 'B', channels: [{ integrationId: x, caption: 'b' }] }, { token: ws.token })).body.data;
    const c = (await api.post(ws.base, { caption: 'C', channels: [{ integrationId: x, caption: 'c' }] }, { token: ws.token })).body.data.editions[0].id;
    await new Promise((r) => setTimeout(r, 20));
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    expect((await api.patch(`${ws.base}/${a}`, { caption: 'A2' }, { token: ws.token })).status).toBe(200);
    expect((await api.delete(`${ws.base}/${b.editions[0].id}`, { token: ws.token })).status).toBe(204);
    const res = await api.get(`${ws.base}?since=${encodeURIComponent(since)}`, { token: ws.token });
    expect(res.status).toBe(200);
    expect(res.body.meta.total).toBe(2);
    expect(res.body.data[0]).toMatchObject({ id: a, caption: 'A2' });
    expect(res.body.data[1]).toEqual({ id: b.editions[0].id, rootId: b.rootId, deleted: true, deletedAt: expect.any(String) });
    expect(res.body.data.map((i: any) => i.id)).not.toContain(c);
    // Without since, deleted editions never show.
    const plain = await api.get(ws.base, { token: ws.token });
    expect(plain.body.data.map((i: any) => i.id).sort()).toEqual([a, c].sort());
  });

  it('failed-count and pending-approval-count', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    expect((await api.get(`${ws.base}/failed-count`, { token: ws.token })).body).toEqual({ data: { count: 0 }, meta: null });
    const s = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 'x', channels: [{ integrationId: x }, { integrationId: li }] }, { token: ws.token });
    const d = await api.post(ws.base, { caption: 'x', channels: [{ integrationId: x }] }, { token: ws.token });
    await server.owner.query(`update app.content_items set status = 'failed' where root_id = $1`, [s.body.data.rootId]);
    await server.owner.query(`update app.content_items set status = 'pending_approval' where root_id = $1`, [d.body.data.rootId]);
    expect((await api.get(`${ws.base}/failed-count`, { token: ws.token })).body.data).toEqual({ count: 2 });
    expect((await api.get(`${ws.base}/pending-approval-count`, { token: ws.token })).body.data).toEqual({ count: 1 });
  });
});

describe('GET, PATCH and DELETE {ws}/content/{id}', () => {
  it('detail: integration, media, metadata, notes and sanitized settings', async () => {
    const ws = await workspace();
    const pin = await ws.integration('pinterest', 'Pins');
    const img = await ws.media('image', 5000);
    const res = await api.post(ws.base, { caption: 'Pin it', notes: '<p>internal</p>', channels: [{ integrationId: pin, mediaIds: [img], settings: { boardId: 'b1', title: 'Pin title' } }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    // A stray key written behind the API is never shown.
    await server.owner.query(`update app.content_items set settings = settings || '{"accessToken": "secret"}' where id = $1`, [id]);
    const g = await api.get(`${ws.base}/${id}`, { token: ws.token });
    expect(g.status).toBe(200);
    expect(g.body.data).toMatchObject({
      integration: { id: pin, platform: 'pinterest', name: 'Pins', connector: 'sandbox', status: 'active' },
      ownMedia: true,
      mediaIds: [img],
      mediaCount: 1,
      settings: { boardId: 'b1', title: 'Pin title' },
      notes: '<p>internal</p>',
      metadata: { title: null, campaignId: null, phaseId: null, tagIds: [], pillarIds: [], formatIds: [] },
      recurringMetadata: null,
    });
    expect(g.body.data.media[0]).toMatchObject({ id: img, type: 'image', fileSize: 5000 });
    expect(g.body.data.settings).not.toHaveProperty('accessToken');
    expect((await api.get(`${ws.base}/00000000-0000-4000-8000-000000000000`, { token: ws.token })).status).toBe(404);
    expect((await api.get(`${ws.base}/not-a-uuid`, { token: ws.token })).status).toBe(400);
  });

  it('PATCH changes only what is sent; null returns to the root; records versions', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const m1 = await ws.media();
    const m2 = await ws.media();
    const res = await api.post(ws.base, { caption: 'Root', mediaIds: [m1], channels: [{ integrationId: x }] }, { token: ws.token });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id = res.body.data.editions[0].id;
    const p1 = await api.patch(`${ws.base}/${id}`, { caption: 'Own' }, { token: ws.token });
    expect(p1.status).toBe(200);
    expect(p1.body.data).toEqual({ rootId: res.body.data.rootId, editions: [{ id, integrationId: x, status: 'draft', scheduledAt: null }] });
    let g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ caption: 'Own', captionOverride: 'Own', mediaIds: [m1], ownMedia: false, version: 2 });
    await api.patch(`${ws.base}/${id}`, { mediaIds: [m2, m1] }, { token: ws.token });
    g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ caption: 'Own', mediaIds: [m2, m1], ownMedia: true, version: 3 });
    // One request, several fields: one version.
    await api.patch(`${ws.base}/${id}`, { caption: null, mediaIds: null }, { token: ws.token });
    g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ caption: 'Root', captionOverride: null, mediaIds: [m1], ownMedia: false, version: 4 });
    // No change, no version.
    await api.patch(`${ws.base}/${id}`, { caption: null }, { token: ws.token });
    expect((await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data.version).toBe(4);
    const versions = await api.get(`${ws.base}/${id}/versions`, { token: ws.token });
    expect(versions.status).toBe(200);
    expect(versions.body.data.map((v: any) => [v.version, v.current, v.source, v.effectiveCaption])).toEqual([
      [4, true, 'update', 'Root'],
      [3, false, 'update', 'Own'],
      [2, false, 'update', 'Own'],
      [1, false, 'create', 'Root'],
    ]);
    expect(versions.body.data[1].effectiveMediaIds).toEqual([m2, m1]);
    // Unknown media and a 404.
    const bad = await api.patch(`${ws.base}/${id}`, { mediaIds: ['00000000-0000-4000-8000-000000000009'] }, { token: ws.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0]).toMatchObject({ field: 'mediaIds.0', code: 'media_not_found' });
    expect((await api.patch(`${ws.base}/00000000-0000-4000-8000-000000000000`, { caption: 'x' }, { token: ws.token })).status).toBe(404);
  });

  it('PATCH refuses content that is not draft or scheduled (400), and keeps scheduled content publishable', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 'Live', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    const tooLong = await api.patch(`${ws.base}/${id}`, { caption: 'z'.repeat(300) }, { token: ws.token });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.details.fields[0]).toMatchObject({ field: 'caption', code: 'caption_too_long' });
    expect((await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data.caption).toBe('Live');
    await server.owner.query(`update app.content_items set status = 'sent' where id = $1`, [id]);
    const sent = await api.patch(`${ws.base}/${id}`, { caption: 'Too late' }, { token: ws.token });
    expect(sent.status).toBe(400);
    expect(sent.body.error.code).toBe('INVALID_CONTENT_STATUS');
    expect(sent.body.error.details).toMatchObject({ status: 'sent', allowedStatuses: ['draft', 'scheduled'] });
    // A sent edition keeps the caption it published, whatever happens to the root.
    const g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ status: 'sent', workflowStatus: 'published', caption: 'Live', captionOverride: 'Live' });
    expect(g.sentAt).toBeTruthy();
  });

  it('DELETE soft-deletes, cancels the job, and answers 404 after', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 'Bye', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    const jobId = await jobIdOf(id);
    const del = await api.delete(`${ws.base}/${id}`, { token: ws.token });
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    const j = await jobs(id);
    expect(j.live).toHaveLength(0);
    expect(j.all).toEqual([expect.objectContaining({ id: jobId, state: 'cancelled' })]);
    expect((await api.get(`${ws.base}/${id}`, { token: ws.token })).status).toBe(404);
    expect((await api.delete(`${ws.base}/${id}`, { token: ws.token })).status).toBe(404);
    expect((await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: inHours(2) }, { token: ws.token })).status).toBe(404);
    // The root stays, as an idea.
    const root = await api.get(`/v1/workspaces/${ws.id}/content-roots/${res.body.data.rootId}`, { token: ws.token });
    expect(root.body.data.editions).toEqual([]);
  });
});

describe('versions', () => {
  it('restores a version as a new version; guards with expectedCurrentVersion', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { caption: 'v1', channels: [{ integrationId: x, settings: {} }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    await api.patch(`${ws.base}/${id}`, { caption: 'v2' }, { token: ws.token });
    await api.patch(`${ws.base}/${id}`, { caption: 'v3', thread: [{ caption: 'more' }] }, { token: ws.token });
    const stale = await api.post(`${ws.base}/${id}/versions/1/restore`, { expectedCurrentVersion: 2 }, { token: ws.token });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('VERSION_CONFLICT');
    const restored = await api.post(`${ws.base}/${id}/versions/1/restore`, { expectedCurrentVersion: 3 }, { token: ws.token });
    expect(restored.status).toBe(201);
    expect(restored.body.data).toMatchObject({ contentId: id, restoredFromVersion: 1, version: 4, rootId: res.body.data.rootId });
    const g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ caption: 'v1', thread: [], version: 4 });
    // Restoring the current content again still makes a version.
    const again = await api.post(`${ws.base}/${id}/versions/4/restore`, undefined, { token: ws.token });
    expect(again.status).toBe(201);
    expect(again.body.data.version).toBe(5);
    const list = (await api.get(`${ws.base}/${id}/versions`, { token: ws.token })).body.data;
    expect(list.map((v: any) => [v.version, v.source, v.restoredFrom])).toEqual([
      [5, 'restore', 4],
      [4, 'restore', 1],
      [3, 'update', null],
      [2, 'update', null],
      [1, 'create', null],
    ]);
    expect((await api.post(`${ws.base}/${id}/versions/99/restore`, {}, { token: ws.token })).status).toBe(404);
    expect((await api.post(`${ws.base}/${id}/versions/0/restore`, {}, { token: ws.token })).status).toBe(400);
    expect((await api.get(`${ws.base}/00000000-0000-4000-8000-000000000000/versions`, { token: ws.token })).status).toBe(404);
    await server.owner.query(`update app.content_items set status = 'cancelled' where id = $1`, [id]);
    const cancelled = await api.post(`${ws.base}/${id}/versions/2/restore`, {}, { token: ws.token });
    expect(cancelled.status).toBe(400);
    expect(cancelled.body.error.code).toBe('INVALID_CONTENT_STATUS');
  });
});

describe('PATCH {ws}/content/{id}/schedule', () => {
  it('schedules a draft, reschedules by moving the one live job, and replays with Idempotency-Key', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { caption: 'Plan', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    const t1 = inHours(1);
    const s1 = await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: t1 }, { token: ws.token, headers: { 'idempotency-key': 'sched-1' } });
    expect(s1.status).toBe(200);
    expect(s1.body.data.editions[0]).toMatchObject({ id, status: 'scheduled' });
    const job1 = await jobIdOf(id);
    let j = await jobs(id);
    expect(j.live.map((x: any) => x.id)).toEqual([job1]);
    const replay = await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: t1 }, { token: ws.token, headers: { 'idempotency-key': 'sched-1' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await jobs(id)).all).toHaveLength(1);
    const t2 = inHours(2);
    const s2 = await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: t2 }, { token: ws.token });
    expect(s2.status).toBe(200);
    j = await jobs(id);
    expect(j.live).toHaveLength(1);
    expect(j.live[0].id).not.toBe(job1);
    expect(new Date(j.live[0].start_after).toISOString()).toBe(t2);
    expect(j.all.find((x: any) => x.id === job1).state).toBe('cancelled');
    expect(await jobIdOf(id)).toBe(j.live[0].id);
    const past = await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: new Date(Date.now() - 1000).toISOString() }, { token: ws.token });
    expect(past.status).toBe(400);
    expect(past.body.error.details.fields[0]).toMatchObject({ field: 'scheduledAt', code: 'in_past' });
    expect((await api.patch(`${ws.base}/${id}/schedule`, {}, { token: ws.token })).status).toBe(400);
    await server.owner.query(`update app.content_items set status = 'failed' where id = $1`, [id]);
    const failed = await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: t2 }, { token: ws.token });
    expect(failed.status).toBe(400);
    expect(failed.body.error.code).toBe('INVALID_CONTENT_STATUS');
  });

  it('a running publish job locks the edition (409 PUBLISHING_IN_PROGRESS)', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 'Busy', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    await server.owner.query(`update pgboss.job set state = 'active', started_on = now() where name = 'content.publish' and id = $1`, [await jobIdOf(id)]);
    for (const call of [
      () => api.post(`${ws.base}/${id}/revert-to-draft`, {}, { token: ws.token }),
      () => api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: inHours(3) }, { token: ws.token }),
      () => api.delete(`${ws.base}/${id}`, { token: ws.token }),
    ]) {
      const r = await call();
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('PUBLISHING_IN_PROGRESS');
    }
  });
});

describe('POST {ws}/content/{id}/revert-to-draft', () => {
  it('returns every scheduled edition of the root to draft and cancels their jobs', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const at = inHours(4);
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: at, caption: 'Both', channels: [{ integrationId: x }, { integrationId: li }] }, { token: ws.token });
    const [a, b] = res.body.data.editions.map((e: any) => e.id);
    const r = await api.post(`${ws.base}/${a}/revert-to-draft`, {}, { token: ws.token });
    expect(r.status).toBe(201);
    expect(r.body.data.rootId).toBe(res.body.data.rootId);
    expect(r.body.data.editions.map((e: any) => [e.id, e.status, e.scheduledAt]).sort()).toEqual([[a, 'draft', null], [b, 'draft', null]].sort());
    for (const id of [a, b]) {
      expect((await jobs(id)).live).toHaveLength(0);
      expect(await jobIdOf(id)).toBeNull();
      const g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
      expect(new Date(g.intendedPublishAt).toISOString()).toBe(at);
    }
    const again = await api.post(`${ws.base}/${a}/revert-to-draft`, {}, { token: ws.token });
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('INVALID_CONTENT_STATUS');
    expect((await api.post(`${ws.base}/00000000-0000-4000-8000-000000000000/revert-to-draft`, {}, { token: ws.token })).status).toBe(404);
  });

  it('checks the expected scope: both fields together, and a stale scope is 409 REVERT_SCOPE_STALE', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const res = await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(4), caption: 'Scope', channels: [{ integrationId: x }, { integrationId: li }] }, { token: ws.token });
    const rootId = res.body.data.rootId;
    const [a, b] = res.body.data.editions.map((e: any) => e.id);
    const half = await api.post(`${ws.base}/${a}/revert-to-draft`, { expectedRootPostId: rootId }, { token: ws.token });
    expect(half.status).toBe(400);
    expect(half.body.error.details.fields[0]).toMatchObject({ field: 'expectedRootEditionIds', code: 'required' });
    const stale = await api.post(`${ws.base}/${a}/revert-to-draft`, { expectedRootPostId: rootId, expectedRootEditionIds: [a] }, { token: ws.token });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('REVERT_SCOPE_STALE');
    expect(stale.body.error.details.rootEditionIds.sort()).toEqual([a, b].sort());
    const wrongRoot = await api.post(`${ws.base}/${a}/revert-to-draft`, { expectedRootPostId: a, expectedRootEditionIds: [a, b] }, { token: ws.token });
    expect(wrongRoot.status).toBe(409);
    // Nothing moved.
    expect((await jobs(a)).live).toHaveLength(1);
    const ok = await api.post(`${ws.base}/${b}/revert-to-draft`, { expectedRootPostId: rootId, expectedRootEditionIds: [b, a] }, { token: ws.token });
    expect(ok.status).toBe(201);
    expect(ok.body.data.editions).toHaveLength(2);
  });
});

describe('intended publish time, metadata and notes', () => {
  it('PATCH intended-publish-time: draft or pending_approval only', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const d = (await api.post(ws.base, { caption: 'd', channels: [{ integrationId: x }] }, { token: ws.token })).body.data.editions[0].id;
    const at = inHours(30);
    const r = await api.patch(`${ws.base}/${d}/intended-publish-time`, { scheduledAt: at }, { token: ws.token });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ contentId: d, status: 'draft' });
    expect(new Date(r.body.data.intendedPublishAt).toISOString()).toBe(at);
    expect((await api.get(`${ws.base}/${d}`, { token: ws.token })).body.data.scheduledAt).toBeNull();
    await server.owner.query(`update app.content_items set status = 'pending_approval' where id = $1`, [d]);
    expect((await api.patch(`${ws.base}/${d}/intended-publish-time`, { scheduledAt: at }, { token: ws.token })).status).toBe(200);
    const s = (await api.post(ws.base, { intent: 'schedule', scheduledAt: inHours(1), caption: 's', channels: [{ integrationId: x }] }, { token: ws.token })).body.data.editions[0].id;
    const refused = await api.patch(`${ws.base}/${s}/intended-publish-time`, { scheduledAt: at }, { token: ws.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_CONTENT_STATUS');
    expect((await api.patch(`${ws.base}/00000000-0000-4000-8000-000000000000/intended-publish-time`, { scheduledAt: at }, { token: ws.token })).status).toBe(404);
  });

  it('PATCH metadata: omitted fields stay, arrays replace, statuses draft/scheduled/sent only', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const ins = async (table: string, name: string) =>
      (await server.owner.query(`insert into app.${table} (organization_id, workspace_id, name) values ($1, $2, $3) returning id`, [ws.orgId, ws.id, name])).rows[0].id;
    const campaign = await ins('campaigns', 'Spring');
    const other = await ins('campaigns', 'Autumn');
    const phase = (await server.owner.query(`insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name) values ($1, $2, $3, 'Teaser') returning id`, [ws.orgId, ws.id, campaign])).rows[0].id;
    const [t1, t2] = [await ins('tags', 'one'), await ins('tags', 'two')];
    const pillar = await ins('pillars', 'Education');
    const format = await ins('formats', 'Carousel');
    const res = await api.post(ws.base, { caption: 'm', title: 'Provider title', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    const m1 = await api.patch(`${ws.base}/${id}/metadata`, { title: 'Internal', campaignId: campaign, phaseId: phase, tagIds: [t1, t2], pillarIds: [pillar] }, { token: ws.token });
    expect(m1.status).toBe(200);
    expect(m1.body.data).toMatchObject({ contentId: id, rootId: res.body.data.rootId, title: 'Internal', campaignId: campaign, phaseId: phase, pillarIds: [pillar], formatIds: [] });
    expect(m1.body.data.tagIds.sort()).toEqual([t1, t2].sort());
    const m2 = await api.patch(`${ws.base}/${id}/metadata`, { tagIds: [t2], formatIds: [format] }, { token: ws.token });
    expect(m2.body.data).toMatchObject({ title: 'Internal', campaignId: campaign, phaseId: phase, tagIds: [t2], pillarIds: [pillar], formatIds: [format] });
    // The organizational title never changes the provider-facing one.
    const g = (await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data;
    expect(g).toMatchObject({ title: 'Provider title', organizationalTitle: 'Internal', campaignId: campaign, phaseId: phase });
    // Another campaign without a phase clears the phase; a phase of another campaign is refused.
    const m3 = await api.patch(`${ws.base}/${id}/metadata`, { campaignId: other }, { token: ws.token });
    expect(m3.body.data).toMatchObject({ campaignId: other, phaseId: null });
    const bad = await api.patch(`${ws.base}/${id}/metadata`, { phaseId: phase, tagIds: ['00000000-0000-4000-8000-000000000003'] }, { token: ws.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: any) => `${f.field}:${f.code}`).sort()).toEqual(['phaseId:phase_not_in_campaign', 'tagIds.0:not_found']);
    const m4 = await api.patch(`${ws.base}/${id}/metadata`, { campaignId: null }, { token: ws.token });
    expect(m4.body.data).toMatchObject({ campaignId: null, phaseId: null, tagIds: [t2] });
    // Sent is allowed; cancelled is not.
    await server.owner.query(`update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = $1`, [id]);
    await server.owner.query(`update app.content_items set status = 'sent' where id = $1`, [id]);
    expect((await api.patch(`${ws.base}/${id}/metadata`, { title: 'After publishing' }, { token: ws.token })).status).toBe(200);
    const d = (await api.post(ws.base, { caption: 'c', channels: [{ integrationId: x }] }, { token: ws.token })).body.data.editions[0].id;
    await server.owner.query(`update app.content_items set status = 'cancelled' where id = $1`, [d]);
    const refused = await api.patch(`${ws.base}/${d}/metadata`, { title: 'x' }, { token: ws.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_CONTENT_STATUS');
    expect((await api.patch(`${ws.base}/00000000-0000-4000-8000-000000000000/metadata`, {}, { token: ws.token })).status).toBe(404);
  });

  it('PATCH notes replaces the root notes in any status', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { caption: 'n', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    await server.owner.query(`update app.content_items set status = 'cancelled' where id = $1`, [id]);
    const r = await api.patch(`${ws.base}/${id}/notes`, { notes: '<p>Call <em>legal</em></p>' }, { token: ws.token });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ contentId: id, rootId: res.body.data.rootId, notes: '<p>Call <em>legal</em></p>' });
    expect((await api.get(`${ws.base}/${id}`, { token: ws.token })).body.data.notes).toBe('<p>Call <em>legal</em></p>');
    expect((await api.patch(`${ws.base}/${id}/notes`, { notes: null }, { token: ws.token })).body.data.notes).toBeNull();
    expect((await api.patch(`${ws.base}/${id}/notes`, {}, { token: ws.token })).status).toBe(400);
    expect((await api.patch(`${ws.base}/${id}/notes`, { notes: 'x'.repeat(20001) }, { token: ws.token })).status).toBe(400);
    expect((await api.patch(`${ws.base}/00000000-0000-4000-8000-000000000000/notes`, { notes: 'x' }, { token: ws.token })).status).toBe(404);
  });
});

describe('roles and workspaces', () => {
  it('a viewer reads but cannot write; another workspace sees nothing', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await api.post(ws.base, { caption: 'r', channels: [{ integrationId: x }] }, { token: ws.token });
    const id = res.body.data.editions[0].id;
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    expect((await api.get(ws.base, { token: viewer.key })).body.meta.total).toBe(1);
    expect((await api.get(`${ws.base}/${id}`, { token: viewer.key })).status).toBe(200);
    expect((await api.get(`${ws.base}/${id}/versions`, { token: viewer.key })).status).toBe(200);
    for (const r of [
      await api.post(ws.base, { caption: 'no' }, { token: viewer.key }),
      await api.patch(`${ws.base}/${id}`, { caption: 'no' }, { token: viewer.key }),
      await api.patch(`${ws.base}/${id}/schedule`, { scheduledAt: inHours(1) }, { token: viewer.key }),
      await api.patch(`${ws.base}/${id}/notes`, { notes: 'no' }, { token: viewer.key }),
      await api.delete(`${ws.base}/${id}`, { token: viewer.key }),
    ]) {
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('ROLE_REQUIRED');
    }
    const editor = await createKey(api, ws.token, ws.id, { role: 'editor' });
    expect((await api.patch(`${ws.base}/${id}`, { caption: 'yes' }, { token: editor.key })).status).toBe(200);
    // Another organization: its own workspace has none of it, and ours is forbidden.
    const other = await workspace();
    expect((await api.get(`${other.base}/${id}`, { token: other.token })).status).toBe(404);
    expect((await api.patch(`${other.base}/${id}`, { caption: 'mine' }, { token: other.token })).status).toBe(404);
    const forbidden = await api.get(ws.base, { token: other.token });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('WORKSPACE_FORBIDDEN');
    // A channel of another workspace cannot be used.
    const theirs = await other.integration('x');
    const cross = await api.post(ws.base, { caption: 'x', channels: [{ integrationId: theirs }] }, { token: ws.token });
    expect(cross.status).toBe(400);
    expect(cross.body.error.details.fields[0].code).toBe('integration_not_found');
  });
});
