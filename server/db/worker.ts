// The one way server code acts as pressroom_worker (jobs, and the worker's
// sandbox memory): a short transaction of its own on the app pool that
// switches role with set_config(..., true) and runs one statement. The
// request role is switched the same way, inside app.set_request_context
// (server/http/pipeline.ts, setContext); a SET LOCAL ROLE would be replayed
// by Citus on worker connections opened as other roles (docs/citus.md).
import type { DatabasePool } from 'slonik';
import { jsonResult, sql } from './pool.ts';

export interface WorkerCallOptions {
  /**
   * false: the commit does not wait for its WAL to reach the disk
   * (synchronous_commit off for this transaction only). For writes whose loss
   * in a crash of PostgreSQL is recovered like a crash of the worker: the
   * publish engine's records (an attempt left open is re-sent with its token,
   * or marked unknown, by the next claim). Never for a claim.
   */
  durable?: boolean;
}

/** Runs `select <fn> as result` as pressroom_worker in its own transaction; returns the JSON result. */
export async function asWorker<T = any>(pool: DatabasePool, fn: ReturnType<typeof sql.fragment>, opts: WorkerCallOptions = {}): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(
      opts.durable === false
        ? sql.unsafe`select set_config('role', 'pressroom_worker', true), set_config('synchronous_commit', 'off', true)`
        : sql.unsafe`select set_config('role', 'pressroom_worker', true)`,
    );
    return (await tx.oneFirst(sql.type(jsonResult)`select ${fn} as result`)) as T;
  });
}
