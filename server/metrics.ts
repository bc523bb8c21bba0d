// Prometheus metrics (prom-client), one registry per process (README.md,
// "Metrics"). What is counted:
//
//   pressroom_http_requests_total / pressroom_http_request_duration_seconds
//       by method, route template (`/v1/workspaces/:workspaceId/content`, never
//       the raw path: ids would explode the series) and status
//   pressroom_rate_limit_refusals_total        429 answers, by route and code
//   pressroom_db_pool_connections              the request pool: acquired, idle, pending, waiting
//   pressroom_queue_jobs / _oldest_age_seconds per pg-boss queue and state,
//       read at scrape time through app.queue_stats() (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15d-metrics.sql)
//   pressroom_publish_outcomes_total           by connector and outcome
//   pressroom_publish_lateness_seconds         sent time - scheduled time
//   pressroom_publish_limit_deferrals_total    editions put back by a publish limit
//   pressroom_publish_batch_size               jobs per claim statement
//   plus prom-client's default process metrics (pressroom_process_*, pressroom_nodejs_*),
//   less its three gauges named *_total (DROPPED_DEFAULTS below).
//
// Served on the API port by `GET /metrics` behind `Authorization: Bearer
// $METRICS_TOKEN` (off while unset), or, with METRICS_PORT, on a port of its
// own without a token (metricsServer()).
import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DatabasePool } from 'slonik';
import type { Config } from './config.ts';
import { sql } from './db/pool.ts';
import { asWorker } from './db/worker.ts';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'pressroom_' });

/**
 * prom-client's defaults include three gauges whose names end in `_total`,
 * which the exposition format's naming rule keeps for counters (`promtool
 * check metrics`: "non-counter metrics should not have _total suffix"). Each
 * is the sum of the by-type gauge of the same name without the suffix
 * (`pressroom_nodejs_active_handles{type}` etc.), which stays: `sum()` of it
 * answers the same. tests/api/metrics.test.ts holds every series to the rule.
 */
const DROPPED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'].map((n) => `pressroom_${n}`);
for (const name of DROPPED_DEFAULTS) registry.removeSingleMetric(name);

export const httpRequests = new Counter({
  name: 'pressroom_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});
export const httpDuration = new Histogram({
  name: 'pressroom_http_request_duration_seconds',
  help: 'Time from the request arriving to its answer being written, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
export const rateLimitRefusals = new Counter({
  name: 'pressroom_rate_limit_refusals_total',
  help: '429 answers (rate limit or failed-credential throttle), by route template and error code.',
  labelNames: ['route', 'code'] as const,
  registers: [registry],
});
export const publishOutcomes = new Counter({
  name: 'pressroom_publish_outcomes_total',
  help: 'Publish attempts recorded, by connector and outcome (published, failed, transient, unknown), and claims skipped.',
  labelNames: ['connector', 'outcome'] as const,
  registers: [registry],
});
export const publishLateness = new Histogram({
  name: 'pressroom_publish_lateness_seconds',
  help: 'How late a published edition reached its platform: time of the answer - scheduled time.',
  labelNames: ['connector'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
  registers: [registry],
});
export const publishDeferrals = new Counter({
  name: 'pressroom_publish_limit_deferrals_total',
  help: 'Editions put back with a later start because their integration or connector was at a publish limit.',
  registers: [registry],
});
export const publishBatchSize = new Histogram({
  name: 'pressroom_publish_batch_size',
  help: 'Publish jobs claimed per claim statement.',
  buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500],
  registers: [registry],
});

/** The pieces the scrape-time gauges read; set once per process by instrumentPool / instrumentQueues. */
const sources: { pool?: DatabasePool; queues?: DatabasePool } = {};

new Gauge({
  name: 'pressroom_db_pool_connections',
  help: 'The request pool: connections acquired (in use), idle and being opened, and callers waiting for one.',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    const pool = sources.pool;
    if (!pool) return;
    const s = pool.state();
    this.set({ state: 'acquired' }, s.acquiredConnections);
    this.set({ state: 'idle' }, s.idleConnections);
    this.set({ state: 'pending' }, s.pendingConnections);
    this.set({ state: 'waiting' }, s.waitingClients);
  },
});

interface QueueStat {
  queue: string;
  state: string;
  jobs: number;
  oldestSeconds: number | null;
}

let queueStatsRead: Promise<QueueStat[]> | null = null;
/** One read per scrape, shared by both queue gauges (they collect at the same time). */
function queueStats(): Promise<QueueStat[]> {
  const pool = sources.queues;
  if (!pool) return Promise.resolve([]);
  if (!queueStatsRead) {
    queueStatsRead = asWorker<QueueStat[]>(pool, sql.fragment`app.queue_stats()`).finally(() => {
      queueStatsRead = null;
    });
  }
  return queueStatsRead;
}

new Gauge({
  name: 'pressroom_queue_jobs',
  help: 'pg-boss jobs per queue and state (created, retry, active).',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const r of await queueStats()) this.set({ queue: r.queue, state: r.state }, r.jobs);
  },
});
new Gauge({
  name: 'pressroom_queue_oldest_age_seconds',
  help: 'Age of the oldest job waiting or running per pg-boss queue and state: for created and retry, since it became due; for active, since it started.',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const r of await queueStats()) if (r.oldestSeconds !== null) this.set({ queue: r.queue, state: r.state }, r.oldestSeconds);
  },
});

/** Lets the gauges read the request pool's state and the queues (through app.queue_stats as pressroom_worker); one app per process: the last call wins. */
export function instrumentPool(pool: DatabasePool) {
  sources.pool = pool;
  sources.queues = pool;
}

/** Express middleware: counts and times every answer by route template. Mounted first. */
export function httpMetrics(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    // The error code of the envelope, for the refusals counter.
    const json = res.json.bind(res);
    res.json = (body?: unknown) => {
      const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
      if (typeof code === 'string') res.locals.errorCode = code;
      return json(body);
    };
    res.once('finish', () => {
      // The template of the route that answered; answers no route took are grouped.
      const template = req.route?.path ? `${req.baseUrl ?? ''}${String(req.route.path)}` : 'unmatched';
      const labels = { method: req.method, route: template, status: String(res.statusCode) };
      httpRequests.inc(labels);
      httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
      if (res.statusCode === 429) rateLimitRefusals.inc({ route: template, code: String(res.locals.errorCode ?? 'RATE_LIMITED') });
    });
    next();
  };
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * GET /metrics on the API port: 404 while METRICS_TOKEN is unset or METRICS_PORT
 * serves the metrics elsewhere; 401 without the right bearer token.
 */
export function metricsRoute(config: Pick<Config, 'METRICS_TOKEN' | 'METRICS_PORT'>): RequestHandler | null {
  const token = config.METRICS_TOKEN;
  if (!token || config.METRICS_PORT) return null;
  return async (req: Request, res: Response) => {
    const m = /^Bearer (.+)$/.exec(req.get('authorization') ?? '');
    if (!m || !sameSecret(m[1], token)) {
      res.set('WWW-Authenticate', 'Bearer realm="metrics"');
      res.status(401).type('text/plain').send('A valid metrics token is required: Authorization: Bearer <METRICS_TOKEN>.\n');
      return;
    }
    res.type(registry.contentType).send(await registry.metrics());
  };
}

/** With METRICS_PORT: the metrics on a port of their own (HOST), without a token; any other path is 404. */
export async function metricsServer(config: Pick<Config, 'METRICS_PORT' | 'HOST'>): Promise<Server | null> {
  if (!config.METRICS_PORT) return null;
  const server = createServer(async (req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here.\n');
      return;
    }
    try {
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType }).end(body);
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${e instanceof Error ? e.message : String(e)}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.METRICS_PORT, config.HOST, () => resolve());
  });
  return server;
}
