// Campaigns, phases and the campaign content page over HTTP. Content rows
// are inserted as the superuser (the content routes are another area).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('campaigns');
  api = client(server);
});
afterAll(async () => server?.close());

type Owner = Awaited<ReturnType<typeof signup>>;

async function campaign(owner: Owner, body: Record<string, unknown>) {
  const r = await api.post(`/v1/workspaces/${owner.workspaceId}/campaigns`, body, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
}

/** A content root (optionally in a campaign and phase) with one edition per given channel, as the superuser. */
async function insertContent(
  owner: Owner,
  opts: { campaignId?: string | null; phaseId?: string | null; caption?: string; deleted?: boolean },
  editions: { integrationId: string; status?: string; scheduledAt?: string | null; intendedAt?: string | null; createdAt?: string; caption?: string | null; deleted?: boolean }[],
) {
  const c = server.owner;
  await c.query('begin');
  try {
    // Fixture rows skip the content area's own triggers (state machine, jobs, versions);
    // the campaign consistency rules are exercised separately below.
    await c.query('set local session_replication_role = replica');
    const root = await c.query(
      `insert into app.content_roots (organization_id, workspace_id, caption, campaign_id, phase_id, deleted_at) values ($1, $2, $3, $4, $5, $6) returning id`,
      [owner.organizationId, owner.workspaceId, opts.caption ?? 'root caption', opts.campaignId ?? null, opts.phaseId ?? null, opts.deleted ? new Date().toISOString() : null],
    );
    const ids: string[] = [];
    for (const e of editions) {
      const r = await c.query(
        `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at, intended_publish_at, created_at, caption, deleted_at)
         values ($1, $2, $3, $4, $5, $6, $7, coalesce($8::timestamptz, now()), $9, $10) returning id`,
        [
          owner.organizationId,
          owner.workspaceId,
          root.rows[0].id,
          e.integrationId,
          e.status ?? 'draft',
          e.scheduledAt ?? null,
          e.intendedAt ?? null,
          e.createdAt ?? null,
          e.caption ?? null,
          e.deleted ? new Date().toISOString() : null,
        ],
      );
      ids.push(r.rows[0].id);
    }
    await c.query('commit');
    return { rootId: root.rows[0].id as string, ids };
  } catch (e) {
    await c.query('rollback');
    throw e;
  }
}

describe('campaigns', () => {
  it('creates with phases, gets, lists with search and includePhases, updates and deletes', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns`;
    const c = await campaign(owner, {
      name: '  Summer launch ',
      description: 'July',
      color: '#FF7A00',
      startsOn: '2026-06-01',
      endsOn: '2026-07-31',
      phases: [{ name: 'Teaser', endsOn: '2026-06-20' }, { name: 'Launch week', startsOn: '2026-06-21', endsOn: '2026-06-28', color: '#00AA00' }],
    });
    expect(c).toMatchObject({ name: 'Summer launch', description: 'July', color: '#ff7a00', startsOn: '2026-06-01', endsOn: '2026-07-31' });
    expect(c.phases.map((p: any) => [p.name, p.position, p.campaignId, p.color])).toEqual([
      ['Teaser', 0, c.id, null],
      ['Launch week', 1, c.id, '#00aa00'],
    ]);
    const bare = await campaign(owner, { name: '100% Autumn_sale' });
    expect(bare).toMatchObject({ description: null, color: null, startsOn: null, endsOn: null, phases: [] });
    await campaign(owner, { name: 'Early', startsOn: '2026-01-01' });

    const got = await api.get(`${base}/${c.id}`, { token: owner.token });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(c);

    const list = await api.get(base, { token: owner.token });
    expect(list.body.meta).toBeNull();
    expect(list.body.data.map((x: any) => x.name)).toEqual(['Early', 'Summer launch', '100% Autumn_sale']);
    expect(list.body.data[0]).not.toHaveProperty('phases');
    const withPhases = await api.get(`${base}?includePhases=true`, { token: owner.token });
    expect(withPhases.body.data[1].phases).toHaveLength(2);
    expect((await api.get(`${base}?includePhases=false`, { token: owner.token })).body.data[1]).not.toHaveProperty('phases');
    expect((await api.get(`${base}?search=SUMMER`, { token: owner.token })).body.data.map((x: any) => x.id)).toEqual([c.id]);
    // LIKE wildcards match literally.
    expect((await api.get(`${base}?search=${encodeURIComponent('0%')}`, { token: owner.token })).body.data.map((x: any) => x.id)).toEqual([bare.id]);
    expect((await api.get(`${base}?search=n_s`, { token: owner.token })).body.data.map((x: any) => x.id)).toEqual([bare.id]);
    expect((await api.get(`${base}?search=%25`, { token: owner.token })).body.data.map((x: any) => x.id)).toEqual([bare.id]);
    expect((await api.get(`${base}?search=`, { token: owner.token })).body.data).toHaveLength(3);
    expect((await api.get(`${base}?search=${'a'.repeat(160)}`, { token: owner.token })).status).toBe(200);
    const long = await api.get(`${base}?search=${'a'.repeat(161)}`, { token: owner.token });
    expect(long.status).toBe(400);
    expect(long.body.error.details.fields[0].field).toBe('query.search');
    expect((await api.get(`${base}?includePhases=maybe`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base}?other=1`, { token: owner.token })).status).toBe(400);
    expect((await api.get(`${base}?search=a%00b`, { token: owner.token })).status).toBe(400);

    const upd = await api.patch(`${base}/${c.id}`, { name: 'Summer 2026', description: null, endsOn: '2026-08-15' }, { token: owner.token });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: 'Summer 2026', description: null, color: '#ff7a00', startsOn: '2026-06-01', endsOn: '2026-08-15' });
    expect(upd.body.data.phases).toHaveLength(2);

    const del = await api.delete(`${base}/${bare.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: bare.id, deleted: true, contentUnassigned: 0, rootsUnassigned: 0 });
    for (const r of [
      await api.get(`${base}/${bare.id}`, { token: owner.token }),
      await api.patch(`${base}/${bare.id}`, { name: 'x' }, { token: owner.token }),
      await api.delete(`${base}/${bare.id}`, { token: owner.token }),
      await api.get(`${base}/${bare.id}/phases`, { token: owner.token }),
      await api.get(`${base}/${bare.id}/content`, { token: owner.token }),
    ]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('validates bodies and date order (400 with the field)', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns`;
    const cases: [unknown, string][] = [
      [{}, 'body.name'],
      [{ name: '' }, 'body.name'],
      [{ name: '  ' }, 'body.name'],
      [{ name: 'x'.repeat(161) }, 'body.name'],
      [{ name: 'ok', description: 'x'.repeat(5001) }, 'body.description'],
      [{ name: 'ok', color: 'orange' }, 'body.color'],
      [{ name: 'ok', startsOn: '2026-13-01' }, 'body.startsOn'],
      [{ name: 'ok', startsOn: '2026-06-01T10:00:00Z' }, 'body.startsOn'],
      [{ name: 'ok', endsOn: 'soon' }, 'body.endsOn'],
      [{ name: 'ok', startsOn: '2026-06-02', endsOn: '2026-06-01' }, 'body.endsOn'],
      [{ name: 'ok', phases: [{ name: 'p', position: 1 }] }, 'body.phases.0.position'],
      [{ name: 'ok', phases: [{ name: 'p', startsOn: '2026-02-02', endsOn: '2026-02-01' }] }, 'body.phases.0.endsOn'],
      [{ name: 'ok', phases: Array.from({ length: 51 }, (_, i) => ({ name: `p${i}` })) }, 'body.phases'],
      [{ name: 'ok', owner: 'me' }, 'body.owner'],
      [{ name: 'nul\u0000' }, 'body.name'],
      [{ name: 'ok', description: 'nul\u0000' }, 'body.description'],
      [{ name: 'ok', phases: [{ name: 'nul\u0000' }] }, 'body.phases.0.name'],
    ];
    for (const [body, field] of cases) {
      const r = await api.post(base, body, { token: owner.token });
      expect(r.status, JSON.stringify(body).slice(0, 120)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_FAILED');
      expect(r.body.error.details.fields.map((f: any) => f.field), JSON.stringify(body).slice(0, 120)).toContain(field);
    }
    expect((await api.get(base, { token: owner.token })).body.data).toEqual([]);
    const c = await campaign(owner, { name: 'Dated', startsOn: '2026-06-01' });
    // The merged dates are checked: an end before the stored start.
    const before = await api.patch(`${base}/${c.id}`, { endsOn: '2026-05-01' }, { token: owner.token });
    expect(before.status).toBe(400);
    expect(before.body.error.details.fields[0].field).toBe('body.endsOn');
    expect((await api.patch(`${base}/${c.id}`, {}, { token: owner.token })).status).toBe(400);
    expect((await api.patch(`${base}/${c.id}`, { name: null }, { token: owner.token })).status).toBe(400);
    expect((await api.patch(`${base}/${c.id}`, { startsOn: null, endsOn: '2026-05-01' }, { token: owner.token })).body.data).toMatchObject({ startsOn: null, endsOn: '2026-05-01' });
    expect((await api.get(`${base}/not-a-uuid`, { token: owner.token })).status).toBe(400);
  });

  it('viewers read; editors write; another workspace sees nothing', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns`;
    const c = await campaign(owner, { name: 'Mine', phases: [{ name: 'One' }] });
    const phaseId = c.phases[0].id;
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    expect((await api.get(base, { token: viewer.key })).body.data).toHaveLength(1);
    expect((await api.get(`${base}/${c.id}`, { token: viewer.key })).status).toBe(200);
    expect((await api.get(`${base}/${c.id}/phases`, { token: viewer.key })).status).toBe(200);
    expect((await api.get(`${base}/${c.id}/content`, { token: viewer.key })).status).toBe(200);
    const writes = [
      await api.post(base, { name: 'V' }, { token: viewer.key }),
      await api.patch(`${base}/${c.id}`, { name: 'V' }, { token: viewer.key }),
      await api.delete(`${base}/${c.id}`, { token: viewer.key }),
      await api.post(`${base}/${c.id}/phases`, { name: 'V' }, { token: viewer.key }),
      await api.put(`${base}/${c.id}/phases`, { phases: [] }, { token: viewer.key }),
      await api.patch(`${base}/${c.id}/phases/${phaseId}`, { name: 'V' }, { token: viewer.key }),
      await api.delete(`${base}/${c.id}/phases/${phaseId}`, { token: viewer.key }),
    ];
    for (const r of writes) {
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('ROLE_REQUIRED');
    }
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    const byEditor = await api.post(base, { name: 'By editor' }, { token: editor.key });
    expect(byEditor.status).toBe(201);
    expect((await api.post(`${base}/${byEditor.body.data.id}/phases`, { name: 'P' }, { token: editor.key })).status).toBe(201);
    expect((await api.delete(`${base}/${byEditor.body.data.id}`, { token: editor.key })).status).toBe(200);

    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    const there = `/v1/workspaces/${second.body.data.id}/campaigns`;
    expect((await api.get(there, { token: owner.token })).body.data).toEqual([]);
    for (const r of [
      await api.get(`${there}/${c.id}`, { token: owner.token }),
      await api.patch(`${there}/${c.id}`, { name: 'Stolen' }, { token: owner.token }),
      await api.delete(`${there}/${c.id}`, { token: owner.token }),
      await api.post(`${there}/${c.id}/phases`, { name: 'Stolen' }, { token: owner.token }),
      await api.patch(`${there}/${c.id}/phases/${phaseId}`, { name: 'Stolen' }, { token: owner.token }),
      await api.get(`${there}/${c.id}/content`, { token: owner.token }),
    ]) {
      expect(r.status).toBe(404);
    }
    const stranger = await signup(api);
    expect((await api.get(`${base}/${c.id}`, { token: stranger.token })).status).toBe(403);
    expect((await api.get(`${base}/${c.id}`, { token: owner.token })).body.data).toMatchObject({ name: 'Mine', phases: [{ name: 'One' }] });
  });
});

describe('campaign phases', () => {
  it('adds at a position, moves, deletes (204) and keeps positions dense', async () => {
    const owner = await signup(api);
    const c = await campaign(owner, { name: 'Phased' });
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns/${c.id}/phases`;
    const a = await api.post(base, { name: 'A' }, { token: owner.token });
    expect(a.status).toBe(201);
    expect(a.body.data).toMatchObject({ name: 'A', position: 0, campaignId: c.id, color: null, startsOn: null, endsOn: null });
    await api.post(base, { name: 'B', color: '#ABCDEF', startsOn: '2026-01-01', endsOn: '2026-01-31' }, { token: owner.token });
    const first = await api.post(base, { name: 'Zero', position: 0 }, { token: owner.token });
    expect(first.body.data.position).toBe(0);
    const late = await api.post(base, { name: 'Last', position: 49 }, { token: owner.token });
    expect(late.body.data.position).toBe(3);
    const names = async () => (await api.get(base, { token: owner.token })).body.data.map((p: any) => `${p.position}:${p.name}`);
    expect(await names()).toEqual(['0:Zero', '1:A', '2:B', '3:Last']);

    const moved = await api.patch(`${base}/${late.body.data.id}`, { position: 1, name: 'Moved' }, { token: owner.token });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ name: 'Moved', position: 1 });
    expect(await names()).toEqual(['0:Zero', '1:Moved', '2:A', '3:B']);
    const recolored = await api.patch(`${base}/${a.body.data.id}`, { color: '#112233', endsOn: '2026-03-01' }, { token: owner.token });
    expect(recolored.body.data).toMatchObject({ name: 'A', color: '#112233', endsOn: '2026-03-01', position: 2 });

    const del = await api.delete(`${base}/${first.body.data.id}`, { token: owner.token, unchecked: true });
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expect(del.headers.get('x-request-id')).toBeTruthy();
    expect(await names()).toEqual(['0:Moved', '1:A', '2:B']);
    const gone = await api.delete(`${base}/${first.body.data.id}`, { token: owner.token });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
  });

  it('a phase must belong to the campaign in the path (404 otherwise)', async () => {
    const owner = await signup(api);
    const one = await campaign(owner, { name: 'One', phases: [{ name: 'P1' }] });
    const two = await campaign(owner, { name: 'Two', phases: [{ name: 'P2' }] });
    const p1 = one.phases[0].id;
    const path = `/v1/workspaces/${owner.workspaceId}/campaigns/${two.id}/phases/${p1}`;
    const patch = await api.patch(path, { name: 'Hijacked' }, { token: owner.token });
    expect(patch.status).toBe(404);
    expect(patch.body.error.code).toBe('NOT_FOUND');
    expect((await api.delete(path, { token: owner.token })).status).toBe(404);
    const content = await api.get(`/v1/workspaces/${owner.workspaceId}/campaigns/${two.id}/content?phase=${p1}`, { token: owner.token });
    expect(content.status).toBe(404);
    const unknown = await api.patch(`/v1/workspaces/${owner.workspaceId}/campaigns/${two.id}/phases/00000000-0000-4000-8000-000000000000`, { name: 'x' }, { token: owner.token });
    expect(unknown.status).toBe(404);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/campaigns/${one.id}/phases`, { token: owner.token })).body.data[0].name).toBe('P1');
  });

  it('validates phase bodies and the 50-phase limit', async () => {
    const owner = await signup(api);
    const c = await campaign(owner, { name: 'Limits' });
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns/${c.id}/phases`;
    for (const [body, field] of [
      [{}, 'body.name'],
      [{ name: 'x'.repeat(161) }, 'body.name'],
      [{ name: 'p', position: -1 }, 'body.position'],
      [{ name: 'p', position: 50 }, 'body.position'],
      [{ name: 'p', position: 1.5 }, 'body.position'],
      [{ name: 'p', color: '#GGGGGG' }, 'body.color'],
      [{ name: 'p', startsOn: '2026-05-02', endsOn: '2026-05-01' }, 'body.endsOn'],
      [{ name: 'p', id: '00000000-0000-4000-8000-000000000000' }, 'body.id'],
    ] as [unknown, string][]) {
      const r = await api.post(base, body, { token: owner.token });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.details.fields.map((f: any) => f.field)).toContain(field);
    }
    const saved = await api.put(base, { phases: Array.from({ length: 50 }, (_, i) => ({ name: `P${i}` })) }, { token: owner.token });
    expect(saved.status).toBe(200);
    expect(saved.body.data.phases).toHaveLength(50);
    const over = await api.post(base, { name: 'Fifty-one' }, { token: owner.token });
    expect(over.status).toBe(409);
    expect(over.body.error.code).toBe('PHASE_LIMIT_REACHED');
    const p = saved.body.data.phases[0].id;
    expect((await api.patch(`${base}/${p}`, {}, { token: owner.token })).status).toBe(400);
    const order = await api.patch(`${base}/${p}`, { startsOn: '2026-05-02', endsOn: '2026-05-01' }, { token: owner.token });
    expect(order.status).toBe(400);
    expect(order.body.error.details.fields[0].field).toBe('body.endsOn');
  });

  it('bulk save: updates listed ids, creates new ones, deletes the rest, in the order given', async () => {
    const owner = await signup(api);
    const c = await campaign(owner, { name: 'Bulk', phases: [{ name: 'Keep', color: '#111111', startsOn: '2026-01-01' }, { name: 'Drop' }, { name: 'Rename' }] });
    const [keep, drop, rename] = c.phases;
    const base = `/v1/workspaces/${owner.workspaceId}/campaigns/${c.id}/phases`;
    const root = await insertContent(owner, { campaignId: c.id, phaseId: drop.id }, []);

    const saved = await api.put(base, { phases: [{ name: 'New first', endsOn: '2026-02-01' }, { id: rename.id, name: 'Renamed', color: null }, { id: keep.id, name: 'Keep' }] }, { token: owner.token });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({ id: c.id, name: 'Bulk' });
    expect(saved.body.data.phases.map((p: any) => [p.position, p.name, p.color])).toEqual([
      [0, 'New first', null],
      [1, 'Renamed', null],
      [2, 'Keep', '#111111'],
    ]);
    expect(saved.body.data.phases[1].id).toBe(rename.id);
    expect(saved.body.data.phases[2]).toMatchObject({ id: keep.id, startsOn: '2026-01-01' });
    // The dropped phase's content stays in the campaign, without a phase.
    const r = await server.owner.query('select campaign_id, phase_id from app.content_roots where id = $1', [root.rootId]);
    expect(r.rows[0]).toEqual({ campaign_id: c.id, phase_id: null });

    const other = await campaign(owner, { name: 'Other', phases: [{ name: 'Theirs' }] });
    const foreign = await api.put(base, { phases: [{ id: other.phases[0].id, name: 'Stolen' }] }, { token: owner.token });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('PHASE_NOT_IN_CAMPAIGN');
    expect(foreign.body.error.details.phaseIds).toEqual([other.phases[0].id]);
    const twice = await api.put(base, { phases: [{ id: keep.id, name: 'a' }, { id: keep.id, name: 'b' }] }, { token: owner.token });
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe('VALIDATION_FAILED');
    const order = await api.put(base, { phases: [{ id: keep.id, name: 'Keep', endsOn: '2025-12-31' }] }, { token: owner.token });
    expect(order.status).toBe(400);
    expect(order.body.error.details.fields[0].field).toBe('body.phases.0.endsOn');
    for (const body of [{}, { phases: 'all' }, { phases: [{ id: keep.id }] }, { phases: [{ name: 'x', position: 0 }] }, { phases: Array.from({ length: 51 }, () => ({ name: 'x' })) }]) {
      expect((await api.put(base, body, { token: owner.token })).status, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    // Nothing changed by the refusals.
    expect((await api.get(base, { token: owner.token })).body.data.map((p: any) => p.name)).toEqual(['New first', 'Renamed', 'Keep']);
    const cleared = await api.put(base, { phases: [] }, { token: owner.token });
    expect(cleared.body.data.phases).toEqual([]);
  });
});

describe('campaign content page', () => {
  async function fixture() {
    const owner = await signup(api);
    const integ = async (platform: string) =>
      (await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name: platform }, { token: owner.token })).body.data.id as string;
    const x = await integ('x');
    const pin = await integ('pinterest');
    const c = await campaign(owner, { name: 'Launch', phases: [{ name: 'Teaser' }, { name: 'Launch' }] });
    const other = await campaign(owner, { name: 'Other' });
    const [teaser, launch] = c.phases.map((p: any) => p.id);
    const t = (d: number) => new Date(Date.UTC(2030, 0, d, 9)).toISOString();
    // Dates: scheduled_at, else intended_publish_at, else created_at.
    const r1 = await insertContent(owner, { campaignId: c.id, phaseId: teaser, caption: 'root one' }, [
      { integrationId: x, status: 'scheduled', scheduledAt: t(5) },
      { integrationId: pin, status: 'draft', intendedAt: t(3), caption: 'pin caption' },
    ]);
    const r2 = await insertContent(owner, { campaignId: c.id, phaseId: launch }, [{ integrationId: x, status: 'sent', scheduledAt: t(10) }]);
    const r3 = await insertContent(owner, { campaignId: c.id }, [
      { integrationId: x, status: 'failed', scheduledAt: t(1) },
      { integrationId: pin, status: 'pending_approval', createdAt: t(7) },
    ]);
    // Not listed: a deleted edition, an edition of a deleted root, another campaign's and unassigned content.
    await insertContent(owner, { campaignId: c.id }, [{ integrationId: x, status: 'draft', scheduledAt: t(2), deleted: true }]);
    await insertContent(owner, { campaignId: c.id, deleted: true }, [{ integrationId: pin, status: 'draft', scheduledAt: t(2) }]);
    await insertContent(owner, { campaignId: other.id }, [{ integrationId: x, status: 'draft', scheduledAt: t(2) }]);
    await insertContent(owner, {}, [{ integrationId: x, status: 'draft', scheduledAt: t(2) }]);
    // An idea without editions, in the campaign.
    const idea = await insertContent(owner, { campaignId: c.id }, []);
    return { owner, c, other, teaser, launch, x, pin, r1, r2, r3, idea, path: `/v1/workspaces/${owner.workspaceId}/campaigns/${c.id}/content` };
  }

  it('lists the live editions by date with offset meta; filters by phase, status and platform', async () => {
    const f = await fixture();
    const get = (q = '') => api.get(`${f.path}${q}`, { token: f.owner.token });
    const all = await get();
    expect(all.status).toBe(200);
    expect(all.body.meta).toEqual({ limit: 100, offset: 0, total: 5, hasMore: false });
    expect(all.body.data.map((e: any) => e.id)).toEqual([f.r3.ids[0], f.r1.ids[1], f.r1.ids[0], f.r3.ids[1], f.r2.ids[0]]);
    const pinEdition = all.body.data[1];
    expect(pinEdition).toMatchObject({ rootId: f.r1.rootId, integrationId: f.pin, platform: 'pinterest', status: 'draft', scheduledAt: null, caption: 'pin caption', phaseId: f.teaser });
    expect(all.body.data[2]).toMatchObject({ caption: 'root one', platform: 'x', status: 'scheduled' });

    const desc = await get('?sortDirection=desc');
    expect(desc.body.data.map((e: any) => e.id)).toEqual([...all.body.data.map((e: any) => e.id)].reverse());

    const page = await get('?limit=2&offset=1');
    expect(page.body.meta).toEqual({ limit: 2, offset: 1, total: 5, hasMore: true });
    expect(page.body.data.map((e: any) => e.id)).toEqual(all.body.data.slice(1, 3).map((e: any) => e.id));
    const tail = await get('?limit=2&offset=4');
    expect(tail.body.meta).toEqual({ limit: 2, offset: 4, total: 5, hasMore: false });
    expect(tail.body.data).toHaveLength(1);
    const past = await get('?offset=9007199254740991');
    expect(past.status).toBe(200);
    expect(past.body.meta).toEqual({ limit: 100, offset: 9007199254740991, total: 5, hasMore: false });
    expect(past.body.data).toEqual([]);

    expect((await get(`?phase=${f.teaser}`)).body.data.map((e: any) => e.id)).toEqual([f.r1.ids[1], f.r1.ids[0]]);
    expect((await get(`?phase=${f.launch.toUpperCase()}`)).body.data.map((e: any) => e.id)).toEqual([f.r2.ids[0]]);
    const none = await get('?phase=none');
    expect(none.body.data.map((e: any) => e.id)).toEqual([f.r3.ids[0], f.r3.ids[1]]);
    expect(none.body.meta.total).toBe(2);
    expect((await get('?status=scheduled')).body.data.map((e: any) => e.id)).toEqual([f.r1.ids[0]]);
    expect((await get('?status=pending_approval')).body.data.map((e: any) => e.id)).toEqual([f.r3.ids[1]]);
    expect((await get('?status=cancelled')).body).toEqual({ data: [], meta: { limit: 100, offset: 0, total: 0, hasMore: false } });
    expect((await get('?platform=pinterest')).body.data.map((e: any) => e.id)).toEqual([f.r1.ids[1], f.r3.ids[1]]);
    expect((await get('?platform=tiktok')).body.meta.total).toBe(0);
    const combined = await get(`?phase=${f.teaser}&platform=x&status=scheduled&sortDirection=desc&limit=1`);
    expect(combined.body.data.map((e: any) => e.id)).toEqual([f.r1.ids[0]]);
    expect(combined.body.meta).toEqual({ limit: 1, offset: 0, total: 1, hasMore: false });

    const empty = await api.get(`/v1/workspaces/${f.owner.workspaceId}/campaigns/${f.other.id}/content?status=sent`, { token: f.owner.token });
    expect(empty.body.meta.total).toBe(0);
  });

  it('enforces every bound of the query (400) and never answers 500', async () => {
    const f = await fixture();
    const bad: [string, string][] = [
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['limit=1.5', 'query.limit'],
      ['offset=-1', 'query.offset'],
      ['offset=9007199254740992', 'query.offset'],
      ['offset=1e400', 'query.offset'],
      ['phase=nothing', 'query.phase'],
      [`phase=${'a'.repeat(65)}`, 'query.phase'],
      ['phase=NONE', 'query.phase'],
      ['status=published', 'query.status'],
      ['status=', 'query.status'],
      [`platform=${'p'.repeat(51)}`, 'query.platform'],
      ['sortDirection=up', 'query.sortDirection'],
      ['sortBy=name', 'query.sortBy'],
      ['platform=x%00', 'query.platform'],
    ];
    for (const [q, field] of bad) {
      const r = await api.get(`${f.path}?${q}`, { token: f.owner.token });
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe('VALIDATION_FAILED');
      expect(r.body.error.details.fields.map((x: any) => x.field), q).toContain(field);
    }
    for (const q of ['limit=1', 'limit=100', 'offset=0', `platform=${'p'.repeat(50)}`, 'sortDirection=asc', 'phase=none']) {
      expect((await api.get(`${f.path}?${q}`, { token: f.owner.token })).status, q).toBe(200);
    }
    const foreign = await api.get(`${f.path}?phase=00000000-0000-4000-8000-000000000000`, { token: f.owner.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('NOT_FOUND');
  });

  it('deleting a phase keeps its content in the campaign; deleting the campaign unassigns it and counts it', async () => {
    const f = await fixture();
    const base = `/v1/workspaces/${f.owner.workspaceId}/campaigns/${f.c.id}`;
    const del = await api.delete(`${base}/phases/${f.teaser}`, { token: f.owner.token, unchecked: true });
    expect(del.status).toBe(204);
    expect((await api.get(`${f.path}?phase=none`, { token: f.owner.token })).body.meta.total).toBe(4);
    expect((await api.get(f.path, { token: f.owner.token })).body.meta.total).toBe(5);

    const gone = await api.delete(base, { token: f.owner.token });
    expect(gone.status).toBe(200);
    // Five live editions; five live roots: r1, r2, r3, the idea, and the root whose only
    // edition was deleted (the deleted root is not counted).
    expect(gone.body.data).toEqual({ id: f.c.id, deleted: true, contentUnassigned: 5, rootsUnassigned: 5 });
    const rows = await server.owner.query('select count(*)::int as n from app.content_roots where id = any($1) and campaign_id is null and phase_id is null', [
      [f.r1.rootId, f.r2.rootId, f.r3.rootId, f.idea.rootId],
    ]);
    expect(rows.rows[0].n).toBe(4);
    expect((await server.owner.query('select count(*)::int as n from app.campaign_phases where campaign_id = $1', [f.c.id])).rows[0].n).toBe(0);
  });

  it('the database keeps a root\'s phase inside its campaign and its campaign inside its workspace', async () => {
    const f = await fixture();
    const q = (sql: string, args: unknown[]) => server.owner.query(sql, args).catch((e) => e);
    const wrongPhase = await q('update app.content_roots set phase_id = $2 where id = $1', [f.r3.rootId, f.teaser]);
    expect(wrongPhase.rowCount).toBe(1); // r3 is in f.c, teaser is f.c's: fine
    const other = await q('update app.content_roots set campaign_id = $2 where id = $1', [f.r1.rootId, f.other.id]);
    expect(other.code).toBe('PT400');
    expect(other.detail).toBe('PHASE_NOT_IN_CAMPAIGN');
    const orphan = await q('insert into app.content_roots (organization_id, workspace_id, phase_id) values ($1, $2, $3)', [f.owner.organizationId, f.owner.workspaceId, f.teaser]);
    expect(orphan.code).toBe('PT400');
    expect(orphan.detail).toBe('PHASE_NOT_IN_CAMPAIGN');
    // Unassigning the campaign takes the phase with it.
    await q('update app.content_roots set campaign_id = null where id = $1', [f.r1.rootId]);
    expect((await server.owner.query('select phase_id from app.content_roots where id = $1', [f.r1.rootId])).rows[0].phase_id).toBeNull();
    // A campaign of another workspace cannot be assigned.
    const ws2 = await api.post('/v1/workspaces', { name: 'W2' }, { token: f.owner.token });
    const foreign = await api.post(`/v1/workspaces/${ws2.body.data.id}/campaigns`, { name: 'Far' }, { token: f.owner.token });
    const cross = await q('update app.content_roots set campaign_id = $2 where id = $1', [f.r2.rootId, foreign.body.data.id]);
    expect(cross.code).toBe('PT404');
    expect(cross.detail).toBe('CAMPAIGN_NOT_FOUND');
    // A phase never moves to another campaign.
    const move = await q('update app.campaign_phases set campaign_id = $2 where id = $1', [f.launch, f.other.id]);
    expect(move.code).toBe('PT400');
    expect(move.detail).toBe('IMMUTABLE_FIELD');
  });
});
