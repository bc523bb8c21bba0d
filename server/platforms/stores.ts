// The sandbox platform's memory (app.sandbox_posts) has one interface,
// SandboxStore (server/platforms/types.ts), and two implementations, one per
// kind of caller; the caller passes its store with each connector call
// (ConnectorCall), so one connector registry serves the worker and requests.
//
//   worker   app functions as pressroom_worker (server/db/worker.ts), each in
//            a transaction of its own
//   request  api functions under the request's role and principal, each in a
//            short transaction of its own (never the one a route may hold
//            open: the sandbox is a platform, called between transactions)
import type { DatabasePool } from 'slonik';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import { ConnectorError, type SandboxStore } from './types.ts';

type Fragment = ReturnType<typeof sql.fragment>;

/** Runs `fn` in a new short transaction with the request's context; `call` runs `select <fragment> as result`. */
export type RequestTransaction = <T>(fn: (t: { call(fragment: Fragment): Promise<any> }) => Promise<T>) => Promise<T>;

/** The worker's store: app.sandbox_receive_post and app.sandbox_edit_caption as pressroom_worker. */
export function workerSandboxStore(pool: DatabasePool): SandboxStore {
  return {
    receive: (p) =>
      asWorker(
        pool,
        sql.fragment`app.sandbox_receive_post(${p.integrationId}::uuid, ${p.token}, ${p.contentId}::uuid, ${p.platformPostId}, ${p.permalink}, ${p.caption}, ${sql.jsonb(p.payload)})`,
      ),
    editCaption: async (p) =>
      (await asWorker(pool, sql.fragment`to_jsonb(app.sandbox_edit_caption(${p.integrationId}::uuid, ${p.platformPostId}, ${p.caption}))`)) === true,
  };
}

/**
 * A request's store: api.sandbox_edit_caption (an editor of the integration's
 * workspace) in its own short transaction. Requests never publish (the
 * worker does), so receiving a post is refused.
 */
export function requestSandboxStore(transaction: RequestTransaction): SandboxStore {
  return {
    receive: async () => {
      throw new ConnectorError('NOT_SUPPORTED', 'Posts reach the sandbox platform through the publish worker, not through a request.');
    },
    editCaption: (p) =>
      transaction(
        async ({ call }) =>
          (await call(sql.fragment`to_jsonb(api.sandbox_edit_caption(${p.integrationId}::uuid, ${p.platformPostId}, ${p.caption}))`)) === true,
      ),
  };
}
