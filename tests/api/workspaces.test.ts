import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('workspaces');
  api = client(server);
});
afterAll(async () => server?.close());

describe('workspaces', () => {
  it('creates workspaces with a validated IANA time zone (owners and admins)', async () => {
    const owner = await signup(api);
    const res = await api.post('/v1/workspaces', { name: 'Berlin', timezone: 'Europe/Berlin' }, { token: owner.token });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'Berlin', timezone: 'Europe/Berlin', role: 'manager', organizationId: owner.organizationId });
    const def = await api.post('/v1/workspaces', { name: 'Default zone' }, { token: owner.token });
    expect(def.body.data.timezone).toBe('UTC');
    const bad = await api.post('/v1/workspaces', { name: 'Nowhere', timezone: 'Mars/Olympus' }, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_TIMEZONE');
    const list = await api.get('/v1/workspaces', { token: owner.token });
    expect(list.body.data.map((w: any) => w.name)).toEqual([expect.stringMatching(/^WS /), 'Berlin', 'Default zone']);
  });

  it('refuses workspace creation to members and to API keys', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    const byKey = await api.post('/v1/workspaces', { name: 'X' }, { token: key.key });
    expect(byKey.status).toBe(403);
    expect(byKey.body.error.code).toBe('SESSION_REQUIRED');
    // A plain member (manager of one workspace) is not an org admin.
    await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email: 'mgr-ws@example.com', role: 'manager' }, { token: owner.token });
    await server.owner.query(`update app.users set status = 'active', password_hash = (select password_hash from app.users where id = $1) where email = 'mgr-ws@example.com'`, [owner.userId]);
    const login = await api.post('/v1/auth/sessions', { email: 'mgr-ws@example.com', password: owner.password });
    expect(login.status).toBe(201);
    const byMember = await api.post('/v1/workspaces', { name: 'X' }, { token: login.body.data.token });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.code).toBe('ROLE_REQUIRED');
  });

  it('shows a key only the workspaces granted to it, and a member only theirs', async () => {
    const owner = await signup(api);
    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    const key = await createKey(api, owner.token, owner.workspaceId, { workspaceIds: [second.body.data.id], role: 'viewer' });
    const res = await api.get('/v1/workspaces', { token: key.key });
    expect(res.body.data.map((w: any) => [w.id, w.role])).toEqual([[second.body.data.id, 'viewer']]);
    const all = await api.get('/v1/workspaces', { token: owner.token });
    expect(all.body.data).toHaveLength(2);
  });

  it('never shows another organization’s workspaces; their ids answer 403', async () => {
    const a = await signup(api);
    const b = await signup(api);
    const res = await api.get('/v1/workspaces', { token: a.token });
    expect(res.body.data.map((w: any) => w.id)).not.toContain(b.workspaceId);
    const cross = await api.get(`/v1/workspaces/${b.workspaceId}/members`, { token: a.token });
    expect(cross.status).toBe(403);
    expect(cross.body.error.code).toBe('WORKSPACE_FORBIDDEN');
    const unknown = await api.get('/v1/workspaces/00000000-0000-4000-8000-000000000000/members', { token: a.token });
    expect(unknown.status).toBe(403);
    expect(unknown.body.error).toMatchObject({ code: 'WORKSPACE_FORBIDDEN' });
  });
});
