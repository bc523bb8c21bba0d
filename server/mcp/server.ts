// The MCP server (docs/mcp.md). Every tool calls the REST API over HTTP with
// the caller's own bearer credential, through openapi-fetch and the types
// generated from openapi.yaml: roles, workspace grants, rate limits, audit
// rows and idempotency are exactly those of any other client. Results are
// structured content (the API's envelope) plus the same JSON as text; an API
// error is a tool error carrying its code, message, HTTP status and request id.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
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
  /** The User-Agent of every API call. */
  userAgent?: string;
  /** Extra headers for every API call (/mcp: the caller's address, vouched for; server/http/client-address.ts). */
  headers?: Record<string, string>;
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

/**
 * What is wrong with a tool's arguments, one entry per property, named by its
 * path as the API names fields (`body.channels.0.integrationId`): a missing
 * or unknown property by its own name, a value outside a nullable property's
 * branches once (`must be string, or must be null`).
 */
export function inputProblems(errors: ErrorObject[] | null | undefined): { field: string; code: string; message: string }[] {
  const all = errors ?? [];
  const pathOf = (e: ErrorObject) => e.instancePath.replace(/^\//, '').replace(/\//g, '.').replace(/~1/g, '/').replace(/~0/g, '~');
  const join = (field: string, name: string) => (field ? `${field}.${name}` : name);
  const anyOfAt = new Set(all.filter((e) => e.keyword === 'anyOf').map((e) => e.schemaPath));
  const problems: { field: string; code: string; message: string }[] = [];
  for (const e of all) {
    // A branch of an anyOf is reported with the anyOf.
    if ([...anyOfAt].some((p) => e.schemaPath.startsWith(`${p}/`))) continue;
    const field = pathOf(e);
    if (e.keyword === 'required') {
      problems.push({ field: join(field, (e.params as { missingProperty: string }).missingProperty), code: 'required', message: 'is required' });
    } else if (e.keyword === 'additionalProperties') {
      problems.push({ field: join(field, (e.params as { additionalProperty: string }).additionalProperty), code: 'unknown_property', message: 'is not an allowed property' });
    } else if (e.keyword === 'anyOf') {
      const branches = all.filter((b) => b.schemaPath.startsWith(`${e.schemaPath}/`) && b.instancePath === e.instancePath).map((b) => b.message ?? 'is not valid');
      problems.push({ field, code: 'anyOf', message: branches.length ? [...new Set(branches)].join(', or ') : (e.message ?? 'is not valid') });
    } else {
      problems.push({ field, code: e.keyword, message: e.message ?? 'is not valid' });
    }
  }
  return problems;
}

/** An MCP server bound to one caller's credential. */
export function createMcpServer(options: McpServerOptions): Server {
  const { ops, upload } = contractTools();
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, Authorization: options.authorization, 'User-Agent': options.userAgent ?? 'pressroom-mcp' },
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

  // Before a byte is read or fetched, the API says whether this credential may
  // upload into the workspace: GET /v1/workspaces authenticates it (a refused
  // credential is counted and audited as any) and answers its effective role
  // in each workspace; api.init_media_upload asks for editor. So a bogus or
  // read-only credential never makes this server download anything. Null when
  // the upload may go on, else the tool error.
  const mayUpload = async (workspaceId: string): Promise<CallToolResult | null> => {
    const r = await api.GET('/v1/workspaces').catch((e: Error) => e);
    if (r instanceof Error) return failure('API_UNREACHABLE', `The Pressroom API at ${options.baseUrl} could not be reached: ${r.message}`, null, null);
    if (!r.data) return answer(Promise.resolve(r));
    const requestId = r.response.headers.get('x-request-id');
    const workspace = r.data.data.find((w) => w.id === workspaceId);
    if (!workspace) {
      return failure('WORKSPACE_FORBIDDEN', 'The credential has no access to this workspace.', 403, requestId, { workspaceId });
    }
    if (workspace.role !== 'editor' && workspace.role !== 'manager') {
      return failure('ROLE_REQUIRED', `Uploading media needs the editor role in this workspace; the credential has ${workspace.role}.`, 403, requestId, {
        requiredRole: 'editor',
        role: workspace.role,
      });
    }
    return null;
  };
  // At most one URL fetch of this server at a time (on /mcp: of one request,
  // however many upload_media calls a batch holds); the others wait their turn.
  let fetching: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = fetching.then(work, work);
    fetching = turn.catch(() => undefined);
    return turn;
  };

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
      const refused = await mayUpload(args.workspaceId);
      if (refused) return refused;
      return args.url !== undefined ? oneAtATime(() => uploadFrom(args)) : uploadFrom(args);
    },
  });

  async function uploadFrom(args: Record<string, any>): Promise<CallToolResult> {
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
  }

  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      'Pressroom: plan, schedule and publish social-media content. Start with list_workspaces, then list_integrations for the channels of a workspace. ' +
      'Every tool acts with your API key, under its role and workspaces; errors carry the API code and request id.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...entries.values()].map((e) => e.tool) }));
  // Registered under a schema that reads only the method, so that a malformed
  // tools/call (no tool name, arguments that are not an object) is refused by
  // the SDK's own check of CallToolRequestSchema as invalid params (-32602),
  // not as the internal error (-32603) a failed parse of the handler's schema is.
  server.setRequestHandler(CallToolRequestSchema.pick({ method: true }).loose(), async (raw) => {
    const req = CallToolRequestSchema.parse(raw);
    const entry = entries.get(req.params.name);
    // An unknown tool is a protocol error (JSON-RPC -32602), as the MCP specification's
    // tools section has it; arguments that do not match the schema are a tool error
    // the model reads and corrects (INVALID_TOOL_INPUT, naming each property's path).
    if (!entry) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`, { name: req.params.name, tools: [...entries.keys()] });
    const args = (req.params.arguments ?? {}) as Record<string, any>;
    if (!entry.validate(args)) {
      const problems = inputProblems(entry.validate.errors);
      return failure('INVALID_TOOL_INPUT', `The arguments do not match the tool's input schema: ${problems.map((p) => `${p.field || '(arguments)'} ${p.message}`).join('; ')}.`, null, null, { problems });
    }
    return entry.run(args);
  });
  return server;
}
