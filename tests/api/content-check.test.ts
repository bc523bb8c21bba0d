// POST {ws}/content/check (checkContent_v1, api.check_content): the body of
// content create checked channel by channel against the platforms' rules,
// writing nothing; each kind of problem, bad input (4xx), roles, and no
// reach into another workspace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let x: string;
let ig: string;

beforeAll(async () => {
  server = await startTestServer('content_check');
  api = client(server);
  owner = await signup(api);
  const add = async (platform: string) => {
    const r = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name: `Our ${platform}` }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as string;
  };
  x = await add('x');
  ig = await add('instagram');
});
afterAll(async () => {
  await server?.close();
});

const url = () => `/v1/workspaces/${owner.workspaceId}/content/check`;
const check = (body: unknown, token = owner.token) => api.post(url(), body, { token });
const codes = (list: { field: string; code: string }[]) => list.map((p) => `${p.field}:${p.code}`);
const counts = async () =>
  (await server.owner.query(`select (select count(*) from app.content_items)::int items, (select count(*) from app.content_roots)::int roots, (select count(*) from app.content_versions)::int versions, (select count(*) from pgboss.job where name = 'content.publish')::int jobs`)).rows[0];

describe('content check', () => {
  it('a valid body is valid on every channel, and nothing is written', async () => {
    const before = await counts();
    const res = await check({ intent: 'schedule', scheduledAt: new Date(Date.now() + 86_400_000).toISOString(), caption: 'Fine everywhere', channels: [{ integrationId: x }] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ valid: true, problems: [], channels: [{ index: 0, integrationId: x, platform: 'x', valid: true, problems: [] }] });
    expect(await counts()).toEqual(before);
  });

  it("each channel gets its own platform's problems; a draft is held to the rules too", async () => {
    const before = await counts();
    const res = await check({ caption: 'y'.repeat(300), channels: [{ integrationId: x }, { integrationId: ig }] });
    expect(res.status).toBe(200);
    const [cx, cig] = res.body.data.channels;
    expect(res.body.data.valid).toBe(false);
    expect(res.body.data.problems).toEqual([]);
    expect(cx).toMatchObject({ index: 0, platform: 'x', valid: false });
    expect(codes(cx.problems)).toEqual(['channels.0.caption:caption_too_long']);
    expect(cx.problems[0].message).toMatch(/280/);
    expect(cig).toMatchObject({ index: 1, platform: 'instagram', valid: false });
    expect(codes(cig.problems)).toEqual(['channels.1.mediaIds:media_required']);
    // a channel caption of its own overrides the root's, as on create
    const fixed = await check({ caption: 'y'.repeat(300), channels: [{ integrationId: x, caption: 'short' }] });
    expect(fixed.body.data.valid).toBe(true);
    expect(await counts()).toEqual(before);
  });

  it('an empty post, unknown settings, unknown and duplicate channels', async () => {
    let res = await check({ caption: '  ', channels: [{ integrationId: x }] });
    expect(codes(res.body.data.channels[0].problems)).toEqual(['channels.0.caption:content_empty']);
    res = await check({ caption: 'a', channels: [{ integrationId: x, settings: { nope: true } }] });
    expect(res.status).toBe(200);
    expect(res.body.data.channels[0].valid).toBe(false);
    expect(res.body.data.channels[0].problems[0]).toMatchObject({ code: 'unknown_setting' });
    expect(res.body.data.channels[0].problems[0].field).toMatch(/^channels\.0\.settings\.nope/);
    const stranger = crypto.randomUUID();
    res = await check({ caption: 'a', channels: [{ integrationId: x }, { integrationId: stranger }, { integrationId: x }] });
    expect(res.body.data.valid).toBe(false);
    expect(res.body.data.channels.map((c: any) => [c.platform, codes(c.problems)])).toEqual([
      ['x', []],
      [null, ['channels.1.integrationId:integration_not_found']],
      ['x', ['channels.2.integrationId:duplicate_channel']],
    ]);
  });

  it('the time for the intent, and root media, are general problems', async () => {
    let res = await check({ intent: 'schedule', scheduledAt: '2001-01-01T00:00:00Z', caption: 'late', channels: [{ integrationId: x }] });
    expect(codes(res.body.data.problems)).toEqual(['scheduledAt:in_past']);
    expect(res.body.data.channels[0].valid).toBe(true);
    expect(res.body.data.valid).toBe(false);
    res = await check({ intent: 'schedule', caption: 'when?', channels: [{ integrationId: x }] });
    expect(codes(res.body.data.problems)).toEqual(['scheduledAt:required']);
    res = await check({ intent: 'publish_now', caption: 'where?' });
    expect(codes(res.body.data.problems)).toEqual(['channels:required']);
    res = await check({ caption: 'pic', mediaIds: [crypto.randomUUID()], channels: [{ integrationId: x }] });
    expect(res.body.data.valid).toBe(false);
    expect(res.body.data.problems.map((p: any) => p.field)).toEqual(['mediaIds.0']);
  });

  it('bad input is a 4xx with a code', async () => {
    let res = await check({ caption: 'a', channels: [{ integrationId: 'not-a-uuid' }] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    res = await check({ caption: 'a', surprise: 1 });
    expect(res.status).toBe(400);
    res = await check({ caption: 'a', intent: 'someday' });
    expect(res.status).toBe(400);
    res = await check({ caption: 'a', scheduledAt: 'tomorrow' });
    expect(res.status).toBe(400);
    const raw = await fetch(`${server.baseUrl}${url()}`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body: '{"caption":' });
    expect(raw.status).toBe(400);
  });

  it('needs the editor role, as create; and sees nothing of another workspace', async () => {
    const viewer = (await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' })).key;
    const editor = (await createKey(api, owner.token, owner.workspaceId, { role: 'editor' })).key;
    const refused = await check({ caption: 'a', channels: [{ integrationId: x }] }, viewer);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('ROLE_REQUIRED');
    expect((await check({ caption: 'a', channels: [{ integrationId: x }] }, editor)).body.data.valid).toBe(true);

    const other = await signup(api);
    // another organization's channel is unknown here
    const res = await api.post(`/v1/workspaces/${other.workspaceId}/content/check`, { caption: 'a', channels: [{ integrationId: x }] }, { token: other.token });
    expect(res.status).toBe(200);
    expect(res.body.data.channels[0]).toMatchObject({ platform: null, valid: false });
    expect(codes(res.body.data.channels[0].problems)).toEqual(['channels.0.integrationId:integration_not_found']);
    // and this workspace is not theirs
    expect((await api.post(url(), { caption: 'a' }, { token: other.token })).status).toBe(403);
  });
});
