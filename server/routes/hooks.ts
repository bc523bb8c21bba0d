// Inbound platform webhooks (public: no bearer; the signature is the credential):
//
//   GET  /v1/hooks/{source}/{integrationId}   the platform's subscription check:
//        facebook, instagram  ?hub.mode=subscribe&hub.verify_token=..&hub.challenge=..
//                             -> 200 text/plain challenge (403 for another token)
//        x                    ?crc_token=.. -> 200 {"response_token": "sha256=<base64>"}
//   POST /v1/hooks/{source}/{integrationId}   a delivery, signed as the source signs
//        (server/inbox/signatures.ts) -> 200 once stored raw with its events
//
// The body is read raw (at most 1 MB, 413 beyond) because the signature is
// over its exact bytes; nothing is parsed or stored before the signature
// holds (401 otherwise). An unknown source, integration, or one without a
// secret for the source is 404. X's crc_token is answered only when shaped
// like X's, and an X delivery verifies only when its body is a JSON object,
// so no CRC answer is a delivery signature (server/inbox/signatures.ts).
// Events are de-duplicated by SQL on the platform's event id, and folded into
// threads later by job inbox.fold, so the answer comes in milliseconds.
//
// Refused calls are failed credentials of the client address: each call
// first asks api.inbox_hook_guard (past auth_failure_limit refusals this
// minute: 429 AUTH_THROTTLED with Retry-After, before the body is read or
// anything is looked up), and a call refused before its caller proved the
// hook's secret or verify token (404, 401, 403, a malformed check: 400 or
// 405) is counted by api.inbox_hook_refused, which says whether it is among
// the first auth_failure_audit of the minute: those get an audit row each
// (actor platform_webhook for a known integration, anonymous otherwise), the
// rest one summary row (app.flush_auth_failures; db/migrations/committed/000029-hostile-input-two.sql, split 02-hook-throttle.sql).
// Every other call for a known integration writes its audit row, actor kind
// platform_webhook.
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { jsonResult, sql } from '../db/pool.ts';
import type { AppDeps } from '../deps.ts';
import { clientKey } from '../http/client-address.ts';
import { ApiError, errorBody } from '../errors.ts';
import { decryptHookSecret } from '../inbox/secrets.ts';
import { DeliveryError, normalizeDelivery } from '../inbox/normalize.ts';
import { checkSignature, HOOK_SOURCES, isXCrcToken, X_CRC_TOKEN_MAX_LENGTH, xCrcResponse, type HookSource } from '../inbox/signatures.ts';

export const HOOK_BODY_LIMIT_BYTES = 1024 * 1024;
export const HOOK_ROUTE = '/v1/hooks/{source}/{integrationId}';
/** The longest hub.challenge answered (the contract's maxLength); crc_token: X_CRC_TOKEN_MAX_LENGTH. */
export const HOOK_CHALLENGE_MAX_LENGTH = 1024;
/** Inbox routes that need the server secret (cursors, hook secrets, platform tokens). */
const INBOX_ROUTE = /^\/v1\/workspaces\/[^/]+\/(inbox\/|integrations\/[^/]+\/inbox-(hooks\/|platform-token$))/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Headers kept with a raw delivery: the signature's and what says what the body is. */
const KEPT_HEADERS = ['content-type', 'user-agent', 'x-hub-signature-256', 'x-hub-signature', 'x-twitter-webhooks-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

interface Target {
  found: boolean;
  integrationId: string;
  organizationId: string;
  workspaceId: string;
  platform: string;
  connector: string;
  secretCiphertext: string;
  verifyTokenHash: string | null;
}

const notFound = () => new ApiError(404, 'NOT_FOUND', 'No inbound hook here: unknown source or integration, or no secret is set for this source (PUT .../integrations/{id}/inbox-hooks/{source}).');

function headerMap(req: Request): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.headers)) out[k.toLowerCase()] = Array.isArray(v) ? v[0] : v;
  return out;
}

function queryOf(req: Request): URLSearchParams {
  const i = req.originalUrl.indexOf('?');
  return new URLSearchParams(i >= 0 ? req.originalUrl.slice(i + 1) : '');
}

/**
 * The routes a router built by createHooksRouter serves, as `METHOD /express/path`
 * (read from its stack), so that server/app.ts and tests/api/contract.test.ts
 * can hold them against the contract's `x-raw-body` operations.
 */
export function servedRoutes(router: express.Router): string[] {
  const out: string[] = [];
  for (const layer of (router as unknown as { stack: { route?: { path: string; methods: Record<string, boolean> } }[] }).stack) {
    if (!layer.route) continue;
    for (const [m, on] of Object.entries(layer.route.methods)) if (on && m !== '_all') out.push(`${m.toUpperCase()} ${layer.route.path}`);
  }
  return out;
}

export function createHooksRouter(deps: AppDeps) {
  const { pool, log } = deps;
  const router = express.Router();
  const raw = express.raw({ type: () => true, limit: HOOK_BODY_LIMIT_BYTES });

  // Before the body is read and anything is looked up: an address past the
  // failed-credential limit is answered 429 AUTH_THROTTLED (not audited one
  // by one: api.inbox_hook_guard counts it in the minute's summary row).
  const guard = async (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    const requestId = res.locals.requestId as string;
    let err: ApiError;
    try {
      const g = (await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_guard(${clientKey(req)}) as result`)) as {
        error?: { status: number; code: string; message: string; details?: Record<string, unknown> };
        retryAfter?: number;
      };
      if (!g.error) return next();
      err = new ApiError(g.error.status, g.error.code, g.error.message, g.error.details ?? null);
      if (g.retryAfter !== undefined) res.setHeader('Retry-After', String(g.retryAfter));
    } catch (e) {
      log.error('inbound hook guard failed', { requestId, err: e instanceof Error ? { message: e.message, stack: e.stack } : String(e) });
      err = new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.');
    }
    log.info('request', { method: req.method, route: HOOK_ROUTE, status: err.status, durationMs: Math.round((performance.now() - started) * 10) / 10, code: err.code });
    res.status(err.status).json(errorBody(requestId, err));
  };

  const handle = async (req: Request, res: Response) => {
    const started = performance.now();
    const requestId = res.locals.requestId as string;
    let status = 500;
    let code: string | null = null;
    let target: Target | null = null;
    // Whether the caller proved the hook's credential (the signature, the
    // verify token) or needs none (X's check); a 4xx before that is a refusal.
    let credited = false;
    let answer: { json?: unknown; text?: string } = {};
    const headers: Record<string, string> = {};
    try {
      const source = req.params.source as HookSource;
      const integrationId = String(req.params.integrationId);
      if (!(HOOK_SOURCES as readonly string[]).includes(source) || !UUID.test(integrationId)) throw notFound();
      if (req.method === 'GET' && source === 'sandbox') {
        headers.Allow = 'POST';
        throw new ApiError(405, 'METHOD_NOT_ALLOWED', 'The sandbox source has no subscription check; POST deliveries.', { allow: ['POST'] });
      }
      const t = (await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_target(${source}, ${integrationId}) as result`)) as unknown as Target;
      if (!t.found) throw notFound();
      target = t;
      const secret = await decryptHookSecret(deps.storage.secrets, t.integrationId, source, Buffer.from(t.secretCiphertext, 'base64'));
      if (secret === null) {
        log.error('inbound hook secret does not decrypt (was SIGNED_URL_SECRET changed?)', { integrationId, source });
        throw new ApiError(503, 'HOOK_SECRET_UNREADABLE', 'The secret of this hook cannot be read by this server; set it again.');
      }

      if (req.method === 'GET') {
        const q = queryOf(req);
        if (source === 'x') {
          const crc = q.get('crc_token');
          if (!crc) throw new ApiError(400, 'VALIDATION_FAILED', 'The challenge-response check sends query.crc_token.', { fields: [{ field: 'query.crc_token', code: 'required', message: 'is required' }] });
          // Only X's shape is answered: any other string (a JSON body above
          // all) would be signed like a delivery (server/inbox/signatures.ts).
          if (!isXCrcToken(crc)) {
            throw new ApiError(400, 'VALIDATION_FAILED', `query.crc_token is not an X CRC token: at most ${X_CRC_TOKEN_MAX_LENGTH} characters of A-Z, a-z, 0-9, +, /, =, _ and -.`, {
              fields: [{ field: 'query.crc_token', code: 'pattern', message: `must be 1 to ${X_CRC_TOKEN_MAX_LENGTH} characters of A-Z, a-z, 0-9, +, /, =, _ and -` }],
            });
          }
          credited = true;
          answer = { json: xCrcResponse(secret, crc) };
          status = 200;
          return;
        }
        const mode = q.get('hub.mode');
        const token = q.get('hub.verify_token');
        const challenge = q.get('hub.challenge');
        if (mode !== 'subscribe' || !token || !challenge || challenge.length > HOOK_CHALLENGE_MAX_LENGTH) {
          throw new ApiError(400, 'VALIDATION_FAILED', `The subscription check sends hub.mode=subscribe, hub.verify_token and hub.challenge (at most ${HOOK_CHALLENGE_MAX_LENGTH} characters).`, {
            fields: [{ field: 'query.hub.mode', code: 'required', message: 'hub.mode=subscribe, hub.verify_token and hub.challenge are required' }],
          });
        }
        const expected = t.verifyTokenHash ? Buffer.from(t.verifyTokenHash, 'hex') : Buffer.alloc(0);
        const given = createHash('sha256').update(token, 'utf8').digest();
        if (expected.length !== 32 || !timingSafeEqual(given, expected)) throw new ApiError(403, 'VERIFY_TOKEN_MISMATCH', 'hub.verify_token is not the token set for this hook.');
        credited = true;
        answer = { text: challenge };
        status = 200;
        return;
      }

      const body: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const hs = headerMap(req);
      const check = checkSignature(source, secret, hs, body);
      if (!check.ok) {
        const map = {
          missing: ['SIGNATURE_MISSING', 'The delivery is not signed.'],
          invalid: ['SIGNATURE_INVALID', 'The signature does not match the body and the secret of this hook.'],
          stale: ['SIGNATURE_STALE', 'The delivery is signed more than 5 minutes away from now; a replay is refused.'],
        } as const;
        const [c, m] = map[check.reason];
        throw new ApiError(401, c, m);
      }
      credited = true;
      let normalized;
      try {
        normalized = normalizeDelivery(source, body, hs);
      } catch (e) {
        if (e instanceof DeliveryError) throw new ApiError(400, 'INVALID_DELIVERY', e.message);
        throw e;
      }
      const kept: Record<string, string> = {};
      for (const h of KEPT_HEADERS) if (hs[h] !== undefined) kept[h] = String(hs[h]).slice(0, 1024);
      const r = (await pool.oneFirst(sql.type(jsonResult)`
        select api.inbox_receive(${source}, ${t.integrationId}, ${sql.binary(body)}, ${sql.jsonb(kept)},
                                 ${sql.jsonb(normalized.events as unknown as Parameters<typeof sql.jsonb>[0])}) as result`)) as Record<string, unknown>;
      answer = { json: { data: { deliveryId: r.deliveryId, events: r.events, newEvents: r.newEvents, skipped: normalized.skipped }, meta: null } };
      status = 200;
    } catch (e) {
      const err = e instanceof ApiError ? e : null;
      if (err) {
        status = err.status;
        code = err.code;
        answer = { json: errorBody(requestId, err) };
      } else {
        status = 500;
        code = 'INTERNAL';
        log.error('inbound hook failed', { requestId, err: e instanceof Error ? { message: e.message, stack: e.stack } : String(e) });
        answer = { json: errorBody(requestId, new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.')) };
      }
    } finally {
      const durationMs = performance.now() - started;
      // A refusal counts against the address; only the first ones of the
      // minute are audited one by one (api.inbox_hook_refused).
      let audited = target !== null;
      if (status >= 400 && status < 500 && !credited) {
        try {
          const r = (await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_refused(${clientKey(req)}) as result`)) as { audit: boolean };
          audited = r.audit === true;
        } catch (e) {
          log.error('could not count a refused hook call', { requestId, err: String(e) });
        }
      }
      if (audited) {
        try {
          await pool.query(sql.unsafe`
            select audit.record(${target ? 'platform_webhook' : 'anonymous'}, ${target?.integrationId ?? null}, null,
              ${target?.organizationId ?? null}, ${target?.workspaceId ?? null},
              ${req.method}, ${HOOK_ROUTE}, ${status}, ${Number(durationMs.toFixed(3))}, ${code}, ${requestId})`);
        } catch (e) {
          log.error('audit write failed', { err: String(e) });
        }
      }
      log.info('request', { method: req.method, route: HOOK_ROUTE, status, durationMs: Math.round(durationMs * 10) / 10, code: code ?? undefined });
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      if (answer.text !== undefined) res.status(status).type('text/plain').send(answer.text);
      else res.status(status).json(answer.json);
    }
  };

  // The inbox routes sign cursors and encrypt hook secrets inside their
  // transaction: the server secret is loaded before it opens (as the storage
  // router does for the media routes), never by a query inside it.
  router.use((req, res, next) => {
    if (deps.config.SIGNED_URL_SECRET || !INBOX_ROUTE.test(req.path)) return next();
    deps.storage.secrets.secret().then(
      () => next(),
      (e) => {
        log.error('could not load the signing secret', { requestId: res.locals.requestId, err: e });
        next();
      },
    );
  });

  router.get('/v1/hooks/:source/:integrationId', guard, handle);
  router.post('/v1/hooks/:source/:integrationId', guard, raw, handle);
  router.all('/v1/hooks/:source/:integrationId', (req, res) => {
    res.setHeader('Allow', 'GET, POST');
    res.status(405).json(errorBody(res.locals.requestId, new ApiError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use GET or POST.`, { allow: ['GET', 'POST'] })));
  });
  // The raw parser's refusals (over 1 MB: 413), in the envelope.
  router.use('/v1/hooks', (err: any, _req: Request, res: Response, next: NextFunction) => {
    if (err?.type === 'entity.too.large') {
      res.setHeader('Connection', 'close');
      res.status(413).json(errorBody(res.locals.requestId, new ApiError(413, 'PAYLOAD_TOO_LARGE', `A delivery is at most ${HOOK_BODY_LIMIT_BYTES} bytes.`, { limit: HOOK_BODY_LIMIT_BYTES })));
      return;
    }
    if (err?.type === 'request.aborted' || err?.type === 'stream.encoding.set' || err?.type === 'encoding.unsupported' || err?.status === 400 || err?.status === 415) {
      res.status(400).json(errorBody(res.locals.requestId, new ApiError(400, 'INVALID_DELIVERY', 'The body could not be read.')));
      return;
    }
    next(err);
  });
  return router;
}
