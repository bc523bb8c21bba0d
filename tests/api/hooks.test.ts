// Inbound platform webhooks over real HTTP: each source's handshake and
// signature (valid, tampered, missing, stale or replayed), X's check never
// signing a delivery, raw storage, de-duplication, limits, refusals throttled
// and audited as failed credentials, audit rows, folding by the real pg-boss
// job, and the convergence of a recorded stream replayed in shuffled orders.
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignature, xCrcResponse } from '../../server/inbox/signatures.ts';
import { foldInbox, registerInboxJobs } from '../../server/jobs/inbox.ts';
import { PGBOSS_SCHEMA, QUEUES } from '../../server/jobs/queues.ts';
import { client, signup } from '../support/http.ts';
import {
  checkHookAnswer,
  deliver,
  hookCheck,
  hookIntegration,
  META_VERIFY_TOKEN,
  metaDelivery,
  RECORDED_FACEBOOK_STREAM,
  RECORDED_POST_ID,
  sandboxDelivery,
  shuffled,
  X_CONSUMER_SECRET,
  xDelivery,
} from '../support/inbox.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let fb: string;
let ig: string;
let xi: string;
let sb: string;
beforeAll(async () => {
  server = await startTestServer('hooks');
  api = client(server);
  owner = await signup(api);
  fb = await hookIntegration(api, owner, 'facebook', 'facebook');
  ig = await hookIntegration(api, owner, 'instagram', 'instagram');
  xi = await hookIntegration(api, owner, 'x', 'x');
  sb = await hookIntegration(api, owner, 'linkedin', 'sandbox');
});
afterAll(async () => server?.close());

const count = async (table: string, integrationId: string) =>
  Number((await server.owner.query(`select count(*) from app.${table} where integration_id = $1`, [integrationId])).rows[0].count);
const get = (path: string) => hookCheck(server, path);

const fbComment = (id: string, text: string, t = 1_790_000_000) => ({
  object: 'page',
  entry: [{ id: '1', time: t, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: id, post_id: '1_9', parent_id: '1_9', from: { id: 'u1', name: 'Ada' }, message: text, created_time: t } }] }],
});
const igComment = (id: string, text: string) => ({
  object: 'instagram',
  entry: [{ id: '17841400000', time: 1_790_000_000, changes: [{ field: 'comments', value: { id, text, from: { id: 'ig-u1', username: 'ada' }, media: { id: 'media-1', media_product_type: 'FEED' } } }] }],
});
const xReply = (id: string, text: string) => ({
  for_user_id: '2244994945',
  tweet_create_events: [{ id_str: id, text, created_at: 'Wed Oct 10 20:19:24 +0000 2018', timestamp_ms: '1539202764000', in_reply_to_status_id_str: '1050118621198921728', user: { id_str: '6253282', screen_name: 'ada', name: 'Ada' } }],
});
const sbEvent = (messageId: string, text: string) => ({
  type: 'message.created',
  data: { threadKind: 'comment', threadKey: 'post-1', messageId, author: { id: 'p1', name: 'Pat' }, text, occurredAt: '2026-11-01T10:00:00Z' },
});

describe('subscription checks', () => {
  it('Meta: answers hub.challenge for the verify token, 403 for another, 400 without the handshake', async () => {
    const q = (token: string, mode = 'subscribe') => `?hub.mode=${mode}&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`;
    const ok = await get(`/v1/hooks/facebook/${fb}${q(META_VERIFY_TOKEN)}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await ok.text()).toBe('1158201444');
    const igOk = await get(`/v1/hooks/instagram/${ig}${q(META_VERIFY_TOKEN)}`);
    expect(await igOk.text()).toBe('1158201444');
    const wrong = await get(`/v1/hooks/facebook/${fb}${q('not-the-token')}`);
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as any).error.code).toBe('VERIFY_TOKEN_MISMATCH');
    expect((await get(`/v1/hooks/facebook/${fb}${q(META_VERIFY_TOKEN, 'unsubscribe')}`)).status).toBe(400);
    expect((await get(`/v1/hooks/facebook/${fb}`)).status).toBe(400);
    const audit = await server.owner.query(
      `select actor_kind, actor_id, status, route from audit.api_calls where route = '/v1/hooks/{source}/{integrationId}' and actor_id = $1 order by status`,
      [fb],
    );
    expect(audit.rows.map((r) => [r.actor_kind, r.status])).toEqual([
      ['platform_webhook', 200],
      ['platform_webhook', 400],
      ['platform_webhook', 400],
      ['platform_webhook', 403],
    ]);
  });

  it('X: answers the CRC with sha256=<base64 HMAC of the token with the consumer secret>', async () => {
    const token = 'crc-token-abc123';
    const r = await get(`/v1/hooks/x/${xi}?crc_token=${token}`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ response_token: `sha256=${createHmac('sha256', X_CONSUMER_SECRET).update(token).digest('base64')}` });
    expect((await get(`/v1/hooks/x/${xi}`)).status).toBe(400);
  });

  it('X: no CRC answer verifies as a delivery signature: the token posted as the body with the answer as its signature is refused and stores nothing', async () => {
    const before = { deliveries: await count('inbox_deliveries', xi), events: await count('inbox_events', xi) };
    // Tokens as X sends them (a UUID, base64, base64url), the longest answered, and one that is only `=`.
    for (const token of ['9b4507b3-9040-4669-9ca3-6b94edb50553', 'OTIzYzQ2NDYtMmRiNS00YzRi+/==', 'abc_DEF-123', 'A'.repeat(64), '==']) {
      const r = await get(`/v1/hooks/x/${xi}?crc_token=${encodeURIComponent(token)}`);
      expect(r.status, token).toBe(200);
      const { response_token } = (await r.json()) as { response_token: string };
      expect(response_token).toBe(`sha256=${createHmac('sha256', X_CONSUMER_SECRET).update(token).digest('base64')}`);
      for (const body of [token, ` ${token}`, `\n${token}`]) {
        const forged = await deliver(server, 'x', xi, { body, headers: { 'content-type': 'application/json', 'x-twitter-webhooks-signature': response_token } });
        expect(forged.status, body).toBe(401);
        expect(forged.body.error.code).toBe('SIGNATURE_INVALID');
      }
    }
    expect({ deliveries: await count('inbox_deliveries', xi), events: await count('inbox_events', xi) }).toEqual(before);
  });

  it('X: a crc_token not shaped like X\'s (a JSON reply above all, too long, other characters) is 400 naming query.crc_token, and is never signed', async () => {
    const before = { deliveries: await count('inbox_deliveries', xi), events: await count('inbox_events', xi) };
    // The audit's forgery: ask the check to sign a reply, then post the reply with that answer.
    const reply = JSON.stringify(xReply('1050118621198921999', '@acme forged'));
    for (const token of [reply, '{}', 'A'.repeat(65), 'has space', 'a.b', 'a%00b', '%E2%9C%93', '<x>']) {
      const r = await get(`/v1/hooks/x/${xi}?crc_token=${token === reply ? encodeURIComponent(token) : token}`);
      expect(r.status, token).toBe(400);
      const body = (await r.json()) as any;
      expect(body.error.code).toBe('VALIDATION_FAILED');
      expect(body.error.message).toContain('query.crc_token');
      expect(body.error.details.fields).toEqual([expect.objectContaining({ field: 'query.crc_token', code: 'pattern' })]);
      expect(JSON.stringify(body)).not.toContain('sha256=');
    }
    const missing = (await (await get(`/v1/hooks/x/${xi}?crc_token=`)).json()) as any;
    expect(missing.error.details.fields).toEqual([expect.objectContaining({ field: 'query.crc_token', code: 'required' })]);
    expect(missing.error.message).toContain('query.crc_token');
    // The same reply, signed as the check would have signed it, is not accepted either.
    const forged = await deliver(server, 'x', xi, { body: reply, headers: { 'content-type': 'application/json', 'x-twitter-webhooks-signature': 'sha256=AAAA' } });
    expect(forged.status).toBe(401);
    expect({ deliveries: await count('inbox_deliveries', xi), events: await count('inbox_events', xi) }).toEqual(before);
  });

  it('X: for any string, either the check refuses to sign it or its answer is not a delivery signature of it', () => {
    const secret = X_CONSUMER_SECRET;
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.json(), fc.stringMatching(/^[A-Za-z0-9+/=_-]{1,64}$/)), (token) => {
        let answer: string;
        try {
          answer = xCrcResponse(secret, token).response_token;
        } catch {
          return true; // not answered
        }
        const check = checkSignature('x', secret, { 'x-twitter-webhooks-signature': answer }, Buffer.from(token, 'utf8'));
        return !check.ok;
      }),
      { numRuns: 500 },
    );
    // ...while a delivery (a JSON object) with its own signature verifies.
    const d = xDelivery(xReply('1', 'x'));
    expect(checkSignature('x', secret, d.headers, Buffer.from(d.body))).toEqual({ ok: true });
  });

  it('sandbox has no GET check (405); unknown source, integration, or a source that is not the integration\'s platform: 404', async () => {
    const r = await get(`/v1/hooks/sandbox/${sb}`);
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect((await deliver(server, 'tiktok', fb, metaDelivery(fbComment('1_9_1', 'x')))).status).toBe(404);
    expect((await deliver(server, 'facebook', '00000000-0000-4000-8000-000000000000', metaDelivery(fbComment('1_9_1', 'x')))).status).toBe(404);
    expect((await deliver(server, 'instagram', fb, metaDelivery(igComment('1', 'x')))).status).toBe(404);
    expect((await deliver(server, 'facebook', 'not-a-uuid', metaDelivery(fbComment('1_9_1', 'x')))).status).toBe(404);
    // A non-sandbox integration takes no sandbox deliveries.
    expect((await deliver(server, 'sandbox', fb, sandboxDelivery('msg_1', sbEvent('m1', 'x')))).status).toBe(404);
  });
});

describe('signatures, raw storage and de-duplication', () => {
  const cases = [
    {
      source: 'facebook',
      id: () => fb,
      valid: () => metaDelivery(fbComment('1_9_100', 'hello')),
      header: 'x-hub-signature-256',
    },
    {
      source: 'instagram',
      id: () => ig,
      valid: () => metaDelivery(igComment('17900000000000100', 'hello')),
      header: 'x-hub-signature-256',
    },
    {
      source: 'x',
      id: () => xi,
      valid: () => xDelivery(xReply('1050118621198921800', '@acme hello')),
      header: 'x-twitter-webhooks-signature',
    },
    {
      source: 'sandbox',
      id: () => sb,
      valid: () => sandboxDelivery('msg_valid_1', sbEvent('m100', 'hello')),
      header: 'webhook-signature',
    },
  ] as const;

  it.each(cases)('$source: valid is stored (200), a redelivery changes nothing (200), tampered and missing signatures are 401 and stored nowhere', async (c) => {
    const integrationId = c.id();
    const before = { deliveries: await count('inbox_deliveries', integrationId), events: await count('inbox_events', integrationId) };
    const valid = c.valid();
    const first = await deliver(server, c.source, integrationId, valid);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toMatchObject({ events: 1, newEvents: 1 });
    expect(first.headers.get('x-request-id')).toBeTruthy();
    const stored = await server.owner.query(`select body, headers from app.inbox_deliveries where id = $1`, [first.body.data.deliveryId]);
    expect(stored.rows[0].body.toString('utf8')).toBe(valid.body);
    expect(stored.rows[0].headers[c.header]).toBe(valid.headers[c.header]);

    // The same delivery again (a platform retry, or a captured one replayed): 2xx, nothing changes.
    const again = await deliver(server, c.source, integrationId, valid);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ deliveryId: null, events: 1, newEvents: 0 });

    const tampered = await deliver(server, c.source, integrationId, { ...valid, body: valid.body.replace('hello', 'hellO') });
    expect(tampered.status).toBe(401);
    expect(tampered.body.error.code).toBe('SIGNATURE_INVALID');
    const { [c.header]: _dropped, ...unsigned } = valid.headers;
    const missing = await deliver(server, c.source, integrationId, { ...valid, headers: unsigned });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('SIGNATURE_MISSING');
    expect({ deliveries: await count('inbox_deliveries', integrationId), events: await count('inbox_events', integrationId) }).toEqual({
      deliveries: before.deliveries + 1,
      events: before.events + 1,
    });
    const audit = await server.owner.query(`select status, error_code from audit.api_calls where actor_kind = 'platform_webhook' and actor_id = $1 and method = 'POST' order by occurred_at`, [integrationId]);
    expect(audit.rows.slice(-4).map((r) => [r.status, r.error_code])).toEqual([
      [200, null],
      [200, null],
      [401, 'SIGNATURE_INVALID'],
      [401, 'SIGNATURE_MISSING'],
    ]);
  });

  it('signed with another secret: 401', async () => {
    expect((await deliver(server, 'facebook', fb, metaDelivery(fbComment('1_9_101', 'x'), 'another-secret-0123456789'))).status).toBe(401);
    expect((await deliver(server, 'x', xi, xDelivery(xReply('1', 'x'), 'another-secret-0123456789'))).status).toBe(401);
    const other = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    expect((await deliver(server, 'sandbox', sb, sandboxDelivery('msg_other', sbEvent('m101', 'x'), { secret: other }))).status).toBe(401);
  });

  it('sandbox: a correctly signed delivery older than 5 minutes is a refused replay (401 SIGNATURE_STALE)', async () => {
    const stale = sandboxDelivery('msg_stale', sbEvent('m102', 'old'), { timestamp: Math.floor(Date.now() / 1000) - 600 });
    const r = await deliver(server, 'sandbox', sb, stale);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('SIGNATURE_STALE');
    const future = sandboxDelivery('msg_future', sbEvent('m103', 'later'), { timestamp: Math.floor(Date.now() / 1000) + 600 });
    expect((await deliver(server, 'sandbox', sb, future)).status).toBe(401);
  });

  it('checks the Standard Webhooks specification\'s published example', () => {
    const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' };
    const body = Buffer.from('{"test": 2432232314}');
    expect(checkSignature('sandbox', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', headers, body, 1614265330 * 1000)).toEqual({ ok: true });
    expect(checkSignature('sandbox', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', headers, Buffer.from('{"test": 2432232315}'), 1614265330 * 1000)).toEqual({ ok: false, reason: 'invalid' });
    expect(checkSignature('sandbox', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', headers, body, (1614265330 + 301) * 1000)).toEqual({ ok: false, reason: 'stale' });
  });

  it('a body over 1 MB is 413; a signed body that is not the platform\'s format is 400 and not stored', async () => {
    const big = JSON.stringify({ object: 'page', entry: [], pad: 'x'.repeat(1024 * 1024) });
    const r = await fetch(`${server.baseUrl}/v1/hooks/facebook/${fb}`, { method: 'POST', headers: metaDelivery({}).headers, body: big });
    expect(r.status).toBe(413);
    expect(((await r.json()) as any).error.code).toBe("PAYLOAD_TOO_LARGE");
    const before = await count('inbox_deliveries', fb);
    const sign = (body: string) => ({ body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', 'meta-app-secret-0123456789abcdef').update(body).digest('hex')}` } });
    const notJson = await deliver(server, 'facebook', fb, sign('{not json'));
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('INVALID_DELIVERY');
    expect((await deliver(server, 'facebook', fb, sign(JSON.stringify({ object: 'instagram', entry: [] })))).status).toBe(400);
    expect((await deliver(server, 'sandbox', sb, sandboxDelivery('msg_bad', { type: 'message.created', data: { threadKind: 'comment' } }))).status).toBe(400);
    expect(await count('inbox_deliveries', fb)).toBe(before);
  });
});

describe('refused calls are failed credentials of the client address', () => {
  it('past AUTH_FAILURE_LIMIT refusals a minute the address gets 429 AUTH_THROTTLED with Retry-After before anything is checked; only the first AUTH_FAILURE_AUDIT are audited one by one, the rest in one summary row', async () => {
    const limited = await startTestServer('hooks-throttle', { AUTH_FAILURE_LIMIT: 6, AUTH_FAILURE_AUDIT: 3, TRUST_PROXY: true });
    try {
      const lapi = client(limited);
      const o = await signup(lapi);
      const lfb = await hookIntegration(lapi, o, 'facebook', 'facebook');
      const lx = await hookIntegration(lapi, o, 'x', 'x');
      const them = '203.0.113.50';
      let n = 0;
      const call = async (method: 'GET' | 'POST', path: string, from: string, d?: { body: string; headers: Record<string, string> }) => {
        const requestId = `hook-throttle-${++n}`;
        const res = await fetch(`${limited.baseUrl}${path}`, {
          method,
          headers: { ...(d?.headers ?? {}), 'x-forwarded-for': from, 'x-request-id': requestId },
          body: d?.body,
        });
        const text = await res.text();
        checkHookAnswer(method, res.status, res.headers.get('content-type'), text);
        return { requestId, status: res.status, code: res.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text).error?.code ?? null) : null, retryAfter: res.headers.get('retry-after') };
      };
      const stored = async () => Number((await limited.owner.query(`select (select count(*) from app.inbox_deliveries) + (select count(*) from app.inbox_events) as n`)).rows[0].n);
      const before = await stored();
      const valid = xDelivery(xReply('1050118621198922001', '@acme hi'));

      // Six refusals of every kind, from one address.
      const refused = [
        await call('POST', `/v1/hooks/x/${lx}`, them, { ...valid, body: valid.body.replace('hi', 'hI') }),
        await call('POST', `/v1/hooks/facebook/${lfb}`, them, { body: '{}', headers: { 'content-type': 'application/json' } }),
        await call('GET', `/v1/hooks/facebook/${lfb}?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1`, them),
        await call('POST', `/v1/hooks/facebook/00000000-0000-4000-8000-000000000000`, them, metaDelivery({})),
        await call('GET', `/v1/hooks/x/${lx}?crc_token=${encodeURIComponent('{"a":1}')}`, them),
        await call('POST', `/v1/hooks/nosuch/${lx}`, them, valid),
      ];
      expect(refused.map((r) => `${r.status} ${r.code}`)).toEqual([
        '401 SIGNATURE_INVALID',
        '401 SIGNATURE_MISSING',
        '403 VERIFY_TOKEN_MISMATCH',
        '404 NOT_FOUND',
        '400 VALIDATION_FAILED',
        '404 NOT_FOUND',
      ]);
      // Now even a right signature and a right verify token from that address are refused, unread.
      const throttled = [
        await call('POST', `/v1/hooks/x/${lx}`, them, valid),
        await call('GET', `/v1/hooks/facebook/${lfb}?hub.mode=subscribe&hub.verify_token=${META_VERIFY_TOKEN}&hub.challenge=1`, them),
        await call('GET', `/v1/hooks/x/${lx}?crc_token=abc`, them),
      ];
      for (const r of throttled) {
        expect(r.status).toBe(429);
        expect(r.code).toBe('AUTH_THROTTLED');
        expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
        expect(Number(r.retryAfter)).toBeLessThanOrEqual(60);
      }
      expect(await stored()).toBe(before);
      // The same window as the pipeline's failed credentials: a right bearer from that address is refused too.
      const pipeline = await lapi.get('/v1/workspaces', { token: o.token, headers: { 'x-forwarded-for': them } });
      expect(pipeline.status).toBe(429);
      expect(pipeline.body.error.code).toBe('AUTH_THROTTLED');
      // Another address is not throttled: its delivery is stored.
      const other = await call('POST', `/v1/hooks/x/${lx}`, '198.51.100.60', valid);
      expect(other.status).toBe(200);
      expect(await stored()).toBeGreaterThan(before);

      // The first 3 refusals have a row each (anonymous for the unknown hook), the rest none yet.
      const rows = async () =>
        (await limited.owner.query(`select request_id, actor_kind, route, status, error_code, calls from audit.api_calls where request_id like 'hook-throttle-%' order by occurred_at`)).rows;
      const own = await rows();
      expect(own.map((r) => [r.request_id, r.actor_kind, r.status, r.error_code])).toEqual([
        [refused[0].requestId, 'platform_webhook', 401, 'SIGNATURE_INVALID'],
        [refused[1].requestId, 'platform_webhook', 401, 'SIGNATURE_MISSING'],
        [refused[2].requestId, 'platform_webhook', 403, 'VERIFY_TOKEN_MISMATCH'],
        [other.requestId, 'platform_webhook', 200, null],
      ]);
      // The minute closes: one summary row counts the 3 refusals and the 4 throttled calls not audited one by one.
      await limited.owner.query(`update app.auth_failures set window_start = window_start - interval '1 minute'`);
      await limited.owner.query(`select app.flush_auth_failures()`);
      const summary = await limited.owner.query(`select method, route, status, error_code, calls, actor_kind from audit.api_calls where error_code = 'AUTH_FAILURE_BURST'`);
      expect(summary.rows).toEqual([{ method: '*', route: null, status: 401, error_code: 'AUTH_FAILURE_BURST', calls: 7, actor_kind: 'anonymous' }]);
      expect(own.filter((r) => r.request_id !== other.requestId).length + summary.rows[0].calls).toBe(refused.length + throttled.length + 1);
    } finally {
      await limited.close();
    }
  });

  it('an unknown hook is audited as anonymous within the first refusals, and accepted calls never count', async () => {
    const limited = await startTestServer('hooks-accepted', { AUTH_FAILURE_LIMIT: 2, AUTH_FAILURE_AUDIT: 2, TRUST_PROXY: true });
    try {
      const lapi = client(limited);
      const o = await signup(lapi);
      const lx = await hookIntegration(lapi, o, 'x', 'x');
      const from = { 'x-forwarded-for': '203.0.113.77' };
      // Many accepted calls (checks and deliveries) from one address: never throttled.
      for (let i = 0; i < 5; i++) {
        const check = await fetch(`${limited.baseUrl}/v1/hooks/x/${lx}?crc_token=t${i}`, { headers: from });
        expect(check.status).toBe(200);
        const d = xDelivery(xReply(`10501186211989230${i}`, '@acme hi'));
        const r = await fetch(`${limited.baseUrl}/v1/hooks/x/${lx}`, { method: 'POST', headers: { ...d.headers, ...from }, body: d.body });
        expect(r.status).toBe(200);
      }
      expect((await limited.owner.query(`select * from app.auth_failures`)).rowCount).toBe(0);
      const unknown = await fetch(`${limited.baseUrl}/v1/hooks/x/00000000-0000-4000-8000-000000000000?crc_token=abc`, { headers: { ...from, 'x-request-id': 'hook-unknown-1' } });
      expect(unknown.status).toBe(404);
      const row = await limited.owner.query(`select actor_kind, actor_id, organization_id, route, status, error_code from audit.api_calls where request_id = 'hook-unknown-1'`);
      expect(row.rows).toEqual([{ actor_kind: 'anonymous', actor_id: null, organization_id: null, route: '/v1/hooks/{source}/{integrationId}', status: 404, error_code: 'NOT_FOUND' }]);
      expect((await limited.owner.query(`select failures, audited from app.auth_failures where client = 'ip:203.0.113.77'`)).rows).toEqual([{ failures: 1, audited: 1 }]);
    } finally {
      await limited.close();
    }
  });
});

describe('what each source brings', () => {
  const state = async (integrationId: string) =>
    (
      await server.owner.query(
        `select t.kind, t.thread_key, m.message_key, m.parent_key, m.author, m.body, m.reactions, m.moderation, m.has_original
         from app.inbox_messages m join app.inbox_threads t on t.id = m.thread_id where m.integration_id = $1 order by m.message_key`,
        [integrationId],
      )
    ).rows;

  it('X: replies and mentions by others, likes of replies, direct messages, deletions; the account\'s own posts and likes of its posts are skipped', async () => {
    const integration = await hookIntegration(api, owner, 'x', 'x', 'x kinds');
    const self = '2244994945';
    const tweet = (id: string, user: string, inReplyTo: string | null, text: string, ms: number) => ({
      id_str: id, text, timestamp_ms: String(ms), in_reply_to_status_id_str: inReplyTo, user: { id_str: user, screen_name: `s${user}`, name: `N${user}` },
    });
    const r = await deliver(server, 'x', integration, xDelivery({
      for_user_id: self,
      tweet_create_events: [tweet('t1', '11', 'p1', '@acme first', 1_790_000_000_000), tweet('t2', '12', null, '@acme a mention', 1_790_000_001_000), tweet('t3', self, 'p1', 'our own answer', 1_790_000_002_000)],
      favorite_events: [
        { id: 'f1', timestamp_ms: 1_790_000_003_000, favorited_status: { id_str: 't1', in_reply_to_status_id_str: 'p1', user: { id_str: '11' } }, user: { id_str: '13' } },
        { id: 'f2', timestamp_ms: 1_790_000_004_000, favorited_status: { id_str: 'p1', user: { id_str: self } }, user: { id_str: '13' } },
      ],
      direct_message_events: [
        { type: 'message_create', id: 'dm1', created_timestamp: '1790000005000', message_create: { sender_id: '14', target: { recipient_id: self }, message_data: { text: 'hello' } } },
        { type: 'message_create', id: 'dm2', created_timestamp: '1790000006000', message_create: { sender_id: self, target: { recipient_id: '14' }, message_data: { text: 'our reply' } } },
      ],
      users: { '14': { id: '14', name: 'Dee', screen_name: 'dee' } },
    }));
    expect(r.body.data).toMatchObject({ events: 4, newEvents: 4, skipped: 3 });
    expect((await deliver(server, 'x', integration, xDelivery({ for_user_id: self, tweet_delete_events: [{ status: { id: 't2', user_id: '12' }, timestamp_ms: '1790000007000' }] }))).status).toBe(200);
    await foldInbox(server.deps, integration);
    expect((await state(integration)).map((m) => [m.kind, m.thread_key, m.message_key, m.parent_key, m.body, m.reactions, m.moderation])).toEqual([
      ['message', '14', 'dm1', null, 'hello', {}, 'visible'],
      ['comment', 'p1', 't1', 'p1', '@acme first', { like: 1 }, 'visible'],
      ['comment', 't2', 't2', null, '@acme a mention', {}, 'deleted'],
    ]);
  });

  it('Instagram: comments and replies to comments, direct messages; Facebook: Messenger deletions and reactions to the post itself', async () => {
    const integration = await hookIntegration(api, owner, 'instagram', 'instagram', 'ig kinds');
    const r = await deliver(server, 'instagram', integration, metaDelivery({
      object: 'instagram',
      entry: [{
        id: '1784', time: 1_790_000_000,
        changes: [
          { field: 'comments', value: { id: 'ic1', text: 'wow', from: { id: 'iu1', username: 'ada' }, media: { id: 'm1' } } },
          { field: 'comments', value: { id: 'ic2', text: 'thanks', from: { id: 'iu2', username: 'bo' }, media: { id: 'm1' }, parent_id: 'ic1' } },
          { field: 'mentions', value: { media_id: 'm9' } },
        ],
        messaging: [{ sender: { id: 'iu3' }, recipient: { id: '1784' }, timestamp: 1_790_000_001_000, message: { mid: 'im1', text: 'hi', attachments: [{ type: 'image', payload: { url: 'https://cdn.example/i.jpg' } }] } }],
      }],
    }));
    expect(r.body.data).toMatchObject({ events: 3, newEvents: 3, skipped: 1 });
    await foldInbox(server.deps, integration);
    expect((await state(integration)).map((m) => [m.kind, m.thread_key, m.message_key, m.parent_key, m.author.name, m.body])).toEqual([
      ['comment', 'm1', 'ic1', null, 'ada', 'wow'],
      ['comment', 'm1', 'ic2', 'ic1', 'bo', 'thanks'],
      ['message', 'iu3', 'im1', null, null, 'hi'],
    ]);
    const attachments = await server.owner.query(`select attachments from app.inbox_messages where integration_id = $1 and message_key = 'im1'`, [integration]);
    expect(attachments.rows[0].attachments).toEqual([{ type: 'image', url: 'https://cdn.example/i.jpg' }]);

    const page = await hookIntegration(api, owner, 'facebook', 'facebook', 'fb kinds');
    await deliver(server, 'facebook', page, metaDelivery({ object: 'page', entry: [{ id: '1', time: 1_790_000_000, messaging: [{ sender: { id: 'ps1' }, recipient: { id: '1' }, timestamp: 1_790_000_000_000, message: { mid: 'fm1', text: 'oops' } }] }] }));
    const del = await deliver(server, 'facebook', page, metaDelivery({ object: 'page', entry: [{ id: '1', time: 1_790_000_010, messaging: [
      { sender: { id: 'ps1' }, recipient: { id: '1' }, timestamp: 1_790_000_010_000, message: { mid: 'fm1', is_deleted: true } },
      { sender: { id: '1' }, recipient: { id: 'ps1' }, timestamp: 1_790_000_011_000, message: { mid: 'fm2', text: 'echo of our answer', is_echo: true } },
    ], changes: [{ field: 'feed', value: { item: 'reaction', verb: 'add', reaction_type: 'like', post_id: '1_5', from: { id: 'u9' } } }] }] }));
    expect(del.body.data).toMatchObject({ events: 1, newEvents: 1, skipped: 2 });
    await foldInbox(server.deps, page);
    expect((await state(page)).map((m) => [m.message_key, m.moderation])).toEqual([['fm1', 'deleted']]);
  });
});

describe('folding', () => {
  it('the fold job (real pg-boss) turns deliveries into a thread', async () => {
    const boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 2, superviseIntervalSeconds: 5 });
    boss.on('error', () => {});
    await boss.start();
    try {
      await registerInboxJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
      const integration = await hookIntegration(api, owner, 'facebook', 'facebook', 'fold job');
      for (let i = 0; i < 3; i++) expect((await deliver(server, 'facebook', integration, metaDelivery(fbComment(`1_9_20${i}`, `comment ${i}`, 1_790_000_000 + i)))).status).toBe(200);
      let threads: any[] = [];
      for (let i = 0; i < 100 && threads[0]?.messageCount !== 3; i++) {
        await new Promise((r) => setTimeout(r, 200));
        threads = (await api.get(`/v1/workspaces/${owner.workspaceId}/inbox/threads?integrationId=${integration}`, { token: owner.token })).body.data;
      }
      expect(threads).toHaveLength(1);
      expect(threads[0]).toMatchObject({ kind: 'comment', platformThreadId: '1_9', messageCount: 3, unreadCount: 3, participants: [{ id: 'u1', name: 'Ada' }] });
    } finally {
      await boss.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
    }
  });

  it('job inbox.purge-deliveries (real pg-boss) deletes folded raw deliveries past the retention; a later redelivery still changes nothing', async () => {
    const integration = await hookIntegration(api, owner, 'facebook', 'facebook', 'retention');
    const first = metaDelivery(fbComment('1_9_301', 'kept as an event'));
    expect((await deliver(server, 'facebook', integration, first)).body.data.newEvents).toBe(1);
    expect((await deliver(server, 'facebook', integration, metaDelivery(fbComment('1_9_302', 'another')))).status).toBe(200);
    await foldInbox(server.deps, integration);
    // A third, not folded yet: it stays however old.
    expect((await deliver(server, 'facebook', integration, metaDelivery(fbComment('1_9_303', 'unfolded')))).status).toBe(200);
    await server.owner.query(`update app.inbox_deliveries set received_at = now() - interval '31 days' where integration_id = $1`, [integration]);
    const boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 2, superviseIntervalSeconds: 5 });
    boss.on('error', () => {});
    await boss.start();
    try {
      await registerInboxJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
      await boss.send(QUEUES.inboxPurgeDeliveries, {});
      for (let i = 0; i < 100 && (await count('inbox_deliveries', integration)) > 1; i++) await new Promise((r) => setTimeout(r, 200));
    } finally {
      await boss.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
    }
    // The fold worker may have taken the third delivery's events meanwhile; what must hold:
    // the two folded deliveries are gone, their events stay.
    const left = await server.owner.query(`select d.id from app.inbox_deliveries d where d.integration_id = $1`, [integration]);
    const unfolded = Number((await server.owner.query(`select count(*) from app.inbox_events where integration_id = $1 and folded_at is null`, [integration])).rows[0].count);
    expect(left.rows.length).toBe(unfolded ? 1 : 0);
    expect(await count('inbox_events', integration)).toBe(3);
    const again = await deliver(server, 'facebook', integration, first);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ deliveryId: null, events: 1, newEvents: 0 });
    expect(await count('inbox_events', integration)).toBe(3);
  });

  it('a recorded stream replayed in shuffled orders converges to the in-order state', async () => {
    const deliveries = RECORDED_FACEBOOK_STREAM.map((p) => metaDelivery(p));
    const state = async (integrationId: string) => {
      const threads = await server.owner.query(
        `select kind, thread_key, participants, last_message_at, last_inbound_at, message_count, status from app.inbox_threads where integration_id = $1 order by kind, thread_key`,
        [integrationId],
      );
      const messages = await server.owner.query(
        `select t.thread_key, m.direction, m.message_key, m.parent_key, m.author, m.body, m.attachments, m.reactions, m.has_original, m.moderation, m.occurred_at, m.edited_at
         from app.inbox_messages m join app.inbox_threads t on t.id = m.thread_id where m.integration_id = $1 order by m.message_key`,
        [integrationId],
      );
      return { threads: threads.rows, messages: messages.rows };
    };
    const replay = async (order: typeof deliveries, foldEach: boolean) => {
      const integrationId = await hookIntegration(api, owner, 'facebook', 'facebook', 'replay');
      for (const d of order) {
        const r = await deliver(server, 'facebook', integrationId, d);
        expect(r.status).toBe(200);
        if (foldEach) await foldInbox(server.deps, integrationId);
      }
      // Every delivery once more, as a platform retrying: changes nothing.
      for (const d of order.slice(0, 4)) expect((await deliver(server, 'facebook', integrationId, d)).body.data.newEvents).toBe(0);
      await foldInbox(server.deps, integrationId);
      return state(integrationId);
    };
    const expected = await replay(deliveries, true);
    // What in-order delivery gives, checked once by hand.
    const byKey = Object.fromEntries(expected.messages.map((m) => [m.message_key, m]));
    expect(byKey[`${RECORDED_POST_ID}_c1`]).toMatchObject({ body: 'Love it!!', reactions: { love: 1 }, moderation: 'visible', has_original: true });
    expect(byKey[`${RECORDED_POST_ID}_c2`]).toMatchObject({ body: 'Same here', moderation: 'hidden', parent_key: `${RECORDED_POST_ID}_c1` });
    expect(byKey[`${RECORDED_POST_ID}_c3`]).toMatchObject({ moderation: 'deleted' });
    expect(byKey.m_1).toMatchObject({ body: 'Do you ship to Canada and Mexico?', reactions: { love: 1 } });
    expect(expected.threads.map((t) => [t.kind, t.thread_key, t.message_count])).toEqual([
      ['comment', RECORDED_POST_ID, 3],
      ['message', 'psid-4', 1],
    ]);
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const got = await replay(shuffled(deliveries, seed), seed % 2 === 0);
      expect(got, `shuffle seed ${seed}`).toEqual(expected);
    }
  });
});
