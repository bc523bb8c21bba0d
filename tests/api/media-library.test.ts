// The media library over HTTP: folders (depth, path, move, cursor pages),
// labels and label groups (reorder, move, ungroup, merge, usage, health),
// the media list (every filter, defaults and bounds, signed cursors), the
// bin (single and bulk, the scheduled-use rule), bulk actions with one
// result per id, labels on items, usage history, roles and isolation.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png, upload } from './media-fixtures.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let o: Awaited<ReturnType<typeof signup>>;
let dataDir: string;
let ws: string;
const RETENTION = 3600;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-media-lib-'));
  server = await startTestServer('media_lib', { DATA_DIR: dataDir, MEDIA_BIN_RETENTION_SECONDS: RETENTION });
  api = client(server);
  o = await signup(api);
  ws = o.workspaceId;
});

afterAll(async () => {
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const m = (p = '') => `/v1/workspaces/${ws}/media${p}`;
const get = (p: string) => api.get(m(p), { token: o.token });
const post = (p: string, body?: unknown) => api.post(m(p), body, { token: o.token });
const patch = (p: string, body?: unknown) => api.patch(m(p), body, { token: o.token });
const put = (p: string, body?: unknown) => api.put(m(p), body, { token: o.token });
const del = (p: string, body?: unknown) => api.request('DELETE', m(p), { token: o.token, body });
const NO_SUCH = '00000000-0000-4000-8000-000000000000';

const fields = (r: { body: any }) => (r.body.error.details?.fields ?? []).map((f: any) => f.field);

/** Inserts media rows directly (superuser), for list volume; returns their ids in insert order. */
async function seed(rows: { filename: string; type?: string; size?: number; favorite?: boolean; folderId?: string | null; minutesAgo?: number; altText?: string; state?: string; workspaceId?: string }[]) {
  const ids: string[] = [];
  for (const r of rows) {
    const res = await server.owner.query(
      `insert into app.media_items (organization_id, workspace_id, folder_id, type, filename, content_type, file_size, storage_key,
         alt_text, is_favorite, source, state, deleted_at, delete_after, created_at)
       values ($1, $2::uuid, $3, $4, $5, case $4 when 'video' then 'video/mp4' when 'gif' then 'image/gif' else 'image/png' end, $6,
         'media/' || $2::text || '/' || gen_random_uuid(), $7, $8, 'client_upload', $9,
         case when $9 = 'deleted' then now() end, case when $9 = 'deleted' then now() + interval '1 hour' end,
         now() - make_interval(mins => $10))
       returning id`,
      [o.organizationId, r.workspaceId ?? ws, r.folderId ?? null, r.type ?? 'image', r.filename, r.size ?? 1000, r.altText ?? null,
        r.favorite ?? false, r.state ?? 'active', r.minutesAgo ?? 0],
    );
    ids.push(res.rows[0].id);
  }
  return ids;
}

/** Content that uses a media item, made directly in SQL (the content API is another area). */
async function contentUsing(mediaId: string, opts: { via?: 'edition' | 'root'; status?: 'draft' | 'scheduled' } = {}) {
  const q = (sql: string, params: unknown[]) => server.owner.query(sql, params).then((r) => r.rows[0]);
  const integration = await q(`insert into app.integrations (organization_id, workspace_id, connector, platform, name)
    values ($1, $2, 'sandbox', 'x', 'Acme on X') returning id`, [o.organizationId, ws]);
  const root = await q(`insert into app.content_roots (organization_id, workspace_id, caption) values ($1, $2, 'Hello') returning id`,
    [o.organizationId, ws]);
  const item = await q(`insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status)
    values ($1, $2, $3, $4, 'draft') returning id`, [o.organizationId, ws, root.id, integration.id]);
  if ((opts.via ?? 'edition') === 'edition') {
    await server.owner.query(`update app.content_items set own_media = true where id = $1`, [item.id]).catch(() => {});
    await server.owner.query(`insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
      values ($1, $2, $3, $4, 0)`, [item.id, mediaId, ws, o.organizationId]);
  } else {
    await server.owner.query(`insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
      values ($1, $2, $3, $4, 0)`, [root.id, mediaId, ws, o.organizationId]);
  }
  if (opts.status === 'scheduled') {
    await server.owner.query(`update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = $1`, [item.id]);
  }
  return { contentId: item.id as string, rootId: root.id as string };
}

/** Walks every page of a cursor-paginated GET; returns the items and the pages' sizes. */
async function walk(pathAndQuery: string) {
  const items: any[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const sep = pathAndQuery.includes('?') ? '&' : '?';
    const r = await get(cursor ? `${pathAndQuery}${sep}cursor=${encodeURIComponent(cursor)}` : pathAndQuery);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    items.push(...r.body.data);
    sizes.push(r.body.data.length);
    expect(r.body.meta.hasMore).toBe(r.body.meta.nextCursor !== null);
    if (!r.body.meta.hasMore) break;
    cursor = r.body.meta.nextCursor;
  }
  return { items, sizes };
}

describe('folders', () => {
  let a: any;
  let b: any;
  let a1: any;

  it('creates root folders and one level of subfolders; a third level is refused', async () => {
    a = (await post('/folders', { name: 'Alpha' })).body.data;
    b = (await post('/folders', { name: 'beta', parentId: null })).body.data;
    const r = await post('/folders', { name: 'Alpha one', parentId: a.id });
    expect(r.status).toBe(201);
    a1 = r.body.data;
    expect(a1).toMatchObject({ name: 'Alpha one', parentId: a.id, depth: 1, subfolderCount: 0, mediaCount: 0 });
    expect((await get(`/folders/${a.id}`)).body.data).toMatchObject({ depth: 0, subfolderCount: 1, parentId: null });
    const deep = await post('/folders', { name: 'Too deep', parentId: a1.id });
    expect([deep.status, deep.body.error.code]).toEqual([409, 'FOLDER_DEPTH_EXCEEDED']);
    const taken = await post('/folders', { name: 'ALPHA' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'FOLDER_NAME_TAKEN']);
    expect((await post('/folders', { name: 'Alpha', parentId: b.id })).status).toBe(201); // same name elsewhere
    const unknown = await post('/folders', { name: 'X', parentId: NO_SUCH });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'NOT_FOUND']);
    for (const body of [{ name: '' }, { name: '   ' }, { name: 'x'.repeat(201) }, {}, { name: 'ok', extra: 1 }, { name: 'ok', parentId: 'nope' }]) {
      const bad = await post('/folders', body);
      expect([bad.status, bad.body.error.code], JSON.stringify(body)).toEqual([400, 'VALIDATION_FAILED']);
    }
  });

  it('renames, shows the path, and moves within the depth rule', async () => {
    const renamed = await patch(`/folders/${a1.id}`, { name: 'Alpha first' });
    expect(renamed.body.data.name).toBe('Alpha first');
    expect((await get(`/folders/${a1.id}/path`)).body.data.map((f: any) => f.id)).toEqual([a.id, a1.id]);
    expect((await get(`/folders/${a.id}/path`)).body.data.map((f: any) => f.id)).toEqual([a.id]);
    // A folder with subfolders cannot become a subfolder; nor go into itself or a subfolder.
    const underB = await patch(`/folders/${a.id}/move`, { parentId: b.id });
    expect([underB.status, underB.body.error.code]).toEqual([409, 'FOLDER_DEPTH_EXCEEDED']);
    expect((await patch(`/folders/${b.id}/move`, { parentId: b.id })).body.error.code).toBe('FOLDER_DEPTH_EXCEEDED');
    expect((await patch(`/folders/${b.id}/move`, { parentId: a1.id })).body.error.code).toBe('FOLDER_DEPTH_EXCEEDED');
    expect((await patch(`/folders/${b.id}/move`, { parentId: NO_SUCH })).status).toBe(404);
    expect((await patch(`/folders/${b.id}/move`, {})).status).toBe(400);
    // Subfolder to the root, then under B; B then has a subfolder.
    const toRoot = await patch(`/folders/${a1.id}/move`, { parentId: null });
    expect(toRoot.body.data).toMatchObject({ parentId: null, depth: 0 });
    const toB = await patch(`/folders/${a1.id}/move`, { parentId: b.id });
    expect(toB.body.data).toMatchObject({ parentId: b.id, depth: 1 });
    expect((await patch(`/folders/${b.id}/move`, { parentId: a.id })).body.error.code).toBe('FOLDER_DEPTH_EXCEEDED');
    // Moving next to a sibling of the same name is refused.
    await post('/folders', { name: 'Alpha first' });
    const clash = await patch(`/folders/${a1.id}/move`, { parentId: null });
    expect([clash.status, clash.body.error.code]).toEqual([409, 'FOLDER_NAME_TAKEN']);
    expect((await patch(`/folders/${a.id}`, { name: 'beta' })).body.error.code).toBe('FOLDER_NAME_TAKEN');
  });

  it('lists folders by name, page by page, for the root, one parent, or all', async () => {
    for (const name of ['Gamma', 'delta', 'Epsilon', 'zeta']) await post('/folders', { name });
    const roots = await walk('/folders?parentId=root&limit=2');
    const names = roots.items.map((f) => f.name);
    expect(names).toEqual([...names].sort((x, y) => x.toLowerCase().localeCompare(y.toLowerCase())));
    expect(roots.items.every((f) => f.parentId === null)).toBe(true);
    expect(roots.sizes.slice(0, -1).every((n) => n === 2)).toBe(true);
    const children = await get(`/folders?parentId=${b.id}`);
    expect(children.body.data.map((f: any) => f.id).sort()).toEqual(
      (await server.owner.query('select id from app.media_folders where parent_id = $1', [b.id])).rows.map((r) => r.id).sort());
    expect(children.body.meta).toEqual({ nextCursor: null, hasMore: false });
    const all = await walk('/folders?limit=3');
    const count = (await server.owner.query('select count(*)::int n from app.media_folders where workspace_id = $1', [ws])).rows[0].n;
    expect(all.items.length).toBe(count);
    expect(new Set(all.items.map((f) => f.id)).size).toBe(count);
  });

  it('refuses bad folder-list parameters and foreign or altered cursors', async () => {
    for (const q of ['parentId=roots', 'parentId=123', 'limit=0', 'limit=101', 'limit=2.5', 'cursor=', `cursor=${'x'.repeat(2049)}`, 'other=1']) {
      const r = await get(`/folders?${q}`);
      expect([r.status, r.body.error.code], q).toEqual([400, 'VALIDATION_FAILED']);
    }
    expect((await get(`/folders?parentId=${NO_SUCH}`)).status).toBe(404);
    const first = await get('/folders?parentId=root&limit=1');
    const cursor: string = first.body.meta.nextCursor;
    const [body, mac] = cursor.split('.');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    for (const c of [`${flip(body)}.${mac}`, `${body}.${flip(mac)}`, 'garbage', `${body}`, 'a.b.c']) {
      const r = await get(`/folders?parentId=root&limit=1&cursor=${encodeURIComponent(c)}`);
      expect([r.status, r.body.error.code], c).toEqual([400, 'INVALID_CURSOR']);
    }
    const other = await get(`/folders?limit=1&cursor=${encodeURIComponent(cursor)}`);
    expect([other.status, other.body.error.code]).toEqual([400, 'INVALID_CURSOR']);
    expect((await get(`/folders?parentId=root&limit=5&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
  });

  it('deletes a folder with its subfolders; their media moves to the root', async () => {
    const top = (await post('/folders', { name: 'Doomed' })).body.data;
    const sub = (await post('/folders', { name: 'Doomed sub', parentId: top.id })).body.data;
    const inTop = (await upload(api, o.token, ws, png(4, 4, 1), { folderId: top.id })).media;
    const inSub = (await upload(api, o.token, ws, png(4, 4, 2), { folderId: sub.id })).media;
    expect(inSub.folderId).toBe(sub.id);
    expect((await get(`/folders/${sub.id}`)).body.data.mediaCount).toBe(1);
    const r = await del(`/folders/${top.id}`);
    expect(r.body.data).toEqual({ id: top.id, deleted: true, subfoldersDeleted: 1, mediaMovedToRoot: 2 });
    expect((await get(`/${inTop.id}`)).body.data.folderId).toBeNull();
    expect((await get(`/${inSub.id}`)).body.data.folderId).toBeNull();
    expect((await get(`/folders/${sub.id}`)).status).toBe(404);
    expect((await del(`/folders/${top.id}`)).status).toBe(404);
  });
});

describe('labels and label groups', () => {
  const L: Record<string, any> = {};
  const G: Record<string, any> = {};

  it('creates labels (unique names, colors) and groups (in order)', async () => {
    for (const name of ['Campaigns', 'Formats', 'Seasons']) {
      const r = await post('/label-groups', { name });
      expect(r.status).toBe(201);
      G[name] = r.body.data;
    }
    expect([G.Campaigns.position, G.Formats.position, G.Seasons.position]).toEqual([0, 1, 2]);
    expect((await post('/label-groups', { name: 'campaigns' })).body.error.code).toBe('LABEL_GROUP_NAME_TAKEN');
    for (const [name, color, group] of [['Summer Sale', '#FF0000', 'Campaigns'], ['summer-sale', null, null], ['Reels', '#00aa00', 'Formats'],
      ['Unused', null, 'Formats'], ['100% real_deal', null, null]] as const) {
      const r = await post('/labels', { name, color, groupId: group ? G[group].id : null });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      L[name] = r.body.data;
    }
    expect(L['Summer Sale']).toMatchObject({ color: '#ff0000', groupId: G.Campaigns.id, mergedIntoId: null, mediaCount: 0 });
    expect((await post('/labels', { name: 'REELS' })).body.error.code).toBe('LABEL_NAME_TAKEN');
    expect((await post('/labels', { name: 'x', groupId: NO_SUCH })).status).toBe(404);
    for (const body of [{ name: 'x', color: 'red' }, { name: 'x', color: '#12345' }, { name: '' }, { name: 'x'.repeat(101) }]) {
      expect((await post('/labels', body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('lists labels by group, ungrouped, by search (literally, ignoring case)', async () => {
    const names = (r: any) => r.body.data.map((l: any) => l.name);
    expect(names(await get('/labels'))).toEqual(['100% real_deal', 'Reels', 'Summer Sale', 'summer-sale', 'Unused']);
    expect(names(await get(`/labels?groupId=${G.Formats.id}`))).toEqual(['Reels', 'Unused']);
    expect(names(await get('/labels?groupId='))).toEqual(['100% real_deal', 'summer-sale']);
    expect(names(await get('/labels?search=SUMMER'))).toEqual(['Summer Sale', 'summer-sale']);
    expect(names(await get('/labels?search=%25'))).toEqual(['100% real_deal']);
    expect(names(await get('/labels?search=_'))).toEqual(['100% real_deal']);
    expect((await get(`/labels?groupId=${NO_SUCH}`)).status).toBe(404);
    for (const q of ['groupId=x', 'includeMerged=maybe', `search=${'s'.repeat(101)}`]) expect((await get(`/labels?${q}`)).status, q).toBe(400);
    expect((await get(`/labels/${L.Reels.id}`)).body.data.name).toBe('Reels');
  });

  it('updates labels: rename, color cleared, regroup', async () => {
    const r = await patch(`/labels/${L['100% real_deal'].id}`, { name: 'Real deal', color: '#0000FF', groupId: G.Seasons.id });
    expect(r.body.data).toMatchObject({ name: 'Real deal', color: '#0000ff', groupId: G.Seasons.id });
    const cleared = await patch(`/labels/${L['100% real_deal'].id}`, { color: null, groupId: null });
    expect(cleared.body.data).toMatchObject({ name: 'Real deal', color: null, groupId: null });
    expect((await patch(`/labels/${L.Reels.id}`, { name: 'unused' })).body.error.code).toBe('LABEL_NAME_TAKEN');
    expect((await patch(`/labels/${L.Reels.id}`, {})).status).toBe(400);
    expect((await patch(`/labels/${L.Reels.id}`, { groupId: NO_SUCH })).status).toBe(404);
    expect((await patch(`/labels/${NO_SUCH}`, { name: 'x' })).status).toBe(404);
  });

  it('reorders groups only with the complete list', async () => {
    const r = await post('/label-groups/reorder', { groupIds: [G.Seasons.id, G.Campaigns.id, G.Formats.id] });
    expect(r.status).toBe(200);
    expect(r.body.data.map((g: any) => [g.name, g.position])).toEqual([['Seasons', 0], ['Campaigns', 1], ['Formats', 2]]);
    expect((await get('/label-groups')).body.data.map((g: any) => g.name)).toEqual(['Seasons', 'Campaigns', 'Formats']);
    const stale = await post('/label-groups/reorder', { groupIds: [G.Campaigns.id, G.Formats.id] });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'LABEL_GROUPS_CHANGED']);
    expect(stale.body.error.details.missingGroupIds).toEqual([G.Seasons.id]);
    const unknown = await post('/label-groups/reorder', { groupIds: [G.Seasons.id, G.Campaigns.id, G.Formats.id, NO_SUCH] });
    expect(unknown.body.error.details.unknownGroupIds).toEqual([NO_SUCH]);
    expect((await post('/label-groups/reorder', { groupIds: [G.Seasons.id, G.Seasons.id] })).status).toBe(400);
    const created = await post('/label-groups', { name: 'Last' });
    expect(created.body.data.position).toBe(3);
    G.Last = created.body.data;
  });

  it('moves labels into a group and out of groups (201)', async () => {
    const moved = await post(`/label-groups/${G.Last.id}/labels`, { labelIds: [L.Reels.id, L['summer-sale'].id] });
    expect(moved.status).toBe(201);
    expect(moved.body.data.map((l: any) => l.groupId)).toEqual([G.Last.id, G.Last.id]);
    expect((await get(`/label-groups/${G.Last.id}`)).body.data.labelCount).toBe(2);
    const out = await post('/label-groups/ungroup-labels', { labelIds: [L['summer-sale'].id] });
    expect(out.status).toBe(201);
    expect(out.body.data[0].groupId).toBeNull();
    expect((await post(`/label-groups/${G.Last.id}/labels`, { labelIds: [NO_SUCH] })).status).toBe(404);
    expect((await post(`/label-groups/${NO_SUCH}/labels`, { labelIds: [L.Reels.id] })).status).toBe(404);
    expect((await post('/label-groups/ungroup-labels', { labelIds: [] })).status).toBe(400);
    expect((await patch(`/label-groups/${G.Last.id}`, { name: 'Formats' })).body.error.code).toBe('LABEL_GROUP_NAME_TAKEN');
    expect((await patch(`/label-groups/${G.Last.id}`, { name: 'Final' })).body.data.name).toBe('Final');
  });

  it('merges a label into another: items keep one label, the source stays as an alias', async () => {
    const a = (await upload(api, o.token, ws, png(3, 3, 10))).media;
    const b = (await upload(api, o.token, ws, png(3, 3, 11))).media;
    const c = (await upload(api, o.token, ws, png(3, 3, 12))).media;
    await post(`/${a.id}/labels`, { labelIds: [L['summer-sale'].id] });
    await post(`/${b.id}/labels`, { labelIds: [L['summer-sale'].id, L['Summer Sale'].id] });
    await post(`/${c.id}/labels`, { labelIds: [L['Summer Sale'].id] });
    const r = await post(`/labels/${L['summer-sale'].id}/merge`, { targetLabelId: L['Summer Sale'].id });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: L['summer-sale'].id, mergedIntoId: L['Summer Sale'].id, mediaCount: 0, groupId: null });
    expect(r.body.data.mergedAt).not.toBeNull();
    for (const item of [a, b, c]) {
      expect((await get(`/${item.id}`)).body.data.labels.map((l: any) => l.id)).toEqual([L['Summer Sale'].id]);
    }
    expect((await get(`/labels/${L['Summer Sale'].id}`)).body.data.mediaCount).toBe(3);
    expect((await get('/labels')).body.data.map((l: any) => l.id)).not.toContain(L['summer-sale'].id);
    expect((await get('/labels?includeMerged=true')).body.data.map((l: any) => l.id)).toContain(L['summer-sale'].id);
    const attach = await post(`/${a.id}/labels`, { labelIds: [L['summer-sale'].id] });
    expect([attach.status, attach.body.error.code]).toEqual([409, 'LABEL_MERGED']);
    expect((await patch(`/labels/${L['summer-sale'].id}`, { name: 'again' })).body.error.code).toBe('LABEL_MERGED');
    expect((await post(`/labels/${L['Summer Sale'].id}/merge`, { targetLabelId: L['summer-sale'].id })).body.error.code).toBe('LABEL_MERGED');
    expect((await post(`/labels/${L['summer-sale'].id}/merge`, { targetLabelId: L.Reels.id })).body.error.code).toBe('LABEL_MERGED');
    const self = await post(`/labels/${L.Reels.id}/merge`, { targetLabelId: L.Reels.id });
    expect([self.status, self.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect((await post(`/labels/${L.Reels.id}/merge`, { targetLabelId: NO_SUCH })).status).toBe(404);
    // The merged name is free again.
    expect((await post('/labels', { name: 'summer-sale' })).status).toBe(201);
    L.items = [a, b, c];
  });

  it('counts usage per label and reports label health', async () => {
    const [a] = L.items;
    await post(`/${a.id}/labels`, { labelIds: [L.Reels.id] });
    await del(`/${a.id}`); // binned: counted apart
    const usage = (await get('/labels/usage')).body.data;
    const by = Object.fromEntries(usage.map((u: any) => [u.name, u]));
    expect(by['Summer Sale']).toMatchObject({ mediaCount: 2, binnedMediaCount: 1 });
    expect(by.Reels).toMatchObject({ mediaCount: 0, binnedMediaCount: 1 });
    expect(usage[0].name).toBe('Summer Sale');
    expect(usage.map((u: any) => u.labelId)).not.toContain(L['summer-sale'].id);
    const health = (await get('/labels/health')).body.data;
    expect(health.unusedLabels.map((l: any) => l.name)).toEqual(expect.arrayContaining(['Reels', 'Unused', 'Real deal']));
    expect(health.unusedLabels.map((l: any) => l.name)).not.toContain('Summer Sale');
    expect(health.similarLabels).toEqual([{ key: 'summersale', labels: expect.arrayContaining([expect.objectContaining({ name: 'Summer Sale' }), expect.objectContaining({ name: 'summer-sale' })]) }]);
    expect(health.emptyGroups.map((g: any) => g.name)).toEqual(['Seasons']);
    expect(health.mergedLabelCount).toBe(1);
    expect(health.media.labeled + health.media.unlabeled).toBe(health.media.total);
    await post(`/${a.id}/restore`);
  });

  it('deletes a group, ungrouping its labels (default) or deleting them', async () => {
    const formats = await del(`/label-groups/${G.Formats.id}`);
    expect(formats.body.data).toEqual({ id: G.Formats.id, deleted: true, labels: 'ungroup', labelCount: 1 });
    expect((await get(`/labels/${L.Unused.id}`)).body.data.groupId).toBeNull();
    await post(`/label-groups/${G.Last.id}/labels`, { labelIds: [L.Unused.id] });
    const final = await del(`/label-groups/${G.Last.id}`, { labels: 'delete' });
    expect(final.body.data).toEqual({ id: G.Last.id, deleted: true, labels: 'delete', labelCount: 2 });
    expect((await get(`/labels/${L.Reels.id}`)).status).toBe(404);
    expect((await get(`/${L.items[0].id}`)).body.data.labels.map((l: any) => l.name)).toEqual(['Summer Sale']);
    expect((await del(`/label-groups/${G.Seasons.id}`, { labels: 'keep' })).status).toBe(400);
    expect((await del(`/label-groups/${NO_SUCH}`)).status).toBe(404);
  });

  it('deletes a label: it leaves every item, and its aliases go with it', async () => {
    const r = await del(`/labels/${L['Summer Sale'].id}`);
    expect(r.body.data).toEqual({ id: L['Summer Sale'].id, deleted: true, detachedFromMediaCount: 3 });
    expect((await get(`/labels/${L['summer-sale'].id}`)).status).toBe(404);
    expect((await get(`/${L.items[1].id}`)).body.data.labels).toEqual([]);
  });
});

describe('the media list', () => {
  let lab: Record<string, string>;
  let folder: string;
  let seeded: Record<string, string>;

  beforeAll(async () => {
    // A clean workspace of its own for exact expectations.
    const w = await api.post('/v1/workspaces', { name: 'List' }, { token: o.token });
    ws = w.body.data.id;
    folder = (await post('/folders', { name: 'F' })).body.data.id;
    lab = {
      red: (await post('/labels', { name: 'red' })).body.data.id,
      blue: (await post('/labels', { name: 'blue' })).body.data.id,
    };
    const names = ['b-photo.png', 'A-photo.png', 'clip.mp4', 'Anim.gif', '100%_off.png', 'note_1.png', 'big.mp4', 'zeta.png'];
    const ids = await seed([
      { filename: names[0], size: 500, minutesAgo: 70 },
      { filename: names[1], size: 700, minutesAgo: 60, favorite: true, folderId: folder },
      { filename: names[2], type: 'video', size: 9000, minutesAgo: 50, altText: 'Launch PHOTO shoot' },
      { filename: names[3], type: 'gif', size: 300, minutesAgo: 40, folderId: folder },
      { filename: names[4], size: 100, minutesAgo: 30 },
      { filename: names[5], size: 100, minutesAgo: 20 },
      { filename: names[6], type: 'video', size: 50000, minutesAgo: 10, state: 'deleted' },
      { filename: names[7], size: 1, minutesAgo: 0 },
    ]);
    seeded = Object.fromEntries(names.map((n, i) => [n, ids[i]]));
    await post('/bulk-label', { ids: [seeded['b-photo.png'], seeded['clip.mp4']], labelIds: [lab.red] });
    await post('/bulk-label', { ids: [seeded['clip.mp4'], seeded['Anim.gif']], labelIds: [lab.blue] });
    await contentUsing(seeded['zeta.png']);
    await contentUsing(seeded['note_1.png'], { via: 'root' });
  });

  afterAll(() => {
    ws = o.workspaceId;
  });

  const names = (r: any) => r.body.data.map((x: any) => x.filename);

  it('defaults: active items, newest first, 50 a page, cursor meta', async () => {
    const r = await get('');
    expect(names(r)).toEqual(['zeta.png', 'note_1.png', '100%_off.png', 'Anim.gif', 'clip.mp4', 'A-photo.png', 'b-photo.png']);
    expect(r.body.meta).toEqual({ nextCursor: null, hasMore: false });
    expect(r.body.data[0]).toMatchObject({ state: 'active', source: 'client_upload', isUsed: true, usageCount: 1 });
  });

  it('orders by filename (ignoring case) or size, either way, with ties broken by id', async () => {
    expect(names(await get('?sortBy=filename&order=asc'))).toEqual(['100%_off.png', 'A-photo.png', 'Anim.gif', 'b-photo.png', 'clip.mp4', 'note_1.png', 'zeta.png']);
    const bySize = (await get('?sortBy=fileSize&order=desc')).body.data;
    expect(bySize.map((x: any) => x.fileSize)).toEqual([9000, 700, 500, 300, 100, 100, 1]);
    const ties = bySize.filter((x: any) => x.fileSize === 100).map((x: any) => x.id);
    expect(ties).toEqual([...ties].sort().reverse());
    expect(names(await get('?order=asc'))[0]).toBe('b-photo.png');
  });

  it('applies every filter', async () => {
    const cases: [string, string[]][] = [
      [`folderId=${folder}`, ['Anim.gif', 'A-photo.png']],
      ['rootOnly=true', ['zeta.png', 'note_1.png', '100%_off.png', 'clip.mp4', 'b-photo.png']],
      [`labelIds=${lab.red}`, ['clip.mp4', 'b-photo.png']],
      [`labelIds=${lab.red},${lab.blue}`, ['Anim.gif', 'clip.mp4', 'b-photo.png']],
      ['isUnlabeled=true', ['zeta.png', 'note_1.png', '100%_off.png', 'A-photo.png']],
      ['isUnlabeled=false', ['Anim.gif', 'clip.mp4', 'b-photo.png']],
      ['type=video', ['clip.mp4']],
      ['type=gif', ['Anim.gif']],
      ['search=PHOTO', ['clip.mp4', 'A-photo.png', 'b-photo.png']],
      ['search=%25', ['100%_off.png']],
      ['search=_', ['100%_off.png', 'note_1.png'].reverse()],
      ['isFavorite=true', ['A-photo.png']],
      ['isFavorite=false', ['zeta.png', 'note_1.png', '100%_off.png', 'Anim.gif', 'clip.mp4', 'b-photo.png']],
      ['isUsed=true', ['zeta.png', 'note_1.png']],
      ['isUnused=false', ['zeta.png', 'note_1.png']],
      ['isUsed=false&isUnused=true', ['100%_off.png', 'Anim.gif', 'clip.mp4', 'A-photo.png', 'b-photo.png']],
      ['state=deleted', ['big.mp4']],
      ['state=all&type=video', ['big.mp4', 'clip.mp4']],
      ['source=client_upload&type=gif', ['Anim.gif']],
      ['type=image&rootOnly=true&isUnlabeled=true&search=.png', ['zeta.png', 'note_1.png', '100%_off.png']],
    ];
    for (const [q, expected] of cases) expect(names(await get(`?${q}`)), q).toEqual(expected);
  });

  it('refuses contradictions and bad values with 400 naming the field', async () => {
    const cases: [string, string][] = [
      [`rootOnly=true&folderId=${folder}`, 'query.rootOnly'],
      [`isUnlabeled=true&labelIds=${lab.red}`, 'query.isUnlabeled'],
      ['isUsed=true&isUnused=true', 'query.isUnused'],
      ['type=pdf', 'query.type'],
      ['state=gone', 'query.state'],
      ['sortBy=name', 'query.sortBy'],
      ['order=up', 'query.order'],
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['folderId=nope', 'query.folderId'],
      ['labelIds=abc', 'query.labelIds'],
      [`labelIds=${lab.red},`, 'query.labelIds'],
      ['rootOnly=maybe', 'query.rootOnly'],
      ['source=import', 'query.source'],
      [`search=${'s'.repeat(201)}`, 'query.search'],
      ['cursor=', 'query.cursor'],
      ['page=2', 'query.page'],
    ];
    for (const [q, field] of cases) {
      const r = await get(`?${q}`);
      expect([r.status, r.body.error.code], q).toEqual([400, 'VALIDATION_FAILED']);
      expect(fields(r), q).toContain(field);
    }
    expect((await get(`?labelIds=${Array.from({ length: 51 }, () => lab.red).join(',')}`)).status).toBe(400);
    expect((await get(`?folderId=${NO_SUCH}`)).body.data).toEqual([]);
  });

  it('pages through a large library with signed cursors, in every order', async () => {
    await seed(Array.from({ length: 123 }, (_, i) => ({ filename: `bulk-${String(i).padStart(3, '0')}.png`, size: (i * 37) % 50 + 1, minutesAgo: 100 + (i % 7) })));
    const total = (await server.owner.query(`select count(*)::int n from app.media_items where workspace_id = $1 and state = 'active'`, [ws])).rows[0].n;
    for (const q of ['', '?limit=50', '?limit=7&sortBy=filename&order=asc', '?limit=13&sortBy=fileSize&order=desc', '?limit=100&order=asc', '?limit=9&sortBy=fileSize&order=asc&type=image']) {
      const { items, sizes } = await walk(q);
      const expectedTotal = q.includes('type=image') ? total - 2 : total;
      expect(items.length, q).toBe(expectedTotal);
      expect(new Set(items.map((x) => x.id)).size, q).toBe(expectedTotal);
      const limit = Number(/limit=(\d+)/.exec(q)?.[1] ?? 50);
      expect(sizes.slice(0, -1).every((n) => n === limit), q).toBe(true);
      // The order holds across page boundaries.
      const key = q.includes('filename') ? (x: any) => x.filename.toLowerCase() : q.includes('fileSize') ? (x: any) => x.fileSize : (x: any) => x.createdAt;
      const asc = q.includes('order=asc');
      for (let i = 1; i < items.length; i++) {
        const a = key(items[i - 1]);
        const b = key(items[i]);
        const ok = a === b ? (asc ? items[i - 1].id < items[i].id : items[i - 1].id > items[i].id) : asc ? a < b : a > b;
        expect(ok, `${q} at ${i}: ${JSON.stringify(a)} then ${JSON.stringify(b)}`).toBe(true);
      }
    }
  });

  it('a tampered cursor, or one issued for other filters or another workspace, is 400 INVALID_CURSOR', async () => {
    const first = await get('?limit=2&sortBy=filename');
    const cursor: string = first.body.meta.nextCursor;
    const [body, mac] = cursor.split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    // A forged page position with the old signature.
    const forged = Buffer.from(JSON.stringify({ ...payload, k: ['a', payload.k[1]] })).toString('base64url');
    for (const c of [`${forged}.${mac}`, `${body}.${mac.slice(0, -2)}`, `${body}x.${mac}`, 'bm90LWEtY3Vyc29y', '.']) {
      const r = await get(`?limit=2&sortBy=filename&cursor=${encodeURIComponent(c)}`);
      expect([r.status, r.body.error.code], c).toEqual([400, 'INVALID_CURSOR']);
      expect(fields(r)).toEqual(['query.cursor']);
    }
    for (const q of ['?limit=2', '?limit=2&sortBy=filename&order=asc', '?limit=2&sortBy=filename&type=image']) {
      const r = await get(`${q}&cursor=${encodeURIComponent(cursor)}`);
      expect([r.status, r.body.error.code], q).toEqual([400, 'INVALID_CURSOR']);
    }
    const elsewhere = await api.get(`/v1/workspaces/${o.workspaceId}/media?limit=2&sortBy=filename&cursor=${encodeURIComponent(cursor)}`, { token: o.token });
    expect(elsewhere.body.error.code).toBe('INVALID_CURSOR');
    // The genuine cursor works, with any limit.
    expect((await get(`?limit=5&sortBy=filename&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
  });
});

describe('the bin', () => {
  it('bins with deleteAfter, answers a second delete as it is, restores, and deletes for good only from the bin', async () => {
    const { media } = await upload(api, o.token, ws, png(5, 5, 30));
    const before = Date.now();
    const binned = await del(`/${media.id}`);
    expect(binned.status).toBe(200);
    expect(binned.body.data.state).toBe('deleted');
    const after = new Date(binned.body.data.deleteAfter).getTime();
    expect(after).toBeGreaterThanOrEqual(before + RETENTION * 1000 - 5000);
    expect(after).toBeLessThanOrEqual(Date.now() + RETENTION * 1000 + 5000);
    const again = await del(`/${media.id}`);
    expect(again.body.data.deleteAfter).toBe(binned.body.data.deleteAfter);
    expect((await get(`/${media.id}`)).body.data.state).toBe('deleted');
    expect((await patch(`/${media.id}`, { filename: 'x.png' })).body.error.code).toBe('MEDIA_IN_BIN');
    expect((await post(`/${media.id}/labels`, { labelIds: [(await post('/labels', { name: 'binlabel' })).body.data.id] })).body.error.code).toBe('MEDIA_IN_BIN');
    // The bin is listed with state=deleted, and a binned item can still be viewed.
    expect((await get('?state=deleted')).body.data.map((x: any) => x.id)).toContain(media.id);
    expect((await get(`/${media.id}/view-url`)).status).toBe(200);
    const restored = await post(`/${media.id}/restore`);
    expect(restored.body.data).toMatchObject({ state: 'active', deletedAt: null, deleteAfter: null });
    expect((await post(`/${media.id}/restore`)).body.data.state).toBe('active');
    const notBinned = await del(`/${media.id}/permanent`);
    expect([notBinned.status, notBinned.body.error.code]).toEqual([409, 'MEDIA_NOT_IN_BIN']);
    await del(`/${media.id}`);
    const gone = await del(`/${media.id}/permanent`);
    expect(gone.body.data).toEqual({ id: media.id, deleted: true });
    expect((await get(`/${media.id}`)).status).toBe(404);
    expect((await del(`/${media.id}/permanent`)).status).toBe(404);
    expect((await post(`/${media.id}/restore`)).status).toBe(404);
    expect((await del(`/${NO_SUCH}`)).status).toBe(404);
    expect((await get('/not-a-uuid')).status).toBe(400);
  });

  it('media used by a scheduled post cannot be binned: 409 MEDIA_IN_USE with the content ids (edition or root)', async () => {
    const direct = (await upload(api, o.token, ws, png(5, 5, 31))).media;
    const viaRoot = (await upload(api, o.token, ws, png(5, 5, 32))).media;
    const draftOnly = (await upload(api, o.token, ws, png(5, 5, 33))).media;
    const c1 = await contentUsing(direct.id, { status: 'scheduled' });
    const c2 = await contentUsing(viaRoot.id, { via: 'root', status: 'scheduled' });
    await contentUsing(draftOnly.id);
    const r1 = await del(`/${direct.id}`);
    expect([r1.status, r1.body.error.code]).toEqual([409, 'MEDIA_IN_USE']);
    expect(r1.body.error.details).toEqual({ mediaId: direct.id, contentIds: [c1.contentId] });
    const r2 = await del(`/${viaRoot.id}`);
    expect(r2.body.error.details.contentIds).toEqual([c2.contentId]);
    expect((await get(`/${direct.id}`)).body.data).toMatchObject({ state: 'active', isUsed: true, usageCount: 1 });
    // A draft does not block; the draft lets go of the item when it is deleted for good.
    expect((await del(`/${draftOnly.id}`)).body.data.state).toBe('deleted');
    expect((await del(`/${draftOnly.id}/permanent`)).status).toBe(200);
    // Unscheduled, the item can go to the bin.
    await server.owner.query(`update app.content_items set status = 'draft' where id = $1`, [c1.contentId]);
    expect((await del(`/${direct.id}`)).body.data.state).toBe('deleted');
    // ... and content using binned media cannot be scheduled again.
    const reschedule = await server.owner.query(`update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = $1`, [c1.contentId]).catch((e) => e);
    expect([reschedule.code, reschedule.detail]).toEqual(['PT409', 'MEDIA_IN_BIN']);

    // Bulk: one result per id, in order; a refused or unknown id spoils nothing.
    const ok = (await upload(api, o.token, ws, png(5, 5, 34))).media;
    const bulk = await post('/bulk-delete', { ids: [ok.id, viaRoot.id, NO_SUCH, direct.id] });
    expect(bulk.status).toBe(200);
    expect(bulk.body.data).toMatchObject({ succeeded: 2, failed: 2 });
    expect(bulk.body.data.results.map((x: any) => [x.id, x.ok, x.status, x.error?.code ?? null])).toEqual([
      [ok.id, true, 200, null], [viaRoot.id, false, 409, 'MEDIA_IN_USE'], [NO_SUCH, false, 404, 'NOT_FOUND'], [direct.id, true, 200, null]]);
    expect(bulk.body.data.results[1].error.details.contentIds).toEqual([c2.contentId]);
    expect(bulk.body.data.results[0].media.state).toBe('deleted');
    expect((await get(`/${ok.id}`)).body.data.state).toBe('deleted');

    const restore = await post('/bulk-restore', { ids: [ok.id, NO_SUCH, viaRoot.id] });
    expect(restore.body.data.results.map((x: any) => x.status)).toEqual([200, 404, 200]);
    expect(restore.body.data.results[2].media.state).toBe('active');

    await del(`/${ok.id}`);
    const forever = await post('/bulk-delete-forever', { ids: [ok.id, viaRoot.id, NO_SUCH] });
    expect(forever.body.data.results.map((x: any) => [x.status, x.error?.code ?? null, x.media])).toEqual([
      [200, null, null], [409, 'MEDIA_NOT_IN_BIN', null], [404, 'NOT_FOUND', null]]);
    expect((await get(`/${ok.id}`)).status).toBe(404);
  });

  it('empties the bin', async () => {
    const w = await api.post('/v1/workspaces', { name: 'Bin' }, { token: o.token });
    const wbase = `/v1/workspaces/${w.body.data.id}/media`;
    const a = (await upload(api, o.token, w.body.data.id, png(3, 3, 40))).media;
    const b = (await upload(api, o.token, w.body.data.id, png(3, 3, 41))).media;
    const keep = (await upload(api, o.token, w.body.data.id, png(3, 3, 42))).media;
    await api.delete(`${wbase}/${a.id}`, { token: o.token });
    await api.delete(`${wbase}/${b.id}`, { token: o.token });
    const r = await api.post(`${wbase}/bin/empty`, undefined, { token: o.token });
    expect(r.body.data.deletedCount).toBe(2);
    expect(r.body.data.ids.sort()).toEqual([a.id, b.id].sort());
    expect((await api.get(`${wbase}?state=all`, { token: o.token })).body.data.map((x: any) => x.id)).toEqual([keep.id]);
    expect((await api.post(`${wbase}/bin/empty`, undefined, { token: o.token })).body.data).toEqual({ deletedCount: 0, ids: [] });
  });
});

describe('bulk move, label and unlabel', () => {
  it('one result per id; whole-request problems (unknown folder or label) refuse it all', async () => {
    const f = (await post('/folders', { name: 'Bulk target' })).body.data;
    const x = (await upload(api, o.token, ws, png(3, 3, 50))).media;
    const y = (await upload(api, o.token, ws, png(3, 3, 51))).media;
    const binned = (await upload(api, o.token, ws, png(3, 3, 52))).media;
    await del(`/${binned.id}`);
    const moved = await post('/bulk-move', { ids: [x.id, binned.id, NO_SUCH, y.id], folderId: f.id });
    expect(moved.body.data.results.map((r: any) => [r.status, r.error?.code ?? null, r.media?.folderId ?? null])).toEqual([
      [200, null, f.id], [409, 'MEDIA_IN_BIN', null], [404, 'NOT_FOUND', null], [200, null, f.id]]);
    expect((await get(`/folders/${f.id}`)).body.data.mediaCount).toBe(2);
    const back = await post('/bulk-move', { ids: [x.id], folderId: null });
    expect(back.body.data.results[0].media.folderId).toBeNull();
    expect((await post('/bulk-move', { ids: [x.id], folderId: NO_SUCH })).status).toBe(404);
    expect((await post('/bulk-move', { ids: [x.id] })).status).toBe(400);

    const l1 = (await post('/labels', { name: 'bulk-1' })).body.data.id;
    const l2 = (await post('/labels', { name: 'bulk-2' })).body.data.id;
    const labeled = await post('/bulk-label', { ids: [x.id, y.id, binned.id], labelIds: [l1, l2] });
    expect(labeled.body.data).toMatchObject({ succeeded: 2, failed: 1 });
    expect(labeled.body.data.results[0].media.labels.map((l: any) => l.name)).toEqual(['bulk-1', 'bulk-2']);
    expect((await post('/bulk-label', { ids: [x.id], labelIds: [l1] })).body.data.results[0].media.labels.length).toBe(2);
    const unlabeled = await post('/bulk-unlabel', { ids: [x.id, NO_SUCH], labelIds: [l1] });
    expect(unlabeled.body.data.results.map((r: any) => r.status)).toEqual([200, 404]);
    expect(unlabeled.body.data.results[0].media.labels.map((l: any) => l.name)).toEqual(['bulk-2']);
    const unknownLabel = await post('/bulk-label', { ids: [x.id], labelIds: [l1, NO_SUCH] });
    expect([unknownLabel.status, unknownLabel.body.error.details.labelIds]).toEqual([404, [NO_SUCH]]);

    for (const body of [{ ids: [] }, { ids: ['x'] }, { ids: [x.id, x.id] }, { ids: Array.from({ length: 101 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`) }, {}]) {
      expect((await post('/bulk-delete', body)).status, JSON.stringify(body).slice(0, 60)).toBe(400);
    }
    const hundred = Array.from({ length: 100 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const many = await post('/bulk-restore', { ids: hundred });
    expect(many.body.data).toMatchObject({ succeeded: 0, failed: 100 });
  });
});

describe('one item', () => {
  it('updates name, alt text, favorite and folder; refuses the rest', async () => {
    const f = (await post('/folders', { name: 'Item folder' })).body.data;
    const { media } = await upload(api, o.token, ws, png(4, 4, 60), { altText: 'first' });
    const r = await patch(`/${media.id}`, { filename: 'Renamed.png', altText: null, isFavorite: true, folderId: f.id });
    expect(r.body.data).toMatchObject({ filename: 'Renamed.png', altText: null, isFavorite: true, folderId: f.id, checksumSha256: media.checksumSha256 });
    expect((await patch(`/${media.id}`, { folderId: null })).body.data).toMatchObject({ folderId: null, isFavorite: true, filename: 'Renamed.png' });
    expect((await patch(`/${media.id}`, { folderId: NO_SUCH })).status).toBe(404);
    for (const body of [{}, { filename: 'a/b.png' }, { filename: '' }, { isFavorite: 'yes' }, { altText: 'x'.repeat(1501) }, { type: 'video' }, { fileSize: 1 }]) {
      expect((await patch(`/${media.id}`, body)).status, JSON.stringify(body).slice(0, 50)).toBe(400);
    }
    expect((await patch(`/${NO_SUCH}`, { isFavorite: true })).status).toBe(404);
    const raw = await server.owner.query(`update app.media_items set file_size = 5 where id = $1`, [media.id]).catch((e) => e);
    expect([raw.code, raw.detail]).toEqual(['PT400', 'IMMUTABLE_FIELD']);
  });

  it('attaches, replaces and detaches labels', async () => {
    const { media } = await upload(api, o.token, ws, png(4, 4, 61));
    const a = (await post('/labels', { name: 'item-a' })).body.data.id;
    const b = (await post('/labels', { name: 'item-b' })).body.data.id;
    const c = (await post('/labels', { name: 'item-c' })).body.data.id;
    expect((await post(`/${media.id}/labels`, { labelIds: [b, a] })).body.data.labels.map((l: any) => l.name)).toEqual(['item-a', 'item-b']);
    expect((await post(`/${media.id}/labels`, { labelIds: [a] })).body.data.labels.length).toBe(2);
    expect((await put(`/${media.id}/labels`, { labelIds: [c] })).body.data.labels.map((l: any) => l.name)).toEqual(['item-c']);
    const detached = await del(`/${media.id}/labels/${c}`);
    expect([detached.status, detached.body.data.labels]).toEqual([200, []]);
    expect((await del(`/${media.id}/labels/${c}`)).status).toBe(200);
    expect((await del(`/${media.id}/labels/${NO_SUCH}`)).status).toBe(404);
    expect((await put(`/${media.id}/labels`, { labelIds: [a, b] })).body.data.labels.length).toBe(2);
    expect((await put(`/${media.id}/labels`, { labelIds: [] })).body.data.labels).toEqual([]);
    expect((await post(`/${media.id}/labels`, { labelIds: [NO_SUCH] })).body.error.details).toEqual({ labelIds: [NO_SUCH] });
    expect((await post(`/${media.id}/labels`, { labelIds: [] })).status).toBe(400);
    expect((await put(`/${media.id}/labels`, {})).status).toBe(400);
  });

  it('keeps a usage history: attached, scheduled, unscheduled, detached; newest first, paged', async () => {
    const { media } = await upload(api, o.token, ws, png(4, 4, 62));
    expect((await get(`/${media.id}/usage-history`)).body).toEqual({ data: [], meta: { nextCursor: null, hasMore: false } });
    const c = await contentUsing(media.id, { status: 'scheduled' });
    await server.owner.query(`update app.content_items set status = 'draft' where id = $1`, [c.contentId]);
    await server.owner.query(`delete from app.content_item_media where content_item_id = $1`, [c.contentId]);
    const all = (await get(`/${media.id}/usage-history`)).body.data;
    expect(all.map((e: any) => e.event)).toEqual(['detached', 'unscheduled', 'scheduled', 'attached']);
    expect(all.every((e: any) => e.contentId === c.contentId && e.rootId === c.rootId && e.via === 'edition')).toBe(true);
    expect(all[2]).toMatchObject({ contentStatus: 'scheduled' });
    expect(all[2].scheduledAt).not.toBeNull();
    const { items, sizes } = await walk(`/${media.id}/usage-history?limit=1`);
    expect(items.map((e) => e.id)).toEqual(all.map((e: any) => e.id));
    expect(sizes).toEqual([1, 1, 1, 1]);
    // A reorder done as delete + insert in one transaction leaves no trace.
    await server.owner.query('begin');
    await server.owner.query(`insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position) values ($1, $2, $3, $4, 0)`,
      [c.contentId, media.id, ws, o.organizationId]);
    await server.owner.query(`delete from app.content_item_media where content_item_id = $1`, [c.contentId]);
    await server.owner.query('commit');
    expect((await get(`/${media.id}/usage-history`)).body.data.length).toBe(4);
    const cursor = (await get(`/${media.id}/usage-history?limit=1`)).body.meta.nextCursor;
    const other = (await upload(api, o.token, ws, png(4, 4, 63))).media;
    const foreign = await get(`/${other.id}/usage-history?cursor=${encodeURIComponent(cursor)}`);
    expect([foreign.status, foreign.body.error.code]).toEqual([400, 'INVALID_CURSOR']);
    expect((await get(`/${NO_SUCH}/usage-history`)).status).toBe(404);
    expect((await get(`/${media.id}/usage-history?limit=101`)).status).toBe(400);
  });
});

describe('roles and isolation', () => {
  it('a viewer reads but cannot change; other workspaces and organizations see nothing', async () => {
    const { media } = await upload(api, o.token, ws, png(4, 4, 70));
    const viewer = await createKey(api, o.token, ws, { role: 'viewer' });
    const v = (method: string, p: string, body?: unknown) => api.request(method, m(p), { token: viewer.key, body });
    expect((await v('GET', `/${media.id}`)).status).toBe(200);
    expect((await v('GET', '')).status).toBe(200);
    expect((await v('GET', `/${media.id}/view-url`)).status).toBe(200);
    expect((await v('GET', '/labels/health')).status).toBe(200);
    for (const [method, p, body] of [
      ['POST', '/folders', { name: 'v' }], ['PATCH', `/${media.id}`, { isFavorite: true }], ['DELETE', `/${media.id}`],
      ['POST', '/bulk-delete', { ids: [media.id] }], ['POST', '/labels', { name: 'v' }], ['POST', '/label-groups', { name: 'v' }],
      ['POST', '/bin/empty'], ['POST', `/${media.id}/restore`],
    ] as const) {
      const r = await v(method, p, body);
      expect([r.status, r.body.error.code], `${method} ${p}`).toEqual([403, 'ROLE_REQUIRED']);
    }
    // Another workspace of the same organization.
    const w2 = (await api.post('/v1/workspaces', { name: 'Elsewhere' }, { token: o.token })).body.data.id;
    const there = (p: string) => `/v1/workspaces/${w2}/media${p}`;
    expect((await api.get(there(`/${media.id}`), { token: o.token })).status).toBe(404);
    const bulk = await api.post(there('/bulk-delete'), { ids: [media.id] }, { token: o.token });
    expect(bulk.body.data.results[0]).toMatchObject({ ok: false, status: 404 });
    expect((await api.get(there(''), { token: o.token })).body.data).toEqual([]);
    const folderHere = (await post('/folders', { name: 'Here only' })).body.data.id;
    expect((await api.post(there('/folders'), { name: 'sub', parentId: folderHere }, { token: o.token })).status).toBe(404);
    expect((await api.patch(there(`/${media.id}`), { isFavorite: true }, { token: o.token })).status).toBe(404);
    // Another organization.
    const stranger = await signup(api);
    const r = await api.get(m(`/${media.id}`), { token: stranger.token });
    expect([r.status, r.body.error.code]).toEqual([403, 'WORKSPACE_FORBIDDEN']);
    const theirs = await api.get(`/v1/workspaces/${stranger.workspaceId}/media/${media.id}`, { token: stranger.token });
    expect(theirs.status).toBe(404);
    expect((await api.get(m(''), {})).status).toBe(401);
  });

  it('bulk-delete is an expensive call, the rest of the writes are write calls', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-media-rate-'));
    const s = await startTestServer('media_rate', { DATA_DIR: dir, RATE_LIMIT_EXPENSIVE: 2 });
    try {
      const sapi = client(s);
      const so = await signup(sapi);
      const b = `/v1/workspaces/${so.workspaceId}/media`;
      for (let i = 0; i < 2; i++) expect((await sapi.post(`${b}/bulk-delete`, { ids: [NO_SUCH] }, { token: so.token })).status).toBe(200);
      const limited = await sapi.post(`${b}/bulk-delete`, { ids: [NO_SUCH] }, { token: so.token });
      expect([limited.status, limited.body.error.code]).toEqual([429, 'RATE_LIMITED']);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await sapi.post(`${b}/bulk-restore`, { ids: [NO_SUCH] }, { token: so.token })).status).toBe(200);
      expect((await sapi.post(`${b}/folders`, { name: 'still fine' }, { token: so.token })).status).toBe(201);
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
