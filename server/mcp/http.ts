// Streamable HTTP transport of the MCP server at /mcp (docs/mcp.md), stateless:
// each POST builds a server bound to the request's bearer credential, answers
// it as JSON, and is gone. The tools call the REST API of this same process
// over loopback HTTP with that credential, so the gate (roles, workspace
// grants, rate limits, audit rows) is the one every client goes through.
//
// In order, before any server is built:
//   1. the bearer is checked once against the gate (api.gate_guarded, as a
//      read without a workspace), counted against the caller's own address:
//      a missing or bogus credential is 401 (429 AUTH_THROTTLED once the
//      address has failed too often) in the house envelope, audited as the
//      API's refusals are (route /mcp);
//   2. the body is read as JSON-RPC 2.0: not JSON is -32700, not a JSON-RPC
//      message (or an empty batch, or one over MAX_BATCH_MESSAGES) is -32600,
//      both HTTP 400 with `id: null`, as the transport's specification has it.
// The tools' loopback calls carry the caller's address, vouched for with the
// process's key (server/http/client-address.ts), so the API counts and audits
// a failure against the caller, not against 127.0.0.1.
import express, { type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { jsonResult, sql } from '../db/pool.ts';
import type { AppDeps } from '../deps.ts';
import { ApiError, errorBody } from '../errors.ts';
import { bodyParserError } from '../http/errors.ts';
import { sha256 } from '../security.ts';
import { clientAddress, VOUCHED_CLIENT_HEADER, vouchFor } from '../http/client-address.ts';
import { createMcpServer } from './server.ts';

export const MCP_PATH = '/mcp';
/** The most JSON-RPC messages one POST may carry (a batch); more is refused with -32600. */
export const MAX_BATCH_MESSAGES = 10;

/** The address this request came in on, as a base URL for loopback API calls. */
function selfBaseUrl(req: Request): string {
  const local = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const host = local.includes(':') ? `[${local}]` : local;
  return `http://${host}:${req.socket.localPort}`;
}

/** The bearer token: null without an Authorization header, '' when it is not `Bearer <token>` (as the pipeline reads it). */
function bearer(req: Request): string | null {
  const h = req.get('authorization');
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
}

/** What api.gate_guarded answers (server/http/pipeline.ts reads the same). */
interface Gate {
  principal?: { actorKind: string; userId?: string; apiKeyId?: string; apiKeyPrefix?: string; reviewLinkId?: string; organizationId?: string };
  rate?: { reset: number };
  error?: { status: number; code: string; message: string; details?: Record<string, unknown> };
  audit?: boolean;
  retryAfter?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown) => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));

/** Why `m` is not a JSON-RPC 2.0 message MCP takes (request, notification or response), or null when it is one. */
function notAMessage(m: unknown): string | null {
  if (!isObject(m)) return `is ${Array.isArray(m) ? 'an array' : m === null ? 'null' : `a ${typeof m}`}, not a JSON-RPC 2.0 object`;
  if (m.jsonrpc !== '2.0') return 'lacks "jsonrpc": "2.0"';
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method === '') return '"method" is not a non-empty string';
    if ('id' in m && !isId(m.id)) return '"id" is neither a string nor an integer';
    if ('params' in m && !isObject(m.params)) return '"params" is not an object';
  } else if ('result' in m || 'error' in m) {
    if ('result' in m && 'error' in m) return 'has both "result" and "error"';
  } else {
    return 'has no "method" (a request or notification) and no "result" or "error" (a response)';
  }
  const parsed = JSONRPCMessageSchema.safeParse(m);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `does not match the JSON-RPC message schema${issue?.path.length ? ` at ${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'}`;
  }
  return null;
}

export function createMcpRouter(deps: AppDeps) {
  const { config, log, pool } = deps;
  const router = express.Router();
  // strict: false, so that a JSON body that is not an object or array is an
  // invalid request (-32600) rather than a parse error.
  const json = express.json({ limit: config.BODY_LIMIT_BYTES, strict: false, type: ['application/json'] });

  const refuse = (res: Response, e: ApiError) => {
    for (const [k, v] of Object.entries(e.headers ?? {})) res.setHeader(k, v);
    res.status(e.status).json(errorBody(res.locals.requestId, e));
  };
  /** A JSON-RPC error answer with no result: `data` carries the house code and the request id. */
  const rpcError = (res: Response, status: number, code: number, message: string, id: unknown, houseCode: string, details?: Record<string, unknown>) =>
    res.status(status).json({ jsonrpc: '2.0', id: isId(id) ? id : null, error: { code, message, data: { code: houseCode, requestId: res.locals.requestId, ...details } } });

  /** The gate's refusal of a /mcp request, audited as the pipeline audits the API's (route /mcp). */
  const audit = async (gate: Gate, status: number, code: string, started: number, requestId: string) => {
    const p = gate.principal;
    const actorKind = p?.actorKind === 'user' || p?.actorKind === 'api_key' ? p.actorKind : 'anonymous';
    const actorId = p ? ((p.actorKind === 'api_key' ? p.apiKeyId : p.userId) ?? null) : null;
    try {
      await pool.query(sql.unsafe`
        select audit.record(${actorKind}, ${actorKind === 'anonymous' ? null : actorId}, ${p?.apiKeyPrefix ?? null}, ${p?.organizationId ?? null}, null,
          'POST', ${MCP_PATH}, ${status}, ${Number((performance.now() - started).toFixed(3))}, ${code}, ${requestId})`);
    } catch (e) {
      log.error('audit write failed', { err: String(e), requestId });
    }
  };

  router.post(MCP_PATH, async (req, res, next) => {
    const started = performance.now();
    const requestId = res.locals.requestId as string;
    const token = bearer(req);
    const address = clientAddress(req);

    // 1. The credential, once, before anything else is read.
    let gate: Gate;
    try {
      gate = (await pool.oneFirst(sql.type(jsonResult)`
        select api.gate_guarded(${token ? sql.binary(sha256(token)) : null}, null, 'read', 'basic', null, ${`ip:${address}`}) as result`)) as Gate;
    } catch (e) {
      log.error('mcp gate failed', { requestId, err: String(e) });
      return refuse(res, new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.'));
    }
    if (gate.error) {
      const { status, code, details } = gate.error;
      const message =
        code === 'UNAUTHENTICATED' && !token
          ? 'The MCP endpoint needs `Authorization: Bearer <API key or session token>`; the tools act with it.'
          : gate.error.message;
      const headers: Record<string, string> = {};
      if (status === 401) headers['WWW-Authenticate'] = 'Bearer realm="pressroom"';
      const retryAfter = gate.retryAfter ?? (status === 429 ? gate.rate?.reset : undefined);
      if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
      if (gate.audit !== false) await audit(gate, status, code, started, requestId);
      return refuse(res, new ApiError(status, code, message, details ?? null, headers));
    }

    // 2. The body, as JSON-RPC.
    json(req, res, async (err?: unknown) => {
      if (err) {
        const e = bodyParserError(err, config.BODY_LIMIT_BYTES) ?? new ApiError(400, 'MALFORMED_JSON', 'The body is not JSON.');
        return e.code === 'MALFORMED_JSON'
          ? rpcError(res, 400, ErrorCode.ParseError, 'Parse error: the body is not JSON.', null, e.code)
          : rpcError(res, e.status, ErrorCode.InvalidRequest, `Invalid Request: ${e.message}`, null, e.code, e.details ?? undefined);
      }
      const body: unknown = req.body;
      // Without a JSON Content-Type nothing was parsed: the SDK answers 415.
      if (body !== undefined) {
        const messages = Array.isArray(body) ? body : [body];
        if (Array.isArray(body) && body.length === 0) {
          return rpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: an empty batch.', null, 'VALIDATION_FAILED');
        }
        if (messages.length > MAX_BATCH_MESSAGES) {
          return rpcError(res, 400, ErrorCode.InvalidRequest, `Invalid Request: a batch may hold at most ${MAX_BATCH_MESSAGES} messages; this one holds ${messages.length}.`, null, 'VALIDATION_FAILED', {
            maxBatch: MAX_BATCH_MESSAGES,
          });
        }
        for (const [i, m] of messages.entries()) {
          const problem = notAMessage(m);
          if (problem) {
            const what = Array.isArray(body) ? `message ${i} of the batch` : 'the body';
            return rpcError(res, 400, ErrorCode.InvalidRequest, `Invalid Request: ${what} ${problem}.`, Array.isArray(body) ? null : (m as { id?: unknown })?.id, 'VALIDATION_FAILED');
          }
        }
      }

      const server = createMcpServer({
        baseUrl: selfBaseUrl(req),
        authorization: `Bearer ${token}`,
        allowLocalFiles: false,
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        userAgent: `pressroom-mcp-http (${req.get('user-agent') ?? 'unknown client'})`.slice(0, 200),
        headers: { [VOUCHED_CLIENT_HEADER]: vouchFor(address) },
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      } catch (e) {
        log.error('mcp request failed', { requestId, err: e });
        if (!res.headersSent) refuse(res, new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.'));
        else next(e);
      }
    });
  });
  // Stateless: no server-sent event stream to open (GET) and no session to end (DELETE).
  router.all(MCP_PATH, (req, res) => {
    res.setHeader('Allow', 'POST');
    refuse(res, new ApiError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use POST (the MCP endpoint is stateless).`, { allow: ['POST'] }));
  });
  return router;
}
