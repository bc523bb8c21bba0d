import type { PgBoss } from 'pg-boss';
import type { DatabasePool } from 'slonik';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { Logger } from '../log.ts';
import { QUEUES } from './queues.ts';

export interface MaterializeResult {
  series: number;
  occurrences: number;
  failed: number;
}

/**
 * Extends every active recurring series' occurrences `horizonDays` ahead (at
 * least 3 ahead), as pressroom_worker, in one transaction; each series runs in its
 * own subtransaction inside app.materialize_due_series, so one broken series
 * does not hold the others back. Idempotent: a series' next occurrence index
 * only moves forward, so a repeated run makes nothing twice.
 */
export async function materializeRecurringSeries(pool: DatabasePool, horizonDays = 30): Promise<MaterializeResult> {
  return asWorker<MaterializeResult>(pool, sql.fragment`app.materialize_due_series(make_interval(days => ${horizonDays}::int))`);
}

/** Schedules the hourly run and registers its handler (queue content.recurring-materialize). */
export async function registerRecurringJobs(boss: PgBoss, pool: DatabasePool, log: Logger, cron = '7 * * * *') {
  await boss.schedule(QUEUES.recurringMaterialize, cron);
  await boss.work(QUEUES.recurringMaterialize, async () => {
    const result = await materializeRecurringSeries(pool);
    log.info('recurring series materialized', { job: QUEUES.recurringMaterialize, ...result });
    return result;
  });
}
