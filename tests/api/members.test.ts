import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('members');
  api = client(server);
});
afterAll(async () => server?.close());

describe('members', () => {
  it('adds an invited user, lists, changes roles and removes', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const add = await api.post(path, { email: 'Grace@Example.com', role: 'editor' }, { token: owner.token });
    expect(add.status).toBe(201);
    expect(add.body.data).toMatchObject({ email: 'Grace@Example.com', role: 'editor', status: 'invited', orgRole: 'member' });
    const userId = add.body.data.userId;
    const list = await api.get(path, { token: owner.token });
    expect(list.body.data.map((m: any) => [m.userId, m.role])).toEqual([
      [owner.userId, 'manager'],
      [userId, 'editor'],
    ]);
    const dup = await api.post(path, { email: 'grace@example.com', role: 'viewer' }, { token: owner.token });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('ALREADY_MEMBER');
    const patch = await api.patch(`${path}/${userId}`, { role: 'manager' }, { token: owner.token });
    expect(patch.status).toBe(200);
    expect(patch.body.data.role).toBe('manager');
    const del = await api.delete(`${path}/${userId}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ userId, removed: true });
    expect((await api.delete(`${path}/${userId}`, { token: owner.token })).status).toBe(404);
    expect((await api.patch(`${path}/${userId}`, { role: 'viewer' }, { token: owner.token })).status).toBe(404);
    // The same user can be added to another workspace of the organization.
    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    const again = await api.post(`/v1/workspaces/${second.body.data.id}/members`, { email: 'grace@example.com', role: 'viewer' }, { token: owner.token });
    expect(again.status).toBe(201);
    expect(again.body.data.userId).toBe(userId);
  });

  it('the last manager cannot be removed or demoted (409 LAST_MANAGER)', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const demote = await api.patch(`${path}/${owner.userId}`, { role: 'editor' }, { token: owner.token });
    expect(demote.status).toBe(409);
    expect(demote.body.error.code).toBe('LAST_MANAGER');
    const remove = await api.delete(`${path}/${owner.userId}`, { token: owner.token });
    expect(remove.status).toBe(409);
    expect(remove.body.error.code).toBe('LAST_MANAGER');
    // With a second manager, the first may step down.
    await api.post(path, { email: `second-mgr-${owner.userId.slice(0, 6)}@example.com`, role: 'manager' }, { token: owner.token });
    expect((await api.patch(`${path}/${owner.userId}`, { role: 'editor' }, { token: owner.token })).status).toBe(200);
  });

  // Adding a member by address must not tell whether the address has an account in another
  // organization (it used to answer 409 EMAIL_TAKEN there and 201 for an unknown address).
  it('an address with an account in another organization is invited exactly like an unknown address', async () => {
    const a = await signup(api);
    const b = await signup(api);
    const path = `/v1/workspaces/${a.workspaceId}/members`;
    const unknownEmail = `unknown-${a.userId.slice(0, 8)}@example.com`;
    const elsewhere = await api.post(path, { email: b.email, role: 'viewer' }, { token: a.token });
    const unknown = await api.post(path, { email: unknownEmail, role: 'viewer' }, { token: a.token });
    // Same status, same headers, same body shape and values but for the ids, times and the address given.
    expect(elsewhere.status).toBe(201);
    expect(unknown.status).toBe(201);
    const headerNames = (r: typeof unknown) => [...r.headers.keys()].sort();
    expect(headerNames(elsewhere)).toEqual(headerNames(unknown));
    const shape = (v: unknown): unknown =>
      v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])) : typeof v;
    expect(shape(elsewhere.body)).toEqual(shape(unknown.body));
    const stable = (d: any) => ({ ...d, userId: undefined, email: undefined, createdAt: undefined, updatedAt: undefined });
    expect(stable(elsewhere.body.data)).toEqual(stable(unknown.body.data));
    expect(elsewhere.body.data).toMatchObject({ email: b.email, role: 'viewer', orgRole: 'member', status: 'invited' });
    expect(elsewhere.body.data.userId).not.toBe(b.userId);
    // Both are members like any invitation: listed, changed, refused twice, removed.
    const list = await api.get(path, { token: a.token });
    const listed = (id: string) => list.body.data.find((m: any) => m.userId === id);
    expect(stable(listed(elsewhere.body.data.userId))).toEqual(stable(listed(unknown.body.data.userId)));
    for (const [r, email] of [[elsewhere, b.email.toUpperCase()], [unknown, unknownEmail.toUpperCase()]] as const) {
      const again = await api.post(path, { email, role: 'editor' }, { token: a.token });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('ALREADY_MEMBER');
      const patch = await api.patch(`${path}/${r.body.data.userId}`, { role: 'editor' }, { token: a.token });
      expect(patch.status).toBe(200);
      expect(patch.body.data.role).toBe('editor');
    }
    expect((await api.delete(`${path}/${elsewhere.body.data.userId}`, { token: a.token })).status).toBe(200);
    expect((await api.delete(`${path}/${unknown.body.data.userId}`, { token: a.token })).status).toBe(200);
    // The account in b's organization is untouched: same row, its session works, it still signs in.
    const row = await server.owner.query('select organization_id, status, org_role from app.users where id = $1', [b.userId]);
    expect(row.rows[0]).toEqual({ organization_id: b.organizationId, status: 'active', org_role: 'owner' });
    expect((await api.get('/v1/workspaces', { token: b.token })).status).toBe(200);
    const signIn = await api.post('/v1/auth/sessions', { email: b.email, password: b.password });
    expect(signIn.status).toBe(201);
    expect(signIn.body.data.user.id).toBe(b.userId);
    // Nothing of b's organization is visible to a.
    expect((await api.get(`/v1/workspaces/${b.workspaceId}/members`, { token: a.token })).status).toBe(403);
  });

  it('every role lists the members; e-mail addresses only for managers', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const invited = await api.post(path, { email: `colleague-${owner.userId.slice(0, 8)}@example.com`, role: 'editor' }, { token: owner.token });
    expect(invited.status).toBe(201);
    const ids = [owner.userId, invited.body.data.userId];
    const asManager = await api.get(path, { token: owner.token });
    expect(asManager.status).toBe(200);
    expect(asManager.body.data.map((m: any) => m.userId)).toEqual(ids);
    expect(asManager.body.data.map((m: any) => m.email)).toEqual([owner.email, invited.body.data.email]);
    const managerKey = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    const withKey = await api.get(path, { token: managerKey.key });
    expect(withKey.body.data.every((m: any) => typeof m.email === 'string')).toBe(true);
    for (const role of ['viewer', 'editor']) {
      const key = await createKey(api, owner.token, owner.workspaceId, { role });
      const res = await api.get(path, { token: key.key });
      expect(res.status, role).toBe(200);
      expect(res.body.data.map((m: any) => m.userId), role).toEqual(ids);
      for (const m of res.body.data) {
        expect(Object.keys(m).sort(), role).toEqual(['createdAt', 'orgRole', 'role', 'status', 'updatedAt', 'userId']);
      }
      expect(JSON.stringify(res.body), role).not.toContain('@');
      // Reading is all they may do.
      const add = await api.post(path, { email: `nope-${role}@example.com`, role: 'viewer' }, { token: key.key });
      expect(add.status, role).toBe(403);
      expect(add.body.error.code, role).toBe('ROLE_REQUIRED');
    }
  });

  it('validates bodies and ids', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const bad = await api.post(path, { email: 'not-an-email', role: 'owner' }, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: any) => f.field).sort()).toEqual(['body.email', 'body.role']);
    const badId = await api.patch(`${path}/123`, { role: 'viewer' }, { token: owner.token });
    expect(badId.status).toBe(400);
    const noBody = await api.patch(`${path}/${owner.userId}`, undefined, { token: owner.token });
    expect(noBody.status).toBe(400);
    expect(noBody.body.error.details.fields[0].field).toBe('body');
  });
});

describe('Idempotency-Key on POST {ws}/members', () => {
  it('replays the recorded answer, refuses a changed body, and keeps scope per credential', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const body = { email: `idem-${owner.userId.slice(0, 6)}@example.com`, role: 'editor' };
    const first = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'add-1' } });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const replay = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'add-1' } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    // Key order does not make another body.
    const reordered = await api.post(path, { role: 'editor', email: body.email }, { token: owner.token, headers: { 'idempotency-key': 'add-1' } });
    expect(reordered.headers.get('idempotent-replayed')).toBe('true');
    const changed = await api.post(path, { ...body, role: 'viewer' }, { token: owner.token, headers: { 'idempotency-key': 'add-1' } });
    expect(changed.status).toBe(422);
    expect(changed.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Exactly one membership was made.
    const n = await server.owner.query('select count(*)::int as n from app.workspace_members m join app.users u on u.id = m.user_id where lower(u.email) = lower($1)', [body.email]);
    expect(n.rows[0].n).toBe(1);
    // A refusal is recorded too: the same request gets the same 409.
    const dup1 = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'add-2' } });
    expect(dup1.status).toBe(409);
    const dup2 = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'add-2' } });
    expect(dup2.status).toBe(409);
    expect(dup2.headers.get('idempotent-replayed')).toBe('true');
    // Another credential with the same key is its own scope.
    const key = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'm', workspaceIds: [owner.workspaceId], role: 'manager' }, { token: owner.token });
    const other = await api.post(path, { email: `idem2-${owner.userId.slice(0, 6)}@example.com`, role: 'viewer' }, { token: key.body.data.key, headers: { 'idempotency-key': 'add-1' } });
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers 409 IDEMPOTENCY_KEY_IN_USE while the first request is still running', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const body = { email: `slow-${owner.userId.slice(0, 6)}@example.com`, role: 'viewer' };
    // Hold the members table so the first request waits inside its transaction.
    const blocker = server.owner;
    await blocker.query('begin');
    await blocker.query('lock table app.workspace_members in exclusive mode');
    const first = api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'slow' } });
    let second;
    try {
      await new Promise((r) => setTimeout(r, 300));
      second = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'slow' } });
    } finally {
      await blocker.query('rollback');
    }
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect((await first).status).toBe(201);
    const third = await api.post(path, body, { token: owner.token, headers: { 'idempotency-key': 'slow' } });
    expect(third.headers.get('idempotent-replayed')).toBe('true');
  });

  it('rejects a malformed Idempotency-Key', async () => {
    const owner = await signup(api);
    const res = await api.post(`/v1/workspaces/${owner.workspaceId}/members`, { email: 'x@example.com', role: 'viewer' }, { token: owner.token, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0].field).toBe('header.idempotency-key');
  });
});
