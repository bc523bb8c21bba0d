import { PgBoss } from 'pg-boss';
import type { DatabasePool } from 'slonik';
import type { Config } from '../config.ts';
import { jsonResult, sql } from '../db/pool.ts';
import { PGBOSS_SCHEMA, QUEUES } from './queues.ts';
import { registerMediaJobs } from './media.ts';
import { registerPublishJobs } from './publish.ts';
import { registerMediaStorage } from '../storage/index.ts';
import { registerRecurringJobs } from './recurring.ts';
import type { Logger } from '../log.ts';

export { QUEUES };

/** Runs a maintenance function as pressroom_worker. */
async function asWorker(pool: DatabasePool, fn: ReturnType<typeof sql.fragment>) {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`select set_config('role', 'pressroom_worker', true)`);
    return tx.oneFirst(sql.type(jsonResult)`select ${fn} as result`);
  });
}

export const maintenance = {
  purgeExpired: (pool: DatabasePool) => asWorker(pool, sql.fragment`to_jsonb(app.purge_expired())`),
  ensureAuditPartitions: (pool: DatabasePool) => asWorker(pool, sql.fragment`to_jsonb(audit.ensure_partitions(3))`),
};

/**
 * pg-boss on the owner connection (it manages its own schema), jobs run
 * through the app pool as pressroom_worker. Every handler is idempotent.
 */
export async function startWorker(opts: { ownerUrl: string; pool: DatabasePool; log: Logger; config: Config }) {
  const { pool, log } = opts;
  // Signed media URLs for platforms (the secret comes from the database).
  registerMediaStorage(opts.config, pool);
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
  await registerMediaJobs(boss, pool, log);
  await registerPublishJobs(boss, pool, log, opts.config);
  // Upkeep that must not wait for the first cron tick.
  await maintenance.ensureAuditPartitions(pool);
  return {
    boss,
    /** Stops fetching, lets running jobs finish (up to timeoutMs), then closes. */
    stop: (timeoutMs: number) => boss.stop({ graceful: true, timeout: timeoutMs, close: true }),
  };
}
