// Whether the database is a Citus cluster's coordinator (docs/citus.md). On one, a trigger that
// queues a job on a worker writes the workspace's outbox (app.job_outbox, migration 000058), which
// the request pipeline applies at the end of each request transaction (api.drain_job_outbox) and
// the worker every second for the rest (startOutboxSweep). On one PostgreSQL the outbox stays
// empty, and neither runs.
import type { DatabasePool } from 'slonik';
import type { Logger } from '../log.ts';
import { sql } from './pool.ts';
import { asWorker } from './worker.ts';

const known = new WeakMap<DatabasePool, Promise<boolean>>();

/** Whether the pool's database has the citus extension (asked once per pool). */
export function isDistributed(pool: DatabasePool): Promise<boolean> {
  let p = known.get(pool);
  if (!p) {
    p = pool.oneFirst(sql.unsafe`select exists (select 1 from pg_catalog.pg_extension where extname = 'citus') as d`) as Promise<boolean>;
    p.catch(() => known.delete(pool));
    known.set(pool, p);
  }
  return p;
}

/**
 * On a distributed database, applies the outboxes of the workspaces whose changes were made by
 * jobs (app.drain_job_outboxes) every `intervalMs`; returns the function that stops it. A no-op
 * on one PostgreSQL.
 */
export async function startOutboxSweep(pool: DatabasePool, log: Logger, intervalMs = 1000): Promise<() => Promise<void>> {
  if (!(await isDistributed(pool))) return async () => {};
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const tick = async () => {
    try {
      const n = await asWorker<number>(pool, sql.fragment`to_jsonb(app.drain_job_outboxes(100))`);
      if (n > 0) log.debug('job outboxes applied', { operations: n });
    } catch (e) {
      log.error('applying the job outboxes failed; retried at the next tick', { err: e instanceof Error ? e.message : String(e) });
    }
  };
  const timer = setInterval(() => {
    if (!stopped) running = running.then(tick);
  }, intervalMs);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
