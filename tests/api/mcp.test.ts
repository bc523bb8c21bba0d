// The MCP server (server/mcp/, docs/mcp.md) driven by the MCP SDK's own client
// over both transports: Streamable HTTP at /mcp of a real server, and stdio
// (`node server/cli/pressroom.ts mcp` spawned with PRESSROOM_URL and
// PRESSROOM_API_KEY). Every tool goes through the REST API with the caller's
// key: the audit rows, roles and workspace grants are those of the API.
import { spawnSync } from 'node:child_process';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VOUCHED_CLIENT_HEADER, vouchFor } from '../../server/http/client-address.ts';
import { MAX_BATCH_MESSAGES } from '../../server/mcp/http.ts';
import { OPERATION_TOOLS } from '../../server/mcp/tools.ts';
import { foldInbox } from '../../server/jobs/inbox.ts';
import { client, createKey, signup } from '../support/http.ts';
import { deliver, hookIntegration, metaDelivery } from '../support/inbox.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png } from './media-fixtures.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

let server: TestServer;
let api: ReturnType<typeof client>;
let files: HttpServer;
let filesUrl: string;
let tmp: string;
const image = png(8, 8, 3);

beforeAll(async () => {
  server = await startTestServer('mcp');
  api = client(server);
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-test-'));
  // A local file host for upload_media's URL source.
  files = createServer((req, res) => {
    if (req.url === '/pic.png') res.writeHead(200, { 'content-type': 'image/png' }).end(image);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => files?.close(r));
  if (tmp) await rm(tmp, { recursive: true, force: true });
  await server?.close();
});

async function tenant(on: TestServer = server, keyBody: Record<string, unknown> = {}) {
  const c = on === server ? api : client(on);
  const owner = await signup(c);
  const key = await createKey(c, owner.token, owner.workspaceId, keyBody);
  const integrationId: string = (
    await on.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'x', 'X account') returning id`, [
      owner.organizationId,
      owner.workspaceId,
    ])
  ).rows[0].id;
  return { ...owner, key: key.key, integrationId };
}

async function httpClient(key: string) {
  const c = new Client({ name: 'mcp-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
}

async function stdioClient(key: string, extraEnv: Record<string, string> = {}) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const c = new Client({ name: 'mcp-test-stdio', version: '1.0.0' });
  await c.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['server/cli/pressroom.ts', 'mcp'],
      cwd: ROOT,
      env: { ...env, PRESSROOM_URL: server.baseUrl, PRESSROOM_API_KEY: key, ...extraEnv },
      stderr: 'inherit',
    }),
  );
  return c;
}

/** A raw POST to /mcp: the JSON-RPC answer (or house envelope) as JSON, with the status and headers. */
async function rpc(base: string, message: unknown, opts: { key?: string; headers?: Record<string, string>; raw?: string } = {}) {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
      ...opts.headers,
    },
    body: opts.raw ?? JSON.stringify(message),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}
const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

const call = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: args })) as CallToolResult;
// The tool's answer, read as JSON: each test checks the fields it needs (shapes vary by tool).
const data = (r: CallToolResult) => {
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  return (r.structuredContent as any).data;
};
/** The part of a tool's JSON Schema these tests read. */
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}
/** The properties of a tool's input schema (the MCP SDK types them as plain objects). */
const inputProps = (tool: { inputSchema: { properties?: Record<string, object> } }) => (tool.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
/** The house error envelope of a failed tool call. */
interface ToolError {
  status: number;
  code: string;
  message: string;
  requestId: string | null;
  details?: { problems?: { field: string }[] };
}
const toolError = (r: CallToolResult) => (r.structuredContent as { error: ToolError }).error;
/** The text of a tool call's first content block. */
const textOf = (r: CallToolResult) => {
  const first = r.content[0];
  expect(first?.type).toBe('text');
  return first?.type === 'text' ? first.text : '';
};
const inHours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();

async function auditRows(requestIds: string[]) {
  return (await server.owner.query(`select request_id, status, method, route, actor_kind, api_key_prefix, workspace_id from audit.api_calls where request_id = any($1::text[])`, [requestIds])).rows;
}

describe('MCP over Streamable HTTP (/mcp)', () => {
  it('refuses a request without a bearer: 401 in the house envelope', async () => {
    const res = await fetch(`${server.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: ToolError };
    expect(body.error).toMatchObject({ code: 'UNAUTHENTICATED', requestId: res.headers.get('x-request-id') });
    const get = await fetch(`${server.baseUrl}/mcp`, { headers: { authorization: 'Bearer x' } });
    expect(get.status).toBe(405);
    expect(((await get.json()) as { error: ToolError }).error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('lists the tools with input schemas derived from openapi.yaml', async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    try {
      const { tools } = await c.listTools();
      expect(tools.map((x) => x.name).sort()).toEqual([...OPERATION_TOOLS.map((x) => x.name), 'upload_media'].sort());
      const create = tools.find((x) => x.name === 'create_content')!;
      expect(create.inputSchema.required).toEqual(expect.arrayContaining(['workspaceId', 'body']));
      const body = inputProps(create).body;
      expect(body.properties?.channels.type).toBe('array');
      expect(JSON.stringify(create.inputSchema)).not.toContain('$ref');
      expect(inputProps(create)['Idempotency-Key'].maxLength).toBe(255);
      const list = tools.find((x) => x.name === 'list_content')!;
      expect(inputProps(list).limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
      expect(list.annotations?.readOnlyHint).toBe(true);
      // Local files are never read on the API host: only `url` there.
      const upload = tools.find((x) => x.name === 'upload_media')!;
      expect(Object.keys(upload.inputSchema.properties as object)).not.toContain('path');
    } finally {
      await c.close();
    }
  });

  it('creates, schedules and lists content end to end; every call is an audit row with its request id', async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    try {
      const ws = data(await call(c, 'list_workspaces', {}));
      expect(ws.map((w: any) => w.id)).toEqual([t.workspaceId]);
      const ints = data(await call(c, 'list_integrations', { workspaceId: t.workspaceId }));
      expect(ints.map((i: any) => i.id)).toEqual([t.integrationId]);

      const created = await call(c, 'create_content', {
        workspaceId: t.workspaceId,
        'Idempotency-Key': 'mcp-create-1',
        body: { caption: 'Written by an agent', channels: [{ integrationId: t.integrationId }] },
      });
      const edition = data(created).editions[0];
      expect(edition).toMatchObject({ status: 'draft', integrationId: t.integrationId });
      expect(created.content[0]).toMatchObject({ type: 'text' });
      expect(JSON.parse(textOf(created))).toEqual(created.structuredContent);

      const at = inHours(3);
      const scheduled = data(await call(c, 'schedule_content', { workspaceId: t.workspaceId, id: edition.id, body: { scheduledAt: at } }));
      expect(JSON.stringify(scheduled)).toContain('scheduled');

      const got = data(await call(c, 'get_content', { workspaceId: t.workspaceId, id: edition.id }));
      expect(got).toMatchObject({ id: edition.id, status: 'scheduled', caption: 'Written by an agent' });
      expect(new Date(got.scheduledAt).toISOString()).toBe(at);

      const listed = await call(c, 'list_content', { workspaceId: t.workspaceId, status: 'scheduled', limit: 10 });
      expect(data(listed).map((e: any) => e.id)).toEqual([edition.id]);
      expect((listed.structuredContent as { meta: { total: number } }).meta.total).toBe(1);

      data(await call(c, 'update_content', { workspaceId: t.workspaceId, id: edition.id, body: { caption: 'Edited by an agent' } }));
      expect(data(await call(c, 'get_content', { workspaceId: t.workspaceId, id: edition.id })).caption).toBe('Edited by an agent');

      const summary = await call(c, 'analytics_summary', { workspaceId: t.workspaceId });
      expect(summary.isError).toBeFalsy();
      expect(data(await call(c, 'review_inbox', { workspaceId: t.workspaceId, platform: 'all', urgency: 'all' }))).toBeDefined();
      expect(data(await call(c, 'list_inbox_threads', { workspaceId: t.workspaceId }))).toEqual([]);

      // The same request ids are in the API's audit log, as the key's calls.
      const ids = [created, listed, summary].map((r) => r._meta?.['pressroom/requestId'] as string);
      expect(ids.every(Boolean)).toBe(true);
      const rows = await auditRows(ids);
      expect(rows.map((r) => r.request_id).sort()).toEqual([...ids].sort());
      expect(rows.find((r) => r.request_id === ids[0])).toMatchObject({ status: 201, method: 'POST', route: '/v1/workspaces/{workspaceId}/content', actor_kind: 'api_key', workspace_id: t.workspaceId });
      expect(t.key.startsWith(rows[0].api_key_prefix)).toBe(true);

      // The idempotency key is honoured as for any client: the replay answers the same content.
      const again = await call(c, 'create_content', {
        workspaceId: t.workspaceId,
        'Idempotency-Key': 'mcp-create-1',
        body: { caption: 'Written by an agent', channels: [{ integrationId: t.integrationId }] },
      });
      expect(data(again).rootId).toBe(data(created).rootId);
    } finally {
      await c.close();
    }
  });

  /** An Instagram channel (its posts need media) in the tenant's workspace. */
  const instagramOf = async (t: { organizationId: string; workspaceId: string }): Promise<string> =>
    (
      await server.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'instagram', 'IG') returning id`, [
        t.organizationId,
        t.workspaceId,
      ])
    ).rows[0].id;

  it("check_content checks a draft against each channel's rules through POST content/check and writes nothing", async () => {
    const t = await tenant();
    const insta = await instagramOf(t);
    const items = async () => Number((await server.owner.query(`select count(*) from app.content_items where workspace_id = $1`, [t.workspaceId])).rows[0].count);
    const before = await items();
    const c = await httpClient(t.key);
    try {
      const tools = (await c.listTools()).tools;
      const tool = tools.find((x) => x.name === 'check_content');
      expect(tool?.annotations?.readOnlyHint, 'a POST that writes nothing').toBe(true);
      expect(Object.keys(inputProps(tool!).body.properties ?? {})).toEqual(expect.arrayContaining(['caption', 'channels', 'mediaIds', 'intent', 'scheduledAt']));
      const r = data(await call(c, 'check_content', { workspaceId: t.workspaceId, body: { caption: 'pic of the day', channels: [{ integrationId: t.integrationId }, { integrationId: insta }] } }));
      expect(r.valid).toBe(false);
      expect(r.channels.map((x: any) => [x.integrationId, x.valid, x.problems.map((p: any) => p.code)])).toEqual([
        [t.integrationId, true, []],
        [insta, false, ['media_required']],
      ]);
      expect(data(await call(c, 'check_content', { workspaceId: t.workspaceId, body: { caption: 'ok', channels: [{ integrationId: t.integrationId }] } })).valid).toBe(true);
      expect(await items()).toBe(before);
    } finally {
      await c.close();
    }
  });

  it("check_schedule checks drafts against their platform's rules and writes nothing", async () => {
    const t = await tenant();
    const insta = await instagramOf(t);
    const wb = `/v2/workspaces/${t.workspaceId}/workbench`;
    const page = await api.post(`${wb}/pages`, { name: 'Plan', sections: [{ name: 'Week 1' }] }, { token: t.token });
    expect(page.status, JSON.stringify(page.body)).toBe(201);
    const sectionId = page.body.data.sections[0].id;
    const row = async (body: Record<string, unknown>) => (await api.post(`${wb}/rows`, { sectionId, ...body }, { token: t.token })).body.data.id as string;
    const good = await row({ title: 'good', caption: 'fine', channels: [t.integrationId], scheduledAt: inHours(5) });
    const noMedia = await row({ title: 'needs media', caption: 'pic', channels: [insta], scheduledAt: inHours(5) });
    const c = await httpClient(t.key);
    try {
      const r = data(await call(c, 'check_schedule', { workspaceId: t.workspaceId, body: { rowIds: [good, noMedia] } }));
      expect(r).toMatchObject({ dryRun: true, rows: 2, rowsOk: 1, rowsFailed: 1 });
      const failed = r.results.find((x: any) => x.rowId === noMedia);
      expect(failed.error.code).toBeTruthy();
      // A dry run: the rows are still drafts.
      const rows = await api.get(`${wb}/rows/${good}`, { token: t.token });
      expect(rows.body.data.status).toBe('draft');
    } finally {
      await c.close();
    }
  });

  it('works the review inbox: the key (its creator an approver) sees the item and decides it', async () => {
    const t = await tenant();
    const auth = { token: t.token };
    const ws = `/v1/workspaces/${t.workspaceId}`;
    const wf = await api.post(`${ws}/approval-workflows`, { name: 'All', stages: [{ name: 'S', rule: 'all', approvers: [{ type: 'member', userId: t.userId }] }] }, auth);
    expect(wf.status, JSON.stringify(wf.body)).toBe(201);
    const content = await api.post(`${ws}/content`, { caption: 'Needs a yes', channels: [{ integrationId: t.integrationId }] }, auth);
    const review = await api.post(`${ws}/reviews`, { title: 'R', workflowId: wf.body.data.id, contentIds: [content.body.data.editions[0].id] }, auth);
    expect(review.status, JSON.stringify(review.body)).toBe(201);
    expect((await api.post(`${ws}/reviews/${review.body.data.id}/send`, undefined, auth)).status).toBeLessThan(300);
    const c = await httpClient(t.key);
    try {
      const inbox = data(await call(c, 'review_inbox', { workspaceId: t.workspaceId, platform: 'all', urgency: 'all' }));
      expect(inbox).toHaveLength(1);
      const itemId = review.body.data.items[0].id;
      const decided = data(await call(c, 'decide_review_item', { workspaceId: t.workspaceId, reviewId: review.body.data.id, itemId, body: { decision: 'approved', comment: 'Looks right' } }));
      expect(decided).toMatchObject({ itemState: 'approved', reviewStatus: 'completed' });
      expect(data(await call(c, 'review_inbox', { workspaceId: t.workspaceId, platform: 'all', urgency: 'all' }))).toEqual([]);
      expect(data(await call(c, 'get_review', { workspaceId: t.workspaceId, reviewId: review.body.data.id })).status).toBe('completed');
    } finally {
      await c.close();
    }
  });

  it("an API error is a tool error with the API's code, status and request id", async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    try {
      const created = data(await call(c, 'create_content', { workspaceId: t.workspaceId, body: { caption: 'x', channels: [{ integrationId: t.integrationId }] } }));
      const r = await call(c, 'schedule_content', { workspaceId: t.workspaceId, id: created.editions[0].id, body: { scheduledAt: '2001-01-01T00:00:00Z' } });
      expect(r.isError).toBe(true);
      const err = toolError(r);
      expect(err.status).toBe(400);
      expect(err.code).toMatch(/^[A-Z_]+$/);
      expect(err.requestId).toBeTruthy();
      expect(textOf(r)).toContain(err.code);
      expect(textOf(r)).toContain(err.requestId);
      expect(await auditRows([err.requestId!])).toEqual([expect.objectContaining({ status: 400 })]);

      const missing = await call(c, 'get_content', { workspaceId: t.workspaceId, id: '00000000-0000-4000-8000-000000000000' });
      expect(toolError(missing)).toMatchObject({ status: 404, code: 'NOT_FOUND' });

      // Arguments that do not match the derived schema never reach the API.
      const bad = await call(c, 'list_content', { workspaceId: 'not-a-uuid', limit: 1000 });
      expect(bad.isError).toBe(true);
      expect(toolError(bad)).toMatchObject({ code: 'INVALID_TOOL_INPUT', requestId: null });
      expect(toolError(bad).details?.problems?.map((p) => p.field).sort()).toEqual(['limit', 'workspaceId']);
    } finally {
      await c.close();
    }
  });

  it("a key is refused another workspace's data, and a bad key is refused by /mcp itself (401, audited)", async () => {
    const a = await tenant();
    const b = await tenant();
    const c = await httpClient(a.key);
    try {
      const r = await call(c, 'list_content', { workspaceId: b.workspaceId });
      expect(r.isError).toBe(true);
      expect([403, 404]).toContain(toolError(r).status);
      const create = await call(c, 'create_content', { workspaceId: b.workspaceId, body: { caption: 'intrusion', channels: [{ integrationId: b.integrationId }] } });
      expect(create.isError).toBe(true);
      expect((await server.owner.query(`select count(*)::int as n from app.content_roots where workspace_id = $1`, [b.workspaceId])).rows[0].n).toBe(0);
    } finally {
      await c.close();
    }
    // A bogus bearer is refused by /mcp itself, before any server is built: 401 in the house envelope.
    await expect(httpClient('prk_not_a_real_key')).rejects.toThrow();
    const bogus = await rpc(server.baseUrl, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_workspaces', arguments: {} } }, { key: 'prk_not_a_real_key' });
    expect(bogus.status).toBe(401);
    expect(bogus.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(bogus.body.error).toMatchObject({ code: 'UNAUTHENTICATED', requestId: bogus.headers.get('x-request-id') });
    // ... and audited as the API's refusals are, on route /mcp.
    expect(await auditRows([bogus.body.error.requestId])).toEqual([expect.objectContaining({ status: 401, method: 'POST', route: '/mcp', actor_kind: 'anonymous' })]);
  });

  it('upload_media refuses a URL on a private network (the SSRF guard) unless the operator allows it', async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    try {
      const r = await call(c, 'upload_media', { workspaceId: t.workspaceId, url: `${filesUrl}/pic.png` });
      expect(r.isError).toBe(true);
      expect(toolError(r).code).toBe('MEDIA_URL_PRIVATE_NETWORK');
      const local = await call(c, 'upload_media', { workspaceId: t.workspaceId, path: '/etc/passwd' });
      expect(toolError(local).code).toBe('INVALID_TOOL_INPUT');
    } finally {
      await c.close();
    }
  });
});

describe('MCP protocol answers (JSON-RPC errors, tool schemas)', () => {
  it('answers JSON-RPC errors: -32700 for a body that is not JSON, -32600 for what is not a JSON-RPC message, -32601 and -32602', async () => {
    const t = await tenant();
    const post = (message: unknown, raw?: string) => rpc(server.baseUrl, message, { key: t.key, raw });

    const notJson = await post(null, '{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    expect(notJson.body.error.data).toMatchObject({ code: 'MALFORMED_JSON', requestId: notJson.headers.get('x-request-id') });

    for (const [message, id, says] of [
      [42, null, 'not a JSON-RPC 2.0 object'],
      [{ hello: 'world' }, null, '"jsonrpc": "2.0"'],
      [{ jsonrpc: '1.0', id: 7, method: 'tools/list' }, 7, '"jsonrpc": "2.0"'],
      [{ jsonrpc: '2.0', id: 8 }, 8, 'no "method"'],
      [{ jsonrpc: '2.0', id: { x: 1 }, method: 'tools/list' }, null, '"id"'],
      [{ jsonrpc: '2.0', id: 9, method: 'tools/list', params: [1] }, 9, '"params"'],
      [[], null, 'empty batch'],
      [[{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'x'], null, 'message 1 of the batch'],
    ] as const) {
      const r = await post(message);
      expect(r.status, JSON.stringify(message)).toBe(400);
      expect(r.body, JSON.stringify(message)).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
      expect(r.body.error.message).toContain(says);
    }

    const tooMany = await post(Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' })));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: { maxBatch: MAX_BATCH_MESSAGES } } });
    expect(tooMany.body.error.message).toContain(`at most ${MAX_BATCH_MESSAGES}`);
    // A batch within the bound is answered message by message.
    const batch = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, toolCall(2, 'list_workspaces', {})]);
    expect(batch.status).toBe(200);
    expect(batch.body.map((m: { id: number }) => m.id).sort()).toEqual([1, 2]);

    const noMethod = await post({ jsonrpc: '2.0', id: 3, method: 'prompts/list' });
    expect(noMethod.status).toBe(200);
    expect(noMethod.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32601 } });

    const unknownTool = await post(toolCall(4, 'drop_all_tables', {}));
    expect(unknownTool.status).toBe(200);
    expect(unknownTool.body).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32602 } });
    expect(unknownTool.body.error.message).toContain('drop_all_tables');

    const noName = await post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { arguments: {} } });
    expect(noName.body).toMatchObject({ jsonrpc: '2.0', id: 5, error: { code: -32602 } });

    // A notification alone is accepted with nothing to answer.
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  });

  it('names the offending property of invalid tool input in the message (a tool error the model reads), and never calls the API', async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    try {
      const r = await call(c, 'create_content', { workspaceId: t.workspaceId, body: { caption: 5, channels: [{ integrationId: 'nope' }], surprise: true } });
      expect(r.isError).toBe(true);
      const err = toolError(r);
      expect(err).toMatchObject({ code: 'INVALID_TOOL_INPUT', requestId: null, status: null });
      const fields = (err.details?.problems ?? []).map((p) => p.field).sort();
      expect(fields).toEqual(['body.caption', 'body.channels.0.integrationId', 'body.surprise']);
      for (const f of fields) expect(err.message).toContain(f);
      expect(err.message).toContain('body.caption must be string, or must be null');
      expect(err.message).toContain('body.surprise is not an allowed property');
      const missing = await call(c, 'get_content', { workspaceId: t.workspaceId });
      expect(toolError(missing).message).toContain('id is required');
      expect((await server.owner.query(`select count(*)::int as n from app.content_roots where workspace_id = $1`, [t.workspaceId])).rows[0].n).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('no tool schema spells `type` as an array; nullable properties are anyOf branches and null still reaches the API', async () => {
    /** Every schema (nested ones included) whose `type` is there but not a single string, by its path. */
    const typeArrays = (schema: unknown, at: string, out: string[] = []): string[] => {
      if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return out;
      const s = schema as Record<string, unknown>;
      if ('type' in s && typeof s.type !== 'string') out.push(at);
      for (const k of ['properties', 'patternProperties', '$defs', 'definitions']) {
        for (const [name, sub] of Object.entries((s[k] ?? {}) as Record<string, unknown>)) typeArrays(sub, `${at}.${k}.${name}`, out);
      }
      for (const k of ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else']) {
        if (Array.isArray(s[k])) (s[k] as unknown[]).forEach((sub, i) => typeArrays(sub, `${at}.${k}[${i}]`, out));
        else typeArrays(s[k], `${at}.${k}`, out);
      }
      for (const k of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
        if (Array.isArray(s[k])) (s[k] as unknown[]).forEach((sub, i) => typeArrays(sub, `${at}.${k}[${i}]`, out));
      }
      return out;
    };
    // The walk finds what it looks for.
    expect(typeArrays({ type: 'object', properties: { a: { anyOf: [{ type: ['string', 'null'] }] } } }, 't')).toEqual(['t.properties.a.anyOf[0]']);
    const t = await tenant();
    const h = await httpClient(t.key);
    const s = await stdioClient(t.key);
    try {
      for (const c of [h, s]) {
        const { tools } = await c.listTools();
        expect(tools.length).toBe(OPERATION_TOOLS.length + 1);
        const found = tools.flatMap((tool) => [...typeArrays(tool.inputSchema, `${tool.name}.inputSchema`), ...typeArrays(tool.outputSchema, `${tool.name}.outputSchema`)]);
        expect(found).toEqual([]);
        // The walk does see types: every tool's input is an object.
        for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
      }
      const update = (await h.listTools()).tools.find((x) => x.name === 'update_content')!;
      const caption = (inputProps(update).body.properties?.caption ?? {}) as { anyOf?: { type: string }[]; description?: string };
      expect(caption.anyOf?.map((b) => b.type)).toEqual(['string', 'null']);
      expect(caption.description).toBeTruthy();

      // null is still sent as null: an edition's caption returns to its root's.
      const created = data(await call(h, 'create_content', { workspaceId: t.workspaceId, body: { caption: 'root caption', channels: [{ integrationId: t.integrationId }] } }));
      const id = created.editions[0].id;
      data(await call(h, 'update_content', { workspaceId: t.workspaceId, id, body: { caption: 'own caption' } }));
      const cleared = await call(h, 'update_content', { workspaceId: t.workspaceId, id, body: { caption: null } });
      expect(cleared.isError, JSON.stringify(cleared.structuredContent)).toBeFalsy();
      expect(data(await call(h, 'get_content', { workspaceId: t.workspaceId, id })).caption).toBe('root caption');
    } finally {
      await h.close();
      await s.close();
    }
  });
});

describe('MCP hardening (credential first, caller address, bounded work)', () => {
  // A server that lets upload_media fetch private addresses (so a fetch of the
  // local file host below would go through), behind a proxy (TRUST_PROXY: each
  // test names its own client address with X-Forwarded-For), with a low
  // failed-credential limit.
  let guarded: TestServer;
  let host: HttpServer;
  let hostUrl: string;
  let hits = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  beforeAll(async () => {
    guarded = await startTestServer('mcp-guarded', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, TRUST_PROXY: true, AUTH_FAILURE_LIMIT: 20, AUTH_FAILURE_AUDIT: 5 });
    host = createServer((req, res) => {
      hits++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'image/png' }).end(image);
      }, 150);
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/pic.png`;
  });
  afterAll(async () => {
    await new Promise((r) => host?.close(r));
    await guarded?.close();
  });

  async function awayFromMinuteEnd() {
    const s = new Date().getUTCSeconds();
    if (s >= 45) await new Promise((r) => setTimeout(r, (61 - s) * 1000));
  }

  it('upload_media fetches nothing for a bogus or read-only credential; one fetch at a time per request; batches are bounded', async () => {
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const t = await tenant(guarded);
    const viewer = await tenant(guarded, { role: 'viewer' });
    const upload = (id: number, workspaceId: string) => toolCall(id, 'upload_media', { workspaceId, url: hostUrl });

    // Bogus bearer over HTTP, alone and in a batch: refused before anything is read.
    const bogus = await rpc(guarded.baseUrl, upload(1, t.workspaceId), { key: 'prk_bogus_upload', headers: from('198.51.100.1') });
    expect(bogus.status).toBe(401);
    const bogusBatch = await rpc(guarded.baseUrl, [1, 2, 3].map((i) => upload(i, t.workspaceId)), { key: 'prk_bogus_upload', headers: from('198.51.100.1') });
    expect(bogusBatch.status).toBe(401);
    // Bogus key on stdio (which reads no /mcp gate): the API refuses it before the fetch.
    const stdio = await stdioClient('prk_bogus_upload', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', PRESSROOM_URL: guarded.baseUrl });
    try {
      expect(toolError(await call(stdio, 'upload_media', { workspaceId: t.workspaceId, url: hostUrl }))).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    } finally {
      await stdio.close();
    }
    // A viewer may not upload: refused before the fetch too.
    const read = await rpc(guarded.baseUrl, upload(1, viewer.workspaceId), { key: viewer.key, headers: from('198.51.100.2') });
    expect(read.body.result.structuredContent.error).toMatchObject({ code: 'ROLE_REQUIRED', status: 403 });
    // Another workspace: refused before the fetch.
    const other = await rpc(guarded.baseUrl, upload(1, viewer.workspaceId), { key: t.key, headers: from('198.51.100.2') });
    expect(other.body.result.structuredContent.error).toMatchObject({ code: 'WORKSPACE_FORBIDDEN', status: 403 });
    // A batch over the bound: refused whole.
    const over = await rpc(guarded.baseUrl, Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => upload(i, t.workspaceId)), { key: t.key, headers: from('198.51.100.2') });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe(-32600);
    expect(hits).toBe(0);

    // An editor's batch of three uploads: fetched one after the other, all uploaded.
    const three = await rpc(guarded.baseUrl, [1, 2, 3].map((i) => upload(i, t.workspaceId)), { key: t.key, headers: from('198.51.100.2') });
    expect(three.status).toBe(200);
    for (const m of three.body) expect(m.result.isError, JSON.stringify(m.result.structuredContent)).toBeFalsy();
    expect(hits).toBe(3);
    expect(maxInFlight).toBe(1);
  });

  // Up to 15 s spent waiting for a fresh minute, so that the 40 calls share one.
  it("counts and audits the /mcp caller's own address: one address's bogus calls do not throttle another's, and the API takes no spoofed address", { timeout: 60_000 }, async () => {
    const t = await tenant(guarded);
    // The windows of the test above (its stdio client calls from loopback) are not this test's.
    await guarded.owner.query(`delete from app.auth_failures`);
    await awayFromMinuteEnd();
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    const answers = [];
    for (let i = 0; i < 40; i++) answers.push(await rpc(guarded.baseUrl, toolCall(i, 'list_workspaces', {}), { key: `prk_bogus${i}`, headers: attacker }));
    expect(answers.slice(0, 20).map((a) => a.status)).toEqual(Array(20).fill(401));
    expect(answers.slice(20).map((a) => a.status)).toEqual(Array(20).fill(429));
    expect(answers[20].body.error.code).toBe('AUTH_THROTTLED');
    expect(Number(answers[20].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // Another address's valid MCP calls go through (their loopback API calls count as that address, not 127.0.0.1) ...
    const c = await new Client({ name: 'mcp-test', version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${guarded.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${t.key}`, 'x-forwarded-for': '198.51.100.9' } } }),
    );
    try {
      expect(data(await call(c, 'list_workspaces', {})).map((w: { id: string }) => w.id)).toEqual([t.workspaceId]);
      expect(data(await call(c, 'list_integrations', { workspaceId: t.workspaceId })).map((i: { id: string }) => i.id)).toEqual([t.integrationId]);
    } finally {
      await c.close();
    }
    // ... while the throttled address is refused, right key or not.
    expect((await rpc(guarded.baseUrl, toolCall(1, 'list_workspaces', {}), { key: t.key, headers: attacker })).status).toBe(429);

    // The failures are the caller's: counted against 203.0.113.7, none against loopback.
    const clients = (await guarded.owner.query(`select client, failures from app.auth_failures`)).rows;
    expect(clients.find((r) => r.client === 'ip:203.0.113.7')?.failures).toBeGreaterThanOrEqual(40);
    expect(clients.map((r) => r.client)).not.toContain('ip:127.0.0.1');
    // The first five are audited one by one (route /mcp), the rest in one summary row naming the address.
    const ids = answers.map((a) => a.body.error.requestId);
    const audited = (await guarded.owner.query(`select route, status, error_code from audit.api_calls where request_id = any($1)`, [ids])).rows;
    expect(audited).toEqual(Array(5).fill({ route: '/mcp', status: 401, error_code: 'UNAUTHENTICATED' }));
    await guarded.owner.query(`update app.auth_failures set window_start = window_start - interval '1 minute'`);
    await guarded.owner.query(`select app.flush_auth_failures()`);
    const summary = (await guarded.owner.query(`select request_id, calls from audit.api_calls where error_code = 'AUTH_FAILURE_BURST'`)).rows;
    expect(summary.map((r) => r.request_id)).toEqual([expect.stringMatching(/^auth-failures:ip:203\.0\.113\.7:/)]);
    expect(summary[0].calls).toBe(36);

    // The pipeline takes the caller's address from /mcp's header only when its MAC verifies (the
    // key is this process's: the test server runs in it), and never from anyone else.
    const forged = `${encodeURIComponent('192.0.2.66')};${'A'.repeat(43)}`;
    const vouched = vouchFor('192.0.2.77');
    for (const [header, n] of [[forged, 2], [vouched, 3]] as const) {
      for (let i = 0; i < n; i++) {
        const r = await fetch(`${guarded.baseUrl}/v1/workspaces`, { headers: { authorization: 'Bearer prk_bogus', 'x-forwarded-for': '192.0.2.55', [VOUCHED_CLIENT_HEADER]: header } });
        expect(r.status).toBe(401);
      }
    }
    const counted = Object.fromEntries((await guarded.owner.query(`select client, failures from app.auth_failures where client like 'ip:192.0.2.%'`)).rows.map((r) => [r.client, r.failures]));
    expect(counted).toEqual({ 'ip:192.0.2.55': 2, 'ip:192.0.2.77': 3 });
  });
});

describe('MCP over stdio (pressroom mcp)', () => {
  it('lists tools, uploads media from a file and a URL, creates and publishes content', async () => {
    const t = await tenant();
    const c = await stdioClient(t.key, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    try {
      const { tools } = await c.listTools();
      expect(tools.find((x) => x.name === 'upload_media')!.inputSchema.properties).toHaveProperty('path');

      const file = path.join(tmp, 'local.png');
      await writeFile(file, image);
      const fromFile = data(await call(c, 'upload_media', { workspaceId: t.workspaceId, path: file, altText: 'a square' }));
      expect(fromFile).toMatchObject({ type: 'image', filename: 'local.png', contentType: 'image/png', fileSize: image.length });
      const fromUrl = data(await call(c, 'upload_media', { workspaceId: t.workspaceId, url: `${filesUrl}/pic.png` }));
      expect(fromUrl).toMatchObject({ type: 'image', filename: 'pic.png' });
      const missing = await call(c, 'upload_media', { workspaceId: t.workspaceId, url: `${filesUrl}/nothing.png` });
      expect(toolError(missing)).toMatchObject({ code: 'MEDIA_FETCH_FAILED' });

      const media = data(await call(c, 'list_media', { workspaceId: t.workspaceId }));
      expect(media.map((m: any) => m.id).sort()).toEqual([fromFile.id, fromUrl.id].sort());

      const created = data(
        await call(c, 'create_content', { workspaceId: t.workspaceId, body: { caption: 'From the terminal', mediaIds: [fromFile.id], channels: [{ integrationId: t.integrationId }] } }),
      );
      const id = created.editions[0].id;
      const published = await call(c, 'publish_content', { workspaceId: t.workspaceId, id });
      expect(published.isError, JSON.stringify(published.structuredContent)).toBeFalsy();
      const got = data(await call(c, 'get_content', { workspaceId: t.workspaceId, id }));
      // Publishing now queues the edition's publish job at once (the worker sends it).
      expect(['scheduled', 'publishing', 'sent']).toContain(got.status);
      expect(new Date(got.scheduledAt).getTime()).toBeLessThanOrEqual(Date.now());
      expect(got.mediaIds ?? got.media?.map((m: any) => m.id)).toEqual([fromFile.id]);

      const ids = [published._meta?.['pressroom/requestId'] as string];
      expect(await auditRows(ids)).toHaveLength(1);
    } finally {
      await c.close();
    }
  });

  it('reads inbox threads and their messages and replies in a thread', async () => {
    const t = await tenant();
    const fb = await hookIntegration(api, t, 'facebook', 'facebook');
    const at = Math.floor(Date.now() / 1000) - 60;
    const delivery = metaDelivery({
      object: 'page',
      entry: [{ id: '1', time: at, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: '1_mcp_c1', post_id: '1_mcp', parent_id: '1_mcp', from: { id: 'u1', name: 'Ann' }, message: 'When is the launch?', created_time: at } }] }],
    });
    expect((await deliver(server, 'facebook', fb, delivery)).status).toBe(200);
    await foldInbox(server.deps, fb);
    const c = await stdioClient(t.key);
    try {
      const threads = data(await call(c, 'list_inbox_threads', { workspaceId: t.workspaceId, unread: true }));
      expect(threads).toHaveLength(1);
      const thread = threads[0];
      const msgs = data(await call(c, 'list_inbox_messages', { workspaceId: t.workspaceId, threadId: thread.id }));
      expect(msgs.map((m: any) => m.text)).toEqual(['When is the launch?']);
      const reply = await call(c, 'reply_inbox_thread', { workspaceId: t.workspaceId, threadId: thread.id, 'Idempotency-Key': 'mcp-reply-1', body: { text: 'Monday!', inReplyToId: msgs[0].id } });
      expect(reply._meta?.['pressroom/status']).toBe(202);
      expect(data(reply)).toMatchObject({ direction: 'outbound', text: 'Monday!', delivery: { state: 'pending' }, author: { kind: 'api_key' } });
      expect(data(await call(c, 'get_inbox_thread', { workspaceId: t.workspaceId, threadId: thread.id })).id).toBe(thread.id);
    } finally {
      await c.close();
    }
  });

  it('an error from the API surfaces with its code and request id; another workspace is refused', async () => {
    const a = await tenant();
    const b = await tenant();
    const c = await stdioClient(a.key);
    try {
      const r = await call(c, 'get_integration', { workspaceId: b.workspaceId, id: b.integrationId });
      expect(r.isError).toBe(true);
      const err = toolError(r);
      expect([403, 404]).toContain(err.status);
      expect(err.requestId).toBeTruthy();
      expect(await auditRows([err.requestId!])).toHaveLength(1);
      // Without the URL opt-in, loopback is refused on stdio too.
      const u = await call(c, 'upload_media', { workspaceId: a.workspaceId, url: `${filesUrl}/pic.png` });
      expect(toolError(u).code).toBe('MEDIA_URL_PRIVATE_NETWORK');
    } finally {
      await c.close();
    }
  });

  it('pressroom mcp without its credentials exits 2 with the usage on stderr and nothing on stdout', () => {
    const env = { ...process.env };
    delete env.PRESSROOM_URL;
    delete env.PRESSROOM_API_KEY;
    const r = spawnSync(process.execPath, ['server/cli/pressroom.ts', 'mcp'], { cwd: ROOT, env, encoding: 'utf8', input: '' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('set PRESSROOM_URL and PRESSROOM_API_KEY');
  });
});

describe('MCP and text that is not Unicode', () => {
  it('create_content with a lone UTF-16 surrogate in the caption is a tool error (400), never a 500, and writes nothing', async () => {
    const t = await tenant();
    const c = await httpClient(t.key);
    const count = async () => Number((await server.owner.query(`select count(*) from app.content_items where workspace_id = $1`, [t.workspaceId])).rows[0].count);
    try {
      for (const caption of ['a\ud800', '\udc00b', 'x\ud83d']) {
        const r = await call(c, 'create_content', { workspaceId: t.workspaceId, body: { caption, channels: [{ integrationId: t.integrationId }] } });
        expect(r.isError, JSON.stringify(r.structuredContent)).toBe(true);
        const err = toolError(r);
        expect(err.status).toBe(400);
        expect(['VALIDATION_FAILED', 'INVALID_TOOL_INPUT']).toContain(err.code);
      }
      expect(await count()).toBe(0);
      const ok = data(await call(c, 'create_content', { workspaceId: t.workspaceId, body: { caption: 'Spring 🌸', channels: [{ integrationId: t.integrationId }] } }));
      expect(data(await call(c, 'get_content', { workspaceId: t.workspaceId, id: ok.editions[0].id })).caption).toBe('Spring 🌸');
      expect(await count()).toBe(1);
    } finally {
      await c.close();
    }
  });
});
