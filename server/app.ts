import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import cors from 'cors';
import express, { type NextFunction, type Request, type Response } from 'express';
import { sql } from './db/pool.ts';
import type { AppDeps } from './deps.ts';
import { ApiError, errorBody } from './errors.ts';
import { bodyParserError, toApiError } from './http/errors.ts';
import { assertJsonDepth } from './http/guard.ts';
import { loadOpenApi, type OpenApi } from './http/openapi.ts';
import { pipeline, requestIdOf } from './http/pipeline.ts';
import { httpMetrics, instrumentPool, metricsRoute } from './metrics.ts';
import { recordUnmatchedCall } from './http/unmatched.ts';
import { routes } from './routes/index.ts';
import { createHooksRouter, servedRoutes } from './routes/hooks.ts';
import { createOAuthCallbackRouter } from './routes/connections.ts';
import { createStorageRouter } from './storage/router.ts';
import { createWebRouter } from './web-app.ts';
import { createMcpRouter } from './mcp/http.ts';

const require = createRequire(import.meta.url);

export interface AppOptions {
  openapi?: OpenApi;
  /** Whether this process has applied every migration (set by main). */
  isMigrated?: () => boolean;
}

/** The response headers a browser client may read (CORS `Access-Control-Expose-Headers`). */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'Idempotent-Replayed',
  'Retry-After',
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Allow',
] as const;

/**
 * The reference page at /docs: Redoc from this origin, started by
 * /docs/redoc-init.js with the page's nonce (read from the csp-nonce meta
 * element: browsers hide a nonce attribute from scripts, so Redoc's own
 * <redoc nonce> attribute would reach it empty), which Redoc sets on the
 * <style> elements it injects.
 */
const redocPage = (nonce: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pressroom API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csp-nonce" content="${nonce}"></head>
<body><div id="redoc"></div>
<script src="/docs/redoc.standalone.js"></script>
<script src="/docs/redoc-init.js"></script></body></html>`;

const REDOC_INIT = `Redoc.init('/docs/openapi.json', { nonce: document.querySelector('meta[name="csp-nonce"]').content }, document.getElementById('redoc'));\n`;

/**
 * Inline styles Redoc (redoc/bundles/redoc.standalone.js, 2.5.4) injects
 * before it has read its nonce option, allowed by their SHA-256: the
 * perfect-scrollbar stylesheet its bundle inserts as it loads, and an empty
 * <style> element. A Redoc upgrade that changes them shows as a CSP
 * violation in the Chromium check of tests/api/hostile.test.ts.
 */
const REDOC_STYLE_HASHES = ["'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='", "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"];

/**
 * The Content-Security-Policy of /docs: scripts from this origin only (the
 * Redoc bundle and its start), styles from this origin, with the page's nonce
 * or one of REDOC_STYLE_HASHES, the contract fetched from this origin,
 * Redoc's search index in a worker it starts from a blob: URL, images and
 * fonts from this origin or inline (the Redocly logo Redoc loads from its CDN
 * is blocked); nothing may frame the page.
 */
export function docsCsp(nonce: string) {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}' ${REDOC_STYLE_HASHES.join(' ')}`,
    "connect-src 'self'",
    'worker-src blob:',
    "img-src 'self' data:",
    "font-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Builds the Express app from the process's dependencies (server/deps.ts,
 * createAppDeps); no listening and no globals, so tests build it too.
 */
export function createApp(deps: AppDeps, options: AppOptions = {}) {
  const { pool, config, log } = deps;
  const openapi = options.openapi ?? loadOpenApi();
  const app = express();
  app.disable('x-powered-by');
  // API answers are not cached by validators; hashing every body costs CPU.
  app.set('etag', false);
  app.set('trust proxy', config.TRUST_PROXY);
  app.set('query parser', 'extended');

  // Every answer, whatever answers it (routes, hooks, MCP, the storage and calendar routers, the 404 and
  // error handlers): browsers take its Content-Type as sent and never sniff JSON or text into HTML or script.
  app.use((_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use(httpMetrics());
  app.use((req: Request, res: Response, next: NextFunction) => {
    const id = requestIdOf(req);
    res.locals.requestId = id;
    res.locals.startedAt = performance.now();
    res.setHeader('X-Request-Id', id);
    next();
  });

  // Browser clients (CORS_ORIGINS): preflights answer 204 with the methods and
  // headers the API takes; answers expose the headers integrators read.
  if (config.CORS_ORIGINS.length) {
    const origins = config.CORS_ORIGINS;
    app.use(
      cors({
        origin: origins.includes('*') ? '*' : origins,
        methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
        allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
        exposedHeaders: [...CORS_EXPOSED_HEADERS],
        maxAge: 600,
        optionsSuccessStatus: 204,
      }),
    );
  }

  // Prometheus (server/metrics.ts): behind METRICS_TOKEN; absent (404) while it is unset or METRICS_PORT serves them.
  const metrics = metricsRoute(config);
  if (metrics) app.get('/metrics', metrics);
  instrumentPool(pool);

  app.get('/healthz', (_req, res) => {
    res.json({ data: { status: 'ok' }, meta: null });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await pool.query(sql.unsafe`select 1`);
      const migrated = options.isMigrated ? options.isMigrated() : true;
      if (!migrated) throw new Error('not migrated');
      res.json({ data: { status: 'ready', database: 'ok', migrated: true }, meta: null });
    } catch (e) {
      res.status(503).json(errorBody(res.locals.requestId, new ApiError(503, 'NOT_READY', `Not ready: ${e instanceof Error ? e.message : String(e)}`)));
    }
  });
  const docJson = JSON.stringify(openapi.doc);
  app.get('/docs/openapi.json', (_req, res) => {
    res.type('application/json').send(docJson);
  });
  app.get('/docs/redoc.standalone.js', (_req, res) => {
    res.sendFile(require.resolve('redoc/bundles/redoc.standalone.js'));
  });
  app.get('/docs/redoc-init.js', (_req, res) => {
    res.type('text/javascript').send(REDOC_INIT);
  });
  app.get('/docs', (_req, res) => {
    const nonce = randomBytes(16).toString('base64');
    res.setHeader('Content-Security-Policy', docsCsp(nonce));
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.type('html').send(redocPage(nonce));
  });

  // The web app at /app and the client review page at /review (server/web-app.ts, docs/web-app.md): browser clients of this API.
  app.use(createWebRouter(deps.config));

  // Signed upload, view and download URLs of the disk storage driver.
  app.use(createStorageRouter(deps));

  // Inbound platform webhooks: no bearer, raw body (1 MB) for the signature (server/routes/hooks.ts).
  // It serves exactly the contract's `x-raw-body` operations (GET and POST of the hook path).
  const hooks = createHooksRouter(deps);
  const served = servedRoutes(hooks).sort();
  const rawOps = openapi.rawOperations.map((op) => `${op.method} ${op.expressPath}`).sort();
  if (served.join('\n') !== rawOps.join('\n')) {
    throw new Error(`The hooks router serves [${served.join(', ')}] but openapi.yaml marks x-raw-body [${rawOps.join(', ')}]`);
  }
  for (const op of openapi.rawOperations) {
    if (routes[op.operationId]) throw new Error(`Operation ${op.operationId} is x-raw-body (served by server/routes/hooks.ts) but has a pipeline handler`);
  }
  app.use(hooks);

  // The OAuth callback: no bearer, a browser answered with a redirect (server/routes/connections.ts).
  // It serves exactly the contract's `x-browser-redirect` operations.
  const callback = createOAuthCallbackRouter(deps);
  const servedCallback = servedRoutes(callback).sort();
  const redirectOps = openapi.redirectOperations.map((op) => `${op.method} ${op.expressPath}`).sort();
  if (servedCallback.join('\n') !== redirectOps.join('\n')) {
    throw new Error(`The OAuth callback router serves [${servedCallback.join(', ')}] but openapi.yaml marks x-browser-redirect [${redirectOps.join(', ')}]`);
  }
  for (const op of openapi.redirectOperations) {
    if (routes[op.operationId]) throw new Error(`Operation ${op.operationId} is x-browser-redirect (served by server/routes/connections.ts) but has a pipeline handler`);
  }
  app.use(callback);

  // MCP server for AI agents, Streamable HTTP (server/mcp/http.ts, docs/mcp.md): outside the
  // contract like the hooks; its tools call the REST routes below over loopback with the caller's bearer.
  app.use(createMcpRouter(deps));

  // The nesting depth is checked on the raw bytes before they are parsed (server/http/guard.ts).
  const json = express.json({
    limit: config.BODY_LIMIT_BYTES,
    strict: false,
    type: ['application/json', 'application/*+json'],
    verify: (_req, _res, buf) => assertJsonDepth(buf),
  });
  const router = express.Router();
  const allowed = new Map<string, string[]>();
  for (const op of openapi.operations) {
    const route = routes[op.operationId];
    if (!route) throw new Error(`No handler for operation ${op.operationId} (${op.method} ${op.path})`);
    const method = op.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    router[method](op.expressPath, pipeline(op, route, { ...deps, json }));
    allowed.set(op.expressPath, [...(allowed.get(op.expressPath) ?? []), op.method]);
  }
  for (const id of Object.keys(routes)) {
    if (!openapi.operations.some((o) => o.operationId === id)) throw new Error(`Handler ${id} has no operation in openapi.yaml`);
  }
  for (const [p, methods] of allowed) {
    router.all(p, async (req, res) => {
      await recordUnmatchedCall(deps, req, res, 405, 'METHOD_NOT_ALLOWED');
      res.setHeader('Allow', methods.join(', '));
      res.status(405).json(errorBody(res.locals.requestId, new ApiError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use ${methods.join(', ')}.`, { allow: methods })));
    });
  }
  app.use(router);

  app.use(async (req: Request, res: Response) => {
    await recordUnmatchedCall(deps, req, res, 404, 'NOT_FOUND');
    res.status(404).json(errorBody(res.locals.requestId, new ApiError(404, 'NOT_FOUND', `No route ${req.method} ${req.path}.`)));
  });
  // Body-parser failures (malformed JSON, too large) and anything unforeseen.
  app.use(async (err: any, req: Request, res: Response, _next: NextFunction) => {
    const e =
      (err instanceof URIError
        ? new ApiError(400, 'MALFORMED_URL', 'The URL is not valid: a percent-encoded sequence is not UTF-8.')
        : null) ??
      bodyParserError(err, config.BODY_LIMIT_BYTES) ??
      toApiError(err) ??
      new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.');
    if (e.status >= 500) log.error('unhandled error', { requestId: res.locals.requestId, err });
    if (e.code === 'MALFORMED_URL') await recordUnmatchedCall(deps, req, res, e.status, e.code);
    res.status(e.status).json(errorBody(res.locals.requestId, e));
  });
  return app;
}
