// The MCP server (docs/mcp.md). Every tool calls the REST API over HTTP with
// the caller's own bearer credential, through openapi-fetch and the types
// generated from openapi.yaml: roles, workspace grants, rate limits, audit
// rows and idempotency are exactly those of any other client. Results are
// structured content (the API's envelope) plus the same JSON as text; an API
// error is a tool error carrying its code, message, HTTP status and request id.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import createClient from 'openapi-fetch';
import type { paths } from '../generated/api.d.ts';
import { loadContract, operationTools, uploadToolSchema, type OperationTool } from './tools.ts';
import { detectType, fetchToTemp, fileSize, putBytes, ToolFailure } from './upload.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export interface McpServerOptions {
  /** Where the REST API answers (the stdio command: PRESSROOM_URL; /mcp: this server's own address). */
  baseUrl: string;
  /** The caller's credential, forwarded on every API call: `Bearer ...`. */
  authorization: string;
  /** Whether `upload_media` may read local files (stdio only: never on the API host). */
  allowLocalFiles: boolean;
  /** Whether `upload_media` may fetch URLs resolving to loopback or private networks (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivateNetworks: boolean;
  /** Extra headers for every API call (e.g. a request id prefix). */
  userAgent?: string;
}

export const SERVER_INFO = { name: 'pressroom', version: '0.1.0' };

interface ToolEntry {
  tool: Tool;
  validate: ValidateFunction;
  run: (args: Record<string, any>) => Promise<CallToolResult>;
}

interface Compiled {
  ops: { op: OperationTool; validate: ValidateFunction }[];
  upload: Record<'local' | 'remote', { schema: Tool['inputSchema']; validate: ValidateFunction }>;
}
// Derived and compiled once per process: /mcp builds a server per request.
let compiled: Compiled | null = null;
function contractTools(): Compiled {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(ajv);
    const doc = loadContract();
    const upload = (local: boolean) => {
      const schema = uploadToolSchema(doc, local);
      return { schema: schema as Tool['inputSchema'], validate: ajv.compile(schema) };
    };
    compiled = {
      ops: operationTools(doc).map((op) => ({ op, validate: ajv.compile(op.inputSchema) })),
      upload: { local: upload(true), remote: upload(false) },
    };
  }
  return compiled;
}

type Envelope = { error?: { code?: string; message?: string; requestId?: string; details?: unknown } } & Record<string, unknown>;

function success(body: unknown, status: number, requestId: string | null): CallToolResult {
  const structured = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : { data: body ?? null, meta: null };
  return {
    content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }],
    structuredContent: structured,
    _meta: { 'pressroom/status': status, 'pressroom/requestId': requestId },
  };
}

function failure(code: string, message: string, status: number | null, requestId: string | null, details: unknown = null): CallToolResult {
  const error = { code, message, status, requestId, details: details ?? null };
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}${status ? ` (HTTP ${status}` : ' ('}${requestId ? `${status ? ', ' : ''}request id ${requestId})` : status ? ')' : 'no API call)'}${details ? `\n${JSON.stringify(details)}` : ''}` }],
    structuredContent: { error },
    _meta: { 'pressroom/status': status, 'pressroom/requestId': requestId },
  };
}

/** An MCP server bound to one caller's credential. */
export function createMcpServer(options: McpServerOptions): Server {
  const { ops, upload } = contractTools();
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: options.authorization, 'User-Agent': options.userAgent ?? 'pressroom-mcp' },
  });
  // Dynamic dispatch over the operations listed in server/mcp/tools.ts; the typed
  // calls of the upload flow below use the generated types directly.
  const request = api.request as unknown as (method: string, url: string, init: Record<string, unknown>) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

  const answer = async (call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<CallToolResult> => {
    let r: { data?: unknown; error?: unknown; response: Response };
    try {
      r = await call;
    } catch (e) {
      return failure('API_UNREACHABLE', `The Pressroom API at ${options.baseUrl} could not be reached: ${(e as Error).message}`, null, null);
    }
    const requestId = r.response.headers.get('x-request-id');
    if (r.response.ok) return success(r.data, r.response.status, requestId);
    const env = (r.error ?? {}) as Envelope;
    return failure(env.error?.code ?? `HTTP_${r.response.status}`, env.error?.message ?? r.response.statusText, r.response.status, env.error?.requestId ?? requestId, env.error?.details ?? null);
  };

  const entries = new Map<string, ToolEntry>();
  for (const { op, validate } of ops) {
    entries.set(op.name, {
      tool: {
        name: op.name,
        title: op.title,
        description: op.description,
        inputSchema: op.inputSchema as Tool['inputSchema'],
        annotations: { title: op.title, readOnlyHint: op.readOnly, openWorldHint: op.operationId === 'publishContent_v1' || op.operationId === 'replyInboxThread_v1' },
      },
      validate,
      run: (args) => {
        const params: Record<'path' | 'query' | 'header', Record<string, unknown>> = { path: {}, query: {}, header: {} };
        for (const p of op.params) if (args[p.name] !== undefined) params[p.in][p.name] = args[p.name];
        return answer(request(op.method, op.path, { params, ...(op.hasBody && args.body !== undefined ? { body: args.body } : {}) }));
      },
    });
  }

  const uploadTool = options.allowLocalFiles ? upload.local : upload.remote;
  entries.set('upload_media', {
    tool: {
      name: 'upload_media',
      title: 'Upload media',
      description:
        (options.allowLocalFiles ? 'Uploads a local file (`path`) or the file at a URL (`url`)' : 'Uploads the file at a URL (`url`)') +
        ' to the workspace media library through the signed upload flow (POST /v1/workspaces/{workspaceId}/media/upload, PUT of the bytes, POST .../complete), and returns the media item. ' +
        'A URL is fetched without following redirects and must resolve to a public address. Supported: PNG, JPEG, WebP, GIF, MP4, MOV, WebM (editor role).',
      inputSchema: uploadTool.schema,
      annotations: { title: 'Upload media', readOnlyHint: false, openWorldHint: true },
    },
    validate: uploadTool.validate,
    run: async (args) => {
      const sources = [args.path, args.url].filter((x) => x !== undefined);
      if (sources.length !== 1) {
        return failure('INVALID_TOOL_INPUT', options.allowLocalFiles ? 'Give exactly one of `path` and `url`.' : 'Give `url` (local files are read only by the stdio server).', null, null);
      }
      let temp: string | null = null;
      try {
        let file: string;
        let name: string;
        let hinted: string | null = null;
        if (args.path !== undefined) {
          file = path.resolve(args.path);
          name = path.basename(file);
        } else {
          const got = await fetchToTemp(args.url, options.allowPrivateNetworks);
          temp = got.dir;
          file = got.file;
          name = got.name;
          hinted = got.contentType;
        }
        const size = await fileSize(file);
        if (size === 0) return failure('FILE_EMPTY', 'The file is empty.', null, null);
        const contentType = args.contentType ?? (await detectType(file, hinted));
        const workspaceId: string = args.workspaceId;
        const init = await api.POST('/v1/workspaces/{workspaceId}/media/upload', {
          params: { path: { workspaceId } },
          body: { filename: args.filename ?? name.slice(0, 255), contentType, size, ...(args.folderId !== undefined ? { folderId: args.folderId } : {}), ...(args.altText !== undefined ? { altText: args.altText } : {}) },
        });
        if (!init.data) return answer(Promise.resolve(init));
        const session = init.data.data;
        if (!session.uploadUrl) return failure('UPLOAD_FAILED', `The upload session is ${session.state}, not pending.`, null, init.response.headers.get('x-request-id'));
        await putBytes(session.uploadUrl, session.headers, file, size);
        return answer(
          api.POST('/v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete', {
            params: { path: { workspaceId, sessionId: session.sessionId } },
            body: {},
          }),
        );
      } catch (e) {
        if (e instanceof ToolFailure) {
          const d = (e.details ?? {}) as { status?: number; requestId?: string };
          return failure(e.code, e.message, d.status ?? null, d.requestId ?? null, e.details);
        }
        return failure('API_UNREACHABLE', `The upload failed: ${(e as Error).message}`, null, null);
      } finally {
        if (temp) await rm(temp, { recursive: true, force: true });
      }
    },
  });

  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      'Pressroom: plan, schedule and publish social-media content. Start with list_workspaces, then list_integrations for the channels of a workspace. ' +
      'Every tool acts with your API key, under its role and workspaces; errors carry the API code and request id.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...entries.values()].map((e) => e.tool) }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const entry = entries.get(req.params.name);
    if (!entry) return failure('UNKNOWN_TOOL', `No tool named ${req.params.name}.`, null, null);
    const args = (req.params.arguments ?? {}) as Record<string, any>;
    if (!entry.validate(args)) {
      const problems = (entry.validate.errors ?? []).map((e) => ({ field: e.instancePath.replace(/^\//, '').replace(/\//g, '.') || e.params?.missingProperty || '', message: e.message ?? 'invalid' }));
      return failure('INVALID_TOOL_INPUT', `The arguments do not match the tool's input schema: ${problems.map((p) => `${p.field || '(root)'} ${p.message}`).join('; ')}.`, null, null, { problems });
    }
    return entry.run(args);
  });
  return server;
}
