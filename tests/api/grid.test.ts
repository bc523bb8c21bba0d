// Grid planner over HTTP: every route (get the grid with its cursor, add,
// get, update and delete a placeholder, move, swap media, cover, promote),
// the exchange of publish times with the publish jobs read from pg-boss,
// published tiles fixed, roles, and concurrent moves from real parallel
// requests that never leave duplicate or lost positions.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  // Enough connections for the concurrent moves to really run side by side.
  server = await startTestServer('grid', { DB_POOL_SIZE: 10 });
  api = client(server);
});
afterAll(async () => server?.close());

const inHours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();
/** A timestamp of an answer (the database writes +00:00) in toISOString form. */
const iso = (t: string | null) => (t === null ? null : new Date(t).toISOString());

interface Ws {
  id: string;
  orgId: string;
  token: string;
  grid: string;
  integrationId: string;
  media(type?: 'image' | 'video'): Promise<string>;
  schedule(hours: number, mediaId: string): Promise<string>;
}

async function workspace(platform = 'instagram'): Promise<Ws> {
  const o = await signup(api);
  const g = await api.post(`/v1/workspaces/${o.workspaceId}/integrations`, { connector: 'sandbox', platform, name: `${platform} feed` }, { token: o.token });
  expect(g.status, JSON.stringify(g.body)).toBe(201);
  const integrationId = g.body.data.id as string;
  const ws: Ws = {
    id: o.workspaceId,
    orgId: o.organizationId,
    token: o.token,
    integrationId,
    grid: `/v1/workspaces/${o.workspaceId}/integrations/${integrationId}/grid`,
    media: async (type = 'image') =>
      (
        await server.owner.query(
          `insert into app.media_items (organization_id, workspace_id, type, filename, content_type, file_size, storage_key, duration_ms)
           values ($1, $2, $3, $4, $5, 1000, $6, $7) returning id`,
          [o.organizationId, o.workspaceId, type, type === 'video' ? 'clip.mp4' : 'photo.png', type === 'video' ? 'video/mp4' : 'image/png', `k/${Math.random()}`, type === 'video' ? 10_000 : null],
        )
      ).rows[0].id,
    schedule: async (hours, mediaId) => {
      const r = await api.post(
        `/v1/workspaces/${o.workspaceId}/content`,
        { intent: 'schedule', scheduledAt: inHours(hours), caption: `in ${hours}h`, mediaIds: [mediaId], channels: [{ integrationId }] },
        { token: o.token },
      );
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.data.editions[0].id as string;
    },
  };
  return ws;
}

async function grid(ws: Ws, token = ws.token) {
  const r = await api.get(`${ws.grid}?limit=200`, { token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as any[];
}

async function scheduledAt(contentId: string): Promise<string> {
  return (await server.owner.query('select scheduled_at from app.content_items where id = $1', [contentId])).rows[0].scheduled_at.toISOString();
}

async function liveJobStart(contentId: string): Promise<string[]> {
  const r = await server.owner.query(
    `select start_after from pgboss.job where name = 'content.publish' and singleton_key = $1 and state in ('created', 'retry')`,
    [contentId],
  );
  return r.rows.map((x: any) => x.start_after.toISOString());
}

describe('grid planner', () => {
  it('shows the feed: scheduled in publish order, then drafts, then placeholders; cursor pages; a tile; signed covers', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const s30 = await ws.schedule(30, img);
    const s10 = await ws.schedule(10, img);
    const draft = await api.post(`/v1/workspaces/${ws.id}/content`, { caption: 'draft', channels: [{ integrationId: ws.integrationId }] }, { token: ws.token });
    expect(draft.status).toBe(201);
    const p = await api.post(`${ws.grid}/tiles`, { mediaIds: [img], note: 'reel idea' }, { token: ws.token, headers: { 'idempotency-key': 'placeholder-1' } });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    expect(p.body.data).toMatchObject({ kind: 'placeholder', contentId: null, position: 3, note: 'reel idea', mediaIds: [img], mediaCount: 1 });
    expect(p.body.data.cover).toMatchObject({ mediaId: img, type: 'image', frameAtMs: null });
    expect(p.body.data.cover.url).toMatch(/^http/);
    expect(p.body.data.cover).not.toHaveProperty('storageKey');

    const tiles = await grid(ws);
    expect(tiles.map((t) => [t.kind, t.contentId, t.position])).toEqual([
      ['scheduled', s10, 0],
      ['scheduled', s30, 1],
      ['draft', draft.body.data.editions[0].id, 2],
      ['placeholder', null, 3],
    ]);

    const first = await api.get(`${ws.grid}?limit=3`, { token: ws.token });
    expect(first.body.meta).toMatchObject({ limit: 3, total: 4, counts: { published: 0, scheduled: 2, draft: 1, placeholder: 1 } });
    expect(first.body.data).toHaveLength(3);
    const second = await api.get(`${ws.grid}?limit=3&cursor=${first.body.meta.nextCursor}`, { token: ws.token });
    expect(second.body.data.map((t: any) => t.id)).toEqual([p.body.data.id]);
    expect(second.body.meta.nextCursor).toBeNull();
    const bad = await api.get(`${ws.grid}?cursor=nonsense`, { token: ws.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect((await api.get(`${ws.grid}?limit=500`, { token: ws.token })).status).toBe(400);

    const one = await api.get(`${ws.grid}/tiles/${tiles[1].id}`, { token: ws.token });
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: tiles[1].id, kind: 'scheduled', position: 1, contentId: s30 });
    const missing = await api.get(`${ws.grid}/tiles/${crypto.randomUUID()}`, { token: ws.token });
    expect(missing.status).toBe(404);
  });

  it('moving a scheduled tile exchanges publish times, lists them, and the publish jobs follow', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const a = await ws.schedule(10, img);
    const b = await ws.schedule(20, img);
    const c = await ws.schedule(30, img);
    const [ta, tb, tc] = [await scheduledAt(a), await scheduledAt(b), await scheduledAt(c)];
    const tiles = await grid(ws);

    const r = await api.post(`${ws.grid}/tiles/${tiles[2].id}/move`, { position: 0 }, { token: ws.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.tile).toMatchObject({ id: tiles[2].id, position: 0, contentId: c });
    expect(iso(r.body.data.tile.scheduledAt)).toBe(ta);
    const rescheduled = r.body.data.rescheduled.map((x: any) => ({ ...x, previousScheduledAt: iso(x.previousScheduledAt), scheduledAt: iso(x.scheduledAt) }));
    expect(rescheduled).toEqual([
      { contentId: c, tileId: tiles[2].id, previousScheduledAt: tc, scheduledAt: ta },
      { contentId: a, tileId: tiles[0].id, previousScheduledAt: ta, scheduledAt: tb },
      { contentId: b, tileId: tiles[1].id, previousScheduledAt: tb, scheduledAt: tc },
    ]);
    expect([await scheduledAt(c), await scheduledAt(a), await scheduledAt(b)]).toEqual([ta, tb, tc]);
    expect(await liveJobStart(c)).toEqual([ta]);
    expect(await liveJobStart(a)).toEqual([tb]);
    expect(await liveJobStart(b)).toEqual([tc]);
    expect((await grid(ws)).map((t) => t.contentId)).toEqual([c, a, b]);

    // Each retimed edition has a version of the move (after the one of its creation).
    const versions = await api.get(`/v1/workspaces/${ws.id}/content/${a}/versions`, { token: ws.token });
    expect(versions.body.data).toHaveLength(2);
    // The content list agrees.
    const content = await api.get(`/v1/workspaces/${ws.id}/content/${a}`, { token: ws.token });
    expect(iso(content.body.data.scheduledAt)).toBe(tb);

    const out = await api.post(`${ws.grid}/tiles/${tiles[0].id}/move`, { position: 3 }, { token: ws.token });
    expect(out.status).toBe(400);
    expect(out.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { min: 0, max: 2 } });
  });

  it('published tiles stay on top and cannot move; nothing moves above them', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const sent = await ws.schedule(10, img);
    const later = await ws.schedule(20, img);
    await server.owner.query(`update app.content_items set status = 'sent', sent_at = now(), permalink = 'https://example.test/p/1' where id = $1`, [sent]);
    const tiles = await grid(ws);
    expect(tiles.map((t) => [t.kind, t.contentId])).toEqual([['published', sent], ['scheduled', later]]);
    expect(tiles[0]).toMatchObject({ permalink: 'https://example.test/p/1', status: 'sent' });
    expect(tiles[0].publishedAt).toBeTruthy();

    const move = await api.post(`${ws.grid}/tiles/${tiles[0].id}/move`, { position: 1 }, { token: ws.token });
    expect(move.status).toBe(400);
    expect(move.body.error.code).toBe('GRID_TILE_PUBLISHED');
    const above = await api.post(`${ws.grid}/tiles/${tiles[1].id}/move`, { position: 0 }, { token: ws.token });
    expect(above.status).toBe(400);
    expect(above.body.error.code).toBe('VALIDATION_FAILED');
    const cover = await api.put(`${ws.grid}/tiles/${tiles[0].id}/cover`, { mediaId: img }, { token: ws.token });
    expect(cover.body.error.code).toBe('GRID_TILE_PUBLISHED');
  });

  it('updates a placeholder, swaps media with an edition (version recorded), sets a video cover, deletes', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const video = await ws.media('video');
    const edition = await ws.schedule(10, img);
    const p = (await api.post(`${ws.grid}/tiles`, { mediaIds: [video] }, { token: ws.token })).body.data;

    const upd = await api.patch(`${ws.grid}/tiles/${p.id}`, { note: 'teaser', mediaIds: [video, img] }, { token: ws.token });
    expect(upd.status, JSON.stringify(upd.body)).toBe(200);
    expect(upd.body.data).toMatchObject({ note: 'teaser', mediaIds: [video, img], mediaCount: 2 });
    const dup = await api.patch(`${ws.grid}/tiles/${p.id}`, { mediaIds: [img, img] }, { token: ws.token });
    expect(dup.status).toBe(400);
    expect(dup.body.error.details.fields[0]).toMatchObject({ field: 'mediaIds', code: 'duplicate_media' });

    const cover = await api.put(`${ws.grid}/tiles/${p.id}/cover`, { mediaId: video, frameAtMs: 2500 }, { token: ws.token });
    expect(cover.status, JSON.stringify(cover.body)).toBe(200);
    expect(cover.body.data.cover).toMatchObject({ mediaId: video, type: 'video', frameAtMs: 2500 });
    const late = await api.put(`${ws.grid}/tiles/${p.id}/cover`, { mediaId: video, frameAtMs: 20_000 }, { token: ws.token });
    expect(late.body.error.details.fields[0].code).toBe('beyond_duration');
    const still = await api.put(`${ws.grid}/tiles/${p.id}/cover`, { mediaId: img, frameAtMs: 1 }, { token: ws.token });
    expect(still.body.error.details.fields[0].code).toBe('not_video');

    const editionTile = (await grid(ws)).find((t) => t.contentId === edition)!;
    const swap = await api.post(`${ws.grid}/tiles/${p.id}/swap-media`, { otherTileId: editionTile.id }, { token: ws.token });
    expect(swap.status, JSON.stringify(swap.body)).toBe(200);
    expect(swap.body.data.tiles.map((t: any) => [t.id, t.mediaIds])).toEqual([[p.id, [img]], [editionTile.id, [video, img]]]);
    // The cover went with its media.
    expect(swap.body.data.tiles[1].cover).toMatchObject({ mediaId: video, frameAtMs: 2500 });
    const versions = await api.get(`/v1/workspaces/${ws.id}/content/${edition}/versions`, { token: ws.token });
    expect(versions.status).toBe(200);
    expect(versions.body.data.length).toBeGreaterThanOrEqual(2);
    const self = await api.post(`${ws.grid}/tiles/${p.id}/swap-media`, { otherTileId: p.id }, { token: ws.token });
    expect(self.status).toBe(400);

    const notPlaceholder = await api.delete(`${ws.grid}/tiles/${editionTile.id}`, { token: ws.token });
    expect(notPlaceholder.body.error.code).toBe('GRID_TILE_NOT_PLACEHOLDER');
    const del = await api.delete(`${ws.grid}/tiles/${p.id}`, { token: ws.token });
    expect(del.status).toBe(204);
    expect((await grid(ws)).map((t) => t.id)).toEqual([editionTile.id]);
  });

  it('promotes a placeholder to a scheduled post, validated like any schedule; the placeholder becomes its tile', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const early = await ws.schedule(5, img);
    const late = await ws.schedule(50, img);
    const p = (await api.post(`${ws.grid}/tiles`, { mediaIds: [img], note: 'from the grid' }, { token: ws.token })).body.data;
    const empty = (await api.post(`${ws.grid}/tiles`, { mediaIds: [img] }, { token: ws.token })).body.data;

    const past = await api.post(`${ws.grid}/tiles/${p.id}/promote`, { scheduledAt: inHours(-1) }, { token: ws.token });
    expect(past.status).toBe(400);
    expect(past.body.error.details.fields.map((f: any) => f.code)).toContain('in_past');

    const at = inHours(20);
    const r = await api.post(`${ws.grid}/tiles/${p.id}/promote`, { scheduledAt: at }, { token: ws.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.data.tile).toMatchObject({ id: p.id, kind: 'scheduled', status: 'scheduled', position: 1, mediaIds: [img] });
    const contentId = r.body.data.tile.contentId;
    expect(r.body.data.content.editions[0].id).toBe(contentId);
    expect(await liveJobStart(contentId)).toHaveLength(1);
    const detail = await api.get(`/v1/workspaces/${ws.id}/content/${contentId}`, { token: ws.token });
    expect(detail.body.data).toMatchObject({ status: 'scheduled', caption: 'from the grid' });
    expect((await grid(ws)).map((t) => t.contentId)).toEqual([early, contentId, late, null]);

    const again = await api.post(`${ws.grid}/tiles/${p.id}/promote`, { scheduledAt: at }, { token: ws.token });
    expect(again.body.error.code).toBe('GRID_TILE_NOT_PLACEHOLDER');
    // Instagram needs a caption or media; a placeholder always has media, and the platform's rules still apply:
    const settings = await api.post(`${ws.grid}/tiles/${empty.id}/promote`, { scheduledAt: at, settings: { nope: 1 } }, { token: ws.token });
    expect(settings.status).toBe(400);
    expect(settings.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('viewers read, editors change; other workspaces and non-feed platforms are refused', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const p = (await api.post(`${ws.grid}/tiles`, { mediaIds: [img] }, { token: ws.token })).body.data;
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    expect((await api.get(ws.grid, { token: viewer.key })).status).toBe(200);
    const write = await api.patch(`${ws.grid}/tiles/${p.id}`, { note: 'x' }, { token: viewer.key });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('ROLE_REQUIRED');
    const add = await api.post(`${ws.grid}/tiles`, { mediaIds: [img] }, { token: viewer.key });
    expect(add.status).toBe(403);

    const other = await workspace();
    const foreign = await api.get(`/v1/workspaces/${other.id}/integrations/${ws.integrationId}/grid`, { token: other.token });
    expect(foreign.status).toBe(404);

    const li = await workspace('linkedin');
    const unsupported = await api.get(li.grid, { token: li.token });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.code).toBe('GRID_NOT_SUPPORTED');
  });

  it('concurrent moves from parallel requests never give duplicate or lost positions, and keep publish order', async () => {
    const ws = await workspace();
    const img = await ws.media();
    for (let h = 1; h <= 6; h++) await ws.schedule(h * 10, img);
    for (let i = 0; i < 6; i++) await api.post(`${ws.grid}/tiles`, { mediaIds: [img] }, { token: ws.token });
    const before = await grid(ws);
    const times: string[] = [];
    for (const t of before.filter((x) => x.contentId)) times.push(await scheduledAt(t.contentId));
    times.sort();

    // Two moves at once to the same place, then a burst of 12.
    const [m1, m2] = await Promise.all([
      api.post(`${ws.grid}/tiles/${before[11].id}/move`, { position: 2 }, { token: ws.token }),
      api.post(`${ws.grid}/tiles/${before[10].id}/move`, { position: 2 }, { token: ws.token }),
    ]);
    expect([m1.status, m2.status]).toEqual([200, 200]);
    const burst = await Promise.all(
      before.map((t, i) => api.post(`${ws.grid}/tiles/${t.id}/move`, { position: (i * 7) % 12 }, { token: ws.token })),
    );
    expect(burst.map((r) => r.status)).toEqual(before.map(() => 200));

    const after = await grid(ws);
    expect(after).toHaveLength(12);
    expect(new Set(after.map((t) => t.id))).toEqual(new Set(before.map((t) => t.id)));
    expect(after.map((t) => t.position)).toEqual([...Array(12).keys()]);
    const keys = await server.owner.query('select position_key from app.grid_tiles where integration_id = $1', [ws.integrationId]);
    expect(new Set(keys.rows.map((k: any) => k.position_key)).size).toBe(12);
    // Publish order still equals feed order, with the same set of times.
    const feedTimes = after.filter((t) => t.kind === 'scheduled').map((t) => iso(t.scheduledAt));
    expect(feedTimes).toEqual([...feedTimes].sort());
    expect(feedTimes).toEqual(times);
  });
  it('two connections moving at once: the second waits for the first grid lock, then places on fresh keys', async () => {
    const ws = await workspace();
    const img = await ws.media();
    await ws.schedule(10, img);
    await ws.schedule(20, img);
    for (let i = 0; i < 3; i++) await api.post(`${ws.grid}/tiles`, { mediaIds: [img] }, { token: ws.token });
    const before = await grid(ws);
    const [a, b] = [before[3].id, before[4].id];
    const session = (await server.owner.query('select s.id, s.user_id from app.sessions s join app.users u on u.id = s.user_id where u.organization_id = $1', [ws.orgId])).rows[0];
    const connect = async () => {
      const c = new pg.Client({ connectionString: server.db.ownerUrl });
      await c.connect();
      await c.query('begin');
      // The context server/http/pipeline.ts (setContext) sets for the owner's session.
      await c.query(
        `select set_config('role', 'pressroom_request', true), set_config('pressroom.actor_kind', 'user', true),
                set_config('pressroom.user_id', $1, true), set_config('pressroom.session_id', $2, true),
                set_config('pressroom.api_key_id', '', true), set_config('pressroom.organization_id', $3, true),
                set_config('pressroom.workspace_id', $4, true), set_config('pressroom.workspace_role', 'manager', true)`,
        [session.user_id, session.id, ws.orgId, ws.id],
      );
      return c;
    };
    const c1 = await connect();
    const c2 = await connect();
    try {
      await c1.query('select api.move_grid_tile($1, $2, 1)', [ws.integrationId, a]);
      const pid2 = (await c2.query('select pg_backend_pid() as pid')).rows[0].pid;
      const second = c2.query('select api.move_grid_tile($1, $2, 1) as r', [ws.integrationId, b]);
      let waiting = '';
      for (let i = 0; i < 100 && waiting !== 'Lock'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        waiting = (await server.owner.query('select wait_event_type from pg_stat_activity where pid = $1', [pid2])).rows[0]?.wait_event_type ?? '';
      }
      expect(waiting, 'the second move waits on the first one\'s lock').toBe('Lock');
      await c1.query('commit');
      const r = (await second).rows[0].r;
      await c2.query('commit');
      expect(r.tile.position).toBe(1);
    } finally {
      await c1.end();
      await c2.end();
    }
    const after = await grid(ws);
    expect(after.map((t) => t.id)).toEqual([before[0].id, b, a, before[1].id, before[2].id]);
    const keys = await server.owner.query('select count(distinct position_key)::int as n, count(*)::int as total from app.grid_tiles where integration_id = $1', [ws.integrationId]);
    expect(keys.rows[0]).toEqual({ n: 5, total: 5 });
  });
  it('content created on several feed channels in opposite orders at once never deadlocks (one grid lock per workspace)', async () => {
    const ws = await workspace();
    const img = await ws.media();
    const other = await api.post(`/v1/workspaces/${ws.id}/integrations`, { connector: 'sandbox', platform: 'facebook', name: 'facebook feed' }, { token: ws.token });
    const fb = other.body.data.id as string;
    const create = (channels: string[], i: number) =>
      api.post(
        `/v1/workspaces/${ws.id}/content`,
        { intent: 'schedule', scheduledAt: inHours(1 + i), caption: `post ${i}`, mediaIds: [img], channels: channels.map((integrationId) => ({ integrationId })) },
        { token: ws.token },
      );
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => create(i % 2 ? [ws.integrationId, fb] : [fb, ws.integrationId], i)));
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 201));
    // No deadlock was detected (the pool's transactions retry one, so 201s alone would not show it);
    // the backends flush their statistics within a second of going idle.
    await new Promise((r) => setTimeout(r, 1500));
    const deadlocks = await server.owner.query('select deadlocks::int as n from pg_stat_database where datname = current_database()');
    expect(deadlocks.rows[0].n).toBe(0);
    for (const g of [ws.integrationId, fb]) {
      const tiles = await api.get(`/v1/workspaces/${ws.id}/integrations/${g}/grid?limit=200`, { token: ws.token });
      const times = tiles.body.data.map((t: any) => iso(t.scheduledAt));
      expect(times).toHaveLength(16);
      expect(times).toEqual([...times].sort());
    }
  });
});
