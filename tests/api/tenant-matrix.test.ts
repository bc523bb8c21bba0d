// The tenant matrix, generated from openapi.yaml: every operation under
// /v1/workspaces/{workspaceId} and /v2/workspaces/{workspaceId}, called for real by every persona on
// organization A's workspace with A's resource ids in the path, and by
// organization B's owner on B's own workspace with A's ids. A new area joins
// the matrix by being in the contract.
//
// Denials: a key of another workspace, a key of another organization, a
// revoked key, an expired key and a stranger's session never get a 2xx on A's
// workspace; B's owner never gets a 2xx for A's resource ids; a viewer key
// is refused (403) below the role an operation's summary documents, and an API
// key on a session-only operation. Allowed: at or above that role, reads and
// writes get no 401/403 (writes run last, by the least persona allowed). No answer
// to a persona outside A carries A's data (A's organization id, its owner's
// e-mail, its names, or an id of A it was not sent).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../server/http/openapi.ts';
import { client, createKey, signup } from '../support/http.ts';
import { openapi, startTestServer, type TestServer } from '../support/server.ts';
import { png, upload } from './media-fixtures.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('tenant-matrix');
  api = client(server);
});
afterAll(async () => server?.close());

const MARK = 'TenantAMarker';
const doc = openapi.doc as any;
const deref = (s: any): any => {
  let x = s;
  while (x && typeof x.$ref === 'string') x = x.$ref.slice(2).split('/').reduce((o: any, k: string) => o[k], doc);
  return x;
};
/** The operation's request example, its workspace references pointed at the workspace in the path. */
const exampleBody = (op: Operation, path: string): unknown => {
  const rb = deref(doc.paths[op.path][op.method.toLowerCase()].requestBody);
  const example = rb?.content?.['application/json']?.example;
  const w = path.split('/')[3];
  return example === undefined
    ? undefined
    : JSON.parse(JSON.stringify(example), (k, v) => (k === 'workspaceIds' && Array.isArray(v) ? [w] : k === 'workspaceId' ? w : v));
};

describe('tenant matrix', () => {
  it('holds every denial, for every operation and persona', { timeout: 240_000 }, async () => {
    // Organization A: two workspaces, keys of every kind, one resource of each kind in WA.
    const A = await signup(api, `a${Date.now() % 1e6}`);
    const WA = A.workspaceId;
    const t = A.token;
    const ws2 = await api.post('/v1/workspaces', { name: `${MARK} second` }, { token: t });
    expect(ws2.status).toBe(201);
    const WA2 = ws2.body.data.id ?? ws2.body.data.workspace?.id;
    const keyOf = async (role: string, workspaceId = WA, extra: Record<string, unknown> = {}) =>
      createKey(api, t, workspaceId, { role, workspaceIds: [workspaceId], name: `${MARK} ${role}`, ...extra });
    const manager = await keyOf('manager');
    const editor = await keyOf('editor');
    const viewer = await keyOf('viewer');
    const otherWs = await keyOf('manager', WA2);
    const revoked = await keyOf('manager');
    expect((await api.delete(`/v1/workspaces/${WA}/api-keys/${revoked.id}`, { token: t })).status).toBeLessThan(300);
    const spare = await keyOf('viewer');
    const expiresAt = Date.now() + 1500;
    const expired = await keyOf('manager', WA, { expiresAt: new Date(expiresAt).toISOString() });

    const ws = `/v1/workspaces/${WA}`;
    const made = async (path: string, body: unknown) => {
      const r = await api.post(`${ws}${path}`, body, { token: t, unchecked: true });
      return r.status < 300 ? r.body.data : null;
    };
    await made('/tags', { name: `${MARK} tag` });
    await made('/pillars', { name: `${MARK} pillar` });
    await made('/formats', { name: `${MARK} format` });
    await made('/hashtag-groups', { name: `${MARK} hashtags`, hashtags: ['launch'] });
    await made('/campaigns', { name: `${MARK} campaign`, phases: [{ name: `${MARK} phase` }] });
    await made('/integrations', { connector: 'sandbox', platform: 'x', name: `${MARK} channel` });
    const integrationId = (await server.owner.query(`select id from app.integrations where workspace_id = $1`, [WA])).rows[0]?.id;
    await made('/content', { intent: 'draft', caption: `${MARK} caption`, channels: [{ integrationId }] });
    await made('/media/folders', { name: `${MARK} folder` });
    await made('/media/label-groups', { name: `${MARK} group` });
    await made('/media/labels', { name: `${MARK} label` });
    await upload(api, t, WA, png(4, 4), { filename: `${MARK}.png` });
    await made('/media/upload', { filename: `${MARK}.png`, contentType: 'image/png', size: 100 });

    // The Workbench (/v2): a page, a section and a row with content.
    const wb = `/v2/workspaces/${WA}/workbench`;
    const wbPage = await api.post(`${wb}/pages`, { name: `${MARK} page` }, { token: t });
    const wbSection = wbPage.body.data.sections[0].id as string;
    await api.post(`${wb}/rows`, { sectionId: wbSection, title: `${MARK} row`, caption: `${MARK} row caption`, channels: [integrationId] }, { token: t });

    const first = async (table: string) => (await server.owner.query(`select id from app.${table} where workspace_id = $1 limit 1`, [WA])).rows[0]?.id ?? null;
    const ids: Record<string, string | null> = {
      tags: await first('tags'),
      pillars: await first('pillars'),
      formats: await first('formats'),
      'hashtag-groups': await first('hashtag_groups'),
      campaigns: await first('campaigns'),
      phases: await first('campaign_phases'),
      integrations: integrationId,
      content: await first('content_items'),
      'content-roots': await first('content_roots'),
      articles: await first('content_items'),
      folders: await first('media_folders'),
      'label-groups': await first('media_label_groups'),
      labels: await first('media_labels'),
      media: await first('media_items'),
      upload: await first('media_upload_sessions'),
      'api-keys': manager.id,
      members: A.userId,
      versions: '1',
      pages: wbPage.body.data.id,
      sections: wbSection,
      rows: await first('workbench_rows'),
      // A reaction's path segment is an emoji (the contract refuses anything else before any role check).
      reactions: encodeURIComponent('👍'),
    };
    for (const [k, v] of Object.entries(ids)) expect(v, `a resource of A for ${k}`).toBeTruthy();
    const idsOfA = new Set(Object.values(ids).filter((v): v is string => Boolean(v) && v!.length > 8));
    idsOfA.add(WA);
    idsOfA.add(WA2);
    idsOfA.add(A.userId);

    /** The path of op on workspace w, each id from what precedes it (`/tags/{id}` is a tag of A). */
    const pathOf = (op: Operation, w: string) => {
      const segs = op.path.split('/');
      return segs
        .map((s, i) => {
          const m = /^\{(.+)\}$/.exec(s);
          if (!m) return s;
          if (m[1] === 'workspaceId') return w;
          return ids[segs[i - 1]] ?? crypto.randomUUID();
        })
        .join('/');
    };

    // Organization B: its owner's session is the stranger; its key the other organization's.
    const B = await signup(api, `b${Date.now() % 1e6}`);
    const otherOrg = await createKey(api, B.token, B.workspaceId, { role: 'manager' });
    // The expired key's time has passed.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt + 200 - Date.now())));

    const leaks = (text: string, sentPath: string) => {
      const found: string[] = [];
      for (const s of [A.organizationId, A.email, MARK]) if (text.includes(s)) found.push(s);
      for (const id of idsOfA) if (text.includes(id) && !sentPath.includes(id)) found.push(id);
      return found;
    };
    const failures: string[] = [];
    let cells = 0;
    let denials = 0;
    let allows = 0;
    const call = async (persona: string, token: string, op: Operation, path: string) => {
      cells++;
      const body = op.hasBody ? exampleBody(op, path) : undefined;
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (op.idempotent) headers['idempotency-key'] = `matrix-${cells}`;
      const res = await fetch(server.baseUrl + path, { method: op.method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 500) failures.push(`${persona} ${op.method} ${op.path}: ${res.status} ${text.slice(0, 160)}`);
      return { status: res.status, text };
    };

    const RANK: Record<string, number> = { viewer: 1, editor: 2, manager: 3 };
    const members: [string, string, string, boolean][] = [
      ['viewer key', viewer.key, 'viewer', false],
      ['editor key', editor.key, 'editor', false],
      ['manager key', manager.key, 'manager', false],
      ['owner session', t, 'manager', true],
    ];
    /** The role an operation documents in its summary, e.g. "(session only, manager role)", and whether it takes sessions only. */
    const rulesOf = (op: Operation) => {
      const o = doc.paths[op.path][op.method.toLowerCase()];
      const role = /\((?:[^)]*\b)?(viewer|editor|manager) role\)/.exec(o.summary ?? '')?.[1];
      expect(role, `${op.method} ${op.path} documents its role in the summary`).toBeTruthy();
      const schemes = (o.security ?? doc.security ?? []).flatMap((x: Record<string, unknown>) => Object.keys(x));
      return { role: role!, sessionOnly: schemes.length > 0 && schemes.every((x: string) => x === 'session') };
    };
    const writers = new Map<Operation, [string, string]>();
    // The x-raw-body operations (the inbound hooks) are not in openapi.operations: they take no
    // bearer and reach one integration by its id and its secret (tests/api/hooks.test.ts).
    const ops = openapi.operations.filter((op) => /^\/v[12]\/workspaces\/\{workspaceId\}/.test(op.path));
    const deniedOnA: [string, string][] = [
      ['key of another workspace', otherWs.key],
      ['key of another organization', otherOrg.key],
      ['revoked key', revoked.key],
      ['expired key', expired.key],
      ["stranger's session", B.token],
    ];
    for (const op of ops) {
      const onA = pathOf(op, WA);
      for (const [persona, token] of deniedOnA) {
        const r = await call(persona, token, op, onA);
        if (r.status < 300) failures.push(`${persona} ${op.method} ${op.path}: ${r.status}, should be denied`);
        else denials++;
        const l = leaks(r.text, onA);
        if (l.length) failures.push(`${persona} ${op.method} ${op.path}: A's data in the answer: ${l.join(', ')}`);
      }
      // B's owner, on B's workspace, with A's resource ids.
      if (/\{(?!workspaceId)[^}]+\}/.test(op.path)) {
        const onB = pathOf(op, B.workspaceId);
        const r = await call("B's owner with A's ids", B.token, op, onB);
        if (r.status < 300) failures.push(`B's owner ${op.method} ${op.path} with A's ids: ${r.status}, should be denied`);
        else denials++;
        const l = leaks(r.text, onB);
        if (l.length) failures.push(`B's owner ${op.method} ${op.path}: A's data in the answer: ${l.join(', ')}`);
      }
      // Roles: below the role the operation documents, or an API key on a
      // session-only operation, is a denial (403); reads at or above it are allowed.
      const { role, sessionOnly } = rulesOf(op);
      for (const [persona, token, has, isSession] of members) {
        const allowed = RANK[has] >= RANK[role] && (!sessionOnly || isSession);
        if (!allowed) {
          const r = await call(persona, token, op, onA);
          if (r.status !== 403) failures.push(`${persona} ${op.method} ${op.path}: ${r.status}, should be 403 (${role} role${sessionOnly ? ', session only' : ''})`);
          else denials++;
        } else if (op.method === 'GET') {
          const r = await call(persona, token, op, onA);
          if (r.status === 401 || r.status === 403) failures.push(`${persona} GET ${op.path}: ${r.status}, should be allowed: ${r.text.slice(0, 160)}`);
          else allows++;
        } else if (!writers.has(op)) {
          writers.set(op, [persona, token]);
        }
      }
    }
    // Writes, last (they change A's data): the least persona allowed to, not refused for its credential or role.
    for (const [op, [persona, token]] of writers) {
      const path = pathOf(op, WA).replace(`/api-keys/${manager.id}`, `/api-keys/${spare.id}`);
      const r = await call(persona, token, op, path);
      if (r.status === 401 || r.status === 403) failures.push(`${persona} ${op.method} ${op.path}: ${r.status}, should be allowed: ${r.text.slice(0, 160)}`);
      else allows++;
    }
    console.log(`tenant matrix: ${ops.length} operations, ${cells} cells, ${denials} denials held, ${allows} allowed cells (reads, and writes by the least persona allowed), ${failures.length} failures`);
    expect(failures).toEqual([]);
  });
});
