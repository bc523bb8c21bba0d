// Articles over HTTP: create (idempotency echo and replay), list (pagination
// inside data, order, no bodies), get, update (body versions, draft only,
// cover), platform-draft (sandbox connector, unchanged -> same draft); the
// HTML allowlist, the media rules of inline images and cover, the limits;
// article ids on the content lifecycle routes; roles.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('articles', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
});
afterAll(async () => server?.close());

const MB5 = 5 * 1024 * 1024;

interface Ws {
  id: string;
  orgId: string;
  token: string;
  base: string;
  integration(platform?: string, settings?: Record<string, unknown>): Promise<string>;
  media(type?: 'image' | 'video' | 'gif', bytes?: number, altText?: string | null): Promise<string>;
}

async function workspace(): Promise<Ws> {
  const o = await signup(api);
  return {
    id: o.workspaceId,
    orgId: o.organizationId,
    token: o.token,
    base: `/v1/workspaces/${o.workspaceId}/articles`,
    integration: async (platform = 'x', settings = {}) =>
      (
        await server.owner.query(
          `insert into app.integrations (organization_id, workspace_id, connector, platform, name, username, settings)
           values ($1, $2, 'sandbox', $3, $4, 'acme', $5) returning id`,
          [o.organizationId, o.workspaceId, platform, `${platform} account`, settings],
        )
      ).rows[0].id,
    media: async (type = 'image', bytes = 1000, altText = null) => {
      const id = randomUUID();
      await server.owner.query(
        `insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key, alt_text)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [id, o.organizationId, o.workspaceId, type, `f.${type === 'video' ? 'mp4' : type === 'gif' ? 'gif' : 'png'}`,
          type === 'video' ? 'video/mp4' : type === 'gif' ? 'image/gif' : 'image/png', bytes, `media/${o.workspaceId}/${id}`, altText],
      );
      return id;
    },
  };
}

const key = () => ({ 'idempotency-key': randomUUID() });
const img = (id: string) => `<img data-media-id="${id}">`;

async function create(ws: Ws, body: Record<string, unknown>, headers: Record<string, string> = key()) {
  return api.post(ws.base, body, { token: ws.token, headers });
}

async function article(ws: Ws, extra: Record<string, unknown> = {}) {
  const x = await ws.integration('x');
  const r = await create(ws, { integrationId: x, title: 'A title', bodyHtml: '<p>Hello</p>', ...extra });
  expect(r.status).toBe(201);
  return r.body.data.article;
}

function fields(res: { body: any }) {
  return (res.body.error.details.fields as { field: string; code: string }[]).map((f) => `${f.field}:${f.code}`).sort();
}

describe('POST {ws}/articles', () => {
  it('creates a draft with every field of the spec, and echoes the idempotency key', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const cover = await ws.media('image', 2000, 'A cover');
    const headers = key();
    const res = await create(ws, { integrationId: x, title: 'Launch notes', bodyHtml: '<p>Hi <strong>there</strong></p>', coverMediaId: cover }, headers);
    expect(res.status).toBe(201);
    const a = res.body.data.article;
    expect(res.body.data.idempotency).toEqual({ key: headers['idempotency-key'], replayed: false });
    expect(res.body.meta).toBeNull();
    expect(a).toMatchObject({
      title: 'Launch notes',
      status: 'draft',
      workflowStatus: 'draft',
      editable: true,
      destination: { integrationId: x, platform: 'x', username: 'acme', name: 'x account', canPublishArticles: true },
      cover: { mediaId: cover, altText: 'A cover' },
      scheduledAt: null,
      sentAt: null,
      permalink: null,
      platformDraft: null,
      bodyHtml: '<p>Hi <strong>there</strong></p>',
      bodyVersion: '1',
      images: [],
      characterCount: 8,
      error: null,
    });
    expect(a.cover.url).toMatch(/^http/);
    // Nothing went to the platform; the article is a content item of kind article.
    const row = await server.owner.query('select kind, status from app.content_items where id = $1', [a.contentId]);
    expect(row.rows[0]).toEqual({ kind: 'article', status: 'draft' });
  });

  it('a retry with the same key and body replays the answer with replayed: true; another body is refused', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const headers = key();
    const body = { integrationId: x, title: 'Once' };
    const first = await create(ws, body, headers);
    const again = await create(ws, body, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.article.contentId).toBe(first.body.data.article.contentId);
    expect(again.body.data.idempotency).toEqual({ key: headers['idempotency-key'], replayed: true });
    const other = await create(ws, { ...body, title: 'Twice' }, headers);
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const list = await api.get(ws.base, { token: ws.token });
    expect(list.body.data.pagination.total).toBe(1);
  });

  it('needs an Idempotency-Key', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await create(ws, { integrationId: x, title: 'T' }, {});
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual(['header.idempotency-key:required']);
  });

  it('refuses bad bodies: required fields, bounds, unknown properties', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const cases: [Record<string, unknown>, string][] = [
      [{ title: 'T' }, 'body.integrationId:required'],
      [{ integrationId: x }, 'body.title:required'],
      [{ integrationId: x, title: '' }, 'body.title:minLength'],
      [{ integrationId: x, title: 't'.repeat(201) }, 'body.title:maxLength'],
      [{ integrationId: 'nope', title: 'T' }, 'body.integrationId:format'],
      [{ integrationId: x, title: 'T', coverMediaId: 'nope' }, 'body.coverMediaId:format'],
      [{ integrationId: x, title: 'T', caption: 'x' }, 'body.caption:unknown_property'],
      [{ integrationId: x, title: 'T', bodyHtml: 'x'.repeat(1_000_001) }, 'body.bodyHtml:maxLength'],
    ];
    for (const [body, expected] of cases) {
      const res = await create(ws, body);
      expect(res.status, JSON.stringify(expected)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(fields(res)).toEqual([expected]);
    }
    // Bounds that pass: 200-character title, 1,000,000 characters of HTML (of which little text).
    const ok = await create(ws, { integrationId: x, title: 't'.repeat(200), bodyHtml: `<p>a</p>${'<br>'.repeat(249_998)}` });
    expect(ok.status).toBe(201);
    expect(ok.body.data.article.title).toHaveLength(200);
  });

  it('refuses channels that cannot publish articles, unknown and disconnected ones', async () => {
    const ws = await workspace();
    const li = await ws.integration('linkedin');
    const other = await workspace();
    const foreign = await other.integration('x');
    const off = await ws.integration('x');
    await server.owner.query(`update app.integrations set status = 'disconnected' where id = $1`, [off]);
    for (const [id, code] of [[li, 'articles_not_supported'], [foreign, 'integration_not_found'], [randomUUID(), 'integration_not_found'], [off, 'integration_unavailable']]) {
      const res = await create(ws, { integrationId: id, title: 'T' });
      expect(res.status).toBe(400);
      expect(fields(res)).toEqual([`integrationId:${code}`]);
    }
  });

  it('sanitizes the body to the allowlist and fills in image sources', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const i1 = await ws.media('image', 1000, 'first');
    const i2 = await ws.media('image', 1000);
    const html =
      '<h1 class="big" onclick="x()">Title</h1><h4>h4 text</h4><script>alert(1)</script><style>p{}</style>' +
      '<p style="color:red">A <a href="javascript:alert(1)">bad</a> and <a href="https://example.com" target="_blank">good</a> link, <em>em</em>, <s>s</s>, <u>u</u></p>' +
      `<blockquote>q</blockquote><ul><li>one</li></ul><ol><li>two</li></ol><hr><p>x<br>y</p>${img(i2)}<img src="https://evil.example/x.png" data-media-id="${i1}" alt="no"><iframe src="https://e.com"></iframe><h2>b</h2><h3>c</h3>`;
    const res = await create(ws, { integrationId: x, title: 'T', bodyHtml: html });
    expect(res.status).toBe(201);
    const a = res.body.data.article;
    const stored = (await server.owner.query('select body_html from app.articles where content_item_id = $1', [a.contentId])).rows[0].body_html;
    expect(stored).toBe(
      '<h1>Title</h1>h4 text<p>A <a>bad</a> and <a href="https://example.com">good</a> link, <em>em</em>, <s>s</s>, u</p>' +
        `<blockquote>q</blockquote><ul><li>one</li></ul><ol><li>two</li></ol><hr /><p>x<br />y</p><img data-media-id="${i2}" /><img data-media-id="${i1}" /><h2>b</h2><h3>c</h3>`,
    );
    expect(a.images.map((m: any) => [m.mediaId, m.altText])).toEqual([[i2, null], [i1, 'first']]);
    for (const m of a.images) expect(m.url).toMatch(/^http/);
    expect(a.bodyHtml).toContain(`<img src="${a.images[0].url.replace(/&/g, '&amp;')}" data-media-id="${i2}" />`);
    expect(a.bodyHtml).not.toContain('evil.example');
    expect(a.bodyHtml).not.toContain('script');
    // Title / h4 text / A bad and good link, em, s, u / q / one / two / x / y / b / c
    expect(a.characterCount).toBe('Title\nh4 text\nA bad and good link, em, s, u\nq\none\ntwo\nx\ny\nb\nc'.length);
  });

  it('characterCount counts text as published: entities decoded, whitespace collapsed, code points', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const res = await create(ws, { integrationId: x, title: 'T', bodyHtml: '<p>  a &amp;   b\n\n c 😀 </p>\n<p></p><p>&lt;d&gt;</p>' });
    expect(res.body.data.article.characterCount).toBe('a & b c 😀\n<d>'.length - 1); // the emoji is one code point
    expect(res.body.data.article.bodyHtml).toBe('<p>  a &amp;   b\n\n c 😀 </p>\n<p></p><p>&lt;d&gt;</p>');
  });

  it('allows 100,000 characters of text and 20 images; refuses more, with one entry per problem', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const ids: string[] = [];
    for (let i = 0; i < 21; i++) ids.push(await ws.media('image', 1000));
    const text = (n: number) => `<p>${'a'.repeat(n)}</p>`;
    const ok = await create(ws, { integrationId: x, title: 'T', bodyHtml: text(100_000) + ids.slice(0, 20).map(img).join('') });
    expect(ok.status).toBe(201);
    expect(ok.body.data.article.characterCount).toBe(100_000);
    expect(ok.body.data.article.images).toHaveLength(20);
    const bad = await create(ws, { integrationId: x, title: 'T', bodyHtml: text(100_001) + ids.map(img).join('') });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(fields(bad)).toEqual(['bodyHtml:too_long', 'bodyHtml:too_many_images']);
  });

  it('inline images and the cover must be still images of at most 5 MB from the active library', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const other = await workspace();
    const gif = await ws.media('gif', 1000);
    const video = await ws.media('video', 1000);
    const big = await ws.media('image', MB5 + 1);
    const edge = await ws.media('image', MB5);
    const binned = await ws.media('image', 1000);
    await server.owner.query(`update app.media_items set state = 'deleted', deleted_at = now(), delete_after = now() + interval '30 days' where id = $1`, [binned]);
    const foreign = await other.media('image', 1000);
    const body = [gif, video, big, edge, binned, foreign].map(img).join('') + '<img><img data-media-id="not-a-uuid">';
    const res = await create(ws, { integrationId: x, title: 'T', bodyHtml: body, coverMediaId: gif });
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual(
      [
        'bodyHtml.images.0:media_not_still_image',
        'bodyHtml.images.1:media_not_still_image',
        'bodyHtml.images.2:media_too_large',
        'bodyHtml.images.4:media_deleted',
        'bodyHtml.images.5:media_not_found',
        'bodyHtml.images.6:media_id_required',
        'bodyHtml.images.7:media_not_found',
        'coverMediaId:media_not_still_image',
      ].sort(),
    );
    for (const [cover, code] of [[big, 'media_too_large'], [video, 'media_not_still_image'], [foreign, 'media_not_found'], [binned, 'media_deleted']]) {
      const r = await create(ws, { integrationId: x, title: 'T', coverMediaId: cover });
      expect(r.status).toBe(400);
      expect(fields(r)).toEqual([`coverMediaId:${code}`]);
    }
    const ok = await create(ws, { integrationId: x, title: 'T', bodyHtml: img(edge), coverMediaId: edge });
    expect(ok.status).toBe(201);
  });

  it('needs the editor role', async () => {
    const ws = await workspace();
    const x = await ws.integration('x');
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    const res = await api.post(ws.base, { integrationId: x, title: 'T' }, { token: viewer.key, headers: key() });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('ROLE_REQUIRED');
  });
});

describe('GET {ws}/articles and {ws}/articles/{contentId}', () => {
  it('lists most recently changed first, without bodies, paginated inside data', async () => {
    const ws = await workspace();
    const a1 = await article(ws, { title: 'one' });
    const a2 = await article(ws, { title: 'two' });
    const a3 = await article(ws, { title: 'three' });
    // Changing the first makes it the most recent.
    const p = await api.patch(`${ws.base}/${a1.contentId}`, { title: 'one again' }, { token: ws.token });
    expect(p.status).toBe(200);
    const res = await api.get(ws.base, { token: ws.token });
    expect(res.status).toBe(200);
    expect(res.body.meta).toBeNull();
    expect(res.body.data.articles.map((a: any) => a.contentId)).toEqual([a1.contentId, a3.contentId, a2.contentId]);
    expect(res.body.data.pagination).toEqual({ limit: 25, offset: 0, total: 3, hasMore: false });
    for (const a of res.body.data.articles) {
      expect(a).not.toHaveProperty('bodyHtml');
      expect(a).not.toHaveProperty('bodyVersion');
    }
    const page = await api.get(`${ws.base}?limit=2&offset=1`, { token: ws.token });
    expect(page.body.data.articles.map((a: any) => a.contentId)).toEqual([a3.contentId, a2.contentId]);
    expect(page.body.data.pagination).toEqual({ limit: 2, offset: 1, total: 3, hasMore: false });
    const first = await api.get(`${ws.base}?limit=1`, { token: ws.token });
    expect(first.body.data.pagination).toEqual({ limit: 1, offset: 0, total: 3, hasMore: true });
    // Deleted articles (content lifecycle delete) leave the list.
    expect((await api.delete(`/v1/workspaces/${ws.id}/content/${a2.contentId}`, { token: ws.token })).status).toBe(204);
    expect((await api.get(ws.base, { token: ws.token })).body.data.pagination.total).toBe(2);
    expect((await api.get(`${ws.base}/${a2.contentId}`, { token: ws.token })).status).toBe(404);
  });

  it('limit is 1 to 100, offset zero or more', async () => {
    const ws = await workspace();
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=x']) {
      const res = await api.get(`${ws.base}?${q}`, { token: ws.token });
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    expect((await api.get(`${ws.base}?limit=100`, { token: ws.token })).status).toBe(200);
  });

  it('gets one article with its body; unknown, foreign and post ids are 404; viewers may read', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    const res = await api.get(`${ws.base}/${a.contentId}`, { token: viewer.key });
    expect(res.status).toBe(200);
    expect(res.body.data.article).toMatchObject({ contentId: a.contentId, bodyHtml: '<p>Hello</p>', bodyVersion: '1' });
    expect((await api.get(`${ws.base}/${randomUUID()}`, { token: ws.token })).status).toBe(404);
    expect((await api.get(`${ws.base}/not-a-uuid`, { token: ws.token })).status).toBe(400);
    const other = await workspace();
    const res2 = await api.get(`${other.base}/${a.contentId}`, { token: other.token });
    expect(res2.status).toBe(404);
    // A post is not an article.
    const x = await ws.integration('x');
    const post = await api.post(`/v1/workspaces/${ws.id}/content`, { caption: 'post', channels: [{ integrationId: x }] }, { token: ws.token });
    expect((await api.get(`${ws.base}/${post.body.data.editions[0].id}`, { token: ws.token })).status).toBe(404);
  });

  it('article ids work on the content lifecycle routes', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const c = await api.get(`/v1/workspaces/${ws.id}/content/${a.contentId}`, { token: ws.token });
    expect(c.status).toBe(200);
    expect(c.body.data).toMatchObject({ id: a.contentId, rootId: a.rootId, status: 'draft' });
  });
});

describe('PATCH {ws}/articles/{contentId}', () => {
  it('replaces the body against its version; a stale version is 409 POST_BODY_CHANGED', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const path = `${ws.base}/${a.contentId}`;
    const noVersion = await api.patch(path, { bodyHtml: '<p>New</p>' }, { token: ws.token });
    expect(noVersion.status).toBe(400);
    expect(fields(noVersion)).toEqual(['expectedBodyVersion:required']);
    const ok = await api.patch(path, { bodyHtml: '<p>New body</p>', expectedBodyVersion: '1' }, { token: ws.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data.article).toMatchObject({ bodyHtml: '<p>New body</p>', bodyVersion: '2', characterCount: 8, title: 'A title' });
    const stale = await api.patch(path, { bodyHtml: '<p>Mine</p>', expectedBodyVersion: '1' }, { token: ws.token });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('POST_BODY_CHANGED');
    expect(stale.body.error.details).toMatchObject({ currentBodyVersion: '2', expectedBodyVersion: '1' });
    // A title change leaves the body version alone.
    const t = await api.patch(path, { title: 'New title' }, { token: ws.token });
    expect(t.body.data.article).toMatchObject({ title: 'New title', bodyVersion: '2' });
    const root = await server.owner.query('select title from app.content_roots where id = $1', [a.rootId]);
    expect(root.rows[0].title).toBe('New title');
    for (const [body, f] of [
      [{ title: '' }, 'body.title:minLength'],
      [{ expectedBodyVersion: '' }, 'body.expectedBodyVersion:minLength'],
      [{ status: 'sent' }, 'body.status:unknown_property'],
      [{ coverMediaId: 'x' }, 'body.coverMediaId:format'],
    ] as const) {
      const r = await api.patch(path, body, { token: ws.token });
      expect(r.status).toBe(400);
      expect(fields(r)).toEqual([f]);
    }
  });

  it('sets and removes the cover; body images follow the same media rules', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const path = `${ws.base}/${a.contentId}`;
    const cover = await ws.media('image');
    const gif = await ws.media('gif');
    const set = await api.patch(path, { coverMediaId: cover }, { token: ws.token });
    expect(set.body.data.article.cover.mediaId).toBe(cover);
    const bad = await api.patch(path, { coverMediaId: gif, bodyHtml: img(gif), expectedBodyVersion: '1' }, { token: ws.token });
    expect(bad.status).toBe(400);
    expect(fields(bad)).toEqual(['bodyHtml.images.0:media_not_still_image', 'coverMediaId:media_not_still_image']);
    const removed = await api.patch(path, { coverMediaId: null }, { token: ws.token });
    expect(removed.body.data.article.cover).toBeNull();
    const im = await api.patch(path, { bodyHtml: `<p>a</p>${img(cover)}`, expectedBodyVersion: '1' }, { token: ws.token });
    expect(im.body.data.article.images.map((m: any) => m.mediaId)).toEqual([cover]);
  });

  it('edits drafts only: a scheduled article is not editable until reverted to draft', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const path = `${ws.base}/${a.contentId}`;
    const at = new Date(Date.now() + 3600_000).toISOString();
    const s = await api.patch(`/v1/workspaces/${ws.id}/content/${a.contentId}/schedule`, { scheduledAt: at }, { token: ws.token });
    expect(s.status).toBe(200);
    const got = await api.get(path, { token: ws.token });
    expect(got.body.data.article).toMatchObject({ status: 'scheduled', workflowStatus: 'scheduled', editable: false });
    expect(new Date(got.body.data.article.scheduledAt).toISOString()).toBe(at);
    const r = await api.patch(path, { title: 'No' }, { token: ws.token });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_CONTENT_STATUS');
    const back = await api.post(`/v1/workspaces/${ws.id}/content/${a.contentId}/revert-to-draft`, {}, { token: ws.token });
    expect(back.status).toBe(201);
    expect((await api.patch(path, { title: 'Yes' }, { token: ws.token })).body.data.article).toMatchObject({ title: 'Yes', editable: true });
  });

  it('viewers may not edit; unknown ids are 404', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    const r = await api.patch(`${ws.base}/${a.contentId}`, { title: 'x' }, { token: viewer.key });
    expect(r.status).toBe(403);
    expect((await api.patch(`${ws.base}/${randomUUID()}`, { title: 'x' }, { token: ws.token })).status).toBe(404);
  });
});

describe('POST {ws}/articles/{contentId}/platform-draft', () => {
  it('sends the article to the platform drafts; an unchanged article answers the same draft', async () => {
    const ws = await workspace();
    const im = await ws.media('image');
    const a = await article(ws, { bodyHtml: `<p>Body</p>${img(im)}`, coverMediaId: im });
    const path = `${ws.base}/${a.contentId}/platform-draft`;
    const first = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ contentId: a.contentId });
    expect(first.body.data.articleId).toMatch(/^sb-article-/);
    expect(first.body.data.draftUrl).toContain(first.body.data.articleId);
    const got = await api.get(`${ws.base}/${a.contentId}`, { token: ws.token });
    expect(got.body.data.article.platformDraft.articleId).toBe(first.body.data.articleId);
    expect(got.body.data.article.platformDraft.sentAt).toBeTruthy();
    expect(got.body.data.article.status).toBe('draft');
    const again = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(again.body.data).toEqual(first.body.data);
    await api.patch(`${ws.base}/${a.contentId}`, { bodyHtml: '<p>Changed</p>', expectedBodyVersion: '1' }, { token: ws.token });
    const changed = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(changed.status).toBe(200);
    expect(changed.body.data.articleId).not.toBe(first.body.data.articleId);
  });

  it('needs an Idempotency-Key and the editor role; unknown ids are 404', async () => {
    const ws = await workspace();
    const a = await article(ws);
    const path = `${ws.base}/${a.contentId}/platform-draft`;
    const noKey = await api.post(path, undefined, { token: ws.token });
    expect(noKey.status).toBe(400);
    expect(fields(noKey)).toEqual(['header.idempotency-key:required']);
    const viewer = await createKey(api, ws.token, ws.id, { role: 'viewer' });
    expect((await api.post(path, undefined, { token: viewer.key, headers: key() })).status).toBe(403);
    expect((await api.post(`${ws.base}/${randomUUID()}/platform-draft`, undefined, { token: ws.token, headers: key() })).status).toBe(404);
  });

  it('a platform refusal is 502 PLATFORM_DRAFT_FAILED and frees the key; a disconnected channel is 409', async () => {
    const ws = await workspace();
    const x = await ws.integration('x', { behavior: 'fail' });
    const c = await create(ws, { integrationId: x, title: 'T' });
    const path = `${ws.base}/${c.body.data.article.contentId}/platform-draft`;
    const headers = key();
    const r = await api.post(path, undefined, { token: ws.token, headers });
    expect(r.status).toBe(502);
    expect(r.body.error.code).toBe('PLATFORM_DRAFT_FAILED');
    await server.owner.query(`update app.integrations set settings = '{}' where id = $1`, [x]);
    const retry = await api.post(path, undefined, { token: ws.token, headers });
    expect(retry.status).toBe(200);
    await server.owner.query(`update app.integrations set status = 'disconnected' where id = $1`, [x]);
    await api.patch(`${ws.base}/${c.body.data.article.contentId}`, { title: 'changed' }, { token: ws.token });
    const off = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(off.status).toBe(409);
    expect(off.body.error.code).toBe('INTEGRATION_UNAVAILABLE');
  });
});

describe('platform-draft through the webhook connector', () => {
  let receiver: Server;
  let url = '';
  const got: { headers: IncomingMessage['headers']; body: any }[] = [];
  let answer: { status: number; body: unknown } = { status: 200, body: { articleId: 'wh-1', draftUrl: 'https://x.example/drafts/wh-1' } };
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        got.push({ headers: req.headers, body: JSON.parse(raw) });
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it('posts a signed draft with image sources filled in; unchanged answers from the record; a 5xx is 502', async () => {
    const ws = await workspace();
    const im = await ws.media('image');
    const hook = (
      await server.owner.query(
        `insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
         values ($1, $2, 'webhook', 'x', 'hook', $3, 'a-long-random-signing-secret') returning id`,
        [ws.orgId, ws.id, url],
      )
    ).rows[0].id;
    const c = await create(ws, { integrationId: hook, title: 'Hooked', bodyHtml: `<p>Body</p>${img(im)}` });
    expect(c.status).toBe(201);
    const path = `${ws.base}/${c.body.data.article.contentId}/platform-draft`;
    const r = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ contentId: c.body.data.article.contentId, articleId: 'wh-1', draftUrl: 'https://x.example/drafts/wh-1' });
    expect(got).toHaveLength(1);
    expect(got[0].headers['webhook-signature']).toMatch(/^v1,/);
    expect(got[0].body.event).toBe('article.draft.create');
    expect(got[0].body.article).toMatchObject({ contentId: c.body.data.article.contentId, title: 'Hooked' });
    expect(got[0].body.article.bodyHtml).toMatch(/<img src="http[^"]+" data-media-id=/);
    expect(got[0].body.article.images.map((m: any) => m.id)).toEqual([im]);
    const again = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(again.body.data.articleId).toBe('wh-1');
    expect(got).toHaveLength(1);
    answer = { status: 500, body: { error: 'down' } };
    await api.patch(`${ws.base}/${c.body.data.article.contentId}`, { title: 'Hooked again' }, { token: ws.token });
    const down = await api.post(path, undefined, { token: ws.token, headers: key() });
    expect(down.status).toBe(502);
    expect(down.body.error.code).toBe('PLATFORM_DRAFT_FAILED');
  });
});
