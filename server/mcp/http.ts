// Streamable HTTP transport of the MCP server at /mcp (docs/mcp.md), stateless:
// each POST builds a server bound to the request's bearer credential, answers
// it as JSON, and is gone. The tools call the REST API of this same process
// over loopback HTTP with that credential, so the gate (roles, workspace
// grants, rate limits, audit rows) is the one every client goes through.
// Without `Authorization: Bearer ...` the answer is 401 in the house envelope.
import express, { type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AppDeps } from '../deps.ts';
import { ApiError, errorBody } from '../errors.ts';
import { bodyParserError } from '../http/errors.ts';
import { createMcpServer } from './server.ts';

export const MCP_PATH = '/mcp';

/** The address this request came in on, as a base URL for loopback API calls. */
function selfBaseUrl(req: Request): string {
  const local = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const host = local.includes(':') ? `[${local}]` : local;
  return `http://${host}:${req.socket.localPort}`;
}

export function createMcpRouter(deps: AppDeps) {
  const { config, log } = deps;
  const router = express.Router();
  const json = express.json({ limit: config.BODY_LIMIT_BYTES, type: ['application/json'] });

  const refuse = (res: Response, e: ApiError) => res.status(e.status).json(errorBody(res.locals.requestId, e));

  router.post(MCP_PATH, (req, res, next) => {
    const authorization = req.get('authorization') ?? '';
    if (!/^Bearer\s+\S+\s*$/i.test(authorization)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="pressroom"');
      return refuse(res, new ApiError(401, 'UNAUTHENTICATED', 'The MCP endpoint needs `Authorization: Bearer <API key or session token>`; the tools act with it.'));
    }
    json(req, res, async (err?: unknown) => {
      if (err) return refuse(res, bodyParserError(err, config.BODY_LIMIT_BYTES) ?? new ApiError(400, 'MALFORMED_JSON', 'The body is not JSON.'));
      const server = createMcpServer({
        baseUrl: selfBaseUrl(req),
        authorization: authorization.trim(),
        allowLocalFiles: false,
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        userAgent: `pressroom-mcp-http (${req.get('user-agent') ?? 'unknown client'})`.slice(0, 200),
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
      } catch (e) {
        log.error('mcp request failed', { requestId: res.locals.requestId, err: e });
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
