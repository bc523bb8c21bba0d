import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('apikeys');
  api = client(server);
});
afterAll(async () => server?.close());

/** A user of the owner's organization with the owner's password, signed in. */
async function orgUser(owner: Awaited<ReturnType<typeof signup>>, email: string, orgRole = 'member') {
  await server.owner.query(
    `insert into app.users (organization_id, email, password_hash, org_role, status)
     select organization_id, $2, password_hash, $3, 'active' from app.users where id = $1`,
    [owner.userId, email, orgRole],
  );
  const login = await api.post('/v1/auth/sessions', { email, password: owner.password });
  expect(login.status).toBe(201);
  return { token: login.body.data.token as string, userId: login.body.data.user.id as string };
}

describe('POST {ws}/api-keys', () => {
  it('returns the raw key once and stores only its SHA-256 and prefix', async () => {
    const owner = await signup(api);
    const res = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'CI', workspaceIds: [owner.workspaceId], expiresAt: '2099-01-01T00:00:00Z' }, { token: owner.token });
    expect(res.status).toBe(201);
    const k = res.body.data;
    expect(k).toMatchObject({ name: 'CI', role: 'editor' });
    expect(k.key.startsWith(`${k.keyPrefix}_`)).toBe(true);
    expect(Date.parse(k.expiresAt)).toBe(Date.parse('2099-01-01T00:00:00Z'));
    const row = await server.owner.query('select key_hash = sha256($2::bytea) as matches, key_prefix from app.api_keys where id = $1', [k.id, k.key]);
    expect(row.rows[0]).toEqual({ matches: true, key_prefix: k.keyPrefix });
    const anywhere = await server.owner.query(
      `select count(*)::int as n from app.api_keys where name = $1 or key_prefix = $1`, [k.key]);
    expect(anywhere.rows[0].n).toBe(0);
    const list = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(JSON.stringify(list.body)).not.toContain(k.key);
  });

  it('an API key cannot create, list or revoke keys: 403 SESSION_REQUIRED', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    const create = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'x', workspaceIds: [owner.workspaceId] }, { token: key.key });
    const list = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: key.key });
    const revoke = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${key.id}`, { token: key.key });
    for (const r of [create, list, revoke]) {
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('SESSION_REQUIRED');
    }
  });

  it('refuses workspaces the creator does not manage, past expiry and bad bodies', async () => {
    const owner = await signup(api);
    const other = await signup(api);
    const foreign = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'x', workspaceIds: [owner.workspaceId, other.workspaceId] }, { token: owner.token });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('WORKSPACE_FORBIDDEN');
    expect(foreign.body.error.details.workspaceIds).toEqual([other.workspaceId]);
    const past = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'x', workspaceIds: [owner.workspaceId], expiresAt: '2001-01-01T00:00:00Z' }, { token: owner.token });
    expect(past.status).toBe(400);
    const bad = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: '', workspaceIds: [], role: 'god', expiresAt: 'tomorrow' }, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: any) => f.field).sort()).toEqual(['body.expiresAt', 'body.name', 'body.role', 'body.workspaceIds']);
  });

  it('a non-manager session cannot create keys (403 ROLE_REQUIRED)', async () => {
    const owner = await signup(api);
    const editor = await orgUser(owner, `editor-${owner.userId.slice(0, 6)}@example.com`);
    await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email: `editor-${owner.userId.slice(0, 6)}@example.com`, role: 'editor' }, { token: owner.token });
    const res = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'x', workspaceIds: [owner.workspaceId], role: 'viewer' }, { token: editor.token });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('ROLE_REQUIRED');
  });
});

describe('key use', () => {
  it('updates lastUsedAt, and a revoked key answers 401 at once, permanently', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId);
    const before = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(before.body.data[0].lastUsedAt).toBeNull();
    expect((await api.get('/v1/workspaces', { token: key.key })).status).toBe(200);
    const after = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(after.body.data[0].lastUsedAt).not.toBeNull();
    const revoke = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${key.id}`, { token: owner.token });
    expect(revoke.status).toBe(200);
    expect(revoke.body.data).toEqual({ id: key.id, revoked: true });
    const use = await api.get('/v1/workspaces', { token: key.key });
    expect(use.status).toBe(401);
    expect(use.body.error.code).toBe('KEY_REVOKED');
    const again = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${key.id}`, { token: owner.token });
    expect(again.status).toBe(404);
    const list = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(list.body.data.map((k: any) => k.id)).not.toContain(key.id);
  });

  it('an expired key answers 401 KEY_EXPIRED and leaves the list', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId, { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect((await api.get('/v1/workspaces', { token: key.key })).status).toBe(200);
    await server.owner.query(`update app.api_keys set expires_at = now() - interval '1 second' where id = $1`, [key.id]);
    const res = await api.get('/v1/workspaces', { token: key.key });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('KEY_EXPIRED');
    const list = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(list.body.data.map((k: any) => k.id)).not.toContain(key.id);
  });

  it('a key on a workspace outside its grants answers 403', async () => {
    const owner = await signup(api);
    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    const key = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    const res = await api.get(`/v1/workspaces/${second.body.data.id}/members`, { token: key.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('WORKSPACE_FORBIDDEN');
  });

  it('viewer keys cannot mutate; editor keys cannot manage members; manager keys can', async () => {
    const owner = await signup(api);
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    const manager = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    for (const k of [viewer, editor]) {
      const r = await api.post(path, { email: 'someone@example.com', role: 'viewer' }, { token: k.key });
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('ROLE_REQUIRED');
      const p = await api.patch(`${path}/${owner.userId}`, { role: 'editor' }, { token: k.key });
      expect(p.status).toBe(403);
      const d = await api.delete(`${path}/${owner.userId}`, { token: k.key });
      expect(d.status).toBe(403);
    }
    const ok = await api.post(path, { email: `via-key-${owner.userId.slice(0, 8)}@example.com`, role: 'viewer' }, { token: manager.key });
    expect(ok.status).toBe(201);
  });

  it("a key's role is capped by its creator's current role", async () => {
    const owner = await signup(api);
    const email = `mgr-${owner.userId.slice(0, 6)}@example.com`;
    const mgr = await orgUser(owner, email);
    await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email, role: 'manager' }, { token: owner.token });
    const key = await createKey(api, mgr.token, owner.workspaceId, { role: 'manager' });
    const asManager = await api.get(`/v1/workspaces/${owner.workspaceId}/members`, { token: key.key });
    expect(asManager.status).toBe(200);
    expect(asManager.body.data.every((m: any) => typeof m.email === 'string')).toBe(true);
    // The creator is demoted to viewer: the key follows at once (it reads members without
    // e-mail addresses, and may no longer add any).
    await api.patch(`/v1/workspaces/${owner.workspaceId}/members/${mgr.userId}`, { role: 'viewer' }, { token: owner.token });
    const listed = await api.get(`/v1/workspaces/${owner.workspaceId}/members`, { token: key.key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.some((m: any) => 'email' in m)).toBe(false);
    const res = await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email: `late-${owner.userId.slice(0, 6)}@example.com`, role: 'viewer' }, { token: key.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('ROLE_REQUIRED');
    const ws = await api.get('/v1/workspaces', { token: key.key });
    expect(ws.body.data[0].role).toBe('viewer');
    // Removed from the workspace: the key loses it.
    await api.delete(`/v1/workspaces/${owner.workspaceId}/members/${mgr.userId}`, { token: owner.token });
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/members`, { token: key.key })).status).toBe(403);
  });
});

describe('GET {ws}/api-keys visibility', () => {
  it('owners see every key; managers see keys whose workspaces they all manage', async () => {
    const owner = await signup(api);
    const second = (await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token })).body.data.id as string;
    const email = `only-first-${owner.userId.slice(0, 6)}@example.com`;
    const mgr = await orgUser(owner, email);
    await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email, role: 'manager' }, { token: owner.token });
    const firstOnly = await createKey(api, owner.token, owner.workspaceId, { name: 'first only' });
    const both = await createKey(api, owner.token, owner.workspaceId, { name: 'both', workspaceIds: [owner.workspaceId, second] });
    const secondOnly = await createKey(api, owner.token, second, { name: 'second only', workspaceIds: [second] });
    const ownerList = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: owner.token });
    expect(ownerList.body.data.map((k: any) => k.id).sort()).toEqual([firstOnly.id, both.id, secondOnly.id].sort());
    const bothItem = ownerList.body.data.find((k: any) => k.id === both.id);
    expect(bothItem.workspaceCount).toBe(2);
    expect(bothItem.workspaces.map((w: any) => w.id).sort()).toEqual([owner.workspaceId, second].sort());
    const mgrList = await api.get(`/v1/workspaces/${owner.workspaceId}/api-keys`, { token: mgr.token });
    expect(mgrList.body.data.map((k: any) => k.id)).toEqual([firstOnly.id]);
    // A manager cannot revoke a key they cannot see.
    const revoke = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${both.id}`, { token: mgr.token });
    expect(revoke.status).toBe(404);
    // Another organization's key is invisible and unrevokable.
    const other = await signup(api);
    const otherKey = await createKey(api, other.token, other.workspaceId);
    expect((await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${otherKey.id}`, { token: owner.token })).status).toBe(404);
    expect((await api.get('/v1/workspaces', { token: otherKey.key })).status).toBe(200);
  });

  it('404 for an unknown key, 400 for a malformed id', async () => {
    const owner = await signup(api);
    const unknown = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/00000000-0000-4000-8000-000000000000`, { token: owner.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    const malformed = await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/not-a-uuid`, { token: owner.token });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details.fields[0].field).toBe('path.id');
  });
});
