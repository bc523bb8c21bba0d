import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('auth');
  api = client(server);
});
afterAll(async () => server?.close());

describe('POST /v1/auth/signup', () => {
  it('creates organization, owner, workspace and a working session', async () => {
    const res = await api.post('/v1/auth/signup', { email: 'Ada@Example.com', password: 'correct horse battery staple', organizationName: 'Acme', workspaceName: 'Marketing' });
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(d.user).toMatchObject({ email: 'Ada@Example.com', orgRole: 'owner', status: 'active' });
    expect(d.organization).toMatchObject({ name: 'Acme', plan: 'trial' });
    // Trial lasts 3 days.
    const days = (Date.parse(d.organization.trialEndsAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(2.99);
    expect(days).toBeLessThan(3.01);
    expect(d.workspace).toMatchObject({ name: 'Marketing', timezone: 'UTC', role: 'manager' });
    expect(d.session.token).toMatch(/^prs_/);
    const ws = await api.get('/v1/workspaces', { token: d.session.token });
    expect(ws.status).toBe(200);
    expect(ws.body.data.map((w: any) => w.id)).toEqual([d.workspace.id]);
    // Only the hash of the password and of the token is stored.
    const row = await server.owner.query('select password_hash from app.users where id = $1', [d.user.id]);
    expect(row.rows[0].password_hash).toMatch(/^scrypt\$/);
    expect(row.rows[0].password_hash).not.toContain('correct horse');
    const sess = await server.owner.query('select count(*)::int as n from app.sessions where token_hash = sha256($1::bytea)', [d.session.token]);
    expect(sess.rows[0].n).toBe(1);
  });

  // It used to answer 409 EMAIL_TAKEN "An account with this email already exists."
  it('refuses an address that has an account (case-insensitively) with 403 SIGNUP_REFUSED, naming no reason', async () => {
    const res = await api.post('/v1/auth/signup', { email: 'ada@example.COM', password: 'correct horse battery staple', organizationName: 'Other', workspaceName: 'X' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('SIGNUP_REFUSED');
    expect(res.body.error.message).not.toMatch(/exist|taken|organi[sz]ation .*has/i);
    expect(res.body.error.details ?? {}).toEqual({});
    // Nothing was created.
    const orgs = await server.owner.query(`select count(*)::int as n from app.organizations where name = 'Other'`);
    expect(orgs.rows[0].n).toBe(0);
  });

  it('an address only invited by another organization signs up (an invitation is not an account)', async () => {
    const a = await signup(api);
    const email = `invited-${a.userId.slice(0, 8)}@example.com`;
    const inv = await api.post(`/v1/workspaces/${a.workspaceId}/members`, { email, role: 'viewer' }, { token: a.token });
    expect(inv.status).toBe(201);
    const res = await api.post('/v1/auth/signup', { email, password: 'correct horse battery staple', organizationName: 'Own', workspaceName: 'W' });
    expect(res.status).toBe(201);
    expect(res.body.data.user).toMatchObject({ email, status: 'active', orgRole: 'owner' });
    expect(res.body.data.user.id).not.toBe(inv.body.data.userId);
    // The invitation in a's organization stays as it was.
    const list = await api.get(`/v1/workspaces/${a.workspaceId}/members`, { token: a.token });
    expect(list.body.data.find((m: any) => m.userId === inv.body.data.userId)).toMatchObject({ email, status: 'invited' });
    // The new owner signs in to the new account.
    const session = await api.post('/v1/auth/sessions', { email, password: 'correct horse battery staple' });
    expect(session.status).toBe(201);
    expect(session.body.data.user.id).toBe(res.body.data.user.id);
  });

  it('validates every field, one entry per field', async () => {
    const res = await api.post('/v1/auth/signup', { email: 'nope', password: 'short', organizationName: '', extra: true });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    const fields = res.body.error.details.fields.map((f: any) => f.field).sort();
    expect(fields).toEqual(['body.email', 'body.extra', 'body.organizationName', 'body.password', 'body.workspaceName']);
  });
});

describe('sign-up closed', () => {
  it('answers 403 SIGNUP_CLOSED once an organization exists and ALLOW_SIGNUP is off', async () => {
    const closed = await startTestServer('auth_closed', { ALLOW_SIGNUP: false });
    try {
      const c = client(closed);
      const first = await c.post('/v1/auth/signup', { email: 'first@example.com', password: 'correct horse battery staple', organizationName: 'First', workspaceName: 'W' });
      expect(first.status).toBe(201);
      const second = await c.post('/v1/auth/signup', { email: 'second@example.com', password: 'correct horse battery staple', organizationName: 'Second', workspaceName: 'W' });
      expect(second.status).toBe(403);
      expect(second.body.error.code).toBe('SIGNUP_CLOSED');
      // Closed, an address with an account gets exactly the answer an unknown one gets.
      const taken = await c.post('/v1/auth/signup', { email: 'FIRST@example.com', password: 'correct horse battery staple', organizationName: 'Again', workspaceName: 'W' });
      expect(taken.status).toBe(second.status);
      expect({ ...taken.body.error, requestId: null }).toEqual({ ...second.body.error, requestId: null });
    } finally {
      await closed.close();
    }
  });
});

describe('sessions', () => {
  it('signs in, works, ends the session, and the token stops working at once', async () => {
    const owner = await signup(api);
    const res = await api.post('/v1/auth/sessions', { email: owner.email.toUpperCase(), password: owner.password });
    expect(res.status).toBe(201);
    expect(res.body.data.user.id).toBe(owner.userId);
    const token = res.body.data.token;
    expect((await api.get('/v1/workspaces', { token })).status).toBe(200);
    const end = await api.delete('/v1/auth/sessions/current', { token });
    expect(end.status).toBe(200);
    expect(end.body.data.endedAt).toBeTruthy();
    const after = await api.get('/v1/workspaces', { token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHENTICATED');
    // The other session is untouched.
    expect((await api.get('/v1/workspaces', { token: owner.token })).status).toBe(200);
  });

  it('answers the same 401 INVALID_CREDENTIALS for a wrong password and an unknown email', async () => {
    const owner = await signup(api);
    const wrong = await api.post('/v1/auth/sessions', { email: owner.email, password: 'not the password at all' });
    const unknown = await api.post('/v1/auth/sessions', { email: 'nobody@example.com', password: 'not the password at all' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.error.code).toBe('INVALID_CREDENTIALS');
    expect(unknown.body.error.message).toBe(wrong.body.error.message);
  });

  it('refuses an API key on DELETE /v1/auth/sessions/current with 403 SESSION_REQUIRED', async () => {
    const owner = await signup(api);
    const key = await api.post(`/v1/workspaces/${owner.workspaceId}/api-keys`, { name: 'k', workspaceIds: [owner.workspaceId] }, { token: owner.token });
    const res = await api.delete('/v1/auth/sessions/current', { token: key.body.data.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('SESSION_REQUIRED');
  });

  it('answers 401 for missing, malformed and unknown credentials', async () => {
    const none = await api.get('/v1/workspaces');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHENTICATED');
    const basic = await api.get('/v1/workspaces', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(basic.status).toBe(401);
    const unknown = await api.get('/v1/workspaces', { token: 'prk_nothing_here' });
    expect(unknown.status).toBe(401);
  });

  it('answers 401 PLAN_REQUIRED with the reason once the trial has ended', async () => {
    const owner = await signup(api);
    await server.owner.query(`update app.organizations set trial_ends_at = now() - interval '1 minute' where id = $1`, [owner.organizationId]);
    const res = await api.get('/v1/workspaces', { token: owner.token });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('PLAN_REQUIRED');
    expect(res.body.error.message).toMatch(/trial/);
    expect(res.body.error.details.plan).toBe('trial');
    await server.owner.query(`update app.organizations set plan = 'basic' where id = $1`, [owner.organizationId]);
    expect((await api.get('/v1/workspaces', { token: owner.token })).status).toBe(200);
  });
});
