// GET /metrics (server/metrics.ts, README.md "Metrics"): off without
// METRICS_TOKEN, 401 without the right bearer token, the Prometheus text
// format with it: requests by route template and status, latency histogram,
// 429 refusals, the request pool, the pg-boss queues (depth and age, read
// through app.queue_stats), publish outcomes and lateness; with METRICS_PORT,
// served on a port of its own without a token.
import type { Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsServer } from '../../server/metrics.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const TOKEN = 'metrics-token-0123456789abcdef';
let server: TestServer;
let plain: TestServer;

beforeAll(async () => {
  // One registry per process, and the gauges read the pool of the app built last
  // (a process serves one app): the server under test is built second.
  plain = await startTestServer('metrics_off');
  server = await startTestServer('metrics', { METRICS_TOKEN: TOKEN, RATE_LIMIT_READ: 3 });
}, 60_000);

afterAll(async () => {
  await Promise.all([server?.close(), plain?.close()]);
});

const scrape = (base: string, token?: string) => fetch(`${base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

/** The value of one series, by name and labels (exact match of every label given). */
function series(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return null;
}

describe('GET /metrics on the API port', () => {
  it('is not served while METRICS_TOKEN is unset', async () => {
    const res = await scrape(plain.baseUrl, TOKEN);
    expect(res.status).toBe(404);
  });

  it('needs the bearer token', async () => {
    for (const token of [undefined, 'wrong-token-0123456789abcdef', `${TOKEN}x`]) {
      const res = await scrape(server.baseUrl, token);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it('counts requests by route template and status, times them, and counts 429 refusals', async () => {
    const api = client(server);
    const o = await signup(api);
    // RATE_LIMIT_READ is 3 a minute: the fourth read of the workspace is refused.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await api.get(`/v1/workspaces/${o.workspaceId}/content`, { token: o.token })).status);
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);

    const res = await scrape(server.baseUrl, TOKEN);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const route = '/v1/workspaces/:workspaceId/content';
    expect(series(text, 'pressroom_http_requests_total', { method: 'GET', route, status: '200' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'pressroom_http_requests_total', { method: 'GET', route, status: '429' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'pressroom_http_request_duration_seconds_count', { method: 'GET', route, status: '200' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'pressroom_http_request_duration_seconds_bucket', { method: 'GET', route, status: '200', le: '+Inf' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'pressroom_rate_limit_refusals_total', { route, code: 'RATE_LIMITED' })).toBeGreaterThanOrEqual(1);
    // Never a raw path with ids in a label.
    expect(text).not.toContain(o.workspaceId);
  });

  it('shows the request pool, the queues and the publishing series', async () => {
    // A publish job due a minute ago, waiting: the queue gauges see it.
    await server.owner.query(
      `insert into pgboss.job (id, name, data, start_after) values (gen_random_uuid(), 'content.publish', '{}', now() - interval '60 seconds')`,
    );
    const text = await (await scrape(server.baseUrl, TOKEN)).text();
    expect(series(text, 'pressroom_db_pool_connections', { state: 'idle' })).not.toBeNull();
    expect(series(text, 'pressroom_db_pool_connections', { state: 'waiting' })).toBe(0);
    expect(series(text, 'pressroom_queue_jobs', { queue: 'content.publish', state: 'created' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'pressroom_queue_oldest_age_seconds', { queue: 'content.publish', state: 'created' })).toBeGreaterThanOrEqual(59);
    for (const name of ['pressroom_publish_outcomes_total', 'pressroom_publish_lateness_seconds', 'pressroom_publish_limit_deferrals_total', 'pressroom_process_cpu_seconds_total']) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });
});

describe('METRICS_PORT', () => {
  let metrics: Server | null = null;
  afterAll(async () => {
    await new Promise<void>((resolve) => (metrics ? metrics.close(() => resolve()) : resolve()));
  });

  it('serves /metrics on a port of its own without a token, and nothing else there; the API port then has none', async () => {
    // A free port, as METRICS_PORT would name one.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    metrics = await metricsServer({ METRICS_PORT: port, HOST: '127.0.0.1' });
    expect(metrics).not.toBeNull();
    const base = `http://127.0.0.1:${(metrics!.address() as AddressInfo).port}`;
    const res = await scrape(base);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE pressroom_http_requests_total counter');
    expect((await fetch(`${base}/healthz`)).status).toBe(404);

    const both = await startTestServer('metrics_port', { METRICS_TOKEN: TOKEN, METRICS_PORT: 1 });
    try {
      expect((await scrape(both.baseUrl, TOKEN)).status).toBe(404);
    } finally {
      await both.close();
    }
  });
});
