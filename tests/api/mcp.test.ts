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

async function tenant() {
  const owner = await signup(api);
  const key = await createKey(api, owner.token, owner.workspaceId);
  const integrationId: string = (
    await server.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'x', 'X account') returning id`, [
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

  it("a key is refused another workspace's data, and a bad key is the API's 401", async () => {
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
    const bogus = await httpClient('prk_not_a_real_key');
    try {
      const r = await call(bogus, 'list_workspaces', {});
      expect(toolError(r)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    } finally {
      await bogus.close();
    }
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
