import { PgBoss } from 'pg-boss';
import type { DatabasePool } from 'slonik';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { startOutboxSweep } from '../db/topology.ts';
import { registerAnalyticsJobs } from './analytics.ts';
import { registerCredentialJobs } from './credentials.ts';
import { registerInboxJobs } from './inbox.ts';
import { registerLifecycleJobs } from './lifecycle.ts';
import { registerMediaJobs } from './media.ts';
import { registerPublishJobs } from './publish.ts';
import { PGBOSS_SCHEMA, QUEUES } from './queues.ts';
import { registerRecurringJobs } from './recurring.ts';
import { registerReviewJobs } from './reviews.ts';

export { QUEUES };

export const maintenance = {
  purgeExpired: (pool: DatabasePool) => asWorker(pool, sql.fragment`to_jsonb(app.purge_expired())`),
  ensureAuditPartitions: (pool: DatabasePool) => asWorker(pool, sql.fragment`to_jsonb(audit.ensure_partitions(3))`),
};

/**
 * pg-boss on the owner connection (it manages its own schema), jobs run
 * through the app pool as pressroom_worker. Every handler is idempotent.
 */
export async function startWorker(deps: AppDeps, opts: { ownerUrl: string }) {
  const { pool, log } = deps;
  const boss = new PgBoss({ connectionString: opts.ownerUrl, schema: PGBOSS_SCHEMA, max: 4, superviseIntervalSeconds: 10 });
  boss.on('error', (e: unknown) => log.error('pg-boss error', { err: e }));
  await boss.start();
  await boss.schedule(QUEUES.purge, '*/5 * * * *');
  await boss.schedule(QUEUES.auditPartitions, '17 3 * * *');
  await boss.work(QUEUES.purge, async () => {
    const r = await maintenance.purgeExpired(pool);
    log.info('purged expired rows', { job: QUEUES.purge, ...r });
    return r;
  });
  await boss.work(QUEUES.auditPartitions, async () => {
    const created = await maintenance.ensureAuditPartitions(pool);
    log.info('audit partitions ensured', { job: QUEUES.auditPartitions, created });
    return { created };
  });
  await registerRecurringJobs(boss, pool, log);
  await registerMediaJobs(boss, deps);
  await registerPublishJobs(boss, deps);
  await registerCredentialJobs(boss, deps); // connected accounts: refresh ahead of expiry
  await registerAnalyticsJobs(boss, deps);
  await registerReviewJobs(boss, pool, log); // reviews: expiry
  await registerInboxJobs(boss, deps);
  const lifecycle = await registerLifecycleJobs(boss, deps, { listenUrl: opts.ownerUrl }); // lifecycle webhooks
  // On a Citus cluster: the jobs that triggers on workers queued through their workspace's outbox.
  const stopSweep = await startOutboxSweep(pool, log);
  // Upkeep that must not wait for the first cron tick.
  await maintenance.ensureAuditPartitions(pool);
  return {
    boss,
    /** Stops fetching, lets running jobs finish (up to timeoutMs), then closes. */
    stop: async (timeoutMs: number) => {
      await stopSweep();
      await lifecycle.stop();
      await boss.stop({ graceful: true, timeout: timeoutMs, close: true });
    },
  };
}
