// Envelope, errors, request ids, rate limits and the audit log, over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('pipeline', { BODY_LIMIT_BYTES: 2048 });
  api = client(server);
});
afterAll(async () => server?.close());

describe('envelope and errors', () => {
  it('echoes a well-formed X-Request-Id and replaces a malformed one', async () => {
    const ok = await api.get('/healthz', { headers: { 'x-request-id': 'client-id.123' }, unchecked: true });
    expect(ok.headers.get('x-request-id')).toBe('client-id.123');
    const bad = await api.get('/healthz', { headers: { 'x-request-id': 'bad id with spaces' }, unchecked: true });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const err = await api.get('/v1/workspaces', { headers: { 'x-request-id': 'trace-42' } });
    expect(err.body.error.requestId).toBe('trace-42');
  });

  it('404 for unknown routes, 405 with Allow for wrong methods', async () => {
    const owner = await signup(api);
    const nf = await api.get('/v1/does-not-exist', { token: owner.token });
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String), requestId: expect.any(String), details: null } });
    const na = await api.request('PUT', '/v1/workspaces', { token: owner.token });
    expect(na.status).toBe(405);
    expect(na.headers.get('allow')).toBe('GET, POST');
    expect(na.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('400 MALFORMED_JSON, 413 for an oversized body, 415 for another media type', async () => {
    const owner = await signup(api);
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const malformed = await api.request('POST', path, { token: owner.token, rawBody: '{"email": ', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('MALFORMED_JSON');
    const big = await api.request('POST', path, { token: owner.token, rawBody: JSON.stringify({ email: 'a'.repeat(5000) + '@x.io', role: 'viewer' }), headers: { 'content-type': 'application/json' } });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const form = await api.request('POST', path, { token: owner.token, rawBody: 'email=a@b.c&role=viewer', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const array = await api.request('POST', path, { token: owner.token, rawBody: '[1,2]', headers: { 'content-type': 'application/json' } });
    expect(array.status).toBe(400);
    expect(array.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('a NUL character in a string is a 400, not a 500', async () => {
    const owner = await signup(api);
    const res = await api.post('/v1/workspaces', { name: 'bad\u0000name' }, { token: owner.token });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('unknown query parameters and wrong types are 400 with one entry per field', async () => {
    const owner = await signup(api);
    const res = await api.get('/v1/workspaces?surprise=1', { token: owner.token });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields).toEqual([{ field: 'query.surprise', code: 'unknown_property', message: expect.any(String) }]);
    const types = await api.post('/v1/workspaces', { name: 42, timezone: ['UTC'] }, { token: owner.token });
    expect(types.status).toBe(400);
    expect(types.body.error.details.fields.map((f: any) => f.field).sort()).toEqual(['body.name', 'body.timezone']);
  });
});

describe('rate limits', () => {
  it('counts per workspace and class, answers 429 RATE_LIMITED with Retry-After, and shows the counters', async () => {
    const limited = await startTestServer('ratelimit', { RATE_LIMIT_READ: 3, RATE_LIMIT_WRITE: 2 });
    try {
      const c = client(limited);
      const owner = await signup(c);
      const key = await createKey(c, owner.token, owner.workspaceId, { role: 'manager' });
      const path = `/v1/workspaces/${owner.workspaceId}/members`;
      const seen: number[] = [];
      let last;
      for (let i = 0; i < 4; i++) {
        last = await c.get(path, { token: i % 2 ? key.key : owner.token });
        seen.push(last.status);
        if (i < 3) {
          expect(last.headers.get('x-ratelimit-limit')).toBe('3');
          expect(last.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
        }
      }
      expect(seen).toEqual([200, 200, 200, 429]);
      expect(last!.body.error.code).toBe('RATE_LIMITED');
      const retry = Number(last!.headers.get('retry-after'));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
      expect(last!.body.error.details).toMatchObject({ class: 'read', limit: 3, retryAfter: retry });
      // The write class has its own budget in the same workspace.
      const w = await c.post(path, { email: 'rl@example.com', role: 'viewer' }, { token: owner.token });
      expect(w.status).toBe(201);
      expect(w.headers.get('x-ratelimit-limit')).toBe('2');
      // Another workspace is unaffected.
      const other = await signup(c);
      expect((await c.get(`/v1/workspaces/${other.workspaceId}/members`, { token: other.token })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('holds across two API processes sharing one database', async () => {
    const a = await startTestServer('ratelimit_shared', { RATE_LIMIT_READ: 2 });
    try {
      // A second app on the same database, as a second process would be.
      const { createServer } = await import('node:http');
      const { createApp } = await import('../../server/app.ts');
      const { createAppDeps } = await import('../../server/deps.ts');
      const { createLogger } = await import('../../server/log.ts');
      const second = createServer(createApp(createAppDeps({ pool: a.pool, config: a.config, log: createLogger('silent') })));
      await new Promise<void>((r) => second.listen(0, '127.0.0.1', r));
      const b = { ...a, baseUrl: `http://127.0.0.1:${(second.address() as any).port}` };
      try {
        const ca = client(a);
        const cb = client(b);
        const owner = await signup(ca);
        const path = `/v1/workspaces/${owner.workspaceId}/members`;
        expect((await ca.get(path, { token: owner.token })).status).toBe(200);
        expect((await cb.get(path, { token: owner.token })).status).toBe(200);
        expect((await ca.get(path, { token: owner.token })).status).toBe(429);
        expect((await cb.get(path, { token: owner.token })).status).toBe(429);
      } finally {
        second.closeAllConnections();
        await new Promise((r) => second.close(r));
      }
    } finally {
      await a.close();
    }
  });
});

describe('audit', () => {
  it('writes one row per call, failures included, even when the transaction rolled back', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    const path = `/v1/workspaces/${owner.workspaceId}/members`;
    const ids: string[] = [];
    const call = async (method: string, p: string, token: string, body?: unknown) => {
      const id = `audit-${Math.random().toString(36).slice(2)}`;
      ids.push(id);
      return api.request(method, p, { token, body, headers: { 'x-request-id': id } });
    };
    const results = [
      await call('GET', path, owner.token), // 200
      await call('POST', path, key.key, { email: 'viewer-try@example.com', role: 'viewer' }), // 403 ROLE_REQUIRED (viewers read members, do not add them)
      await call('POST', path, owner.token, { email: 'bad', role: 'x' }), // 400
      await call('PATCH', `${path}/${owner.userId}`, owner.token, { role: 'viewer' }), // 409, rolled back
      await call('DELETE', `/v1/workspaces/${owner.workspaceId}/api-keys/00000000-0000-4000-8000-000000000000`, owner.token), // 404
      await call('GET', '/v1/workspaces', key.key), // 200
    ];
    expect(results.map((r) => r.status)).toEqual([200, 403, 400, 409, 404, 200]);
    const rows = await server.owner.query(
      `select request_id, actor_kind, actor_id, api_key_prefix, organization_id, workspace_id, method, route, status, outcome, duration_ms
       from reporting.api_calls where request_id = any($1) order by occurred_at`,
      [ids],
    );
    expect(rows.rows).toHaveLength(6);
    const byId = new Map(rows.rows.map((r: any) => [r.request_id, r]));
    expect(byId.get(ids[0])).toMatchObject({ actor_kind: 'user', actor_id: owner.userId, organization_id: owner.organizationId, workspace_id: owner.workspaceId, method: 'GET', route: '/v1/workspaces/{workspaceId}/members', status: 200, outcome: 'success' });
    expect(byId.get(ids[1])).toMatchObject({ actor_kind: 'api_key', actor_id: key.id, api_key_prefix: key.keyPrefix, status: 403, outcome: 'client_error' });
    expect(byId.get(ids[3])).toMatchObject({ method: 'PATCH', route: '/v1/workspaces/{workspaceId}/members/{userId}', status: 409 });
    expect(byId.get(ids[5])).toMatchObject({ workspace_id: null, route: '/v1/workspaces' });
    for (const r of rows.rows) expect(Number(r.duration_ms)).toBeGreaterThan(0);
  });

  it('records refused credentials (revoked key) and rate-limited calls', async () => {
    const owner = await signup(api);
    const key = await createKey(api, owner.token, owner.workspaceId);
    await api.delete(`/v1/workspaces/${owner.workspaceId}/api-keys/${key.id}`, { token: owner.token });
    await api.get('/v1/workspaces', { token: key.key, headers: { 'x-request-id': `revoked-${key.id}` } });
    const row = await server.owner.query('select actor_kind, actor_id, status from reporting.api_calls where request_id = $1', [`revoked-${key.id}`]);
    expect(row.rows).toEqual([{ actor_kind: 'api_key', actor_id: key.id, status: 401 }]);
  });

  it('records the user who signed in or up, and anonymous failures', async () => {
    const owner = await signup(api);
    await api.post('/v1/auth/sessions', { email: owner.email, password: owner.password }, { headers: { 'x-request-id': `login-ok-${owner.userId}` } });
    await api.post('/v1/auth/sessions', { email: owner.email, password: 'wrong password!!' }, { headers: { 'x-request-id': `login-bad-${owner.userId}` } });
    const rows = await server.owner.query(
      'select request_id, actor_kind, actor_id, organization_id, status from reporting.api_calls where request_id = any($1)',
      [[`login-ok-${owner.userId}`, `login-bad-${owner.userId}`]],
    );
    const byId = new Map(rows.rows.map((r: any) => [r.request_id, r]));
    expect(byId.get(`login-ok-${owner.userId}`)).toMatchObject({ actor_kind: 'user', actor_id: owner.userId, organization_id: owner.organizationId, status: 201 });
    expect(byId.get(`login-bad-${owner.userId}`)).toMatchObject({ actor_kind: 'anonymous', actor_id: null, status: 401 });
  });

  it('the audit table refuses UPDATE, DELETE and TRUNCATE', async () => {
    await expect(server.owner.query(`update audit.api_calls set status = 200`)).rejects.toThrow(/append-only/);
    await expect(server.owner.query(`delete from audit.api_calls`)).rejects.toThrow(/append-only/);
    await expect(server.owner.query(`truncate audit.api_calls`)).rejects.toThrow(/append-only/);
  });
});
