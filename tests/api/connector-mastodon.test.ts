// The Mastodon connector (server/platforms/mastodon.ts) over real HTTP against a
// local fake instance that follows Mastodon's published API
// (tests/support/fakes/mastodon.ts): app registration, the OAuth flow with PKCE,
// the token check that stands in for a refresh, accounts and instance limits,
// publishing (text, media with alt text and processing, threads), every fault
// (timeout after the status was made, 5xx, 429, revoked token, validation),
// caption edits, metrics, inbox replies and moderation.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { grantedScopes, mastodon, MASTODON_SCOPES, parseMastodonSettings, sniffContentType } from '../../server/platforms/mastodon.ts';
import { ConnectorError, type IntegrationRef, type MediaRef, type PlatformEndpoint, type PublishableEdition } from '../../server/platforms/types.ts';
import { startFakeMastodon, type FakeMastodon } from '../support/fakes/mastodon.ts';

const TIMEOUT_MS = 1200;
const CALLBACK = 'https://pressroom.example/v1/oauth/callback/mastodon';

let fake: FakeMastodon;
let endpoint: PlatformEndpoint;
const connector = mastodon.create({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: false });
const oauth = mastodon.oauth!;

beforeAll(async () => {
  fake = await startFakeMastodon();
  endpoint = { baseUrl: fake.url, allowPrivateNetworks: true };
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => {
  fake.processing.images = 0;
  fake.processing.videos = 2;
  fake.consent = 'allow';
});

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), randomBytes(64)]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), randomBytes(64)]);

function creds(token: string) {
  return { accessToken: token, refreshToken: null, expiresAt: null, scopes: [...MASTODON_SCOPES], extra: {} };
}
function integ(token: string, over: Partial<IntegrationRef> = {}): IntegrationRef {
  return { id: 'int-1', connector: 'mastodon', platform: 'mastodon', name: 'Alice', username: 'alice', settings: {}, credentials: creds(token), endpoint, ...over };
}
function mediaRef(id: string, data: Buffer, over: Partial<MediaRef> = {}): MediaRef {
  return { id, type: 'image', url: `urn:pressroom:media:${id}`, contentType: 'image/png', altText: null, size: data.length, read: async () => data, ...over };
}
let editionSeq = 0;
function edition(over: Partial<PublishableEdition> = {}): PublishableEdition {
  const n = ++editionSeq;
  return { id: `ed-${n}`, rootId: `root-${n}`, attempt: 1, caption: `Hello from Pressroom ${n}`, settings: {}, media: [], thread: [], scheduledAt: null, idempotencyToken: `tok-${n}-${randomBytes(6).toString('hex')}`, ...over };
}
const statusCalls = () => fake.callsTo('POST', '/api/v1/statuses');
const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** Runs the consent step in a "browser": the authorize URL, answered with a redirect. */
async function consent(url: string): Promise<URL> {
  const r = await fetch(url, { redirect: 'manual' });
  expect(r.status, await r.clone().text()).toBe(302);
  return new URL(r.headers.get('location')!);
}

describe('connecting an account', () => {
  it('registers the Pressroom app on the instance with the callback, scopes and website', async () => {
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS });
    const stored = fake.apps.get(app.clientId);
    expect(stored).toBeTruthy();
    expect(app.clientSecret).toBe(stored!.clientSecret);
    expect(stored!.name).toBe('Pressroom');
    expect(stored!.redirectUris).toEqual([CALLBACK]);
    expect(stored!.scopes).toEqual(['profile', 'read:statuses', 'write:statuses', 'write:media']);
    expect(stored!.website).toBe('https://pressroom.example');
    expect(oauth.needsOperatorApp).toBe(false);
    expect(oauth.pkce).toBe(true);
    expect(mastodon.connect).toBe('oauth');
  });

  it('builds the authorize URL with PKCE S256 and the scopes', async () => {
    const app = { clientId: 'cid', clientSecret: 'secret' };
    const u = new URL(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 'st-1', codeChallenge: 'chal', scopes: oauth.scopes }));
    expect(`${u.origin}${u.pathname}`).toBe(`${fake.url}/oauth/authorize`);
    expect(Object.fromEntries(u.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'cid',
      redirect_uri: CALLBACK,
      scope: 'profile read:statuses write:statuses write:media',
      state: 'st-1',
      code_challenge: 'chal',
      code_challenge_method: 'S256',
    });
  });

  it('exchanges the code with the PKCE verifier for a token that works, and reads the account and limits', async () => {
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS });
    const { verifier, challenge } = pkce();
    const back = await consent(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 'st-2', codeChallenge: challenge, scopes: oauth.scopes }));
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    expect(back.searchParams.get('state')).toBe('st-2');
    const code = back.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const tokens = await oauth.exchangeCode({ endpoint, app, redirectUri: CALLBACK, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS });
    const sent = fake.callsTo('POST', '/oauth/token').at(-1)!;
    expect(sent.body).toMatchObject({ grant_type: 'authorization_code', code, client_id: app.clientId, client_secret: app.clientSecret, redirect_uri: CALLBACK, code_verifier: verifier });
    expect(fake.tokens.get(tokens.accessToken)?.accountId).toBe(fake.alice.id);
    expect(tokens.refreshToken).toBeNull();
    expect(tokens.expiresIn).toBeNull();
    expect(tokens.scopes).toEqual(expect.arrayContaining([...MASTODON_SCOPES]));
    expect(tokens.extra).toEqual({ instanceUrl: fake.url });

    const accounts = await mastodon.readAccounts!({ endpoint, credentials: creds(tokens.accessToken), timeoutMs: TIMEOUT_MS });
    expect(accounts).toEqual([
      { id: fake.alice.id, username: 'alice', name: 'Alice Example', avatarUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/system\/accounts\/avatars\//), profileUrl: `${fake.url}/@alice`, kind: 'person' },
    ]);
    const limits = await mastodon.readLimits!({ endpoint, credentials: creds(tokens.accessToken), timeoutMs: TIMEOUT_MS });
    expect(limits).toEqual({ captionMaxLength: 500, maxMedia: 4, imageMaxBytes: 16 * 1024 * 1024, videoMaxBytes: 99 * 1024 * 1024 });
  });

  it('refuses a wrong PKCE verifier and a code used twice (invalid_grant)', async () => {
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS });
    const { verifier, challenge } = pkce();
    const code = (await consent(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 's', codeChallenge: challenge, scopes: oauth.scopes }))).searchParams.get('code')!;
    const wrong = await oauth.exchangeCode({ endpoint, app, redirectUri: CALLBACK, code, codeVerifier: pkce().verifier, timeoutMs: TIMEOUT_MS }).catch((e) => e);
    expect(wrong).toBeInstanceOf(ConnectorError);
    expect(wrong.code).toBe('UPSTREAM_ERROR');
    expect(wrong.details).toMatchObject({ status: 400, error: 'invalid_grant', retryable: false });
    // The code is still unused (the wrong verifier did not consume it): it works once, then never again.
    await expect(oauth.exchangeCode({ endpoint, app, redirectUri: CALLBACK, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS })).resolves.toMatchObject({ accessToken: expect.any(String) });
    const reused = await oauth.exchangeCode({ endpoint, app, redirectUri: CALLBACK, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS }).catch((e) => e);
    expect(reused.details).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a wrong client secret (invalid_client), so the framework can register the app again', async () => {
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS });
    const { verifier, challenge } = pkce();
    const code = (await consent(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 's', codeChallenge: challenge, scopes: oauth.scopes }))).searchParams.get('code')!;
    const e = await oauth.exchangeCode({ endpoint, app: { ...app, clientSecret: 'nope' }, redirectUri: CALLBACK, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  it('passes on a refused consent as access_denied with the state', async () => {
    fake.consent = 'deny';
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS });
    const back = await consent(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 'st-deny', codeChallenge: pkce().challenge, scopes: oauth.scopes }));
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('st-deny');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('refuses a grant without the required scopes, and reads parent scopes as the granular ones', async () => {
    const app = await oauth.registerApp!({ endpoint, redirectUri: CALLBACK, scopes: ['profile', 'write:statuses'], timeoutMs: TIMEOUT_MS });
    const { verifier, challenge } = pkce();
    const code = (await consent(oauth.authorizeUrl({ endpoint, app, redirectUri: CALLBACK, state: 's', codeChallenge: challenge, scopes: ['profile', 'write:statuses'] }))).searchParams.get('code')!;
    const e = await oauth.exchangeCode({ endpoint, app, redirectUri: CALLBACK, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toEqual({ missingScopes: ['read:statuses', 'write:media'] });
    expect(grantedScopes('read write')).toEqual(expect.arrayContaining([...MASTODON_SCOPES]));
    expect(grantedScopes('read:accounts write:media')).toEqual(['read:accounts', 'write:media', 'profile']);
    expect(grantedScopes('profile write')).not.toContain('read:statuses');
  });

  it('a refresh keeps a working token, revokes a refused one, and retries on outages', async () => {
    const token = fake.issueToken(fake.alice.id);
    const app = { clientId: 'x', clientSecret: 'y' };
    const kept = await oauth.refresh({ endpoint, app, credentials: creds(token), timeoutMs: TIMEOUT_MS });
    expect(kept).toMatchObject({ state: 'refreshed', tokens: { accessToken: token, refreshToken: null, expiresIn: null } });

    fake.inject({ path: '/api/v1/accounts/verify_credentials', kind: 'error', status: 503, body: { error: 'Service Unavailable' } });
    expect(await oauth.refresh({ endpoint, app, credentials: creds(token), timeoutMs: TIMEOUT_MS })).toMatchObject({ state: 'retry', error: expect.stringContaining('503') });

    fake.inject({ path: '/api/v1/accounts/verify_credentials', kind: 'rate-limit', resetInSeconds: 120 });
    const limited = await oauth.refresh({ endpoint, app, credentials: creds(token), timeoutMs: TIMEOUT_MS });
    expect(limited.state).toBe('retry');
    const at = (limited as { retryAt: Date }).retryAt.getTime();
    expect(at).toBeGreaterThan(Date.now() + 100_000);
    expect(at).toBeLessThan(Date.now() + 125_000);

    fake.inject({ path: '/api/v1/accounts/verify_credentials', kind: 'hang' });
    expect(await oauth.refresh({ endpoint, app, credentials: creds(token), timeoutMs: 300 })).toMatchObject({ state: 'retry' });

    fake.revokeToken(token);
    const revoked = await oauth.refresh({ endpoint, app, credentials: creds(token), timeoutMs: TIMEOUT_MS });
    expect(revoked).toMatchObject({ state: 'revoked', reason: expect.stringContaining('The access token is invalid') });
    expect(JSON.stringify(revoked)).not.toContain(token);
  });

  it('refuses an instance on a private address or over plain http unless allowed', async () => {
    const guarded = { baseUrl: fake.url, allowPrivateNetworks: false };
    const e = await oauth.registerApp!({ endpoint: guarded, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('UNSAFE_URL');
    const before = fake.calls.length;
    const r = await connector.publish(integ('t', { endpoint: guarded }), edition());
    expect(r).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('https only') });
    expect(fake.calls.length).toBe(before);
    const loopback = await oauth.registerApp!({ endpoint: { baseUrl: 'https://127.0.0.1:9', allowPrivateNetworks: false }, redirectUri: CALLBACK, scopes: oauth.scopes, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(loopback).toMatchObject({ code: 'UNSAFE_URL', message: expect.stringContaining('loopback') });
  });

  it('reports a refused account lookup and the instance limits it is configured with', async () => {
    const e = await mastodon.readAccounts!({ endpoint, credentials: creds('not-a-token'), timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toMatchObject({ status: 401 });
    const other = await startFakeMastodon({ maxCharacters: 1000, maxMediaAttachments: 8, imageSizeLimit: 1024, videoSizeLimit: 4096 });
    try {
      const limits = await mastodon.readLimits!({ endpoint: { baseUrl: other.url, allowPrivateNetworks: true }, credentials: creds(other.issueToken(other.alice.id)), timeoutMs: TIMEOUT_MS });
      expect(limits).toEqual({ captionMaxLength: 1000, maxMedia: 8, imageMaxBytes: 1024, videoMaxBytes: 4096 });
    } finally {
      await other.close();
    }
  });
});

describe('publishing', () => {
  let token: string;
  beforeAll(() => {
    token = fake.issueToken(fake.alice.id);
  });

  it('declares its idempotency and Mastodon rate limits', () => {
    expect(connector.acceptsIdempotencyToken).toBe(true);
    expect(connector.publishLimits).toEqual({ perIntegration: { maxInFlight: 2, maxPerWindow: 300, windowSeconds: 10800 } });
  });

  it('publishes a status with the settings and the Idempotency-Key of the edition', async () => {
    const e = edition({ caption: 'First toot', settings: { visibility: 'unlisted', spoilerText: 'cw: launch', language: 'de', sensitive: true } });
    const r = await connector.publish(integ(token), e);
    expect(r.state).toBe('published');
    const p = r as Extract<typeof r, { state: 'published' }>;
    const s = fake.statuses.get(p.platformPostId)!;
    expect(s).toMatchObject({ accountId: fake.alice.id, text: 'First toot', visibility: 'unlisted', spoilerText: 'cw: launch', language: 'de', sensitive: true, idempotencyKey: e.idempotencyToken });
    expect(p.permalink).toBe(`${fake.url}/@alice/${s.id}`);
    expect(p.threadPostIds).toBeUndefined();
    const c = statusCalls().at(-1)!;
    expect(c.headers['idempotency-key']).toBe(e.idempotencyToken);
    expect(c.headers.authorization).toBe(`Bearer ${token}`);
    expect(c.body).toEqual({ status: 'First toot', visibility: 'unlisted', spoiler_text: 'cw: launch', language: 'de', sensitive: true });
  });

  it('refuses settings Mastodon does not know before calling it', async () => {
    const before = fake.calls.length;
    for (const settings of [{ visibility: 'friends' }, { language: 'english' }, { spoilerText: 3 }, { sensitive: 'yes' }]) {
      const r = await connector.publish(integ(token), edition({ settings }));
      expect(r).toMatchObject({ state: 'failed', permanent: true, error: expect.stringMatching(/^settings\./) });
    }
    expect(fake.calls.length).toBe(before);
    expect(parseMastodonSettings({ visibility: 'direct', spoilerText: '', language: 'fr' })).toEqual({ ok: true, value: { visibility: 'direct', language: 'fr' } });
  });

  it('uploads media with alt text, waits for a video to be processed, and attaches them in order', async () => {
    const e = edition({
      caption: 'With pictures',
      media: [mediaRef('img-1', PNG, { altText: 'A red square', contentType: undefined })],
    });
    const r = await connector.publish(integ(token), e);
    expect(r.state).toBe('published');
    const s = fake.statuses.get((r as { platformPostId: string }).platformPostId)!;
    expect(s.mediaIds).toHaveLength(1);
    const m = fake.media.get(s.mediaIds[0])!;
    expect(m).toMatchObject({ description: 'A red square', contentType: 'image/png', size: PNG.length, statusId: s.id, bytesSha256: createHash('sha256').update(PNG).digest('hex') });
    expect(fake.callsTo('POST', '/api/v2/media').at(-1)!.files).toEqual([{ name: 'file', filename: 'img-1.png', contentType: 'image/png', size: PNG.length }]);

    // A video answers 202 and 206 until processed; the status waits for it.
    fake.processing.videos = 3;
    const polls = fake.callsTo('GET', /^\/api\/v1\/media\//).length;
    const v = await connector.publish(integ(token), edition({
      caption: 'A clip',
      media: [mediaRef('vid-1', MP4, { type: 'video', contentType: 'video/mp4', altText: 'A short clip' })],
    }));
    expect(v.state).toBe('published');
    expect(fake.callsTo('GET', /^\/api\/v1\/media\//).length - polls).toBe(3);
    const vs = fake.statuses.get((v as { platformPostId: string }).platformPostId)!;
    expect(fake.media.get(vs.mediaIds[0])).toMatchObject({ type: 'video', description: 'A short clip', pollsLeft: 0 });

    // Several images keep their order.
    const many = await connector.publish(integ(token), edition({ media: ['a', 'b', 'c'].map((x) => mediaRef(`m-${x}`, Buffer.concat([PNG, Buffer.from(x)]), { altText: `alt ${x}` })) }));
    const ms = fake.statuses.get((many as { platformPostId: string }).platformPostId)!;
    expect(ms.mediaIds.map((id) => fake.media.get(id)!.description)).toEqual(['alt a', 'alt b', 'alt c']);
  });

  it('gives up on a file still processing at the timeout, without posting', async () => {
    fake.processing.videos = 1000;
    const before = statusCalls().length;
    const r = await connector.publish(integ(token), edition({ media: [mediaRef('vid-slow', MP4, { type: 'video', contentType: 'video/mp4' })] }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('still processing') });
    expect(statusCalls().length).toBe(before);
  });

  it('fails for good on a file the instance refuses', async () => {
    const r = await connector.publish(integ(token), edition({ media: [mediaRef('doc', Buffer.from('%PDF-1.7 hello'), { contentType: 'application/pdf' })] }));
    expect(r).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('File content type is invalid') });
  });

  it('publishes a thread, each reply chained to the previous with its own key', async () => {
    const e = edition({
      caption: 'Thread 1/3',
      thread: [
        { caption: 'Thread 2/3', media: [mediaRef('t-img', PNG, { altText: 'In the thread' })] },
        { caption: 'Thread 3/3', media: [] },
      ],
      settings: { visibility: 'public', language: 'en' },
    });
    const r = await connector.publish(integ(token), e);
    expect(r.state).toBe('published');
    const p = r as Extract<typeof r, { state: 'published' }>;
    expect(p.threadPostIds).toHaveLength(2);
    const [first, second, third] = [p.platformPostId, ...p.threadPostIds!].map((id) => fake.statuses.get(id)!);
    expect([first.text, second.text, third.text]).toEqual(['Thread 1/3', 'Thread 2/3', 'Thread 3/3']);
    expect(first.inReplyToId).toBeNull();
    expect(second.inReplyToId).toBe(first.id);
    expect(third.inReplyToId).toBe(second.id);
    expect([first.idempotencyKey, second.idempotencyKey, third.idempotencyKey]).toEqual([e.idempotencyToken, `${e.idempotencyToken}~1`, `${e.idempotencyToken}~2`]);
    expect(fake.media.get(second.mediaIds[0])!.description).toBe('In the thread');
  });

  it('a timeout after the status was made is re-sent with the same key: one status', async () => {
    const e = edition({ caption: 'Made, then silence' });
    const before = fake.statusesOf(fake.alice.id).length;
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'hang-after-commit' });
    const r1 = await connector.publish(integ(token), e);
    expect(r1).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('Idempotency-Key') });
    expect(fake.statusesOf(fake.alice.id).length).toBe(before + 1);
    const r2 = await connector.publish(integ(token), { ...e, attempt: 2 });
    expect(r2.state).toBe('published');
    const made = fake.statusesOf(fake.alice.id).filter((s) => s.text === 'Made, then silence');
    expect(made).toHaveLength(1);
    expect((r2 as { platformPostId: string }).platformPostId).toBe(made[0].id);
    expect(statusCalls().filter((c) => c.headers['idempotency-key'] === e.idempotencyToken)).toHaveLength(2);
  });

  it('a thread interrupted in the middle resumes without repeating a status', async () => {
    const e = edition({ caption: 'Resume 1', thread: [{ caption: 'Resume 2', media: [] }, { caption: 'Resume 3', media: [] }] });
    // The second status is made, and its answer is lost.
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'hang-after-commit', skip: 1 });
    const r1 = await connector.publish(integ(token), e);
    expect(r1).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('statuses 1 to 1 of 3 were published') });
    expect(fake.statusesOf(fake.alice.id).filter((s) => s.text.startsWith('Resume'))).toHaveLength(2);
    const r2 = await connector.publish(integ(token), { ...e, attempt: 2 });
    expect(r2.state).toBe('published');
    const made = fake.statusesOf(fake.alice.id).filter((s) => s.text.startsWith('Resume'));
    expect(made.map((s) => s.text)).toEqual(['Resume 1', 'Resume 2', 'Resume 3']);
    const p = r2 as Extract<typeof r2, { state: 'published' }>;
    expect([p.platformPostId, ...p.threadPostIds!]).toEqual(made.map((s) => s.id));
    expect(made[1].inReplyToId).toBe(made[0].id);
    expect(made[2].inReplyToId).toBe(made[1].id);
  });

  it('maps 5xx to a transient failure and posts nothing', async () => {
    const before = fake.statuses.size;
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'error', status: 503, body: { error: 'Service Unavailable' } });
    const r = await connector.publish(integ(token), edition());
    expect(r).toEqual({ state: 'failed', permanent: false, error: 'Mastodon failed on the status (HTTP 503: Service Unavailable).' });
    expect(fake.statuses.size).toBe(before);
  });

  it('an upload that gets no answer fails for now and makes no status', async () => {
    const before = statusCalls().length;
    fake.inject({ method: 'POST', path: '/api/v2/media', kind: 'hang' });
    const r = await connector.publish(integ(token), edition({ media: [mediaRef('lost', PNG)] }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('no status was made') });
    expect(statusCalls().length).toBe(before);
  });

  it('maps a 429 to a transient failure until X-RateLimit-Reset', async () => {
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 90 });
    const r = await connector.publish(integ(token), edition());
    expect(r).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('Too many requests') });
    const at = Date.parse((r as { retryAt: string }).retryAt);
    expect(at).toBeGreaterThan(Date.now() + 80_000);
    expect(at).toBeLessThan(Date.now() + 95_000);
  });

  it('counts requests per account as Mastodon does and answers its 429 with the window reset', async () => {
    const small = await startFakeMastodon({ requestLimit: 3 });
    try {
      const t = small.issueToken(small.alice.id);
      const ref = integ(t, { endpoint: { baseUrl: small.url, allowPrivateNetworks: true } });
      // 1 upload + 1 status, then 1 status = 3 requests; the 4th is over the limit.
      expect((await connector.publish(ref, edition({ media: [mediaRef('s-1', PNG)] }))).state).toBe('published');
      expect((await connector.publish(ref, edition())).state).toBe('published');
      const r = await connector.publish(ref, edition());
      expect(r).toMatchObject({ state: 'failed', permanent: false });
      const last = small.callsTo('POST', '/api/v1/statuses').at(-1)!;
      expect(last.status).toBe(429);
      // The 5-minute window started with the first request.
      const at = Date.parse((r as { retryAt: string }).retryAt);
      expect(at).toBeGreaterThan(Date.now() + 280_000);
      expect(at).toBeLessThanOrEqual(Date.now() + 300_000);
      expect(small.statusesOf(small.alice.id)).toHaveLength(2);
    } finally {
      await small.close();
    }
  });

  it('asks for new credentials when the token is refused, without naming it', async () => {
    const t = fake.issueToken(fake.alice.id);
    fake.revokeToken(t);
    const r = await connector.publish(integ(t), edition());
    expect(r).toEqual({ state: 'failed', permanent: false, reauth: true, error: 'Mastodon refused the status (HTTP 401: The access token is invalid).' });
    const m = await connector.publish(integ(t), edition({ media: [mediaRef('x', PNG)] }));
    expect(m).toMatchObject({ state: 'failed', reauth: true });
    expect(JSON.stringify([r, m])).not.toContain(t);
  });

  it('fails for good on a status the instance refuses, with its message', async () => {
    const r = await connector.publish(integ(token), edition({ caption: 'x'.repeat(501) }));
    expect(r).toEqual({ state: 'failed', permanent: true, error: 'Mastodon refused the status (HTTP 422: Validation failed: Text character limit of 500 exceeded).' });
  });

  it('a thread refused in the middle fails for good and names what was published', async () => {
    const e = edition({ caption: 'Partial 1', thread: [{ caption: 'y'.repeat(600), media: [] }] });
    const r = await connector.publish(integ(token), e);
    const first = fake.statusesOf(fake.alice.id).find((s) => s.text === 'Partial 1')!;
    expect(r).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining(`statuses 1 to 1 of 2 were published: ${first.id}`) });
  });

  it('a thread rate limited past the idempotency hour is not resumed; within it, it is', async () => {
    const far = edition({ caption: 'Far 1', thread: [{ caption: 'Far 2', media: [] }] });
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 2 * 3600, skip: 1 });
    expect(await connector.publish(integ(token), far)).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('forgets') });

    const near = edition({ caption: 'Near 1', thread: [{ caption: 'Near 2', media: [] }] });
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 60, skip: 1 });
    const r = await connector.publish(integ(token), near);
    expect(r).toMatchObject({ state: 'failed', permanent: false, retryAt: expect.any(String) });
    expect((await connector.publish(integ(token), { ...near, attempt: 2 })).state).toBe('published');
    expect(fake.statusesOf(fake.alice.id).filter((s) => s.text.startsWith('Near')).map((s) => s.text)).toEqual(['Near 1', 'Near 2']);

    // The hour counts from when the first status was made (an attempt ago), not from now.
    const old = edition({ caption: 'Old 1', thread: [{ caption: 'Old 2', media: [] }] });
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 60, skip: 1 });
    expect(await connector.publish(integ(token), old)).toMatchObject({ state: 'failed', permanent: false });
    fake.statusesOf(fake.alice.id).find((s) => s.text === 'Old 1')!.createdAt = new Date(Date.now() - 45 * 60_000).toISOString();
    fake.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'rate-limit', resetInSeconds: 10 * 60, skip: 1 });
    expect(await connector.publish(integ(token), { ...old, attempt: 2 })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('forgets') });
  });

  it('needs the credentials and refuses nothing silently', async () => {
    const e = await connector.publish(integ('t', { credentials: null }), edition()).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('MISSING_SECRET');
    const noBytes = await connector.publish(integ(token), edition({ media: [mediaRef('nb', PNG, { read: undefined })] }));
    expect(noBytes).toMatchObject({ state: 'failed', permanent: true });
  });

  it('sniffs a file type the library did not record', () => {
    expect(sniffContentType(PNG)).toBe('image/png');
    expect(sniffContentType(MP4)).toBe('video/mp4');
    expect(sniffContentType(Buffer.from('ffd8ffe000104a464946', 'hex'))).toBe('image/jpeg');
    expect(sniffContentType(Buffer.from('hello'), 'image/webp')).toBe('image/webp');
  });
});

describe('after publishing', () => {
  let token: string;
  beforeAll(() => {
    token = fake.issueToken(fake.alice.id);
  });

  it('edits the caption and keeps the media, content warning and language', async () => {
    const r = await connector.publish(integ(token), edition({ caption: 'Before', media: [mediaRef('e-1', PNG, { altText: 'kept' })], settings: { spoilerText: 'cw', language: 'fr' } }));
    const id = (r as { platformPostId: string }).platformPostId;
    const mediaBefore = [...fake.statuses.get(id)!.mediaIds];
    const out = await connector.editPublishedCaption(integ(token), { platformPostId: id, caption: 'After', attempt: 1 });
    expect(out).toEqual({ state: 'updated' });
    expect(fake.statuses.get(id)).toMatchObject({ text: 'After', mediaIds: mediaBefore, spoilerText: 'cw', sensitive: true, language: 'fr', edits: 1 });
    expect(fake.callsTo('PUT', `/api/v1/statuses/${id}`).at(-1)!.body).toEqual({ status: 'After', media_ids: mediaBefore, spoiler_text: 'cw', sensitive: true, language: 'fr' });
  });

  it('reports a missing status for good and a refused token for retry', async () => {
    expect(await connector.editPublishedCaption(integ(token), { platformPostId: '999', caption: 'x', attempt: 1 })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('Record not found') });
    const t = fake.issueToken(fake.alice.id);
    fake.revokeToken(t);
    expect(await connector.editPublishedCaption(integ(t), { platformPostId: '999', caption: 'x', attempt: 1 })).toMatchObject({ state: 'failed', permanent: false });
    const r = await connector.publish(integ(token), edition({ caption: 'Short' }));
    const id = (r as { platformPostId: string }).platformPostId;
    expect(await connector.editPublishedCaption(integ(token), { platformPostId: id, caption: 'z'.repeat(700), attempt: 1 })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('character limit') });
    expect(fake.statuses.get(id)!.text).toBe('Short');
  });

  it('reads favourites, boosts and replies of a status, and the followers', async () => {
    const r = await connector.publish(integ(token), edition({ caption: 'Count me' }));
    const id = (r as { platformPostId: string }).platformPostId;
    Object.assign(fake.statuses.get(id)!, { favourites: 7, reblogs: 3 });
    const bob = fake.createAccount({ username: 'bob', domain: 'other.example' });
    fake.postAs(bob.id, 'Nice!', { inReplyToId: id });
    fake.postAs(bob.id, 'Really nice!', { inReplyToId: id });
    const m = await connector.fetchMetrics(integ(token), { platformPostId: id });
    expect(m).toMatchObject({ impressions: 0, likes: 7, shares: 3, comments: 2, clicks: 0 });
    expect(Date.parse(m!.fetchedAt)).toBeGreaterThan(Date.now() - 5000);
    const a = await connector.fetchAccountMetrics(integ(token));
    expect(a).toMatchObject({ followers: 42, profileViews: null, demographics: null });

    fake.inject({ path: `/api/v1/statuses/${id}`, kind: 'rate-limit', resetInSeconds: 30 });
    const e = await connector.fetchMetrics(integ(token), { platformPostId: id }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('RATE_LIMITED');
    const gone = await connector.fetchMetrics(integ(token), { platformPostId: '42' }).catch((x) => x);
    expect(gone.code).toBe('UPSTREAM_ERROR');
  });

  it('replies in a comment thread, mentioning the commenter, once per token', async () => {
    const r = await connector.publish(integ(token), edition({ caption: 'Ask me anything' }));
    const post = (r as { platformPostId: string }).platformPostId;
    const carol = fake.createAccount({ username: 'carol', domain: 'elsewhere.example' });
    const comment = fake.postAs(carol.id, 'What is Pressroom?', { inReplyToId: post });
    const reply = { messageId: 'm-1', threadKind: 'comment' as const, platformThreadId: post, inReplyTo: comment.id, text: 'A publishing API.', attempt: 1, idempotencyToken: 'inbox-reply:m-1:1' };
    const out = await connector.reply(integ(token), reply);
    expect(out.state).toBe('done');
    const made = fake.statuses.get((out as { platformMessageId: string }).platformMessageId)!;
    expect(made).toMatchObject({ text: '@carol@elsewhere.example A publishing API.', inReplyToId: comment.id, accountId: fake.alice.id, idempotencyKey: 'inbox-reply:m-1:1' });
    const again = await connector.reply(integ(token), reply);
    expect(again).toEqual(out);
    expect(fake.statusesOf(fake.alice.id).filter((s) => s.inReplyToId === comment.id)).toHaveLength(1);

    // Under one's own post with no message named: no mention.
    const top = await connector.reply(integ(token), { ...reply, messageId: 'm-2', inReplyTo: null, text: 'Thanks all', idempotencyToken: 'inbox-reply:m-2:1' });
    expect(fake.statuses.get((top as { platformMessageId: string }).platformMessageId)).toMatchObject({ text: 'Thanks all', inReplyToId: post });
  });

  it('answers a direct message with a direct status to its author', async () => {
    const dan = fake.createAccount({ username: 'dan' });
    const dm = fake.postAs(dan.id, '@alice hello there', { visibility: 'direct' });
    const out = await connector.reply(integ(token), { messageId: 'm-3', threadKind: 'message', platformThreadId: dan.id, inReplyTo: dm.id, text: 'Hi Dan', attempt: 1, idempotencyToken: 'inbox-reply:m-3:1' });
    expect(fake.statuses.get((out as { platformMessageId: string }).platformMessageId)).toMatchObject({ text: '@dan Hi Dan', visibility: 'direct', inReplyToId: dm.id });
    const before = fake.calls.length;
    const unnamed = await connector.reply(integ(token), { messageId: 'm-3b', threadKind: 'message', platformThreadId: dan.id, inReplyTo: null, text: 'Hi', attempt: 1, idempotencyToken: 'k-3b' });
    expect(unnamed).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('direct message') });
    expect(fake.calls.length).toBe(before);
    const missing = await connector.reply(integ(token), { messageId: 'm-4', threadKind: 'comment', platformThreadId: '1', inReplyTo: '12345', text: 'x', attempt: 1, idempotencyToken: 'k-4' });
    expect(missing).toMatchObject({ state: 'failed', permanent: true });
  });

  it('deletes its own statuses, idempotently, and cannot hide or delete others', async () => {
    const r = await connector.publish(integ(token), edition({ caption: 'Delete me' }));
    const id = (r as { platformPostId: string }).platformPostId;
    const mod = { messageId: 'm-5', threadKind: 'comment' as const, platformThreadId: id, platformMessageId: id, action: 'delete' as const, idempotencyToken: 'k-5' };
    expect(await connector.moderate(integ(token), mod)).toEqual({ state: 'done', platformMessageId: id });
    expect(fake.statuses.get(id)!.deleted).toBe(true);
    expect(await connector.moderate(integ(token), mod)).toEqual({ state: 'done', platformMessageId: id });

    const erin = fake.createAccount({ username: 'erin' });
    const theirs = fake.postAs(erin.id, 'Rude remark');
    const other = await connector.moderate(integ(token), { ...mod, platformMessageId: theirs.id });
    expect(other).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(fake.statuses.get(theirs.id)!.deleted).toBe(false);

    const before = fake.calls.length;
    const hide = await connector.moderate(integ(token), { ...mod, platformMessageId: theirs.id, action: 'hide' });
    expect(hide).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(fake.calls.length).toBe(before);
  });

  it('has no boards, categories or drafts', async () => {
    for (const p of [connector.listBoards(integ(token)), connector.listVideoCategories(integ(token)), connector.createDraft(integ(token), { contentId: 'c', title: 't', bodyHtml: '', cover: null, images: [] })]) {
      await expect(p).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
    }
  });
});
