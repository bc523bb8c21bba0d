// The "direct" side of a scenario: the SQL that server/http/pipeline.ts runs
// for one request (gate, a transaction with the context and the route's
// handler, the audit row), in the same order, through the driver with no HTTP
// in front: the database-side limit for that work.
import { randomUUID } from 'node:crypto';
import { createLogger } from '../../server/log.ts';
import { createCredentialService } from '../../server/platforms/credentials.ts';
import type { DatabasePool } from 'slonik';
import type { Config } from '../../server/config.ts';
import { jsonResult, sql } from '../../server/db/pool.ts';
import type { Operation } from '../../server/http/openapi.ts';
import { setContext, type HandlerContext, type Principal, type RouteDefinition } from '../../server/http/pipeline.ts';
import { connectorRegistryFor } from '../../server/platforms/index.ts';
import { createMediaStorage } from '../../server/storage/index.ts';
import { sha256 } from '../../server/security.ts';
import type { Op } from './load.ts';

interface GateResult {
  principal?: Principal;
  workspaceId?: string | null;
  workspaceRole?: string | null;
  error?: { status: number; code: string; message: string };
}

export interface DirectRoute {
  group: string;
  operation: Operation;
  handler: RouteDefinition;
  params: Record<string, string>;
  /** The query string's parameters, as strings (as Express hands them over). */
  query?: Record<string, string>;
  body?: unknown;
  token: string;
  /** Checks a result (status, envelope data and meta); throws when wrong. */
  check(status: number, data: any, meta: any): void;
}

export function operation(operations: Operation[], id: string): Operation {
  const op = operations.find((o) => o.operationId === id);
  if (!op) throw new Error(`openapi.yaml has no operation ${id}`);
  return op;
}

/** Query and body as the pipeline's validation leaves them (coerced, defaults filled in). */
function validated(route: DirectRoute): { query: Record<string, any>; body: unknown } {
  const query: Record<string, any> = { ...(route.query ?? {}) };
  const body = route.body === undefined ? undefined : structuredClone(route.body);
  const problems = route.operation.validate({ params: { ...route.params }, query, headers: {}, body });
  if (problems.length) throw new Error(`${route.group}: the request does not validate: ${JSON.stringify(problems)}`);
  return { query, body };
}

/** One direct request: pipeline.ts's SQL for this route, in the same order, on the given pool. */
export function directOp(pool: DatabasePool, route: DirectRoute, config: Config): Op {
  const op = route.operation;
  const wsParam = route.params.workspaceId ?? null;
  const input = validated(route);
  const handle = route.handler.handle;
  if (!handle) throw new Error(`${route.group}: a phased route (several transactions) has no single direct transaction to measure`);
  const storage = createMediaStorage(config, pool);
  const connectors = connectorRegistryFor(config);
  const credentials = createCredentialService({ pool, config, log: createLogger('silent') });
  return async () => {
    const started = performance.now();
    const requestId = randomUUID();
    const gate = (await pool.oneFirst(sql.type(jsonResult)`
        select api.gate_guarded(${sql.binary(sha256(route.token))}, ${wsParam}, ${op.throttle},
                        ${op.minPlan}, ${null}, ${'ip:bench'}) as result`)) as GateResult;
    if (gate.error) throw new Error(`direct ${route.group}: gate refused: ${JSON.stringify(gate.error)}`);
    const principal = gate.principal ?? null;
    const workspaceId = gate.workspaceId ?? null;
    const role = gate.workspaceRole ?? null;
    const result = await pool.transaction(async (tx) => {
      await setContext(tx, principal, workspaceId, role, requestId);
      const ctx: HandlerContext = {
        tx,
        call: (fragment) => tx.oneFirst(sql.type(jsonResult)`select ${fragment} as result`),
        idempotencyKey: null,
        params: { ...route.params },
        query: { ...input.query },
        body: input.body === undefined ? undefined : structuredClone(input.body),
        principal,
        workspaceId,
        requestId,
        config,
        prepared: undefined,
        storage,
        connectors,
        credentials,
      };
      const r = await handle(ctx);
      return { status: r.status ?? 200, data: r.data ?? null, meta: r.meta ?? null };
    });
    route.check(result.status, result.data, result.meta);
    const durationMs = performance.now() - started;
    const p = principal;
    await pool.query(sql.unsafe`
          select audit.record(${p?.actorKind ?? 'anonymous'}, ${p ? ((p.actorKind === 'api_key' ? p.apiKeyId : p.userId) ?? null) : null},
            ${p?.apiKeyPrefix ?? null}, ${p?.organizationId ?? null}, ${gate.workspaceId ?? wsParam},
            ${op.method}, ${op.path}, ${result.status}, ${Number(durationMs.toFixed(3))}, ${null}, ${requestId})`);
  };
}
