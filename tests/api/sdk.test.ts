// The typed client (clients/typescript) against a real server: typed calls
// with an API key, the error envelope as PressroomError with the request id,
// Idempotency-Key (automatic and explicit, replayed by the server), retries
// on 429 honouring Retry-After, offset and cursor pagination, the signed
// media upload with progress, and isEdition/isTombstone on content list items
// (checked at compile time too: `npm run typecheck` covers this file).
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createPressroomClient,
  isEdition,
  isTombstone,
  paginateCursor,
  paginateOffset,
  PressroomError,
  retryAfterMs,
  unwrap,
  uploadMedia,
  type ContentListEntry,
  type ContentListItem,
  type ContentTombstone,
  type PressroomClient,
  type RetryInfo,
  type Schema,
} from '../../clients/typescript/src/index.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png } from './media-fixtures.ts';

let server: TestServer;
let ws: string;
let key: string;
let sdk: PressroomClient;
beforeAll(async () => {
  server = await startTestServer('sdk');
  const api = client(server);
  const owner = await signup(api);
  ws = owner.workspaceId;
  key = (await createKey(api, owner.token, ws, { role: 'editor' })).key;
  sdk = createPressroomClient({ baseUrl: server.baseUrl, apiKey: key });
});
afterAll(async () => server?.close());

const draft = (caption: string) =>
  sdk.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body: { intent: 'draft', caption } });

describe('typed calls', () => {
  it('lists the workspaces of the key and creates content', async () => {
    const { data: workspaces } = await unwrap(sdk.GET('/v1/workspaces'));
    expect(workspaces.map((w) => w.id)).toEqual([ws]);
    expect(workspaces[0].role).toBe('editor');

    const created = await unwrap(draft('Hello from the SDK'));
    expect(created.data.rootId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('throws the error envelope as PressroomError with the request id', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const call = sdk.GET('/v1/workspaces/{workspaceId}/content/{id}', { params: { path: { workspaceId: ws, id: missing } } });
    const { error, response } = await call;
    // Typed: error is the envelope.
    expect(error?.error.code).toBe('NOT_FOUND');
    const thrown = await unwrap(sdk.GET('/v1/workspaces/{workspaceId}/content/{id}', { params: { path: { workspaceId: ws, id: missing } } })).catch((e) => e);
    expect(thrown).toBeInstanceOf(PressroomError);
    expect(thrown).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(thrown.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('x-request-id')).toBe(error?.error.requestId);

    const invalid: PressroomError = await unwrap(
      sdk.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body: { intent: 'schedule', caption: 'x' } }),
    ).then(
      () => expect.fail('accepted'),
      (e: PressroomError) => e,
    );
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    expect(JSON.stringify(invalid.details)).toContain('scheduledAt');
  });
});

describe('Idempotency-Key', () => {
  it('adds a fresh key to every POST, and a key of your own makes the server replay the answer', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const spying = createPressroomClient({
      baseUrl: server.baseUrl,
      apiKey: key,
      fetch: async (input, init) => {
        const req = new Request(input, init);
        seen.push(Object.fromEntries(req.headers));
        return fetch(req);
      },
    });
    await unwrap(spying.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body: { intent: 'draft', caption: 'a' } }));
    await unwrap(spying.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body: { intent: 'draft', caption: 'a' } }));
    await unwrap(spying.GET('/v1/workspaces'));
    expect(seen).toHaveLength(3);
    expect(seen[0]['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[0]['idempotency-key']).not.toBe(seen[1]['idempotency-key']);
    expect(seen[2]['idempotency-key']).toBeUndefined();

    const mine = `sdk-test-${crypto.randomUUID()}`;
    const send = () =>
      sdk.POST('/v1/workspaces/{workspaceId}/content', {
        params: { path: { workspaceId: ws }, header: { 'Idempotency-Key': mine } },
        body: { intent: 'draft', caption: 'once' },
      });
    const first = await send();
    const second = await send();
    expect(first.response.status).toBe(201);
    expect(second.response.status).toBe(201);
    expect(second.response.headers.get('idempotent-replayed')).toBe('true');
    expect(second.data?.data.rootId).toBe(first.data?.data.rootId);
  });
});

describe('retries on 429', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(Date.now() + 10_000).toUTCString(), Date.now())).toBeGreaterThan(8000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });

  it('waits what the real server asks for, retries, and gives up after maxRetries with the 429', async () => {
    const limited = await startTestServer('sdk_limited', { RATE_LIMIT_READ: 2 });
    try {
      const api = client(limited);
      const owner = await signup(api);
      const limitedKey = (await createKey(api, owner.token, owner.workspaceId)).key;
      const retries: RetryInfo[] = [];
      const slept: number[] = [];
      const c = createPressroomClient({
        baseUrl: limited.baseUrl,
        apiKey: limitedKey,
        retry: { maxRetries: 2 },
        onRetry: (i) => retries.push(i),
        sleep: async (ms) => void slept.push(ms),
      });
      // Two reads a minute: the third call of the same minute is refused. (A
      // minute that ends between calls lets one more through, hence the loop.)
      let refused: unknown;
      for (let i = 0; i < 6 && !refused; i++) {
        retries.length = 0;
        slept.length = 0;
        refused = await unwrap(c.GET('/v1/workspaces')).then(
          () => undefined,
          (e) => e,
        );
      }
      expect(refused).toBeInstanceOf(PressroomError);
      expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
      expect(retries.map((r) => r.status)).toEqual([429, 429]);
      // Each wait is the server's Retry-After (whole seconds, at most a minute).
      for (const ms of slept) {
        expect(ms % 1000).toBe(0);
        expect(ms).toBeGreaterThan(0);
        expect(ms).toBeLessThanOrEqual(60_000);
      }
      expect((refused as PressroomError).retryAfterSeconds).toBeGreaterThan(0);
      // A cap below the server's Retry-After answers the 429 at once.
      const impatient = createPressroomClient({ baseUrl: limited.baseUrl, apiKey: limitedKey, retry: { maxDelayMs: 0 }, onRetry: () => expect.fail('no retry') });
      let status = 0;
      for (let i = 0; i < 4 && status !== 429; i++) status = (await impatient.GET('/v1/workspaces')).response.status;
      expect(status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('repeats a POST after Retry-After with the same Idempotency-Key and the same body', async () => {
    // A receiver that answers the first request 429 (Retry-After: 1), then 201.
    const received: { key: string | undefined; body: string; at: number }[] = [];
    const stub = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ key: req.headers['idempotency-key'] as string | undefined, body, at: Date.now() });
        if (received.length === 1) {
          res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json', 'x-request-id': 'r1' });
          res.end(JSON.stringify({ error: { code: 'RATE_LIMITED', message: 'slow down', requestId: 'r1', details: null } }));
        } else {
          res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r2' });
          res.end(JSON.stringify({ data: { ok: true }, meta: null }));
        }
      });
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    try {
      const c = createPressroomClient({ baseUrl: `http://127.0.0.1:${(stub.address() as AddressInfo).port}`, apiKey: 'prk_x' });
      const res = await c.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body: { intent: 'draft', caption: 'retry me' } });
      expect(res.response.status).toBe(201);
      expect(received).toHaveLength(2);
      expect(received[1].key).toBe(received[0].key);
      expect(received[1].body).toBe(received[0].body);
      expect(JSON.parse(received[1].body)).toEqual({ intent: 'draft', caption: 'retry me' });
      expect(received[1].at - received[0].at).toBeGreaterThanOrEqual(950);
    } finally {
      stub.close();
    }
  });
});

describe('pagination', () => {
  it('paginateOffset walks every content edition, page by page', async () => {
    const fresh = await signupWithKey();
    const integrationId = (
      await server.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'x', 'X') returning id`, [fresh.orgId, fresh.ws])
    ).rows[0].id;
    for (let i = 0; i < 5; i++) await unwrap(fresh.sdk.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws } }, body: { intent: 'draft', caption: `p${i}`, channels: [{ integrationId }] } }));
    const pages: number[] = [];
    const ids: string[] = [];
    for await (const item of paginateOffset((offset) => {
      pages.push(offset);
      return fresh.sdk.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws }, query: { offset, limit: 2, status: 'draft' } } });
    })) {
      ids.push(item.id);
    }
    const total = (await unwrap(fresh.sdk.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws }, query: { limit: 100, status: 'draft' } } }))).meta.total;
    expect(total).toBe(5);
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pages.slice(0, 2)).toEqual([0, 2]);
  });

  it('uploads media through the signed URL with progress, and paginateCursor walks them', async () => {
    const fresh = await signupWithKey();
    const progress: number[] = [];
    const uploaded = [];
    for (let i = 0; i < 3; i++) {
      const bytes = png(40 + i, 30, i);
      const item = await uploadMedia(fresh.sdk, {
        workspaceId: fresh.ws,
        filename: `img-${i}.png`,
        contentType: 'image/png',
        size: bytes.length,
        body: bytes,
        onProgress: (p) => {
          expect(p.totalBytes).toBe(bytes.length);
          if (i === 0) progress.push(p.sentBytes);
        },
      });
      expect(item).toMatchObject({ type: 'image', width: 40 + i, height: 30 });
      uploaded.push(item.id);
    }
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(png(40, 30, 0).length);

    const seen: string[] = [];
    let calls = 0;
    for await (const m of paginateCursor((cursor) => {
      calls++;
      return fresh.sdk.GET('/v1/workspaces/{workspaceId}/media', { params: { path: { workspaceId: fresh.ws }, query: { cursor, limit: 2 } } });
    })) {
      seen.push(m.id);
    }
    expect(calls).toBe(2);
    expect(seen.sort()).toEqual([...uploaded].sort());

    // A wrong size is refused by the store; the session is aborted and the error thrown.
    const bytes = png(10, 10);
    const refused = await uploadMedia(fresh.sdk, { workspaceId: fresh.ws, filename: 'x.png', contentType: 'image/png', size: bytes.length + 5, body: () => Readable.from([bytes]) }).catch((e) => e);
    expect(refused).toBeInstanceOf(PressroomError);
    expect(refused.code).toBe('UPLOAD_SIZE_MISMATCH');
    const sessions = await server.owner.query(`select state from app.media_upload_sessions where workspace_id = $1 and filename = 'x.png'`, [fresh.ws]);
    expect(sessions.rows).toEqual([{ state: 'aborted' }]);
  });
});

describe('content list items', () => {
  it('isEdition and isTombstone tell the editions from the tombstones of since, and narrow the type', async () => {
    const fresh = await signupWithKey();
    const integrationId = (
      await server.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'x', 'X') returning id`, [fresh.orgId, fresh.ws])
    ).rows[0].id;
    const since = new Date(Date.now() - 1000).toISOString();
    const create = (caption: string) =>
      unwrap(fresh.sdk.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws } }, body: { intent: 'draft', caption, channels: [{ integrationId }] } }));
    const kept = (await create('kept')).data.editions[0].id;
    const gone = (await create('gone')).data.editions[0].id;
    await unwrap(fresh.sdk.DELETE('/v1/workspaces/{workspaceId}/content/{id}', { params: { path: { workspaceId: fresh.ws, id: gone } } }));

    const polled = await unwrap(fresh.sdk.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws }, query: { since } } }));
    const items: ContentListEntry[] = polled.data;
    expect(items.filter(isEdition).map((c) => [c.id, c.status, c.caption])).toEqual([[kept, 'draft', 'kept']]);
    expect(items.filter(isTombstone).map((c) => [c.id, c.deleted])).toEqual([[gone, true]]);
    // Without since, every item is an edition.
    const listed = await unwrap(fresh.sdk.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: fresh.ws } } }));
    expect(listed.data.every(isEdition)).toBe(true);

    // Compile time: an item needs narrowing before status; each guard narrows to its type.
    const item = polled.data[0];
    // @ts-expect-error a list item may be a tombstone, which has no status
    expect(item.status).toBeDefined();
    if (isEdition(item)) {
      expectTypeOf(item).toEqualTypeOf<ContentListItem>();
      expectTypeOf(item.status).toEqualTypeOf<Schema<'ContentStatus'>>();
    } else {
      expectTypeOf(item).toEqualTypeOf<ContentTombstone>();
    }
    expectTypeOf(items.filter(isEdition)).toEqualTypeOf<ContentListItem[]>();
  });
});

async function signupWithKey() {
  const api = client(server);
  const owner = await signup(api);
  const k = (await createKey(api, owner.token, owner.workspaceId)).key;
  return { ws: owner.workspaceId, orgId: owner.organizationId, sdk: createPressroomClient({ baseUrl: server.baseUrl, apiKey: k }) };
}
