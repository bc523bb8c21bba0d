// Hostile input that used to answer 500 or outside the envelope: NUL bytes,
// UTC offsets PostgreSQL cannot store, deep nesting, what Node's HTTP parser
// refuses, undecodable paths (server/http/guard.ts, server/http/server.ts).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataExceptionFields, toApiError } from '../../server/http/errors.ts';
import { MAX_JSON_DEPTH } from '../../server/http/guard.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { registeredCodes } from '../support/errors-register.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let key: string;
let ws: string;
const codes = registeredCodes();

beforeAll(async () => {
  server = await startTestServer('hostile');
  api = client(server);
  owner = await signup(api);
  ws = `/v1/workspaces/${owner.workspaceId}`;
  key = (await createKey(api, owner.token, owner.workspaceId, { role: 'manager' })).key;
});
afterAll(async () => server?.close());

/** Sends raw bytes and returns status, headers and body of the answer. */
function raw(request: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const url = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

function expectEnvelope(body: any, code: string) {
  expect(body).toEqual({ error: { code, message: expect.any(String), requestId: expect.any(String), details: body.error.details ?? null } });
  expect(codes.has(code), `${code} is listed in db/ERRORS.md`).toBe(true);
}

describe('NUL bytes', () => {
  it('are refused in body strings, body keys and query strings, with the field named', async () => {
    const media = await api.post(`${ws}/media/labels`, { name: 'a\u0000b' }, { token: key });
    expect(media.status).toBe(400);
    expectEnvelope(media.body, 'VALIDATION_FAILED');
    expect(media.body.error.details.fields).toContainEqual({ field: 'body.name', code: 'nul_character', message: expect.any(String) });

    const search = await api.get(`${ws}/media?search=%00`, { token: key });
    expect(search.status).toBe(400);
    expect(search.body.error.details.fields[0]).toMatchObject({ field: 'query.search', code: 'nul_character' });

    const keyNul = await api.post(`${ws}/integrations`, { platform: 'x', connector: 'sandbox', name: 'n', settings: { 'be\u0000havior': 'success' } }, { token: key });
    expect(keyNul.status).toBe(400);
    expect(keyNul.body.error.details.fields[0]).toMatchObject({ field: 'body.settings.be\\u0000havior', code: 'nul_character' });
  });

  it('in a header is refused by the parser, in the envelope', async () => {
    const res = await raw(`GET /v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\u0000b\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers['x-request-id']).toBeTruthy();
    expectEnvelope(JSON.parse(res.body), 'BAD_REQUEST');
  });
});

describe('date-times PostgreSQL cannot store', () => {
  it('a UTC offset beyond ±15:59 is a 400 naming the field, in bodies and queries', async () => {
    const since = await api.get(`${ws}/content?since=${encodeURIComponent('2030-01-01T00:00:00+16:00')}`, { token: key });
    expect(since.status).toBe(400);
    expect(since.body.error.details.fields[0]).toMatchObject({ field: 'query.since', code: 'format' });
    const exp = await api.post(`${ws}/api-keys`, { name: 'k', workspaceIds: [owner.workspaceId], expiresAt: '2030-01-01T00:00:00-20:12' }, { token: owner.token });
    expect(exp.status).toBe(400);
    expect(exp.body.error.details.fields[0]).toMatchObject({ field: 'body.expiresAt', code: 'format' });
    const ok = await api.get(`${ws}/content?since=${encodeURIComponent('2020-01-01T00:00:00+15:59')}`, { token: key });
    expect(ok.status).toBe(200);
  });

  it('year 0000 and impossible dates are refused at validation', async () => {
    for (const since of ['0000-01-01T00:00:00Z', '2023-02-29T00:00:00Z', '2024-01-01T24:00:00Z']) {
      const res = await api.get(`${ws}/content?since=${encodeURIComponent(since)}`, { token: key });
      expect(res.status, since).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('PostgreSQL data exceptions (SQLSTATE class 22) that get past validation', () => {
  it('are 400 VALIDATION_FAILED, naming the request field that holds the value PostgreSQL quoted', async () => {
    const cases: [string, string, Record<string, unknown>, string][] = [
      [`select '2030-01-01T00:00:00+16:00'::timestamptz`, '22009', { body: { plan: { scheduledAt: '2030-01-01T00:00:00+16:00' } } }, 'body.plan.scheduledAt'],
      [`select 'nope'::uuid`, '22P02', { query: { folderId: 'nope' } }, 'query.folderId'],
      [`select '100000000000000000000'::int`, '22003', { body: { position: 1e20 } }, 'body.position'],
      [`select 1/0`, '22012', { body: {} }, ''],
    ];
    for (const [query, sqlstate, input, field] of cases) {
      const err = await server.owner.query(query).then(
        () => null,
        (e) => e,
      );
      expect(err?.code, query).toBe(sqlstate);
      const api = toApiError(err)!;
      expect([api.status, api.code, api.details?.sqlstate]).toEqual([400, 'VALIDATION_FAILED', sqlstate]);
      expect(dataExceptionFields(err, input).map((f) => f.field)).toEqual(field ? [field] : []);
    }
  });
});

describe('nesting depth', () => {
  const nested = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
  it(`refuses bodies nested deeper than ${MAX_JSON_DEPTH} with 400 NESTING_TOO_DEEP, and 4,500 levels do not crash anything`, async () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 4500, 100_000]) {
      const settings = nested(depth - 1);
      const res = await api.request('POST', `${ws}/integrations`, {
        token: key,
        rawBody: `{"platform":"x","connector":"sandbox","name":"deep","settings":${settings}}`,
        headers: { 'content-type': 'application/json', 'idempotency-key': `deep-${depth}` },
      });
      expect(res.status, `depth ${depth}`).toBe(400);
      expectEnvelope(res.body, 'NESTING_TOO_DEEP');
    }
    const deepArray = await api.request('PATCH', `${ws}/media/${crypto.randomUUID()}`, {
      token: key,
      rawBody: '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1),
      headers: { 'content-type': 'application/json' },
    });
    expect(deepArray.status).toBe(400);
    expect(deepArray.body.error.code).toBe('NESTING_TOO_DEEP');
  });

  it('takes a body exactly 64 levels deep to validation (brackets inside strings do not count)', async () => {
    const res = await api.request('POST', `${ws}/integrations`, {
      token: key,
      rawBody: `{"platform":"x","connector":"sandbox","name":"${'[{'.repeat(100)}","settings":${nested(MAX_JSON_DEPTH - 1)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields[0]).toMatchObject({ field: 'body.settings.a', code: 'unknown_property' });
  });
});

describe('answers Node or the router used to give outside the envelope', () => {
  it('a URL over 16 KB: 431 HEADERS_TOO_LARGE in the envelope', async () => {
    const res = await raw(`GET /v1/workspaces?x=${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expectEnvelope(JSON.parse(res.body), 'HEADERS_TOO_LARGE');
  });

  it('a raw non-ASCII byte in the path: 400 MALFORMED_URL in the envelope', async () => {
    const res = await raw(Buffer.concat([Buffer.from('GET /v1/workspaces/'), Buffer.from([0xc3, 0xa9]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]));
    expect(res.status).toBe(400);
    expectEnvelope(JSON.parse(res.body), 'MALFORMED_URL');
  });

  it('%C0%AF in a path parameter: 400 MALFORMED_URL, and an audit row when the caller authenticates', async () => {
    const res = await api.get(`${ws}/media/%C0%AF`, { token: key, unchecked: true });
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'MALFORMED_URL');
    const rows = await server.owner.query(`select status, route, error_code, actor_kind from audit.api_calls where request_id = $1`, [res.body.error.requestId]);
    expect(rows.rows).toEqual([{ status: 400, route: null, error_code: 'MALFORMED_URL', actor_kind: 'api_key' }]);
  });
});

describe('audit of calls that match no route', () => {
  it('an authenticated call to an unknown path or method writes one row with route null; anonymous noise writes none', async () => {
    const nf = await api.get('/v1/no-such-thing', { token: key });
    expect(nf.status).toBe(404);
    const na = await api.request('PUT', '/v1/workspaces', { token: owner.token });
    expect(na.status).toBe(405);
    const bogus = await api.get('/v1/no-such-thing', { token: 'prk_bogus' });
    expect(bogus.status).toBe(404);
    const none = await api.get('/v1/no-such-thing');
    expect(none.status).toBe(404);
    const ids = [nf, na, bogus, none].map((r) => r.body.error.requestId);
    const rows = await server.owner.query(
      `select request_id, actor_kind, method, route, status, error_code, organization_id, calls from audit.api_calls where request_id = any($1) order by status`,
      [ids],
    );
    expect(rows.rows).toEqual([
      { request_id: ids[0], actor_kind: 'api_key', method: 'GET', route: null, status: 404, error_code: 'NOT_FOUND', organization_id: owner.organizationId, calls: 1 },
      { request_id: ids[1], actor_kind: 'user', method: 'PUT', route: null, status: 405, error_code: 'METHOD_NOT_ALLOWED', organization_id: owner.organizationId, calls: 1 },
    ]);
  });
});

describe('failed credentials', () => {
  /** Waits out the end of a minute, so a burst stays in one window. */
  async function awayFromMinuteEnd() {
    const s = new Date().getUTCSeconds();
    if (s >= 54) await new Promise((r) => setTimeout(r, (61 - s) * 1000));
  }

  it('are throttled per client address: 429 AUTH_THROTTLED with Retry-After, the first N audited, the rest in one summary row', async () => {
    const limited = await startTestServer('authfail', { AUTH_FAILURE_LIMIT: 20, AUTH_FAILURE_AUDIT: 5, TRUST_PROXY: true });
    try {
      const c = client(limited);
      const o = await signup(c);
      const good = await createKey(c, o.token, o.workspaceId, { role: 'viewer' });
      await awayFromMinuteEnd();
      const from = { 'x-forwarded-for': '203.0.113.7' };
      const answers = [];
      for (let i = 0; i < 40; i++) {
        answers.push(await c.get('/v1/workspaces', { token: i % 2 ? `prk_bogus${i}` : undefined, headers: from }));
      }
      const statuses = answers.map((a) => a.status);
      expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
      expect(statuses.slice(20)).toEqual(Array(20).fill(429));
      const throttled = answers[20];
      expect(throttled.body.error.code).toBe('AUTH_THROTTLED');
      expect(codes.has('AUTH_THROTTLED')).toBe(true);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // A right credential from the throttled address is refused the same way (no oracle) ...
      const right = await c.get('/v1/workspaces', { token: good.key, headers: from });
      expect(right.status).toBe(429);
      // ... and another address is not throttled.
      const other = await c.get('/v1/workspaces', { token: good.key, headers: { 'x-forwarded-for': '198.51.100.9' } });
      expect(other.status).toBe(200);

      const ids = [...answers, right].map((a) => a.body.error.requestId);
      const one = await limited.owner.query(`select count(*)::int as n from audit.api_calls where request_id = any($1)`, [ids]);
      expect(one.rows[0].n).toBe(5);
      // The window closes: one summary row stands for the 36 refusals not audited one by one.
      await limited.owner.query(`update app.auth_failures set window_start = window_start - interval '1 minute'`);
      await limited.owner.query(`select app.flush_auth_failures()`);
      const summary = await limited.owner.query(
        `select method, route, status, error_code, calls, actor_kind from audit.api_calls where error_code = 'AUTH_FAILURE_BURST'`,
      );
      expect(summary.rows).toEqual([{ method: '*', route: null, status: 401, error_code: 'AUTH_FAILURE_BURST', calls: 36, actor_kind: 'anonymous' }]);
      expect(codes.has('AUTH_FAILURE_BURST')).toBe(true);
      expect(await limited.owner.query(`select * from app.auth_failures`).then((r) => r.rowCount)).toBe(0);
    } finally {
      await limited.close();
    }
  });
});

describe('unknown query parameters', () => {
  it('are refused on every operation, GET media/labels included, with the parameter named', async () => {
    for (const path of [`${ws}/media/labels?surprise=1`, `${ws}/media/labels?search=a&search[x]=1`, `${ws}/members?groupId=1`, `/v1/workspaces?a[b]=c`]) {
      const res = await api.get(path, { token: key });
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const named = await api.get(`${ws}/media/labels?surprise=1`, { token: key });
    expect(named.body.error.details.fields).toEqual([{ field: 'query.surprise', code: 'unknown_property', message: expect.any(String) }]);
  });
});

describe('browser clients (CORS_ORIGINS)', () => {
  it('is off by default: no CORS headers, a preflight is not answered 204', async () => {
    const pre = await fetch(`${server.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(405);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers preflights 204 for listed origins and exposes the headers integrators read', async () => {
    const s = await startTestServer('cors', { CORS_ORIGINS: ['https://app.example.com', 'http://localhost:5173'] });
    try {
      const pre = await fetch(`${s.baseUrl}/v1/workspaces/${crypto.randomUUID()}/content`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(pre.headers.get('access-control-allow-methods')).toBe('GET,POST,PUT,PATCH,DELETE');
      expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toBe('authorization,content-type,idempotency-key,x-request-id');
      const other = await fetch(`${s.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();

      const c = client(s);
      const o = await signup(c);
      const res = await c.get('/v1/workspaces', { token: o.token, headers: { origin: 'http://localhost:5173' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
      const exposed = res.headers.get('access-control-expose-headers')!.split(',');
      for (const h of ['X-Request-Id', 'Idempotent-Replayed', 'Retry-After', 'RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
        expect(exposed).toContain(h);
      }
    } finally {
      await s.close();
    }
  });

  it('CORS_ORIGINS=* allows any origin', async () => {
    const s = await startTestServer('cors-any', { CORS_ORIGINS: ['*'] });
    try {
      const pre = await fetch(`${s.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'GET' } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    } finally {
      await s.close();
    }
  });
});

describe('rate-limit headers', () => {
  it('sends the IETF RateLimit-Policy and RateLimit fields beside X-RateLimit-*', async () => {
    const s = await startTestServer('ratelimit-fields', { RATE_LIMIT_READ: 5 });
    try {
      const c = client(s);
      const o = await signup(c);
      const first = await c.get(`/v1/workspaces/${o.workspaceId}/members`, { token: o.token });
      expect(first.headers.get('ratelimit-policy')).toBe('"read";q=5;w=60');
      expect(first.headers.get('ratelimit')).toMatch(/^"read";r=4;t=\d+$/);
      expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
      const t = Number(/t=(\d+)/.exec(first.headers.get('ratelimit')!)![1]);
      expect(t).toBe(Number(first.headers.get('x-ratelimit-reset')));
    } finally {
      await s.close();
    }
  });
});
