// Calls to /v1 or /v2 that match no operation (unknown path or method, an
// undecodable path) still write their audit row when the bearer authenticates
// (route null; api.record_unmatched_call). Unauthenticated noise writes
// nothing, so it cannot grow the audit table.
import type { Request, Response } from 'express';
import { sql } from '../db/pool.ts';
import type { AppDeps } from '../deps.ts';
import { sha256 } from '../security.ts';

export async function recordUnmatchedCall(deps: AppDeps, req: Request, res: Response, status: number, code: string): Promise<void> {
  if (!/^\/v\d+(\/|$)/.test(req.path)) return;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  if (!m) return;
  const started = (res.locals.startedAt as number | undefined) ?? performance.now();
  const durationMs = Number((performance.now() - started).toFixed(3));
  try {
    await deps.pool.query(sql.unsafe`
      select api.record_unmatched_call(${sql.binary(sha256(m[1]))}, ${req.method.slice(0, 16)}, ${status}, ${code},
                                       ${durationMs}, ${res.locals.requestId as string})`);
  } catch (e) {
    deps.log.error('audit write failed', { err: String(e), requestId: res.locals.requestId });
  }
}
