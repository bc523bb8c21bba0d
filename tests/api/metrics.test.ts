// GET /metrics (server/metrics.ts, README.md "Metrics"): off without
// METRICS_TOKEN, 401 without the right bearer token, the Prometheus text
// format with it: requests by route template and status, latency histogram,
// 429 refusals, the request pool, the pg-boss queues (depth and age, read
// through app.queue_stats), publish outcomes and lateness; with METRICS_PORT,
// served on a port of its own without a token. Every family follows the
// naming rule of `promtool check metrics` (promtoolProblems below).
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

/**
 * The naming rules `promtool check metrics` applies to the families of an
 * exposition (Prometheus' util/promlint): a counter's name ends in `_total`;
 * no other type's does (gauge, histogram, summary, untyped: a sample with no
 * `# TYPE` line is untyped); and `_bucket`, `_count`, `_sum` are the series of
 * histograms and summaries only. One line per problem.
 */
function promtoolProblems(text: string): string[] {
  const types = new Map<string, string>();
  const sampled = new Set<string>();
  for (const line of text.split('\n')) {
    const typed = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typed) {
      types.set(typed[1], typed[2]);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1];
    if (name) sampled.add(name);
  }
  // Samples of a family: the family's name, or it plus the suffixes of its type.
  const familyOf = (sample: string) => {
    if (types.has(sample)) return sample;
    const m = /^(.*)_(bucket|count|sum|created)$/.exec(sample);
    return m && ['histogram', 'summary'].includes(types.get(m[1]) ?? '') ? m[1] : null;
  };
  for (const sample of sampled) if (!familyOf(sample)) types.set(sample, 'untyped');
  const problems: string[] = [];
  for (const [name, type] of types) {
    if (type === 'counter' && !name.endsWith('_total')) problems.push(`${name}: counter metrics should have "_total" suffix`);
    if (type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: non-counter metrics should not have "_total" suffix (${type})`);
    if (!['histogram', 'summary'].includes(type) && /_(bucket|count|sum)$/.test(name)) problems.push(`${name}: non-histogram and non-summary metrics should not have "${/_(\w+)$/.exec(name)![1]}" suffix (${type})`);
  }
  return problems.sort();
}

describe('promtoolProblems (the naming rule the scrape is held to)', () => {
  it('finds a gauge, a histogram or an untyped series named *_total, and a counter without it', () => {
    const text = [
      '# TYPE a_total gauge', 'a_total 1',
      '# TYPE b counter', 'b 2',
      '# TYPE c_total histogram', 'c_total_bucket{le="+Inf"} 1', 'c_total_sum 1', 'c_total_count 1',
      'd_total 3',
      '# TYPE e_count gauge', 'e_count 1',
      '# TYPE ok_total counter', 'ok_total 1',
      '# TYPE ok_seconds histogram', 'ok_seconds_bucket{le="+Inf"} 1', 'ok_seconds_sum 1', 'ok_seconds_count 1',
      '# TYPE ok_gauge gauge', 'ok_gauge 1',
    ].join('\n');
    expect(promtoolProblems(text)).toEqual([
      'a_total: non-counter metrics should not have "_total" suffix (gauge)',
      'b: counter metrics should have "_total" suffix',
      'c_total: non-counter metrics should not have "_total" suffix (histogram)',
      'd_total: non-counter metrics should not have "_total" suffix (untyped)',
      'e_count: non-histogram and non-summary metrics should not have "count" suffix (gauge)',
    ]);
  });
});

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

  it('names every family as promtool check metrics wants: _total on counters and on nothing else', async () => {
    const text = await (await scrape(server.baseUrl, TOKEN)).text();
    expect(promtoolProblems(text)).toEqual([]);
    // prom-client's three *_total gauges are gone; their by-type gauges, whose sum they were, stay.
    for (const name of ['handles', 'requests', 'resources']) expect(text).not.toContain(`pressroom_nodejs_active_${name}_total`);
    expect(text).toContain('# TYPE pressroom_nodejs_active_handles gauge');
    expect(text).toContain('# TYPE pressroom_nodejs_active_resources gauge');
    expect(text).toContain('# TYPE pressroom_process_cpu_seconds_total counter');
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
