// Hashtag groups, tags, pillars and formats over HTTP: CRUD, unique names
// (case-insensitive), normalization, roles, bounds and workspace isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('taxonomy');
  api = client(server);
});
afterAll(async () => server?.close());

const KINDS = ['tags', 'pillars', 'formats'] as const;

describe.each(KINDS)('%s', (kind) => {
  it('creates, lists by name, updates only the fields sent, and deletes', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/${kind}`;
    const b = await api.post(base, { name: '  Beta ', color: '#AABBCC' }, { token: owner.token });
    expect(b.status).toBe(201);
    expect(b.body.data).toMatchObject({ name: 'Beta', color: '#aabbcc' });
    const a = await api.post(base, { name: 'alpha' }, { token: owner.token });
    expect(a.status).toBe(201);
    expect(a.body.data.color).toBeNull();
    const list = await api.get(base, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body.meta).toBeNull();
    expect(list.body.data.map((t: any) => t.name)).toEqual(['alpha', 'Beta']);

    const renamed = await api.patch(`${base}/${b.body.data.id}`, { name: 'Gamma' }, { token: owner.token });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: b.body.data.id, name: 'Gamma', color: '#aabbcc' });
    const uncolored = await api.patch(`${base}/${b.body.data.id}`, { color: null }, { token: owner.token });
    expect(uncolored.body.data).toMatchObject({ name: 'Gamma', color: null });

    const del = await api.delete(`${base}/${a.body.data.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: a.body.data.id, deleted: true });
    const again = await api.delete(`${base}/${a.body.data.id}`, { token: owner.token });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
    expect((await api.patch(`${base}/${a.body.data.id}`, { name: 'x' }, { token: owner.token })).status).toBe(404);
    expect((await api.get(base, { token: owner.token })).body.data.map((t: any) => t.name)).toEqual(['Gamma']);
  });

  it('keeps names unique per workspace, case-insensitively and trimmed (409 NAME_TAKEN)', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/${kind}`;
    expect((await api.post(base, { name: 'Summer' }, { token: owner.token })).status).toBe(201);
    const dup = await api.post(base, { name: ' sUMMER ' }, { token: owner.token });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('NAME_TAKEN');
    expect(dup.body.error.details).toMatchObject({ field: 'name', name: 'sUMMER' });
    const other = await api.post(base, { name: 'Winter' }, { token: owner.token });
    const clash = await api.patch(`${base}/${other.body.data.id}`, { name: 'summer' }, { token: owner.token });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('NAME_TAKEN');
    // Renaming to its own name in another case is fine.
    expect((await api.patch(`${base}/${other.body.data.id}`, { name: 'WINTER' }, { token: owner.token })).status).toBe(200);
    // The same name in another workspace is another name.
    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    expect((await api.post(`/v1/workspaces/${second.body.data.id}/${kind}`, { name: 'summer' }, { token: owner.token })).status).toBe(201);
  });

  it('validates bodies: bounds, colors, unknown and missing properties', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/${kind}`;
    const cases: [unknown, string][] = [
      [{}, 'body.name'],
      [{ name: '' }, 'body.name'],
      [{ name: '   ' }, 'body.name'],
      [{ name: 'x'.repeat(101) }, 'body.name'],
      [{ name: 'ok', color: 'red' }, 'body.color'],
      [{ name: 'ok', color: '#12345' }, 'body.color'],
      [{ name: 'ok', extra: 1 }, 'body.extra'],
      [{ name: 42 }, 'body.name'],
      [{ name: 'nul\u0000byte' }, 'body.name'],
    ];
    for (const [body, field] of cases) {
      const r = await api.post(base, body, { token: owner.token });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_FAILED');
      expect(r.body.error.details.fields.map((f: any) => f.field)).toContain(field);
    }
    expect((await api.post(base, { name: 'x'.repeat(100) }, { token: owner.token })).status).toBe(201);
    const t = await api.post(base, { name: 'Fine' }, { token: owner.token });
    const empty = await api.patch(`${base}/${t.body.data.id}`, {}, { token: owner.token });
    expect(empty.status).toBe(400);
    expect((await api.patch(`${base}/not-a-uuid`, { name: 'x' }, { token: owner.token })).status).toBe(400);
    expect((await api.delete(`${base}/not-a-uuid`, { token: owner.token })).status).toBe(400);
  });

  it('viewers read, editors write; other workspaces see nothing', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/${kind}`;
    const t = await api.post(base, { name: 'Owned' }, { token: owner.token });
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    expect((await api.get(base, { token: viewer.key })).body.data).toHaveLength(1);
    const refused = await api.post(base, { name: 'Nope' }, { token: viewer.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('ROLE_REQUIRED');
    expect((await api.patch(`${base}/${t.body.data.id}`, { name: 'Nope' }, { token: viewer.key })).status).toBe(403);
    expect((await api.delete(`${base}/${t.body.data.id}`, { token: viewer.key })).status).toBe(403);
    const made = await api.post(base, { name: 'By editor' }, { token: editor.key });
    expect(made.status).toBe(201);
    expect((await api.patch(`${base}/${made.body.data.id}`, { color: '#000000' }, { token: editor.key })).status).toBe(200);
    expect((await api.delete(`${base}/${made.body.data.id}`, { token: editor.key })).status).toBe(200);

    // Another workspace of the same organization: the id is not there.
    const second = await api.post('/v1/workspaces', { name: 'Elsewhere' }, { token: owner.token });
    const there = `/v1/workspaces/${second.body.data.id}/${kind}`;
    expect((await api.get(there, { token: owner.token })).body.data).toEqual([]);
    expect((await api.patch(`${there}/${t.body.data.id}`, { name: 'Stolen' }, { token: owner.token })).status).toBe(404);
    expect((await api.delete(`${there}/${t.body.data.id}`, { token: owner.token })).status).toBe(404);
    // Another organization: the workspace itself is refused.
    const stranger = await signup(api);
    const foreign = await api.get(base, { token: stranger.token });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('WORKSPACE_FORBIDDEN');
    const row = await server.owner.query(`select name from app.${kind} where id = $1`, [t.body.data.id]);
    expect(row.rows[0].name).toBe('Owned');
  });
});

describe('hashtag groups', () => {
  it('stores hashtags without #, deduplicated case-insensitively, in order', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/hashtag-groups`;
    const g = await api.post(base, { name: 'Summer launch', hashtags: ['#summer', 'Launch2026', 'SUMMER', '#behind_the_scenes', 'café', '#launch2026'] }, { token: owner.token });
    expect(g.status).toBe(201);
    expect(g.body.data).toMatchObject({ name: 'Summer launch', hashtags: ['summer', 'Launch2026', 'behind_the_scenes', 'café'] });
    const list = await api.get(base, { token: owner.token });
    expect(list.body.data).toEqual([g.body.data]);
    const upd = await api.patch(`${base}/${g.body.data.id}`, { hashtags: ['#sale', 'sale', '#Sale2'] }, { token: owner.token });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: 'Summer launch', hashtags: ['sale', 'Sale2'] });
    const renamed = await api.patch(`${base}/${g.body.data.id}`, { name: 'Sales' }, { token: owner.token });
    expect(renamed.body.data).toMatchObject({ name: 'Sales', hashtags: ['sale', 'Sale2'] });
    const empty = await api.patch(`${base}/${g.body.data.id}`, { hashtags: [] }, { token: owner.token });
    expect(empty.body.data.hashtags).toEqual([]);
    expect((await api.delete(`${base}/${g.body.data.id}`, { token: owner.token })).body.data).toEqual({ id: g.body.data.id, deleted: true });
    expect((await api.delete(`${base}/${g.body.data.id}`, { token: owner.token })).status).toBe(404);
  });

  it('refuses hashtags with spaces, punctuation, inner #, or nothing; and more than 100', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/hashtag-groups`;
    for (const bad of ['two words', 'a#b', '##double', '#', '', 'dash-ed', 'emoji🙂', 'x'.repeat(101), 'tab\there']) {
      const r = await api.post(base, { name: `G ${Math.random()}`, hashtags: ['fine', bad] }, { token: owner.token });
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_FAILED');
      expect(r.body.error.details.fields[0].field).toBe('body.hashtags.1');
    }
    const many = await api.post(base, { name: 'Many', hashtags: Array.from({ length: 101 }, (_, i) => `t${i}`) }, { token: owner.token });
    expect(many.status).toBe(400);
    expect((await api.post(base, { name: 'Hundred', hashtags: Array.from({ length: 100 }, (_, i) => `t${i}`) }, { token: owner.token })).status).toBe(201);
    expect((await api.post(base, { name: 'No list' }, { token: owner.token })).status).toBe(400);
    expect((await api.post(base, { name: 'Not strings', hashtags: [1] }, { token: owner.token })).status).toBe(400);
    expect((await api.post(base, { name: 'nul\u0000', hashtags: [] }, { token: owner.token })).status).toBe(400);
    expect((await api.post(base, { name: 'Nul tag', hashtags: ['a\u0000b'] }, { token: owner.token })).status).toBe(400);
  });

  it('the database refuses bad hashtags whoever writes (400 INVALID_HASHTAG)', async () => {
    const owner = await signup(api);
    const err = await server.owner
      .query(`insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags) values ($1, $2, 'psql', $3)`, [
        owner.organizationId,
        owner.workspaceId,
        ['ok', 'not ok'],
      ])
      .catch((e) => e);
    expect(err.code).toBe('PT400');
    expect(err.detail).toBe('INVALID_HASHTAG');
    const ok = await server.owner.query(
      `insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags) values ($1, $2, ' psql ', $3) returning name, hashtags`,
      [owner.organizationId, owner.workspaceId, ['#A', 'a', 'b']],
    );
    expect(ok.rows[0]).toEqual({ name: 'psql', hashtags: ['A', 'b'] });
  });

  it('names are unique case-insensitively; viewers cannot write', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/hashtag-groups`;
    const g = await api.post(base, { name: 'Brand', hashtags: ['acme'] }, { token: owner.token });
    const dup = await api.post(base, { name: 'BRAND', hashtags: [] }, { token: owner.token });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('NAME_TAKEN');
    const h = await api.post(base, { name: 'Other', hashtags: [] }, { token: owner.token });
    const clash = await api.patch(`${base}/${h.body.data.id}`, { name: 'brand ' }, { token: owner.token });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('NAME_TAKEN');
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    expect((await api.get(base, { token: viewer.key })).body.data).toHaveLength(2);
    expect((await api.post(base, { name: 'V', hashtags: [] }, { token: viewer.key })).status).toBe(403);
    expect((await api.patch(`${base}/${g.body.data.id}`, { name: 'V' }, { token: viewer.key })).status).toBe(403);
    expect((await api.delete(`${base}/${g.body.data.id}`, { token: viewer.key })).status).toBe(403);
  });

  it('replays a create with the same Idempotency-Key', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/hashtag-groups`;
    const body = { name: 'Once', hashtags: ['one'] };
    const first = await api.post(base, body, { token: owner.token, headers: { 'idempotency-key': 'hg-1' } });
    const replay = await api.post(base, body, { token: owner.token, headers: { 'idempotency-key': 'hg-1' } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
  });
});
