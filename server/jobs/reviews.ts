// Reviews: the expiry job (queue reviews.expire-due, every minute). Active
// reviews whose due time passed expire in SQL (app.expire_due_reviews): their
// pending items' content returns to draft and their client links end. As
// pressroom_worker, idempotent (an expired review is not active any more), so
// pg-boss's at-least-once delivery is harmless.
import type { PgBoss } from 'pg-boss';
import type { DatabasePool } from 'slonik';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { Logger } from '../log.ts';
import { QUEUES } from './queues.ts';

/** Expires the active reviews past their due time; returns how many. */
export async function expireDueReviews(pool: DatabasePool): Promise<number> {
  return asWorker<number>(pool, sql.fragment`to_jsonb(app.expire_due_reviews())`);
}

/** Schedules the minute run and registers its handler. */
export async function registerReviewJobs(boss: PgBoss, pool: DatabasePool, log: Logger, cron = '* * * * *') {
  await boss.schedule(QUEUES.reviewExpiry, cron);
  await boss.work(QUEUES.reviewExpiry, async () => {
    const expired = await expireDueReviews(pool);
    if (expired > 0) log.info('reviews expired', { job: QUEUES.reviewExpiry, expired });
    return { expired };
  });
}
