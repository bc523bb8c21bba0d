// Audit equality under load: concurrent calls of every outcome (success,
// validation, not found, conflict, rate limit, unknown route and method,
// undecodable path, bogus credentials past their limit) leave exactly one
// audit row per call, with the status the client saw, except the refused
// credentials beyond AUTH_FAILURE_AUDIT, which one summary row counts
// (audit.api_calls.calls). Unauthenticated calls to unknown routes leave none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer('audit-equality', { RATE_LIMIT_WRITE: 40, AUTH_FAILURE_LIMIT: 25, AUTH_FAILURE_AUDIT: 5, TRUST_PROXY: true });
});
afterAll(async () => server?.close());

interface Call {
  method: string;
  path: string;
  token?: string;
  body?: unknown;
  from: string;
  /** Whether the call must leave audit: one row of its own, or a share of a summary row. */
  audited: boolean;
}

describe('audit equality', () => {
  it('audit rows equal the calls made, exactly, with failures mixed in', { timeout: 120_000 }, async () => {
    const api = client(server);
    const owner = await signup(api);
    const key = (await createKey(api, owner.token, owner.workspaceId, { role: 'editor' })).key;
    const ws = `/v1/workspaces/${owner.workspaceId}`;
    const start = (await server.owner.query(`select clock_timestamp() as t`)).rows[0].t;
    // Stay inside one minute for the failed-credential window.
    const s = new Date().getUTCSeconds();
    if (s >= 45) await new Promise((r) => setTimeout(r, (61 - s) * 1000));

    const calls: Call[] = [];
    const us = '198.51.100.1';
    const them = '203.0.113.66';
    for (let i = 0; i < 60; i++) {
      calls.push({ method: 'GET', path: '/v1/workspaces', token: key, from: us, audited: true });
      calls.push({ method: 'POST', path: `${ws}/tags`, token: key, body: { name: `tag ${i % 45}` }, from: us, audited: true }); // 201, 409, then 429
      calls.push({ method: 'POST', path: `${ws}/tags`, token: key, body: { name: 42 }, from: us, audited: true }); // 400 (or 429)
      calls.push({ method: 'GET', path: `${ws}/content/${crypto.randomUUID()}`, token: key, from: us, audited: true }); // 404
      calls.push({ method: 'GET', path: `/v1/workspaces?x=${i}`, token: `prk_bogus_${i}`, from: them, audited: true }); // 401, then 429 AUTH_THROTTLED
      if (i % 3 === 0) {
        calls.push({ method: 'GET', path: '/v1/nothing-here', token: key, from: us, audited: true }); // 404, route null
        calls.push({ method: 'PUT', path: '/v1/workspaces', token: key, from: us, audited: true }); // 405, route null
        calls.push({ method: 'GET', path: `${ws}/media/%C0%AF`, token: key, from: us, audited: true }); // 400 MALFORMED_URL
        calls.push({ method: 'GET', path: '/v1/nothing-here', token: 'prk_noise', from: us, audited: false }); // unauthenticated noise
        calls.push({ method: 'GET', path: '/v1/nothing-here', from: us, audited: false });
      }
    }
    // Shuffled, deterministically, and sent 8 at a time.
    let seed = 16;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = calls.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [calls[i], calls[j]] = [calls[j], calls[i]];
    }
    const seen: { call: Call; id: string; status: number; code: string | null }[] = [];
    for (let i = 0; i < calls.length; i += 8) {
      await Promise.all(
        calls.slice(i, i + 8).map(async (call, k) => {
          const id = `eq-${i + k}`;
          const headers: Record<string, string> = { 'x-request-id': id, 'x-forwarded-for': call.from };
          if (call.token) headers.authorization = `Bearer ${call.token}`;
          if (call.body !== undefined) headers['content-type'] = 'application/json';
          const res = await fetch(server.baseUrl + call.path, { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) });
          const body: any = res.status === 204 ? null : await res.json();
          expect(res.status).toBeLessThan(500);
          seen.push({ call, id, status: res.status, code: body?.error?.code ?? null });
        }),
      );
    }
    const statuses = new Set(seen.map((x) => `${x.status} ${x.code ?? ''}`.trim()));
    for (const s of ['200', '201', '400 VALIDATION_FAILED', '400 MALFORMED_URL', '401 UNAUTHENTICATED', '404 NOT_FOUND', '405 METHOD_NOT_ALLOWED', '409 NAME_TAKEN', '429 RATE_LIMITED', '429 AUTH_THROTTLED']) {
      expect(statuses, `the mix includes ${s}`).toContain(s);
    }

    // The failed-credential window closes; its summary row is written.
    await server.owner.query(`update app.auth_failures set window_start = window_start - interval '1 minute'`);
    await server.owner.query(`select app.flush_auth_failures()`);
    const rows = (
      await server.owner.query<{ request_id: string; status: number; error_code: string | null; calls: number }>(
        `select request_id, status, error_code, calls from audit.api_calls where occurred_at >= $1 or error_code = 'AUTH_FAILURE_BURST'`,
        [start],
      )
    ).rows;
    const own = new Map<string, { status: number; n: number }>();
    for (const r of rows.filter((r) => r.request_id.startsWith('eq-'))) own.set(r.request_id, { status: r.status, n: (own.get(r.request_id)?.n ?? 0) + 1 });
    const summarized = rows.filter((r) => r.error_code === 'AUTH_FAILURE_BURST').reduce((n, r) => n + r.calls, 0);

    const expected = seen.filter((x) => x.call.audited);
    const missing = expected.filter((x) => !own.has(x.id));
    // Only refused credentials go without a row of their own, and the summary counts each of them.
    expect(missing.every((x) => x.call.from === them && ['UNAUTHENTICATED', 'AUTH_THROTTLED'].includes(x.code!))).toBe(true);
    expect(summarized).toBe(missing.length);
    expect(missing.length).toBeGreaterThan(0);
    // Every other call: exactly one row, with the status the client saw.
    for (const x of expected.filter((x) => own.has(x.id))) expect(own.get(x.id), x.id).toEqual({ status: x.status, n: 1 });
    // Unauthenticated noise left nothing.
    for (const x of seen.filter((x) => !x.call.audited)) expect(own.has(x.id), x.id).toBe(false);
    // sum(calls) is the number of calls audit stands for.
    expect(rows.filter((r) => r.request_id.startsWith('eq-') || r.error_code === 'AUTH_FAILURE_BURST').reduce((n, r) => n + r.calls, 0)).toBe(expected.length);
    console.log(`audit equality: ${seen.length} calls, ${expected.length} to audit, ${own.size} rows of their own + ${summarized} in ${rows.filter((r) => r.error_code === 'AUTH_FAILURE_BURST').length} summary row(s)`);
  });
});
