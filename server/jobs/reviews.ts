// Reviews: the expiry job (queue reviews.expire-due, every minute). Active
// reviews whose due time passed expire in SQL (app.expire_due_reviews): their
// pending items' content returns to draft and their client links end; and
// never-completed comment attachment uploads expire, their bytes queued for
// the media purge job (app.expire_review_attachments). As pressroom_worker,
// idempotent (an expired review is not active any more, an expired upload not
// pending), so pg-boss's at-least-once delivery is harmless.
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

/** Expires never-completed comment attachment uploads (their bytes queued for the media purge job); returns how many. */
export async function expireReviewAttachments(pool: DatabasePool): Promise<number> {
  return asWorker<number>(pool, sql.fragment`to_jsonb(app.expire_review_attachments())`);
}

/** Schedules the minute run and registers its handler. */
export async function registerReviewJobs(boss: PgBoss, pool: DatabasePool, log: Logger, cron = '* * * * *') {
  await boss.schedule(QUEUES.reviewExpiry, cron);
  await boss.work(QUEUES.reviewExpiry, async () => {
    const expired = await expireDueReviews(pool);
    const attachments = await expireReviewAttachments(pool);
    if (expired > 0 || attachments > 0) log.info('reviews expired', { job: QUEUES.reviewExpiry, expired, attachments });
    return { expired, attachments };
  });
}
