// Hostile input that used to answer 500 or outside the envelope: NUL bytes,
// UTC offsets PostgreSQL cannot store, deep nesting, what Node's HTTP parser
// refuses, undecodable paths (server/http/guard.ts, server/http/server.ts).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
