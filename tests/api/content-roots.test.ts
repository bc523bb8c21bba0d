// Content roots over HTTP: the board (ideas included), one root, and edits
// of the canonical title, caption and media that editions inherit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('content_roots');
  api = client(server);
});
afterAll(async () => server?.close());

const inHours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();

async function workspace() {
  const o = await signup(api);
  const integration = async (platform: string) =>
    (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $3) returning id`,
        [o.organizationId, o.workspaceId, platform],
      )
    ).rows[0].id as string;
  const media = async () =>
    (
      await server.owner.query(
        `insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key)
         values ($1, $2, 'image', 'a.png', 'image/png', 1000, $3) returning id`,
        [o.organizationId, o.workspaceId, `k/${Math.random()}`],
      )
    ).rows[0].id as string;
  return { ...o, integration, media, content: `/v1/workspaces/${o.workspaceId}/content`, roots: `/v1/workspaces/${o.workspaceId}/content-roots` };
}

describe('GET {ws}/content-roots', () => {
  it('lists every root with its editions, ideas included, most recently changed first', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const idea = await api.post(ws.content, { caption: 'Just an idea', organizationalTitle: 'Idea' }, { token: ws.token });
    const post = await api.post(ws.content, { caption: 'Two channels', title: 'Canonical', channels: [{ integrationId: x }, { integrationId: li, caption: 'Own' }] }, { token: ws.token });
    const res = await api.get(ws.roots, { token: ws.token });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ limit: 250, offset: 0, total: 2, hasMore: false });
    expect(res.body.data.map((r: any) => r.id)).toEqual([post.body.data.rootId, idea.body.data.rootId]);
    const [p, i] = res.body.data;
    expect(i).toMatchObject({ caption: 'Just an idea', organizationalTitle: 'Idea', editions: [], mediaIds: [], recurringMetadata: null });
    expect(p).toMatchObject({ title: 'Canonical', caption: 'Two channels' });
    expect(p.editions.map((e: any) => [e.platform, e.caption, e.captionOverride, e.status])).toEqual([
      ['linkedin', 'Own', 'Own', 'draft'],
      ['x', 'Two channels', null, 'draft'],
    ]);
    const page = await api.get(`${ws.roots}?limit=1&offset=1`, { token: ws.token });
    expect(page.body.data.map((r: any) => r.id)).toEqual([idea.body.data.rootId]);
    expect(page.body.meta).toEqual({ limit: 1, offset: 1, total: 2, hasMore: false });
    expect((await api.get(`${ws.roots}?limit=1`, { token: ws.token })).body.meta.hasMore).toBe(true);
    expect((await api.get(`${ws.roots}?limit=500&offset=9007199254740991`, { token: ws.token })).body.data).toEqual([]);
    for (const bad of ['limit=0', 'limit=501', 'offset=-1', 'offset=9007199254740992', 'limit=abc']) {
      const r = await api.get(`${ws.roots}?${bad}`, { token: ws.token });
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_FAILED');
    }
    // Deleted editions leave the board.
    await api.delete(`${ws.content}/${post.body.data.editions[0].id}`, { token: ws.token });
    const after = await api.get(`${ws.roots}/${post.body.data.rootId}`, { token: ws.token });
    expect(after.body.data.editions).toHaveLength(1);
  });
});

describe('GET {ws}/content-roots/{id}', () => {
  it('takes a root id, not an edition id; other workspaces see nothing', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const post = await api.post(ws.content, { caption: 'c', channels: [{ integrationId: x }] }, { token: ws.token });
    const ok = await api.get(`${ws.roots}/${post.body.data.rootId}`, { token: ws.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data.editions[0].id).toBe(post.body.data.editions[0].id);
    const edition = await api.get(`${ws.roots}/${post.body.data.editions[0].id}`, { token: ws.token });
    expect(edition.status).toBe(404);
    expect(edition.body.error.code).toBe('NOT_FOUND');
    expect((await api.get(`${ws.roots}/not-a-uuid`, { token: ws.token })).status).toBe(400);
    const other = await workspace();
    expect((await api.get(`${other.roots}/${post.body.data.rootId}`, { token: other.token })).status).toBe(404);
    expect((await api.patch(`${other.roots}/${post.body.data.rootId}`, { caption: 'x' }, { token: other.token })).status).toBe(404);
  });
});

describe('PATCH {ws}/content-roots/{id}', () => {
  it('changes canonical title, caption and media; inheriting editions follow with a version, others keep theirs', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const m1 = await ws.media();
    const m2 = await ws.media();
    const post = await api.post(ws.content, { caption: 'Old', title: 'T1', mediaIds: [m1], channels: [{ integrationId: x }, { integrationId: li, caption: 'Mine', mediaIds: [] }] }, { token: ws.token });
    const [ex, el] = post.body.data.editions.map((e: any) => e.id);
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const res = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { title: 'T2', caption: 'New', mediaIds: [m2, m1] }, { token: ws.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: post.body.data.rootId, title: 'T2', caption: 'New', mediaIds: [m2, m1] });
    const gx = (await api.get(`${ws.content}/${ex}`, { token: ws.token })).body.data;
    expect(gx).toMatchObject({ caption: 'New', mediaIds: [m2, m1], title: 'T2', version: 2 });
    const versions = (await api.get(`${ws.content}/${ex}/versions`, { token: ws.token })).body.data;
    expect(versions.map((v: any) => [v.version, v.source, v.effectiveCaption])).toEqual([[2, 'root', 'New'], [1, 'create', 'Old']]);
    const gl = (await api.get(`${ws.content}/${el}`, { token: ws.token })).body.data;
    expect(gl).toMatchObject({ caption: 'Mine', mediaIds: [], ownMedia: true, version: 1 });
    // Pollers see both editions as changed.
    const polled = await api.get(`${ws.content}?since=${encodeURIComponent(since)}`, { token: ws.token });
    expect(polled.body.data.map((i: any) => i.id).sort()).toEqual([ex, el].sort());
    // Only sent fields change.
    const only = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { title: null }, { token: ws.token });
    expect(only.body.data).toMatchObject({ title: null, caption: 'New', mediaIds: [m2, m1] });
    const bad = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { mediaIds: ['00000000-0000-4000-8000-000000000001'] }, { token: ws.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0]).toMatchObject({ field: 'mediaIds.0', code: 'media_not_found' });
    expect((await api.patch(`${ws.roots}/00000000-0000-4000-8000-000000000000`, { caption: 'x' }, { token: ws.token })).status).toBe(404);
    const viewer = await createKey(api, ws.token, ws.workspaceId, { role: 'viewer' });
    const denied = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { caption: 'x' }, { token: viewer.key });
    expect(denied.status).toBe(403);
    expect((await api.get(ws.roots, { token: viewer.key })).status).toBe(200);
  });

  it('scheduled editions that inherit must still satisfy their platform; published ones keep what they published', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const li = await ws.integration('linkedin');
    const post = await api.post(ws.content, { intent: 'schedule', scheduledAt: inHours(2), caption: 'Short', channels: [{ integrationId: x }, { integrationId: li }] }, { token: ws.token });
    const [ex, el] = post.body.data.editions.map((e: any) => e.id);
    const tooLong = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { caption: 'y'.repeat(400) }, { token: ws.token });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBe('VALIDATION_FAILED');
    expect(tooLong.body.error.details.fields).toEqual([expect.objectContaining({ field: `editions.${ex}.caption`, code: 'caption_too_long' })]);
    expect((await api.get(`${ws.roots}/${post.body.data.rootId}`, { token: ws.token })).body.data.caption).toBe('Short');
    // X is published (by the engine, here by SQL); the root may then change for LinkedIn.
    await server.owner.query(`update app.content_items set status = 'sent' where id = $1`, [ex]);
    const ok = await api.patch(`${ws.roots}/${post.body.data.rootId}`, { caption: 'y'.repeat(400) }, { token: ws.token });
    expect(ok.status).toBe(200);
    expect((await api.get(`${ws.content}/${ex}`, { token: ws.token })).body.data.caption).toBe('Short');
    expect((await api.get(`${ws.content}/${el}`, { token: ws.token })).body.data.caption).toBe('y'.repeat(400));
  });
});
