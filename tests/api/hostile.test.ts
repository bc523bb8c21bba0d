// Hostile input that used to answer 500 or outside the envelope: NUL bytes,
// lone UTF-16 surrogates, UTC offsets PostgreSQL cannot store, deep nesting,
// what Node's HTTP parser refuses, undecodable paths (server/http/guard.ts,
// server/http/server.ts, server/inbox/normalize.ts).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataExceptionFields, toApiError } from '../../server/http/errors.ts';
import { isHashtag, isStorableDateTime, MAX_JSON_DEPTH } from '../../server/http/guard.ts';
import { cutText } from '../../server/text.ts';
import { client, createKey, signup } from '../support/http.ts';
import { deliver, hookIntegration, metaDelivery, sandboxDelivery } from '../support/inbox.ts';
import { openapi, startTestServer, type TestServer } from '../support/server.ts';
import { registeredCodes } from '../support/errors-register.ts';
import { META_VERIFY_TOKEN } from '../support/inbox.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let key: string;
let ws: string;
const codes = registeredCodes();

/** CHROMIUM_PATH, else the first Chromium on the PATH (as tests/api/calendar.test.ts finds it); null skips the browser check. */
function findChromium(): string | null {
  const env = process.env.CHROMIUM_PATH;
  if (env) return existsSync(env) ? env : null;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome']) {
    try {
      const p = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
      if (p) return p;
    } catch {
      // not this one
    }
  }
  return null;
}
const chromiumPath = findChromium();

beforeAll(async () => {
  server = await startTestServer('hostile');
  api = client(server);
  owner = await signup(api);
  ws = `/v1/workspaces/${owner.workspaceId}`;
  key = (await createKey(api, owner.token, owner.workspaceId, { role: 'manager' })).key;
});
afterAll(async () => server?.close());

/** Sends raw bytes and returns status, headers and body of the answer. */
function raw(request: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const url = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

function expectEnvelope(body: any, code: string) {
  expect(body).toEqual({ error: { code, message: expect.any(String), requestId: expect.any(String), details: body.error.details ?? null } });
  expect(codes.has(code), `${code} is listed in db/ERRORS.md`).toBe(true);
}

describe('NUL bytes', () => {
  it('are refused in body strings, body keys and query strings, with the field named', async () => {
    const media = await api.post(`${ws}/media/labels`, { name: 'a\u0000b' }, { token: key });
    expect(media.status).toBe(400);
    expectEnvelope(media.body, 'VALIDATION_FAILED');
    expect(media.body.error.details.fields).toContainEqual({ field: 'body.name', code: 'nul_character', message: expect.any(String) });

    const search = await api.get(`${ws}/media?search=%00`, { token: key });
    expect(search.status).toBe(400);
    expect(search.body.error.details.fields[0]).toMatchObject({ field: 'query.search', code: 'nul_character' });

    const keyNul = await api.post(`${ws}/integrations`, { platform: 'x', connector: 'sandbox', name: 'n', settings: { 'be\u0000havior': 'success' } }, { token: key });
    expect(keyNul.status).toBe(400);
    expect(keyNul.body.error.details.fields[0]).toMatchObject({ field: 'body.settings.be\\u0000havior', code: 'nul_character' });
  });

  it('in a header is refused by the parser, in the envelope', async () => {
    const res = await raw(`GET /v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\u0000b\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers['x-request-id']).toBeTruthy();
    expectEnvelope(JSON.parse(res.body), 'BAD_REQUEST');
  });
});

describe('lone UTF-16 surrogates', () => {
  // What a JSON body can carry as an escape ("\ud800") that is no Unicode
  // character: a high surrogate without its low one (at the start, in the
  // middle, at the end), a low one alone, a pair in the wrong order.
  const LONE = ['\ud800abc', 'ab\udbffc', 'abc\ud83d', '\udc00', 'a\ude00b', '\udc00\ud800'];

  /** The answer of a refused surrogate: 400 VALIDATION_FAILED naming the field, code lone_surrogate. */
  function expectRefused(res: { status: number; body: any }, field: string) {
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_FAILED');
    expect(res.body.error.details.fields).toContainEqual({ field, code: 'lone_surrogate', message: expect.any(String) });
  }

  it('are refused with 400 naming the field on content create, update and check and workbench pages; a well-formed pair is taken', async () => {
    const o = await signup(api);
    const w = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };
    const channel = (await api.post(`${w}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, t)).body.data.id as string;
    const draft = await api.post(`${w}/content`, { intent: 'draft', caption: 'Spring 🌸', channels: [{ integrationId: channel }] }, t);
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const contentId = draft.body.data.editions[0].id as string;
    const contentRows = async () => Number((await server.owner.query(`select count(*) from app.content_items where workspace_id = $1`, [o.workspaceId])).rows[0].count);
    const before = await contentRows();

    for (const caption of LONE) {
      expectRefused(await api.post(`${w}/content`, { intent: 'draft', caption, channels: [{ integrationId: channel }] }, t), 'body.caption');
      expectRefused(await api.post(`${w}/content/check`, { intent: 'draft', caption, channels: [{ integrationId: channel }] }, t), 'body.caption');
      expectRefused(await api.patch(`${w}/content/${contentId}`, { caption }, t), 'body.caption');
      expectRefused(await api.post(`/v2/workspaces/${o.workspaceId}/workbench/pages`, { name: `Week ${caption}` }, t), 'body.name');
    }
    // In a key: the field names it escaped, so the answer is well-formed text.
    const key = await api.post(`${w}/integrations`, { connector: 'sandbox', platform: 'x', name: 'n', settings: { 'be\ud800havior': 'success' } }, t);
    expectRefused(key, 'body.settings.be\\ud800havior');
    // Deep in an array.
    expectRefused(await api.post(`${w}/content`, { intent: 'draft', caption: 'ok', channels: [{ integrationId: channel, thread: [{ caption: 'x\udfff' }] }] }, t), 'body.channels.0.thread.0.caption');

    expect(await contentRows()).toBe(before);
    const stored = await server.owner.query(`select r.caption from app.content_items c join app.content_roots r on r.id = c.root_id where c.id = $1`, [contentId]);
    expect(stored.rows[0].caption).toBe('Spring 🌸');

    // Astral characters in pairs are text like any other.
    const ok = await api.patch(`${w}/content/${contentId}`, { caption: '😀 𝕏 👩🏽‍💻' }, t);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const page = await api.post(`/v2/workspaces/${o.workspaceId}/workbench/pages`, { name: 'Week 🌸' }, t);
    expect(page.status, JSON.stringify(page.body)).toBe(201);
    expect(page.body.data.name).toBe('Week 🌸');
  });

  it('are refused on both review comment routes, the member one and the client link one', async () => {
    (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
    const o = await signup(api);
    const w = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };
    const channel = (await api.post(`${w}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, t)).body.data.id as string;
    const draft = await api.post(`${w}/content`, { intent: 'draft', caption: 'For review', channels: [{ integrationId: channel }] }, t);
    const contentId = draft.body.data.editions[0].id as string;
    const sub = await api.post(
      `${w}/reviews/submit`,
      { items: [{ contentId, choice: { type: 'custom', stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'client@example.com', name: 'Cli' }] }] } }] },
      t,
    );
    expect(sub.status, JSON.stringify(sub.body)).toBe(200);
    const { reviewId, itemId, links } = sub.body.data.results[0];
    const link = links[0].token as string;
    const activity = async () => Number((await server.owner.query(`select count(*) from app.review_activity where review_id = $1`, [reviewId])).rows[0].count);
    const before = await activity();

    for (const body of LONE) {
      expectRefused(await api.post(`${w}/reviews/${reviewId}/items/${itemId}/comments`, { body }, t), 'body.body');
      expectRefused(await api.post(`/v1/review-link/items/${itemId}/comments`, { body }, { token: link }), 'body.body');
    }
    expect(await activity()).toBe(before);
    // The same routes take a comment with an emoji.
    expect((await api.post(`${w}/reviews/${reviewId}/items/${itemId}/comments`, { body: 'Looks good 👍' }, t)).status).toBe(201);
    expect((await api.post(`/v1/review-link/items/${itemId}/comments`, { body: 'Love it 😍' }, { token: link })).status).toBe(201);
  });

  it('in a query, a path parameter or a header are refused by validation too (HTTP cannot carry them, a caller in process can)', () => {
    const op = openapi.operations.find((x) => x.operationId === 'listMedia_v1')!;
    const idem = openapi.operations.find((x) => x.idempotent)!;
    const ws = crypto.randomUUID();
    expect(op.validate({ params: { workspaceId: ws }, query: { search: 'a\ud800' }, headers: {}, body: undefined })).toContainEqual({ field: 'query.search', code: 'lone_surrogate', message: expect.any(String) });
    expect(op.validate({ params: { workspaceId: `${ws}\udc00` }, query: {}, headers: {}, body: undefined })[0]).toMatchObject({ field: 'path.workspaceId', code: 'lone_surrogate' });
    expect(idem.validate({ params: {}, query: {}, headers: { 'idempotency-key': 'k\ud800' }, body: {} })[0]).toMatchObject({ field: 'header.idempotency-key', code: 'lone_surrogate' });
    expect(op.validate({ params: { workspaceId: ws }, query: { search: '😀' }, headers: {}, body: undefined })).toEqual([]);
  });

  it('in a signed facebook or sandbox delivery: 200, the raw bytes kept, U+FFFD in the events, and a redelivery is the same events', async () => {
    const o = await signup(api);
    const fb = await hookIntegration(api, o, 'facebook', 'facebook');
    const sb = await hookIntegration(api, o, 'linkedin', 'sandbox');
    const at = Math.floor(Date.now() / 1000) - 60;
    const fbPayload = {
      object: 'page',
      entry: [
        {
          id: '1',
          time: at,
          changes: [
            { field: 'feed', value: { item: 'comment', verb: 'add', comment_id: '1_c\ud800', post_id: '1_p', from: { id: 'u1', name: '\udc00Pat' }, message: 'hi \ud83d there', created_time: at } },
            // A verb that is a name of Object.prototype is no verb: skipped, not an event without a type.
            { field: 'feed', value: { item: 'comment', verb: 'constructor', comment_id: '1_d', post_id: '1_p', message: 'x', created_time: at } },
          ],
          messaging: [{ sender: { id: 'psid\udfff' }, recipient: { id: '1' }, timestamp: at * 1000, reaction: { mid: 'm1', action: 'react\ud800', reaction: 'love' } }],
        },
      ],
    };
    const sbPayload = { type: 'message.created', data: { threadKind: 'comment', threadKey: 'li-\ud800', messageId: 'li-m1', author: { id: 'p1', name: 'P\udc00' }, text: '\ud83d', occurredAt: new Date().toISOString() } };
    const cases = [
      { source: 'facebook', id: fb, d: () => metaDelivery(fbPayload), events: 2, skipped: 1 },
      { source: 'sandbox', id: sb, d: () => sandboxDelivery('msg_lone', sbPayload), events: 1, skipped: 0 },
    ];
    for (const c of cases) {
      const d = c.d();
      expect(d.body).toContain('\\ud8'); // the signed bytes carry the escape as such
      const r = await deliver(server, c.source, c.id, d);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data).toMatchObject({ events: c.events, newEvents: c.events, skipped: c.skipped });
      const raw = await server.owner.query(`select body from app.inbox_deliveries where id = $1`, [r.body.data.deliveryId]);
      expect(Buffer.compare(raw.rows[0].body, Buffer.from(d.body))).toBe(0);
      const again = await deliver(server, c.source, c.id, c.d());
      expect(again.status).toBe(200);
      expect(again.body.data).toMatchObject({ events: c.events, newEvents: 0 });
    }
    const ev = await server.owner.query(
      `select integration_id, event_id, thread_key, message_key, author, body, reaction from app.inbox_events where integration_id = any($1) order by id`,
      [[fb, sb]],
    );
    const fbEvents = ev.rows.filter((e) => e.integration_id === fb);
    expect(fbEvents.map((e) => [e.message_key, e.author?.name ?? null, e.body])).toEqual([
      ['1_c\ufffd', '\ufffdPat', 'hi \ufffd there'],
      ['m1', null, null],
    ]);
    expect(fbEvents[1].event_id).toMatch(/^react:m1:psid\ufffd:react\ufffd:love:/);
    expect(ev.rows.find((e) => e.integration_id === sb)).toMatchObject({ thread_key: 'li-\ufffd', author: { id: 'p1', name: 'P\ufffd' }, body: '\ufffd' });
    for (const e of ev.rows) for (const v of [e.event_id, e.thread_key, e.message_key, e.body, JSON.stringify(e.author)]) if (typeof v === 'string') expect(v.isWellFormed()).toBe(true);
  });

  it('a platform text longer than the inbox keeps is cut at a character boundary, never inside a pair', async () => {
    expect(cutText('ab😀', 3)).toBe('ab');
    expect(cutText('ab😀', 4)).toBe('ab😀');
    expect(cutText('a😀b', 2)).toBe('a');
    expect(cutText('\udc00x', 1)).toBe('\udc00'); // cutting makes no new lone surrogate, it repairs none
    const o = await signup(api);
    const fb = await hookIntegration(api, o, 'facebook', 'facebook');
    const at = Math.floor(Date.now() / 1000) - 60;
    const message = `${'a'.repeat(65535)}😀 and more`; // the emoji straddles unit 65,536
    const r = await deliver(server, 'facebook', fb, metaDelivery({ object: 'page', entry: [{ id: '1', time: at, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: '1_long', post_id: '1_p', message, created_time: at } }] }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const body = (await server.owner.query(`select body from app.inbox_events where integration_id = $1`, [fb])).rows[0].body as string;
    expect(body).toBe('a'.repeat(65535));

    // An event id made of long platform ids (a reaction: message id, sender, action) is cut to
    // the 300 characters app.inbox_events keeps, ending in a digest: the same for a redelivery.
    // The emoji of the message id straddles the cut (unit 277): it is left out whole.
    const reaction = () =>
      metaDelivery({ object: 'page', entry: [{ id: '1', time: at, messaging: [{ sender: { id: 'p'.repeat(300) }, recipient: { id: '1' }, timestamp: at * 1000, reaction: { mid: `${'m'.repeat(270)}😀${'m'.repeat(10)}`, action: 'react', reaction: 'love' } }] }] });
    const first = await deliver(server, 'facebook', fb, reaction());
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toMatchObject({ events: 1, newEvents: 1 });
    expect((await deliver(server, 'facebook', fb, reaction())).body.data).toMatchObject({ events: 1, newEvents: 0 });
    const id = (await server.owner.query(`select event_id from app.inbox_events where integration_id = $1 and type = 'reaction.added'`, [fb])).rows[0].event_id as string;
    expect(id.length).toBeLessThanOrEqual(300);
    expect(id.isWellFormed()).toBe(true);
    expect(id).toMatch(/^react:m{270}:[A-Za-z0-9_-]{22}$/);
  });
});

describe('the contract says what the server refuses (openapi.yaml, for generated clients and fuzzers)', () => {
  const doc = openapi.doc as any;
  const deref = (x: any): any => {
    for (let i = 0; i < 20 && x && typeof x.$ref === 'string'; i++) x = x.$ref.slice(2).split('/').reduce((o: any, k: string) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return x;
  };
  /** Every schema under `node`, $refs followed once each. */
  function* schemas(node: any, seen = new Set<any>()): Generator<any> {
    node = deref(node);
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const x of node) yield* schemas(x, seen);
      return;
    }
    yield node;
    for (const k of ['properties']) if (node[k]) for (const v of Object.values(node[k])) yield* schemas(v, seen);
    for (const k of ['items', 'additionalProperties', 'not']) if (node[k] && typeof node[k] === 'object') yield* schemas(node[k], seen);
    for (const k of ['allOf', 'oneOf', 'anyOf']) if (node[k]) yield* schemas(node[k], seen);
  }
  /** Portable: ECMA-262 without the u flag (Python's re reads the same syntax: no \p, no lookbehind, no named groups). */
  const portable = (p: string) => {
    expect(p).not.toMatch(/\\p\{|\(\?<|\\k</);
    return new RegExp(p);
  };

  it('every date-time has one pattern: it takes every value the server stores and refuses offsets beyond ±15:59 and year 0000', () => {
    const dateTimes: any[] = [];
    const stack: unknown[] = [doc];
    while (stack.length) {
      const x = stack.pop();
      if (Array.isArray(x)) stack.push(...x);
      else if (x && typeof x === 'object') {
        if ((x as any).format === 'date-time') dateTimes.push(x);
        stack.push(...Object.values(x));
      }
    }
    expect(dateTimes.length).toBeGreaterThan(150);
    const patterns = new Set(dateTimes.map((s) => s.pattern));
    expect(patterns.size).toBe(1);
    const [p] = patterns as Set<string>;
    const re = portable(p);
    const reU = new RegExp(p, 'u'); // as the server's ajv reads it
    for (const v of ['2030-01-01T00:00:00+16:00', '2030-01-01T00:00:00-20:12', '0000-01-01T00:00:00Z', '10000-01-01T00:00:00Z', '2030-01-01T00:00:00', '2030-01-01 00:00:00Z', '2030-13-01T00:00:00Z', '2030-01-01T24:00:00Z']) {
      expect(re.test(v), v).toBe(false);
      expect(isStorableDateTime(v), v).toBe(false);
    }
    for (const v of ['2030-01-01T00:00:00Z', '0001-01-01T00:00:00.000001z', '9999-12-31T23:59:59.999+15:59', '2016-12-31T23:59:60Z', '2030-06-01T12:00:00-0530', '2030-06-01t12:00:00+00:00']) {
      expect(re.test(v) && reU.test(v), v).toBe(true);
      expect(isStorableDateTime(v), v).toBe(true);
    }
    // Whatever the server's format takes, the pattern takes (so adding it refused nothing the server stored).
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const dt = fc
      .tuple(fc.integer({ min: 0, max: 9999 }), two(13), two(32), fc.constantFrom('T', 't', ' '), two(25), two(61), two(61), fc.constantFrom('', '.5', '.123456'), fc.constantFrom('Z', 'z', '+', '-', ''), two(24), two(61), fc.boolean())
      .map(([y, mo, d, t, h, mi, s, f, z, oh, om, colon]) => `${String(y).padStart(4, '0')}-${mo}-${d}${t}${h}:${mi}:${s}${f}${z === '+' || z === '-' ? `${z}${oh}${colon ? ':' : ''}${om}` : z}`);
    fc.assert(
      fc.property(dt, (v) => {
        if (isStorableDateTime(v)) expect(re.test(v) && reU.test(v), v).toBe(true);
        else if (re.test(v)) expect(v).toMatch(/-(02-3[01]|0[469]-31|11-31|02-29)|:60/); // only impossible dates and misplaced leap seconds pass the pattern
      }),
      { seed: 16, numRuns: 20_000 },
    );
  });

  it('request strings say NUL is refused: free text by a pattern that excludes it', () => {
    const op = (m: string, p: string) => doc.paths[p][m];
    const request: any[] = [];
    // The x-raw-body operations (the inbound hooks) read their own query: server/routes/hooks.ts.
    for (const o of openapi.operations) {
      const item = doc.paths[o.path];
      const x = op(o.method.toLowerCase(), o.path);
      for (const prm of [...(item.parameters ?? []), ...(x.parameters ?? [])].map(deref)) if (prm.in === 'query') request.push(...schemas(prm.schema));
      const body = deref(x.requestBody)?.content?.['application/json']?.schema;
      if (body) request.push(...schemas(body));
    }
    const open = request.filter((s) => s.type === 'string' && !s.format && !s.enum && !(s.pattern && !portable(s.pattern).test('a\u0000b')));
    expect(open.map((s) => JSON.stringify(s).slice(0, 160))).toEqual([]);
  });

  it('hashtags: a portable pattern, the rule in format hashtag; the server refuses what the rule does although the pattern lets it through', async () => {
    const item = deref(doc.components.schemas.HashtagList).items;
    expect(item.format).toBe('hashtag');
    const re = portable(item.pattern);
    const reU = new RegExp(item.pattern, 'u');
    // Every hashtag the rule takes, the pattern takes, one character at a time over all of Unicode.
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      if (isHashtag(c)) expect(re.test(c) && reU.test(c) && re.test(`#${c}`), `U+${cp.toString(16)}`).toBe(true);
    }
    const o = await signup(api);
    const base = `/v1/workspaces/${o.workspaceId}/hashtag-groups`;
    const looser = ['emoji🙂', '‼', 'a∑b', 'x'.repeat(101), '#' + '𝐀'.repeat(101)];
    for (const bad of looser) {
      expect(re.test(bad), bad).toBe(true); // the portable pattern lets it through ...
      const r = await api.post(base, { name: `G ${Math.random()}`, hashtags: ['fine', bad] }, { token: o.token });
      expect(r.status, bad).toBe(400); // ... the server does not
      expect(r.body.error.details.fields[0]).toMatchObject({ field: 'body.hashtags.1', code: expect.stringMatching(/^(format|maxLength)$/) });
    }
    const good = ['café', '#日本語', 'e\u0301t\u00e9', '١٢٣', '𝐀𝐁', '#' + '𝐀'.repeat(100), 'snake_case'];
    const r = await api.post(base, { name: 'Unicode', hashtags: good }, { token: o.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.data.hashtags).toEqual(good.map((h) => h.replace(/^#/, '')));
  });
});

describe('date-times PostgreSQL cannot store', () => {
  it('a UTC offset beyond ±15:59 is a 400 naming the field, in bodies and queries', async () => {
    const since = await api.get(`${ws}/content?since=${encodeURIComponent('2030-01-01T00:00:00+16:00')}`, { token: key });
    expect(since.status).toBe(400);
    expect(since.body.error.details.fields[0]).toMatchObject({ field: 'query.since', code: 'format' });
    const exp = await api.post(`${ws}/api-keys`, { name: 'k', workspaceIds: [owner.workspaceId], expiresAt: '2030-01-01T00:00:00-20:12' }, { token: owner.token });
    expect(exp.status).toBe(400);
    expect(exp.body.error.details.fields[0]).toMatchObject({ field: 'body.expiresAt', code: 'format' });
    const ok = await api.get(`${ws}/content?since=${encodeURIComponent('2020-01-01T00:00:00+15:59')}`, { token: key });
    expect(ok.status).toBe(200);
  });

  it('year 0000 and impossible dates are refused at validation', async () => {
    for (const since of ['0000-01-01T00:00:00Z', '2023-02-29T00:00:00Z', '2024-01-01T24:00:00Z']) {
      const res = await api.get(`${ws}/content?since=${encodeURIComponent(since)}`, { token: key });
      expect(res.status, since).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('PostgreSQL data exceptions (SQLSTATE class 22) that get past validation', () => {
  it('are 400 VALIDATION_FAILED, naming the request field that holds the value PostgreSQL quoted', async () => {
    const cases: [string, string, Record<string, unknown>, string][] = [
      [`select '2030-01-01T00:00:00+16:00'::timestamptz`, '22009', { body: { plan: { scheduledAt: '2030-01-01T00:00:00+16:00' } } }, 'body.plan.scheduledAt'],
      [`select 'nope'::uuid`, '22P02', { query: { folderId: 'nope' } }, 'query.folderId'],
      [`select '100000000000000000000'::int`, '22003', { body: { position: 1e20 } }, 'body.position'],
      [`select 1/0`, '22012', { body: {} }, ''],
    ];
    for (const [query, sqlstate, input, field] of cases) {
      const err = await server.owner.query(query).then(
        () => null,
        (e) => e,
      );
      expect(err?.code, query).toBe(sqlstate);
      const api = toApiError(err)!;
      expect([api.status, api.code, api.details?.sqlstate]).toEqual([400, 'VALIDATION_FAILED', sqlstate]);
      expect(dataExceptionFields(err, input).map((f) => f.field)).toEqual(field ? [field] : []);
    }
  });
});

describe('nesting depth', () => {
  const nested = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
  it(`refuses bodies nested deeper than ${MAX_JSON_DEPTH} with 400 NESTING_TOO_DEEP, and 4,500 levels do not crash anything`, async () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 4500, 100_000]) {
      const settings = nested(depth - 1);
      const res = await api.request('POST', `${ws}/integrations`, {
        token: key,
        rawBody: `{"platform":"x","connector":"sandbox","name":"deep","settings":${settings}}`,
        headers: { 'content-type': 'application/json', 'idempotency-key': `deep-${depth}` },
      });
      expect(res.status, `depth ${depth}`).toBe(400);
      expectEnvelope(res.body, 'NESTING_TOO_DEEP');
    }
    const deepArray = await api.request('PATCH', `${ws}/media/${crypto.randomUUID()}`, {
      token: key,
      rawBody: '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1),
      headers: { 'content-type': 'application/json' },
    });
    expect(deepArray.status).toBe(400);
    expect(deepArray.body.error.code).toBe('NESTING_TOO_DEEP');
  });

  it('takes a body exactly 64 levels deep to validation (brackets inside strings do not count)', async () => {
    const res = await api.request('POST', `${ws}/integrations`, {
      token: key,
      rawBody: `{"platform":"x","connector":"sandbox","name":"${'[{'.repeat(100)}","settings":${nested(MAX_JSON_DEPTH - 1)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields[0]).toMatchObject({ field: 'body.settings.a', code: 'unknown_property' });
  });
});

describe('answers Node or the router used to give outside the envelope', () => {
  it('a URL over 16 KB: 431 HEADERS_TOO_LARGE in the envelope', async () => {
    const res = await raw(`GET /v1/workspaces?x=${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expectEnvelope(JSON.parse(res.body), 'HEADERS_TOO_LARGE');
  });

  it('a raw non-ASCII byte in the path: 400 MALFORMED_URL in the envelope', async () => {
    const res = await raw(Buffer.concat([Buffer.from('GET /v1/workspaces/'), Buffer.from([0xc3, 0xa9]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]));
    expect(res.status).toBe(400);
    expectEnvelope(JSON.parse(res.body), 'MALFORMED_URL');
  });

  it('%C0%AF in a path parameter: 400 MALFORMED_URL, and an audit row when the caller authenticates', async () => {
    const res = await api.get(`${ws}/media/%C0%AF`, { token: key, unchecked: true });
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'MALFORMED_URL');
    const rows = await server.owner.query(`select status, route, error_code, actor_kind from audit.api_calls where request_id = $1`, [res.body.error.requestId]);
    expect(rows.rows).toEqual([{ status: 400, route: null, error_code: 'MALFORMED_URL', actor_kind: 'api_key' }]);
  });
});

describe('audit of calls that match no route', () => {
  it('an authenticated call to an unknown path or method writes one row with route null; anonymous noise writes none', async () => {
    const nf = await api.get('/v1/no-such-thing', { token: key });
    expect(nf.status).toBe(404);
    const na = await api.request('PUT', '/v1/workspaces', { token: owner.token });
    expect(na.status).toBe(405);
    const bogus = await api.get('/v1/no-such-thing', { token: 'prk_bogus' });
    expect(bogus.status).toBe(404);
    const none = await api.get('/v1/no-such-thing');
    expect(none.status).toBe(404);
    const ids = [nf, na, bogus, none].map((r) => r.body.error.requestId);
    const rows = await server.owner.query(
      `select request_id, actor_kind, method, route, status, error_code, organization_id, calls from audit.api_calls where request_id = any($1) order by status`,
      [ids],
    );
    expect(rows.rows).toEqual([
      { request_id: ids[0], actor_kind: 'api_key', method: 'GET', route: null, status: 404, error_code: 'NOT_FOUND', organization_id: owner.organizationId, calls: 1 },
      { request_id: ids[1], actor_kind: 'user', method: 'PUT', route: null, status: 405, error_code: 'METHOD_NOT_ALLOWED', organization_id: owner.organizationId, calls: 1 },
    ]);
  });
});

describe('failed credentials', () => {
  /** Waits out the end of a minute, so a burst stays in one window. */
  async function awayFromMinuteEnd() {
    const s = new Date().getUTCSeconds();
    if (s >= 54) await new Promise((r) => setTimeout(r, (61 - s) * 1000));
  }

  it('are throttled per client address: 429 AUTH_THROTTLED with Retry-After, the first N audited, the rest in one summary row', async () => {
    const limited = await startTestServer('authfail', { AUTH_FAILURE_LIMIT: 20, AUTH_FAILURE_AUDIT: 5, TRUST_PROXY: true });
    try {
      const c = client(limited);
      const o = await signup(c);
      const good = await createKey(c, o.token, o.workspaceId, { role: 'viewer' });
      await awayFromMinuteEnd();
      const from = { 'x-forwarded-for': '203.0.113.7' };
      const answers = [];
      for (let i = 0; i < 40; i++) {
        answers.push(await c.get('/v1/workspaces', { token: i % 2 ? `prk_bogus${i}` : undefined, headers: from }));
      }
      const statuses = answers.map((a) => a.status);
      expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
      expect(statuses.slice(20)).toEqual(Array(20).fill(429));
      const throttled = answers[20];
      expect(throttled.body.error.code).toBe('AUTH_THROTTLED');
      expect(codes.has('AUTH_THROTTLED')).toBe(true);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // A right credential from the throttled address is refused the same way (no oracle) ...
      const right = await c.get('/v1/workspaces', { token: good.key, headers: from });
      expect(right.status).toBe(429);
      // ... and another address is not throttled.
      const other = await c.get('/v1/workspaces', { token: good.key, headers: { 'x-forwarded-for': '198.51.100.9' } });
      expect(other.status).toBe(200);

      const ids = [...answers, right].map((a) => a.body.error.requestId);
      const one = await limited.owner.query(`select count(*)::int as n from audit.api_calls where request_id = any($1)`, [ids]);
      expect(one.rows[0].n).toBe(5);
      // The window closes: one summary row stands for the 36 refusals not audited one by one.
      await limited.owner.query(`update app.auth_failures set window_start = window_start - interval '1 minute'`);
      await limited.owner.query(`select app.flush_auth_failures()`);
      const summary = await limited.owner.query(
        `select method, route, status, error_code, calls, actor_kind from audit.api_calls where error_code = 'AUTH_FAILURE_BURST'`,
      );
      expect(summary.rows).toEqual([{ method: '*', route: null, status: 401, error_code: 'AUTH_FAILURE_BURST', calls: 36, actor_kind: 'anonymous' }]);
      expect(codes.has('AUTH_FAILURE_BURST')).toBe(true);
      expect(await limited.owner.query(`select * from app.auth_failures`).then((r) => r.rowCount)).toBe(0);
    } finally {
      await limited.close();
    }
  });
});

describe('unknown query parameters', () => {
  it('are refused on every operation, GET media/labels included, with the parameter named', async () => {
    for (const path of [`${ws}/media/labels?surprise=1`, `${ws}/media/labels?search=a&search[x]=1`, `${ws}/members?groupId=1`, `/v1/workspaces?a[b]=c`]) {
      const res = await api.get(path, { token: key });
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const named = await api.get(`${ws}/media/labels?surprise=1`, { token: key });
    expect(named.body.error.details.fields).toEqual([{ field: 'query.surprise', code: 'unknown_property', message: expect.any(String) }]);
  });
});

describe('browser clients (CORS_ORIGINS)', () => {
  it('is off by default: no CORS headers, a preflight is not answered 204', async () => {
    const pre = await fetch(`${server.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(405);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers preflights 204 for listed origins and exposes the headers integrators read', async () => {
    const s = await startTestServer('cors', { CORS_ORIGINS: ['https://app.example.com', 'http://localhost:5173'] });
    try {
      const pre = await fetch(`${s.baseUrl}/v1/workspaces/${crypto.randomUUID()}/content`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(pre.headers.get('access-control-allow-methods')).toBe('GET,POST,PUT,PATCH,DELETE');
      expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toBe('authorization,content-type,idempotency-key,x-request-id');
      const other = await fetch(`${s.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();

      const c = client(s);
      const o = await signup(c);
      const res = await c.get('/v1/workspaces', { token: o.token, headers: { origin: 'http://localhost:5173' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
      const exposed = res.headers.get('access-control-expose-headers')!.split(',');
      for (const h of ['X-Request-Id', 'Idempotent-Replayed', 'Retry-After', 'RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
        expect(exposed).toContain(h);
      }
    } finally {
      await s.close();
    }
  });

  it('CORS_ORIGINS=* allows any origin', async () => {
    const s = await startTestServer('cors-any', { CORS_ORIGINS: ['*'] });
    try {
      const pre = await fetch(`${s.baseUrl}/v1/workspaces`, { method: 'OPTIONS', headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'GET' } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    } finally {
      await s.close();
    }
  });
});

describe('rate-limit headers', () => {
  it('sends the IETF RateLimit-Policy and RateLimit fields beside X-RateLimit-*', async () => {
    const s = await startTestServer('ratelimit-fields', { RATE_LIMIT_READ: 5 });
    try {
      const c = client(s);
      const o = await signup(c);
      const first = await c.get(`/v1/workspaces/${o.workspaceId}/members`, { token: o.token });
      expect(first.headers.get('ratelimit-policy')).toBe('"read";q=5;w=60');
      expect(first.headers.get('ratelimit')).toMatch(/^"read";r=4;t=\d+$/);
      expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
      const t = Number(/t=(\d+)/.exec(first.headers.get('ratelimit')!)![1]);
      expect(t).toBe(Number(first.headers.get('x-ratelimit-reset')));
    } finally {
      await s.close();
    }
  });
});

describe('a valid credential on routes of the other family (db/migrations/committed/000029-hostile-input-two.sql, split 03-credential-family.sql)', () => {
  it('is refused with 401 WRONG_CREDENTIAL_KIND and never counted as a failed credential', async () => {
    const limited = await startTestServer('credential-family', { AUTH_FAILURE_LIMIT: 5, AUTH_FAILURE_AUDIT: 5, TRUST_PROXY: true });
    try {
      const c = client(limited);
      const o = await signup(c);
      const w = `/v1/workspaces/${o.workspaceId}`;
      const good = await createKey(c, o.token, o.workspaceId, { role: 'manager' });
      // A client reviewer's link: a review with a client stage, sent.
      const ch = await c.post(`${w}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, { token: o.token });
      expect(ch.status, JSON.stringify(ch.body)).toBe(201);
      const draft = await c.post(`${w}/content`, { intent: 'draft', caption: 'For the client', channels: [{ integrationId: ch.body.data.id }] }, { token: o.token });
      expect(draft.status, JSON.stringify(draft.body)).toBe(201);
      const review = await c.post(
        `${w}/reviews`,
        { title: 'Client', stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'client@example.com', name: 'Clara' }] }], contentIds: [draft.body.data.editions[0].id] },
        { token: o.token },
      );
      expect(review.status, JSON.stringify(review.body)).toBe(201);
      const sent = await c.post(`${w}/reviews/${review.body.data.id}/send`, undefined, { token: o.token });
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      const link = sent.body.data.links[0].token as string;
      expect(link).toMatch(/^prr_/);

      const from = { 'x-forwarded-for': '203.0.113.50' };
      const calls = [];
      // Far more than AUTH_FAILURE_LIMIT (5) of each.
      for (let i = 0; i < 8; i++) {
        calls.push(['api_key', await c.get('/v1/review-link', { token: good.key, headers: from })] as const);
        calls.push(['session', await c.get('/v1/review-link/notifications', { token: o.token, headers: from })] as const);
        calls.push(['review_link', await c.get(`${w}/content`, { token: link, headers: from })] as const);
        calls.push(['review_link', await c.get('/v1/workspaces', { token: link, headers: from })] as const);
      }
      for (const [kind, res] of calls) {
        expect(res.status, kind).toBe(401);
        expectEnvelope(res.body, 'WRONG_CREDENTIAL_KIND');
        expect(res.body.error.details.credential).toBe(kind);
      }
      // The address is not throttled: every credential still works on its own routes.
      expect((await c.get('/v1/workspaces', { token: good.key, headers: from })).status).toBe(200);
      expect((await c.get('/v1/workspaces', { token: o.token, headers: from })).status).toBe(200);
      expect((await c.get('/v1/review-link', { token: link, headers: from })).status).toBe(200);
      expect((await limited.owner.query(`select * from app.auth_failures`)).rowCount).toBe(0);
      // Each refusal is audited as the credential that made it.
      const ids = calls.map(([, r]) => r.body.error.requestId);
      const kinds = await limited.owner.query(`select actor_kind, count(*)::int as n from audit.api_calls where request_id = any($1) group by 1 order by 1`, [ids]);
      expect(kinds.rows).toEqual([
        { actor_kind: 'api_key', n: 8 },
        { actor_kind: 'review_link', n: 16 },
        { actor_kind: 'user', n: 8 },
      ]);

      // Unknown bearers of either family are still failed credentials (in one minute's window).
      const s = new Date().getUTCSeconds();
      if (s >= 54) await new Promise((r) => setTimeout(r, (61 - s) * 1000));
      const bogus = [];
      for (let i = 0; i < 6; i++) bogus.push((await c.get(i % 2 ? '/v1/review-link' : '/v1/workspaces', { token: i % 2 ? `prr_${'0'.repeat(64)}` : 'prk_bogus', headers: from })).status);
      expect(bogus).toEqual([401, 401, 401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('security headers (server/app.ts)', () => {
  const nosniff = (res: { headers: Headers | Record<string, string> }, what: string) => {
    const value = res.headers instanceof Headers ? res.headers.get('x-content-type-options') : res.headers['x-content-type-options'];
    expect(value, what).toBe('nosniff');
  };

  it('/docs carries a strict Content-Security-Policy with a fresh nonce, X-Frame-Options DENY and nosniff', async () => {
    const res = await fetch(`${server.baseUrl}/docs`);
    expect(res.status).toBe(200);
    nosniff(res, '/docs');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const csp = res.headers.get('content-security-policy')!;
    const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1)]));
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('style-src')!.slice(0, 2)).toEqual(["'self'", `'nonce-${nonce}'`]);
    expect(directives.get('style-src')!.slice(2).every((h) => /^'sha256-[A-Za-z0-9+/]{43}='$/.test(h))).toBe(true);
    expect(directives.get('connect-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:/);
    const html = await res.text();
    expect(html).toContain(`<meta name="csp-nonce" content="${nonce}">`);
    expect(html).toContain('<script src="/docs/redoc.standalone.js"></script>');
    expect(html).toContain('<script src="/docs/redoc-init.js"></script>');
    expect(html).not.toMatch(/<script>|<style|\sstyle=|\son\w+=/);
    expect((await fetch(`${server.baseUrl}/docs`)).headers.get('content-security-policy')).not.toBe(csp);
    for (const path of ['/docs/redoc.standalone.js', '/docs/redoc-init.js', '/docs/openapi.json']) {
      const asset = await fetch(`${server.baseUrl}${path}`);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('content-type'), path).toMatch(path.endsWith('.js') ? /^(text|application)\/javascript/ : /^application\/json/);
      nosniff(asset, path);
    }
  });

  it('every other answer carries X-Content-Type-Options: nosniff: JSON, errors before and after the routes, the hooks\' text challenge, /mcp', async () => {
    nosniff(await fetch(`${server.baseUrl}/healthz`), '/healthz');
    nosniff(await api.get('/v1/workspaces', { token: key }), 'a JSON answer');
    nosniff(await api.get('/v1/workspaces'), '401 without a credential');
    nosniff(await api.get('/v1/nothing-here', { token: key, unchecked: true }), 'the 404 handler');
    nosniff(await api.put('/v1/workspaces', {}, { token: key, unchecked: true }), 'the 405 handler');
    nosniff(await api.post(`${ws}/tags`, undefined, { token: key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' }, unchecked: true }), 'a body the JSON parser refuses');
    nosniff(await fetch(`${server.baseUrl}/v1/workspaces/%C0%AF`), 'MALFORMED_URL from the error handler');
    const parser = await raw(`GET /${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(parser.status).toBe(431);
    nosniff(parser, 'a refusal of Node\'s HTTP parser');

    // The inbound hooks' challenge is text/plain.
    const fb = await hookIntegration(api, owner, 'facebook', 'facebook');
    const challenge = await fetch(`${server.baseUrl}/v1/hooks/facebook/${fb}?hub.mode=subscribe&hub.verify_token=${META_VERIFY_TOKEN}&hub.challenge=1158201444`);
    expect(challenge.status).toBe(200);
    expect(challenge.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await challenge.text()).toBe('1158201444');
    nosniff(challenge, 'the /v1/hooks challenge');

    const mcp = (headers: Record<string, string>) =>
      fetch(`${server.baseUrl}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hostile', version: '1' } } }),
      });
    const refused = await mcp({});
    expect(refused.status).toBe(401);
    nosniff(refused, '/mcp refused');
    const initialized = await mcp({ authorization: `Bearer ${key}` });
    expect(initialized.status).toBe(200);
    nosniff(initialized, '/mcp initialize');
  });

  describe.skipIf(!chromiumPath)('/docs in Chromium', () => {
    it('renders the reference under its CSP: no violation but the blocked Redocly logo, no error, nothing from another origin', { timeout: 120_000 }, async () => {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: chromiumPath!, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        const violations: string[] = [];
        const elsewhere: string[] = [];
        page.on('console', (m) => {
          const text = m.text();
          if (text.startsWith('CSP violation: ')) violations.push(text.slice('CSP violation: '.length));
          // Violations are listed above; a failed load is judged by its response below.
          else if (m.type() === 'error' && !/Content Security Policy|Failed to load resource/.test(text)) problems.push(text);
        });
        page.on('pageerror', (e) => problems.push(e.message));
        page.on('response', (r) => {
          if (r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico') problems.push(`${r.status()} ${r.url()}`);
        });
        // (A request the CSP blocks is reported as failed, with no response.)
        page.on('requestfinished', (r) => {
          const u = new URL(r.url());
          if (!['blob:', 'data:'].includes(u.protocol) && u.origin !== server.baseUrl) elsewhere.push(r.url());
        });
        // (Page scripts as strings: this file is type-checked without the DOM library.)
        await page.addInitScript({
          content: "document.addEventListener('securitypolicyviolation', (e) => console.log('CSP violation: ' + e.effectiveDirective + ' ' + e.blockedURI));",
        });
        await page.goto(`${server.baseUrl}/docs`);
        await page.locator('h1', { hasText: 'Pressroom API' }).first().waitFor({ timeout: 60_000 });
        // Styled (Redoc's <style> elements carry the nonce), with its menu and search (the index is built in a blob: worker).
        expect(await page.evaluate('getComputedStyle(document.querySelector("h1")).fontFamily')).not.toBe(
          await page.evaluate('getComputedStyle(document.body).fontFamily'),
        );
        await page.locator('input[placeholder="Search..."]').fill('workspaces');
        await page.locator('[data-role="search:results"] li').first().waitFor({ timeout: 30_000 });
        expect(problems).toEqual([]);
        expect(violations).toEqual(['img-src https://cdn.redoc.ly/redoc/logo-mini.svg']);
        expect(elsewhere).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  });
});
