// Analytics jobs (as pressroom_worker through the app pool; idempotent):
//
//   analytics.sync     every 10 minutes: the metrics of published editions
//                      that are due (recent ones every hour, older ones every
//                      day, none after a year: app.settings analytics_*), the
//                      account metrics of integrations (every 6 hours), and
//                      reports past their retention (files, then rows)
//   analytics.report   one per report row (written by trigger
//                      analytics_reports_30_job with the row): renders the PDF
//
// Connector calls and PDF rendering run outside any transaction: SQL says
// what is due (one short transaction), the connectors are called, and the
// results are recorded in another (app.analytics_record_sync), whose
// snapshots roll up by trigger. A snapshot is unique per edition and instant,
// so a job delivered twice records nothing twice.
//
// An integration of a platform connector (mastodon, bluesky, x, linkedin) is
// asked as its connected account: the credentials publishing uses, read once
// per batch (server/platforms/credentials.ts, forIntegrations), refreshed once
// when the platform refuses the token (callAsAccount); one to reconnect, or
// without credentials, is a failed sync with the reason.
import { createHash } from 'node:crypto';
import type { Job, PgBoss } from 'pg-boss';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { renderReport, type ReportData } from '../analytics/report.ts';
import { callAsAccount, connectsAccount, createCredentialService, type AccountCredentials, type CredentialService } from '../platforms/credentials.ts';
import { ConnectorError, type ConnectorName, type IntegrationRef, type PlatformCapabilities } from '../platforms/types.ts';
import { QUEUES } from './queues.ts';

export type AnalyticsDeps = Pick<AppDeps, 'pool' | 'log' | 'connectors' | 'storage' | 'config'>;

interface DueIntegration {
  id: string;
  connector: ConnectorName;
  platform: string;
  name: string;
  username: string | null;
  settings: Record<string, unknown> | null;
  capabilities: PlatformCapabilities | null;
}

interface DuePost {
  contentId: string;
  platformPostId: string;
  sentAt: string;
  integration: DueIntegration;
}

type Outcome = 'ok' | 'failed' | 'rate_limited' | 'unsupported';

const refOf = (i: DueIntegration): IntegrationRef => ({
  id: i.id,
  connector: i.connector,
  platform: i.platform,
  name: i.name,
  username: i.username,
  settings: i.settings ?? {},
  ...(i.capabilities ? { capabilities: i.capabilities } : {}),
});

function failure(e: unknown): { outcome: Outcome; error: string } {
  if (e instanceof ConnectorError && e.code === 'RATE_LIMITED') return { outcome: 'rate_limited', error: e.message };
  return { outcome: 'failed', error: e instanceof Error ? e.message : String(e) };
}

/** The connected accounts' credentials of a batch (platform connectors only); a failed read leaves each to retry. */
async function accountsOf(service: CredentialService, integrations: DueIntegration[]): Promise<Map<string, AccountCredentials>> {
  const ids = [...new Set(integrations.filter((i) => connectsAccount(i.connector)).map((i) => i.id))];
  if (ids.length === 0) return new Map();
  try {
    return await service.forIntegrations(ids);
  } catch (e) {
    const reason = `The credentials could not be read: ${e instanceof Error ? e.message : String(e)}`;
    return new Map(ids.map((id) => [id, { state: 'retry', reason, retryAt: null } as AccountCredentials]));
  }
}

/**
 * A metrics call for an integration: as its connected account when it has one (a refused
 * token refreshed once), else as it is (sandbox, webhook). Throws what the call throws, or
 * why the account cannot be used.
 */
async function metricsCall<R>(service: CredentialService, i: DueIntegration, accounts: Map<string, AccountCredentials>, call: (ref: IntegrationRef) => Promise<R>): Promise<R> {
  if (!connectsAccount(i.connector)) return call(refOf(i));
  const r = await callAsAccount(service, refOf(i), accounts.get(i.id), call);
  if (r.state === 'called') {
    // The batch's other calls for this account use the refreshed token at once.
    if (r.refreshed) accounts.set(i.id, r.account);
    return r.value;
  }
  // Likewise, the batch's other calls for an account to reconnect do not ask again.
  accounts.set(i.id, r.account);
  const a = r.account;
  throw new Error(a.state === 'reconnect_required' ? `The account must be reconnected (POST .../integrations/${i.id}/reconnect): ${a.reason}` : a.reason);
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function pooled<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

export interface SyncResult {
  posts: number;
  snapshots: number;
  accounts: number;
  failed: number;
  rateLimited: number;
}

/** One sync run: every due edition and account, in batches, until nothing is due (or maxBatches). */
export async function runMetricsSync(deps: Pick<AnalyticsDeps, 'pool' | 'connectors' | 'config' | 'log'>, opts: { batch?: number; maxBatches?: number; at?: () => Date } = {}): Promise<SyncResult> {
  const batch = opts.batch ?? 200;
  const maxBatches = opts.maxBatches ?? 20;
  const at = opts.at ?? (() => new Date());
  const result: SyncResult = { posts: 0, snapshots: 0, accounts: 0, failed: 0, rateLimited: 0 };
  const service = createCredentialService({ pool: deps.pool, config: deps.config, log: deps.log });
  const count = (o: Outcome) => {
    if (o === 'failed') result.failed++;
    if (o === 'rate_limited') result.rateLimited++;
  };
  for (let i = 0; i < maxBatches; i++) {
    const due = await asWorker<DuePost[]>(deps.pool, sql.fragment`app.analytics_due_posts(${batch})`);
    if (due.length === 0) break;
    const accounts = await accountsOf(service, due.map((p) => p.integration));
    const posts = await pooled(due, 8, async (p) => {
      try {
        const when = at();
        const connector = deps.connectors.get(p.integration.connector);
        const m = await metricsCall(service, p.integration, accounts, (ref) => connector.fetchMetrics(ref, { platformPostId: p.platformPostId, publishedAt: p.sentAt, at: when }));
        if (!m) return { contentId: p.contentId, outcome: 'unsupported' as Outcome };
        return { contentId: p.contentId, outcome: 'ok' as Outcome, capturedAt: when.toISOString(), metrics: m };
      } catch (e) {
        return { contentId: p.contentId, ...failure(e) };
      }
    });
    posts.forEach((p) => count(p.outcome));
    const r = await asWorker<{ snapshots: number }>(deps.pool, sql.fragment`app.analytics_record_sync(${sql.jsonb({ posts })})`);
    result.posts += due.length;
    result.snapshots += r.snapshots;
    if (due.length < batch) break;
  }
  for (let i = 0; i < maxBatches; i++) {
    const due = await asWorker<DueIntegration[]>(deps.pool, sql.fragment`app.analytics_due_accounts(${batch})`);
    if (due.length === 0) break;
    const credentials = await accountsOf(service, due);
    const accounts = await pooled(due, 8, async (g) => {
      try {
        const when = at();
        const connector = deps.connectors.get(g.connector);
        const m = await metricsCall(service, g, credentials, (ref) => connector.fetchAccountMetrics(ref, { at: when }));
        if (!m) return { integrationId: g.id, outcome: 'unsupported' as Outcome };
        return { integrationId: g.id, outcome: 'ok' as Outcome, capturedAt: when.toISOString(), account: m };
      } catch (e) {
        return { integrationId: g.id, ...failure(e) };
      }
    });
    accounts.forEach((a) => count(a.outcome));
    const r = await asWorker<{ accounts: number }>(deps.pool, sql.fragment`app.analytics_record_sync(${sql.jsonb({ accounts })})`);
    result.accounts += r.accounts;
    if (due.length < batch) break;
  }
  return result;
}

/** Removes reports past their retention: the files first, then the rows. */
export async function purgeReports(deps: Pick<AnalyticsDeps, 'pool' | 'storage'>): Promise<number> {
  const expired = await asWorker<{ id: string; storageKey: string | null }[]>(deps.pool, sql.fragment`app.analytics_expired_reports(${200})`);
  if (expired.length === 0) return 0;
  for (const r of expired) if (r.storageKey) await deps.storage.driver.delete(r.storageKey);
  return asWorker<number>(deps.pool, sql.fragment`to_jsonb(app.analytics_forget_reports(${sql.array(expired.map((r) => r.id), 'uuid')}))`);
}

/** Renders one report: claim (short transaction), render and store (none), finish (short transaction). */
export async function runReport(deps: Pick<AnalyticsDeps, 'pool' | 'storage' | 'log'>, reportId: string): Promise<{ status: string }> {
  const data = await asWorker<ReportData | null>(deps.pool, sql.fragment`app.analytics_report_claim(${reportId})`);
  if (!data) return { status: 'skipped' };
  try {
    const pdf = await renderReport(data);
    const key = `reports/${data.workspace.id}/${data.report.id}`;
    await deps.storage.driver.put(key, pdf, 'application/pdf');
    const sha = createHash('sha256').update(pdf).digest('hex');
    const r = await asWorker<{ status: string }>(deps.pool, sql.fragment`app.analytics_report_finish(${reportId}, ${key}, ${pdf.byteLength}, ${sha}, ${null})`);
    return { status: r.status };
  } catch (e) {
    deps.log.error('analytics report failed', { reportId, err: e });
    const r = await asWorker<{ status: string }>(deps.pool,
      sql.fragment`app.analytics_report_finish(${reportId}, ${null}, ${null}, ${null}, ${'The report could not be rendered; ask for a new one.'})`);
    return { status: r.status };
  }
}

/** Schedules the sync and works both queues (called by startWorker). */
export async function registerAnalyticsJobs(boss: PgBoss, deps: AnalyticsDeps, opts: { syncCron?: string; pollingIntervalSeconds?: number } = {}) {
  await boss.schedule(QUEUES.analyticsSync, opts.syncCron ?? '*/10 * * * *');
  await boss.work(QUEUES.analyticsSync, async () => {
    const r = await runMetricsSync(deps);
    const reportsRemoved = await purgeReports(deps);
    if (r.posts || r.accounts || r.failed || reportsRemoved) deps.log.info('analytics synced', { job: QUEUES.analyticsSync, ...r, reportsRemoved });
    return { ...r, reportsRemoved };
  });
  await boss.work<{ reportId: string }>(QUEUES.analyticsReport, { pollingIntervalSeconds: opts.pollingIntervalSeconds ?? 1 },
    async (jobs: Job<{ reportId: string }>[]) => Promise.all(jobs.map((job) => runReport(deps, job.data.reportId))));
}
