// The one way server code acts as pressroom_worker (jobs, and the worker's
// sandbox memory): a short transaction of its own on the app pool that
// switches role with set_config(..., true) and runs one statement. The
// request role is set the same way by server/http/pipeline.ts (setContext).
import type { DatabasePool } from 'slonik';
import { jsonResult, sql } from './pool.ts';

/** Runs `select <fn> as result` as pressroom_worker in its own transaction; returns the JSON result. */
export async function asWorker<T = any>(pool: DatabasePool, fn: ReturnType<typeof sql.fragment>): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`select set_config('role', 'pressroom_worker', true)`);
    return (await tx.oneFirst(sql.type(jsonResult)`select ${fn} as result`)) as T;
  });
}
