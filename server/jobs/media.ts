// Media jobs (as pressroom_worker through the app pool; idempotent, so
// pg-boss's at-least-once delivery is harmless):
//
//   media.purge-bin                every minute: binned items whose deleteAfter
//                                  passed are deleted (rows in SQL, bytes here)
//   media.expire-upload-sessions   every 5 minutes: pending sessions past their
//                                  expiry expire; whatever was PUT to an
//                                  expired upload URL is removed
//
// Bytes are removed after their rows: SQL queues each storage key in
// app.media_storage_garbage in the same transaction that deletes the rows,
// and drainGarbage deletes the bytes, then the queue entries. A key a live
// item or pending upload still uses is never deleted.
import type { PgBoss } from 'pg-boss';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { QUEUES } from './queues.ts';

const BATCH = 200;
const MAX_BATCHES = 50;

/** The pool (as pressroom_worker), the log, and the storage whose bytes the jobs delete. */
export type MediaJobDeps = Pick<AppDeps, 'pool' | 'log' | 'storage'>;

/** Deletes the bytes of queued storage keys, then their queue entries. */
export async function drainGarbage({ pool, log, storage }: MediaJobDeps): Promise<{ deleted: number; kept: number; failed: number }> {
  const driver = storage.driver;
  let deleted = 0;
  let kept = 0;
  let failed = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const keys = (await asWorker(pool, sql.fragment`to_jsonb(app.media_garbage_batch(${BATCH}))`)) as string[];
    if (keys.length === 0) break;
    const inUse = new Set((await asWorker(pool, sql.fragment`to_jsonb(app.media_keys_in_use(${sql.array(keys, 'text')}))`)) as string[]);
    const done: string[] = [];
    for (const key of keys) {
      if (inUse.has(key)) {
        kept++;
        done.push(key);
        continue;
      }
      try {
        await driver.delete(key);
        deleted++;
        done.push(key);
      } catch (e) {
        failed++;
        log.warn('could not delete media bytes; will retry', { key, err: e });
      }
    }
    if (done.length) await asWorker(pool, sql.fragment`to_jsonb(app.media_garbage_done(${sql.array(done, 'text')}))`);
    if (keys.length < BATCH || done.length === 0) break;
  }
  return { deleted, kept, failed };
}

/** Purges the bin: rows whose deleteAfter passed, then their bytes. */
export async function runMediaPurge(deps: MediaJobDeps) {
  let purged = 0;
  let skipped = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const r = await asWorker(deps.pool, sql.fragment`app.media_purge_bin(${BATCH})`);
    purged += r.purged;
    skipped += r.skipped;
    if (r.purged + r.skipped < BATCH) break;
  }
  const bytes = await drainGarbage(deps);
  return { purged, skipped, bytes };
}

/** Expires upload sessions and removes what was sent to their URLs. */
export async function runUploadSessionExpiry(deps: MediaJobDeps) {
  const sessions = await asWorker(deps.pool, sql.fragment`app.media_expire_upload_sessions(${5 * BATCH})`);
  const bytes = await drainGarbage(deps);
  return { ...sessions, bytes };
}

/** Schedules and works both media queues (called by startWorker). */
export async function registerMediaJobs(boss: PgBoss, deps: MediaJobDeps) {
  const full: MediaJobDeps = deps;
  await boss.schedule(QUEUES.mediaPurge, '* * * * *');
  await boss.schedule(QUEUES.uploadSessionExpiry, '*/5 * * * *');
  await boss.work(QUEUES.mediaPurge, async () => {
    const r = await runMediaPurge(full);
    if (r.purged || r.bytes.deleted || r.bytes.failed) full.log.info('media bin purged', { job: QUEUES.mediaPurge, ...r });
    return r;
  });
  await boss.work(QUEUES.uploadSessionExpiry, async () => {
    const r = await runUploadSessionExpiry(full);
    if (r.expired || r.bytes.deleted || r.bytes.failed) full.log.info('upload sessions expired', { job: QUEUES.uploadSessionExpiry, ...r });
    return r;
  });
}
