import { createHash, randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type { DatabaseTransactionConnection, SerializableValue } from 'slonik';
import type { Config } from '../config.ts';
import { jsonResult, sql } from '../db/pool.ts';
import { isDistributed } from '../db/topology.ts';
import type { AppDeps } from '../deps.ts';
import type { ConnectorRegistry } from '../platforms/index.ts';
import { vaultOf, type CredentialService } from '../platforms/credentials.ts';
import { sha256 } from '../security.ts';
import type { MediaStorage } from '../storage/index.ts';
import { ApiError, errorBody } from '../errors.ts';
import { bodyParserError, dataExceptionFields, toApiError } from './errors.ts';
import { clientKey } from './client-address.ts';
import { openAnswer, sealAnswer, type ReplayScope } from './sealed-replay.ts';
import type { Operation } from './openapi.ts';
import { checkQueryDefaults, type IdempotencyKey, type OperationId, type PathParams, type QueryParams, type RequestBody, type TypedResult } from './types.ts';

export { errorBody };

export interface Principal {
  actorKind: 'user' | 'api_key' | 'review_link';
  /** Reviews: the client reviewer's link (actorKind review_link). */
  reviewLinkId?: string;
  userId?: string;
  sessionId?: string;
  apiKeyId?: string;
  apiKeyPrefix?: string;
  organizationId: string;
  orgRole?: string;
  plan: string;
}

interface GateResult {
  principal?: Principal;
  workspaceId?: string | null;
  workspaceRole?: string | null;
  rate?: { class: string; limit: number; remaining: number; reset: number; allowed: boolean };
  error?: { status: number; code: string; message: string; details?: Record<string, unknown> };
  /** From api.gate_guarded: false for a refused credential beyond the first ones of the minute (summarized instead). */
  audit?: boolean;
  /** Seconds until a throttled address may try again (429 AUTH_THROTTLED). */
  retryAfter?: number;
}

/** The success envelope as the pipeline sends it, whatever the operation. */
export interface AnyHandlerResult {
  status?: number;
  data: unknown;
  meta?: unknown;
  /** For anonymous routes that establish who the caller is (sign-up, sign-in): the audit row's actor. */
  actor?: { userId: string; organizationId: string };
}

/** What a handler returns: `HandlerResult<'opId_v1'>` is its operation's success envelope (server/http/types.ts). */
export type HandlerResult<K extends OperationId | void = void> = [K] extends [OperationId] ? TypedResult<K> : AnyHandlerResult;

type Fragment = ReturnType<typeof sql.fragment>;

interface ContextBase<P> {
  tx: DatabaseTransactionConnection;
  /**
   * Runs `select <fragment> as result` and returns the JSON result as `T`
   * (inferred from where it goes, e.g. `data: await call(...)`, or named:
   * `call<Schema<'Campaign'>>(...)`). This is the one place JSON from SQL is
   * taken for its type: the api.* functions build the contract's shapes, and
   * every HTTP test checks each answer against openapi.yaml (tests/support/http.ts).
   */
  call<T = unknown>(fragment: Fragment): Promise<T>;
  principal: Principal | null;
  workspaceId: string | null;
  requestId: string;
  config: Config;
  /** What the route's `prepare` returned (`never` for a route without one). */
  prepared: P;
  /** The Idempotency-Key of this request, on operations that declare the header; else null. */
  idempotencyKey: string | null;
  /** Media storage, with links for the origin this request reached the API at. */
  storage: MediaStorage;
  /** The connectors (one per kind, shared with the publish worker). */
  connectors: ConnectorRegistry;
  /**
   * Connected accounts' credentials, for a slow step that calls a platform as the account
   * (a published caption's edit) after its claim checked the role and the workspace.
   */
  credentials: CredentialService;
}

/** The context of a handler of operation K: params, query and body as validated (coerced, defaults applied). */
export interface TypedHandlerContext<K extends OperationId, P = never> extends ContextBase<P> {
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
  idempotencyKey: IdempotencyKey<K>;
}

/** The context as the pipeline builds it, before it knows the operation's types. */
export interface AnyHandlerContext extends ContextBase<unknown> {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

/** `HandlerContext<'opId_v1'>`: typed by the operation; `HandlerContext`: as the pipeline builds it. */
export type HandlerContext<K extends OperationId | void = void, P = never> = [K] extends [OperationId] ? TypedHandlerContext<K, P> : AnyHandlerContext;

/**
 * What the slow step of a phased route sees: the request, and no transaction.
 * `transaction` runs `fn` in a new short transaction with this request's
 * context (role, principal, workspace and request id set by setContext, as
 * for the request transaction), e.g. a platform's memory written through an
 * api function.
 */
type WorkOf<Ctx extends ContextBase<unknown>> = Omit<Ctx, 'tx' | 'call'> & {
  transaction<T>(fn: (ctx: Ctx) => Promise<T>): Promise<T>;
};
/** `WorkContext<'opId_v1'>`: typed by the operation; `WorkContext`: as the pipeline builds it. */
export type WorkContext<K extends OperationId | void = void, P = never> = WorkOf<HandlerContext<K, P>>;

/** A route of operation K whose handler runs in the one request transaction; P is what its `prepare` hands to `handle` as `ctx.prepared`. */
export interface TransactionalRoute<K extends OperationId, P = never> {
  /** Work done before the transaction opens (CPU-heavy steps such as a KDF), on the validated input. */
  prepare?: (input: { body: RequestBody<K>; params: PathParams<K>; config: Config }) => Promise<[P] extends [never] ? unknown : P>;
  handle: (ctx: TypedHandlerContext<K, P>) => Promise<TypedResult<K>>;
  phases?: never;
}

/**
 * A route of operation K with slow work (disk or network) that must not hold
 * a transaction, a row lock or a pooled connection while it runs, as the
 * publish worker does it (server/jobs/publish.ts): claim in one short
 * transaction, work outside any transaction, record in another. P is what
 * `prepare` returns, C the claim `begin` makes, W what `work` produces.
 *
 *   begin    short transaction: the checks, and a claim another request sees
 *            (it answers 409 while the claim is live); or an answer at once
 *            when there is nothing to do
 *   work     no transaction: the slow step (ctx.transaction for short ones)
 *   finish   short transaction: records the outcome and gives the claim up;
 *            an Idempotency-Key answer commits with it
 *   abandon  short transaction, after work or finish failed: gives the claim
 *            up, so a retry can claim again; then the failure is answered
 *
 * A request that finds the work claimed by another (begin fails with
 * `whileClaimed.code`) waits, holding no transaction and no connection, and
 * begins again, so it sees the other's outcome (the item made, the draft
 * sent) as it did when it waited on a row lock; after `whileClaimed.maxMs`
 * it answers that failure (409).
 */
export interface PhasedRoute<K extends OperationId, P = never, C = unknown, W = unknown> {
  /** As for a TransactionalRoute: before `begin`'s transaction opens. */
  prepare?: (input: { body: RequestBody<K>; params: PathParams<K>; config: Config }) => Promise<[P] extends [never] ? unknown : P>;
  handle?: never;
  whileClaimed?: { code: string; maxMs: (config: Config) => number };
  phases: {
    begin(ctx: TypedHandlerContext<K, P>): Promise<{ answer: TypedResult<K> } | { claim: C }>;
    work(ctx: WorkContext<K, P>, claim: C): Promise<W>;
    finish(ctx: TypedHandlerContext<K, P>, claim: C, work: W): Promise<TypedResult<K>>;
    abandon(ctx: TypedHandlerContext<K, P>, claim: C, error: unknown): Promise<void>;
  };
}

/**
 * A route with its operation's types erased: what the route table lends to
 * the pipeline (and bench/lib/direct.ts), in either shape. Its members are
 * methods, so any TransactionalRoute or PhasedRoute is one (method
 * parameters compare both ways): the pipeline calls `handle` and the phases
 * only with the input op.validate accepted for that very operation
 * (server/http/openapi.ts), and hands `work` and `finish` the claim and the
 * work of the same route, which is what makes the typed view true.
 */
export type AnyRoute = AnyTransactionalRoute | AnyPhasedRoute;

interface AnyPrepare {
  prepare?(input: { body: unknown; params: Record<string, unknown>; config: Config }): Promise<unknown>;
}

export interface AnyTransactionalRoute extends AnyPrepare {
  handle(ctx: AnyHandlerContext): Promise<AnyHandlerResult>;
  phases?: never;
}

export interface AnyPhasedRoute extends AnyPrepare {
  handle?: never;
  whileClaimed?: { code: string; maxMs(config: Config): number };
  phases: {
    begin(ctx: AnyHandlerContext): Promise<{ answer: AnyHandlerResult } | { claim: unknown }>;
    work(ctx: WorkContext, claim: unknown): Promise<unknown>;
    finish(ctx: AnyHandlerContext, claim: unknown, work: unknown): Promise<AnyHandlerResult>;
    abandon(ctx: AnyHandlerContext, claim: unknown, error: unknown): Promise<void>;
  };
}

/** `RouteDefinition<'opId_v1'>`: a route typed by its operation, in either shape; `RouteDefinition`: erased. */
export type RouteDefinition<K extends OperationId | void = void, P = never> = [K] extends [OperationId]
  ? TransactionalRoute<K, P> | PhasedRoute<K, P>
  : AnyRoute;

/**
 * The operations marked `x-raw-body: true` in openapi.yaml: served by their own
 * router on the raw bytes (server/routes/hooks.ts), not by the pipeline
 * (server/app.ts checks the two agree at start-up).
 */
export type RawBodyOperationId = 'checkInboxHook_v1' | 'receiveInboxHook_v1';

/**
 * The operations marked `x-browser-redirect: true`: a browser's landing answered
 * with a redirect by its own router (the OAuth callback, server/routes/connections.ts),
 * and the Bluesky OAuth client's documents served beside it (bare JSON, no envelope).
 */
export type RedirectOperationId = 'oauthCallback_v1' | 'blueskyOAuthClientMetadata_v1' | 'blueskyOAuthJwks_v1';

/** One route for every operation of api.d.ts: a missing or misspelled operationId fails `tsc`. */
export type RouteTable = { [K in Exclude<OperationId, RawBodyOperationId | RedirectOperationId>]: RouteDefinition<K> };

export interface PipelineDeps extends AppDeps {
  /** express.json(), run after the gate so unauthenticated bodies are never parsed. */
  json: (req: Request, res: Response, next: (err?: unknown) => void) => void;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requestIdOf(req: Request): string {
  const sent = req.get('x-request-id');
  return sent && REQUEST_ID.test(sent) ? sent : randomUUID();
}


function bearer(req: Request): string | null {
  const h = req.get('authorization');
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A replayed answer that echoes its key (data.idempotency = {key, replayed}) says it is a replay. */
function markReplayed(body: unknown, key: string): unknown {
  if (!isObject(body) || !isObject(body.data) || !isObject(body.data.idempotency) || body.data.idempotency.key !== key) return body;
  return { ...body, data: { ...body.data, idempotency: { ...body.data.idempotency, replayed: true } } };
}

function errorCodeOf(body: unknown): string | null {
  return isObject(body) && isObject(body.error) && typeof body.error.code === 'string' ? body.error.code : null;
}

/**
 * Sets the transaction's context and role; the first statement of every
 * request transaction, one round trip (an empty value is sent as null, which
 * the function stores as '', read as unset): app.set_request_context sets
 * pressroom.actor_kind, user_id, session_id, api_key_id, review_link_id,
 * organization_id, workspace_id, workspace_role and request_id with SET LOCAL
 * (under citus.propagate_set_commands = 'local', so a Citus cluster's workers
 * get them too; docs/citus.md), keeps whether the principal may act in the
 * workspace for the policies, and switches to pressroom_request. Everything
 * is transaction-local.
 */
export async function setContext(tx: DatabaseTransactionConnection, p: Principal | null, workspaceId: string | null, role: string | null, requestId: string) {
  await tx.query(sql.unsafe`
    select app.set_request_context(
      ${p?.actorKind ?? 'anonymous'}::text,
      ${(p?.actorKind === 'user' && p.userId) || null}::uuid,
      ${p?.sessionId || null}::uuid,
      ${p?.apiKeyId || null}::uuid,
      ${p?.reviewLinkId || null}::uuid,
      ${p?.organizationId || null}::uuid,
      ${workspaceId || null}::uuid,
      ${role || null}::text,
      ${requestId}::text)`);
}

/**
 * The request pipeline for one operation: authenticate, workspace grant and
 * rate limit (one SQL call), validate against openapi.yaml, idempotency,
 * one transaction with the context and the handler, envelope, audit row.
 */
export function pipeline(op: Operation, route: RouteDefinition, deps: PipelineDeps) {
  checkQueryDefaults(op);
  const { pool, config } = deps;
  return async (req: Request, res: Response) => {
    const started = performance.now();
    const requestId = (res.locals.requestId as string) ?? requestIdOf(req);
    const log = deps.log.child({ requestId });
    let gate: GateResult = {};
    let status = 500;
    let payload: unknown;
    let errorCode: string | null = null;
    const headers: Record<string, string> = {};
    let idem: { key: string; claimed: boolean; scope: ReplayScope } | null = null;
    let actor: HandlerResult['actor'];
    let audited = true;
    const wsParam = typeof req.params.workspaceId === 'string' && UUID.test(req.params.workspaceId) ? req.params.workspaceId : null;
    // What validation accepted, to name the field of a data exception SQL raises later.
    let input: Record<string, unknown> = {};

    try {
      const token = bearer(req);
      // A malformed bearer (or none, on a route that needs one) is a failed
      // credential: api.gate_guarded counts it against the client address.
      const sendsCredential = Boolean(token);
      // The client address (req.ip, or the /mcp caller's when the MCP router vouches for it: server/http/client-address.ts).
      const client = clientKey(req);
      const bucket = op.anonymous && token !== '' ? client : null;
      gate = (await pool.oneFirst(sql.type(jsonResult)`
        select ${op.reviewLink
          ? // Reviews: client-review routes take a review link token, and nothing else does.
            sql.fragment`api.gate_review_link(${sendsCredential ? sql.binary(sha256(token!)) : null}, ${op.throttle}, ${client})`
          : sql.fragment`api.gate_guarded(${sendsCredential ? sql.binary(sha256(token!)) : null}, ${wsParam}, ${op.throttle},
                        ${op.minPlan}, ${bucket}, ${client})`} as result`)) as GateResult;
      if (gate.audit === false) audited = false;
      if (gate.rate) {
        headers['X-RateLimit-Limit'] = String(gate.rate.limit);
        headers['X-RateLimit-Remaining'] = String(gate.rate.remaining);
        headers['X-RateLimit-Reset'] = String(gate.rate.reset);
        // The same, as the IETF HTTPAPI working group's RateLimit fields
        // (draft-ietf-httpapi-ratelimit-headers): the policy of the class
        // (quota per 60-second window) and what is left of it (README.md).
        headers['RateLimit-Policy'] = `"${gate.rate.class}";q=${gate.rate.limit};w=60`;
        headers.RateLimit = `"${gate.rate.class}";r=${gate.rate.remaining};t=${gate.rate.reset}`;
      }
      if (gate.error) {
        const retryAfter = gate.retryAfter ?? (gate.error.status === 429 ? gate.rate?.reset : undefined);
        const extra: Record<string, string> = retryAfter !== undefined ? { 'Retry-After': String(retryAfter) } : {};
        throw new ApiError(gate.error.status, gate.error.code, gate.error.message, gate.error.details ?? null, extra);
      }

      await new Promise<void>((resolve, reject) => deps.json(req, res, (err) => (err ? reject(err) : resolve())));
      const ct = req.get('content-type');
      const sentBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
      if (sentBody && !(ct && /^application\/(.+\+)?json\b/i.test(ct))) {
        throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.');
      }
      const query = { ...(req.query as Record<string, unknown>) };
      const params = { ...req.params };
      const hdrs: Record<string, unknown> = {};
      if (op.idempotent && req.get('idempotency-key') !== undefined) hdrs['idempotency-key'] = req.get('idempotency-key');
      const body: unknown = req.body;
      const problems = op.validate({ params, query, headers: hdrs, body });
      input = { path: params, query, body };
      if (problems.length) {
        throw new ApiError(400, 'VALIDATION_FAILED', 'The request is not valid; see details.fields.', { fields: problems });
      }
      const prepared = route.prepare ? await route.prepare({ body, params, config }) : undefined;
      const principal = gate.principal ?? null;
      const workspaceId = gate.workspaceId ?? null;
      const role = gate.workspaceRole ?? null;
      const routeKey = op.path;

      if (op.idempotent && typeof hdrs['idempotency-key'] === 'string' && principal && workspaceId) {
        const key = hdrs['idempotency-key'] as string;
        const hash = createHash('sha256').update(canonicalJson(body ?? null)).digest();
        const begin = await pool.transaction(async (tx) => {
          await setContext(tx, principal, workspaceId, role, requestId);
          return tx.oneFirst(sql.type(jsonResult)`select api.idempotency_begin(${op.method}, ${routeKey}, ${key}, ${sql.binary(hash)}) as result`);
        });
        const scope: ReplayScope = { workspaceId, principalId: (principal.apiKeyId ?? principal.userId)!, method: op.method, route: routeKey, key };
        if (begin.state === 'replay') {
          const kept = openAnswer(vaultOf(config), scope, begin.body);
          status = begin.status;
          headers['Idempotent-Replayed'] = 'true';
          payload = markReplayed(kept, key);
          errorCode = errorCodeOf(kept);
          return;
        }
        idem = { key, claimed: true, scope };
      }

      const origin = `${req.protocol}://${req.get('host') ?? `${config.HOST}:${config.PORT}`}`;
      const base: Omit<HandlerContext, 'tx' | 'call'> = {
        params,
        query,
        body,
        principal,
        workspaceId,
        requestId,
        config,
        prepared,
        idempotencyKey: idem?.key ?? null,
        storage: deps.storage.at(origin),
        connectors: deps.connectors,
        credentials: deps.credentials,
      };
      // One short transaction with the request's context. On a Citus cluster a write in a
      // workspace ends by applying the jobs its triggers queued on the workers
      // (api.drain_job_outbox, server/db/topology.ts), so they commit with the change and a
      // refusal fails the request; a read queues none, and pays no extra statement.
      const drains = op.method !== 'GET' && workspaceId !== null && (await isDistributed(pool));
      const inTransaction = <T>(fn: (ctx: HandlerContext) => Promise<T>): Promise<T> =>
        pool.transaction(async (tx) => {
          await setContext(tx, principal, workspaceId, role, requestId);
          const out = await fn({ ...base, tx, call: (fragment) => tx.oneFirst(sql.type(jsonResult)`select ${fragment} as result`) });
          if (drains) await tx.query(sql.unsafe`select api.drain_job_outbox()`);
          return out;
        });
      // The answer, and the Idempotency-Key's record of it in the same transaction.
      const answer = async (ctx: HandlerContext, r: HandlerResult) => {
        const envelope = { data: r.data ?? null, meta: r.meta ?? null };
        if (idem) {
          await ctx.tx.query(sql.unsafe`select api.idempotency_finish(${op.method}, ${routeKey}, ${idem.key}, ${r.status ?? 200},
            ${sql.jsonb(sealAnswer(vaultOf(config), idem.scope, envelope))})`);
          idem.claimed = false;
        }
        return { status: r.status ?? 200, envelope, actor: r.actor };
      };

      let result: Awaited<ReturnType<typeof answer>>;
      if (route.phases) {
        const phases = route.phases;
        const begin = () =>
          inTransaction(async (ctx) => {
            const b = await phases.begin(ctx);
            return 'answer' in b ? { done: true as const, answered: await answer(ctx, b.answer) } : { done: false as const, claim: b.claim };
          });
        const waitUntil = route.whileClaimed ? Date.now() + route.whileClaimed.maxMs(config) : 0;
        let begun: Awaited<ReturnType<typeof begin>>;
        for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
          try {
            begun = await begin();
            break;
          } catch (e) {
            const claimed = route.whileClaimed && toApiError(e)?.code === route.whileClaimed.code;
            if (!claimed || Date.now() + pause > waitUntil) throw e;
            await new Promise((r) => setTimeout(r, pause));
          }
        }
        if (begun.done) {
          result = begun.answered;
        } else {
          try {
            const work = await phases.work({ ...base, transaction: inTransaction }, begun.claim);
            result = await inTransaction(async (ctx) => answer(ctx, await phases.finish(ctx, begun.claim, work)));
          } catch (error) {
            // The claim is given up before the failure is answered; should that
            // fail too, the claim lapses at its expiry.
            await inTransaction((ctx) => phases.abandon(ctx, begun.claim, error)).catch((e) =>
              log.error('could not give up the claim of a failed request', { err: String(e), route: op.path }),
            );
            throw error;
          }
        }
      } else {
        const handle = route.handle;
        result = await inTransaction(async (ctx) => answer(ctx, await handle(ctx)));
      }
      actor = result.actor;
      status = result.status;
      payload = status === 204 ? undefined : result.envelope;
    } catch (error) {
      let apiError = toApiError(error) ?? bodyParserError(error, config.BODY_LIMIT_BYTES);
      if (apiError) {
        const fields = apiError.code === 'VALIDATION_FAILED' && !apiError.details?.fields ? dataExceptionFields(error, input) : [];
        if (fields.length) apiError = new ApiError(apiError.status, apiError.code, apiError.message, { ...apiError.details, fields }, apiError.headers);
        status = apiError.status;
        errorCode = apiError.code;
        payload = errorBody(requestId, apiError);
        Object.assign(headers, apiError.headers);
      } else {
        status = 500;
        errorCode = 'INTERNAL';
        payload = errorBody(requestId, new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.'));
        log.error('unhandled error', { err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error), route: op.path });
      }
      if (idem?.claimed) {
        // A refusal (4xx) is the answer to this key; a 5xx frees it for a retry.
        await pool
          .transaction(async (tx) => {
            await setContext(tx, gate.principal ?? null, gate.workspaceId ?? null, gate.workspaceRole ?? null, requestId);
            if (status < 500) {
              await tx.query(sql.unsafe`select api.idempotency_finish(${op.method}, ${op.path}, ${idem!.key}, ${status},
                ${sql.jsonb(sealAnswer(vaultOf(config), idem!.scope, payload))})`);
            } else {
              await tx.query(sql.unsafe`select api.idempotency_release(${op.method}, ${op.path}, ${idem!.key})`);
            }
          })
          .catch((e) => log.error('idempotency bookkeeping failed', { err: String(e) }));
      }
    } finally {
      const durationMs = performance.now() - started;
      const p = gate.principal;
      const actorKind = p?.actorKind ?? (actor ? 'user' : 'anonymous');
      const actorId = p
        ? ((p.actorKind === 'api_key' ? p.apiKeyId : p.actorKind === 'review_link' ? p.reviewLinkId : p.userId) ?? null)
        : (actor?.userId ?? null);
      try {
        if (audited) await pool.query(sql.unsafe`
          select audit.record(${actorKind}, ${actorId},
            ${p?.apiKeyPrefix ?? null}, ${p?.organizationId ?? actor?.organizationId ?? null}, ${gate.workspaceId ?? wsParam},
            ${op.method}, ${op.path}, ${status}, ${Number(durationMs.toFixed(3))}, ${errorCode}, ${requestId})`);
      } catch (e) {
        log.error('audit write failed', { err: String(e) });
      }
      log.info('request', { method: op.method, route: op.path, status, durationMs: Math.round(durationMs * 10) / 10, code: errorCode ?? undefined });
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      if (payload === undefined) res.status(status).end();
      else res.status(status).json(payload);
    }
  };
}
