// The X connector (server/platforms/x.ts) against a local fake of X
// (tests/support/fakes/x.ts) over real HTTP: the OAuth 2.0 flow with PKCE
// and rotating refresh tokens, the account, publishing (text, media by the
// chunked v2 upload with alt text and video processing, threads), every
// fault X can answer, verify-before-resend (findPublished and the resumable
// thread), metrics and the inbox's replies and moderation. No database: the
// module is exercised directly, as the framework and the engine call it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationCredentials, IntegrationRef, MediaRef, PublishableEdition, RefreshOutcome } from '../../server/platforms/types.ts';
import { ConnectorError } from '../../server/platforms/types.ts';
import { authoredText, createXConnector, x, X_PUBLISH_LIMITS, xAuthorizeEndpoint, xRetryAt } from '../../server/platforms/x.ts';
import { S256, startFakeX, type FakeX, type FakeXUser } from '../support/fakes/x.ts';

const TIMEOUT_MS = 1500;
let fake: FakeX;
let n = 0;

beforeAll(async () => {
  fake = await startFakeX();
});
afterAll(async () => {
  await fake?.close();
});

const endpoint = () => ({ baseUrl: fake.url, allowPrivateNetworks: true });
const app = () => ({ clientId: fake.clientId, clientSecret: fake.clientSecret });
const connector = (tuning: Parameters<typeof createXConnector>[1] = {}) =>
  createXConnector({ baseUrl: fake.url, timeoutMs: TIMEOUT_MS, allowPrivateNetworks: false }, { chunkBytes: 1024, minPollMs: 0, ...tuning });

interface Account {
  user: FakeXUser;
  credentials: IntegrationCredentials;
  integration: IntegrationRef;
}

/** A fresh X user connected with the given scopes (its own duplicate-content and rate-limit history). */
function account(opts: { scopes?: string[]; subscriptionType?: FakeXUser['subscriptionType']; keepUserId?: boolean } = {}): Account {
  const user = fake.addUser({ username: `press${++n}`, name: `Press ${n}`, subscriptionType: opts.subscriptionType, followers: 1000 + n });
  const scopes = opts.scopes ?? ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access', 'tweet.moderate.write'];
  const t = fake.issueTokens(user.id, scopes);
  const credentials: IntegrationCredentials = {
    accessToken: t.accessToken,
    refreshToken: t.refreshToken,
    expiresAt: new Date(Date.now() + 7200_000).toISOString(),
    scopes,
    extra: opts.keepUserId === false ? {} : { userId: user.id, username: user.username },
  };
  const integration: IntegrationRef = { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, connector: 'x', platform: 'x', name: user.name, username: user.username, settings: {}, credentials, endpoint: endpoint() };
  return { user, credentials, integration };
}

function edition(caption: string, o: Partial<PublishableEdition> = {}): PublishableEdition {
  return { id: `ed-${++n}`, rootId: `root-${n}`, attempt: 1, caption, settings: {}, media: [], thread: [], scheduledAt: new Date().toISOString(), ...o };
}

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(2500)]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42'), randomBytes(3000)]);

function media(type: MediaRef['type'], bytes: Buffer, altText: string | null = null, contentType?: string): MediaRef {
  return { id: `m-${++n}`, type, url: `urn:pressroom:media:m-${n}`, altText, contentType, size: bytes.length, read: async () => bytes };
}

const posts = (a: Account) => fake.postsBy(a.user.id);

// ---------------------------------------------------------------------------

describe('the module', () => {
  it('declares an OAuth module with the operator app from X_CLIENT_ID / X_CLIENT_SECRET, its scopes and X limits', () => {
    expect(x.name).toBe('x');
    expect(x.platforms).toEqual(['x']);
    expect(x.connect).toBe('oauth');
    expect(x.defaultBaseUrl).toBe('https://api.x.com');
    expect(x.appEnv).toEqual({ clientId: 'X_CLIENT_ID', clientSecret: 'X_CLIENT_SECRET' });
    expect(x.oauth!.pkce).toBe(true);
    expect(x.oauth!.needsOperatorApp).toBe(true);
    expect(x.oauth!.requiredScopes).toEqual(['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access']);
    expect(x.oauth!.scopes).toEqual([...x.oauth!.requiredScopes, 'tweet.moderate.write']);
    const c = x.create({ timeoutMs: 1000, allowPrivateNetworks: false });
    expect(c.name).toBe('x');
    expect(c.acceptsIdempotencyToken).toBe(false);
    expect(typeof c.findPublished).toBe('function');
    expect(c.publishLimits).toEqual({ perIntegration: { maxInFlight: 1, maxPerWindow: 100, windowSeconds: 900 }, perApp: { maxPerWindow: 10_000, windowSeconds: 86_400 } });
    expect(c.publishLimits).toBe(X_PUBLISH_LIMITS);
  });

  it('derives the authorize page from the API base: api.x.com -> x.com, another base serves it itself', () => {
    expect(xAuthorizeEndpoint('https://api.x.com')).toBe('https://x.com/i/oauth2/authorize');
    expect(xAuthorizeEndpoint('https://api.twitter.com/')).toBe('https://twitter.com/i/oauth2/authorize');
    expect(xAuthorizeEndpoint('http://127.0.0.1:4567')).toBe('http://127.0.0.1:4567/i/oauth2/authorize');
  });

  it('edit, drafts, boards and video categories are NOT_SUPPORTED', async () => {
    const a = account();
    const c = connector();
    for (const p of [
      c.editPublishedCaption(a.integration, { platformPostId: '1', caption: 'x', attempt: 1 }),
      c.createDraft(a.integration, { contentId: 'c', title: 't', bodyHtml: '<p>b</p>', cover: null, images: [] }),
      c.listBoards(a.integration),
      c.listVideoCategories(a.integration),
    ]) {
      await expect(p).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
    }
  });

  it('without credentials the connector refuses with MISSING_SECRET and calls nothing', async () => {
    const a = account();
    const before = fake.calls.length;
    await expect(connector().publish({ ...a.integration, credentials: null }, edition('hello'))).rejects.toMatchObject({ code: 'MISSING_SECRET' });
    expect(fake.calls.length).toBe(before);
  });
});

// ---------------------------------------------------------------------------

describe('OAuth 2.0 with PKCE', () => {
  const redirectUri = 'https://pressroom.example/v1/oauth/callback/x';

  function authorize(state: string, verifier: string, scopes = x.oauth!.scopes) {
    return x.oauth!.authorizeUrl({ endpoint: endpoint(), app: app(), redirectUri, state, codeChallenge: S256(verifier), scopes });
  }
  async function consent(url: string) {
    const r = await fetch(url, { redirect: 'manual' });
    expect(r.status).toBe(302);
    return new URL(r.headers.get('location')!);
  }

  it('builds the authorize URL X documents: code, client, redirect, %20-joined scopes, state, S256 challenge', () => {
    const url = authorize('st-1', 'v'.repeat(50));
    expect(url.startsWith(`${fake.url}/i/oauth2/authorize?`)).toBe(true);
    expect(url).toContain('scope=tweet.read%20tweet.write%20users.read%20media.write%20offline.access%20tweet.moderate.write');
    const q = new URL(url).searchParams;
    expect(Object.fromEntries(q)).toEqual({
      response_type: 'code',
      client_id: fake.clientId,
      redirect_uri: redirectUri,
      scope: 'tweet.read tweet.write users.read media.write offline.access tweet.moderate.write',
      state: 'st-1',
      code_challenge: S256('v'.repeat(50)),
      code_challenge_method: 'S256',
    });
    expect(() => x.oauth!.authorizeUrl({ endpoint: endpoint(), app: app(), redirectUri, state: 's', codeChallenge: null, scopes: ['tweet.read'] })).toThrow(ConnectorError);
  });

  it('exchanges the code with HTTP Basic client auth and the PKCE verifier; the token reads the account', async () => {
    const user = fake.addUser({ username: 'consenting', name: 'Consenting User' });
    fake.consent.userId = user.id;
    const verifier = randomBytes(48).toString('base64url');
    const back = await consent(authorize('state-abc', verifier));
    expect(back.origin + back.pathname).toBe(redirectUri);
    expect(back.searchParams.get('state')).toBe('state-abc');
    const code = back.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const tokens = await x.oauth!.exchangeCode({ endpoint: endpoint(), app: app(), redirectUri, code, codeVerifier: verifier, timeoutMs: TIMEOUT_MS });
    expect(tokens.accessToken).toMatch(/^xat-/);
    expect(tokens.refreshToken).toMatch(/^xrt-/);
    expect(tokens.expiresIn).toBe(7200);
    expect(tokens.scopes.sort()).toEqual([...x.oauth!.scopes].sort());
    const call = fake.callsTo('POST', '/2/oauth2/token').at(-1)!;
    expect(call.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString('base64')}`);
    expect(call.body).toMatchObject({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri });

    const accounts = await x.readAccounts!({ endpoint: endpoint(), credentials: { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: null, scopes: tokens.scopes, extra: {} }, timeoutMs: TIMEOUT_MS });
    expect(accounts).toEqual([
      {
        id: user.id,
        username: 'consenting',
        name: 'Consenting User',
        avatarUrl: `https://pbs.twimg.com/profile_images/${user.id}/avatar_normal.jpg`,
        profileUrl: 'https://x.com/consenting',
        kind: 'person',
        extra: { userId: user.id, username: 'consenting' },
      },
    ]);
  });

  it('refuses a wrong verifier, a reused code and a wrong client secret with X’s reason', async () => {
    const user = fake.addUser({ username: 'refusals' });
    fake.consent.userId = user.id;
    const verifier = randomBytes(48).toString('base64url');
    const code = (await consent(authorize('s1', verifier))).searchParams.get('code')!;
    const exchange = (c: string, v: string, a = app()) => x.oauth!.exchangeCode({ endpoint: endpoint(), app: a, redirectUri, code: c, codeVerifier: v, timeoutMs: TIMEOUT_MS });
    await expect(exchange(code, 'not-the-verifier-'.repeat(3))).rejects.toMatchObject({ code: 'UPSTREAM_ERROR', message: expect.stringContaining('code verifier') });
    // The code died with the failed try (single use).
    await expect(exchange(code, verifier)).rejects.toMatchObject({ code: 'UPSTREAM_ERROR', message: expect.stringContaining('authorization code was invalid') });

    const code2 = (await consent(authorize('s2', verifier))).searchParams.get('code')!;
    const err = await exchange(code2, verifier, { clientId: fake.clientId, clientSecret: 'wrong-secret-123' }).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectorError);
    expect(err.message).toContain('Client authentication failed');
    expect(err.message).not.toContain('wrong-secret-123');
  });

  it('a refused consent comes back to the callback as error=access_denied with the state', async () => {
    fake.consent.refuse = true;
    try {
      const back = await consent(authorize('st-refused', 'w'.repeat(50)));
      expect(back.searchParams.get('error')).toBe('access_denied');
      expect(back.searchParams.get('state')).toBe('st-refused');
      expect(back.searchParams.get('code')).toBeNull();
    } finally {
      fake.consent.refuse = false;
    }
  });

  const refresh = (credentials: IntegrationCredentials, ep = endpoint()) => x.oauth!.refresh({ endpoint: ep, app: app(), credentials, timeoutMs: TIMEOUT_MS });

  it('refresh rotates: a new access and refresh token; the old refresh token is then revoked', async () => {
    const a = account();
    const r1 = await refresh(a.credentials);
    expect(r1.state).toBe('refreshed');
    const t1 = (r1 as Extract<RefreshOutcome, { state: 'refreshed' }>).tokens;
    expect(t1.refreshToken).toBeTruthy();
    expect(t1.refreshToken).not.toBe(a.credentials.refreshToken);
    expect(t1.accessToken).not.toBe(a.credentials.accessToken);
    expect(t1.expiresIn).toBe(7200);
    expect(fake.callsTo('POST', '/2/oauth2/token').at(-1)!.body).toMatchObject({ grant_type: 'refresh_token', refresh_token: a.credentials.refreshToken });

    const again = await refresh(a.credentials);
    expect(again).toEqual({ state: 'revoked', reason: expect.stringContaining('Value passed for the token was invalid') });
    expect((again as { reason: string }).reason).not.toContain(a.credentials.refreshToken!);

    const r2 = await refresh({ ...a.credentials, accessToken: t1.accessToken, refreshToken: t1.refreshToken });
    expect(r2.state).toBe('refreshed');
  });

  it('two refreshes racing with one refresh token: one wins, the other is told revoked (the framework’s lock prevents this)', async () => {
    const a = account();
    const both = await Promise.all([refresh(a.credentials), refresh(a.credentials)]);
    expect(both.map((o) => o.state).sort()).toEqual(['refreshed', 'revoked']);
    const winner = both.find((o) => o.state === 'refreshed') as Extract<RefreshOutcome, { state: 'refreshed' }>;
    const loser = both.find((o) => o.state === 'revoked') as Extract<RefreshOutcome, { state: 'revoked' }>;
    expect(loser.reason).toContain('invalid_request');
    // The account is healthy all the same: the winner's new token refreshes again.
    expect((await refresh({ ...a.credentials, refreshToken: winner.tokens.refreshToken })).state).toBe('refreshed');
  });

  it('a revoked grant is revoked; 5xx, 429, no answer and an unreachable X are retry, never revoked', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: '/2/oauth2/token' }, { type: 'status', status: 503 });
    expect(await refresh(a.credentials)).toMatchObject({ state: 'retry', error: expect.stringContaining('503') });
    fake.inject({ method: 'POST', path: '/2/oauth2/token' }, { type: 'rate-limited', resetInSeconds: 300 });
    const limited = await refresh(a.credentials);
    expect(limited.state).toBe('retry');
    const retryAt = (limited as { retryAt?: Date | null }).retryAt!;
    expect(retryAt.getTime()).toBeGreaterThan(Date.now() + 290_000);
    expect(retryAt.getTime()).toBeLessThan(Date.now() + 310_000);
    fake.inject({ method: 'POST', path: '/2/oauth2/token' }, { type: 'no-answer' });
    expect(await refresh(a.credentials)).toMatchObject({ state: 'retry', error: expect.stringContaining('did not answer') });
    expect(await refresh(a.credentials, { baseUrl: 'http://127.0.0.1:1', allowPrivateNetworks: true })).toMatchObject({ state: 'retry', error: expect.stringContaining('could not be reached') });
    // The operator's app secret is wrong: the user's grant is not at fault, the account stays connected.
    expect(await x.oauth!.refresh({ endpoint: endpoint(), app: { clientId: fake.clientId, clientSecret: 'nope-nope' }, credentials: a.credentials, timeoutMs: TIMEOUT_MS })).toMatchObject({ state: 'retry', error: expect.stringContaining('X_CLIENT_SECRET') });
    // None of these spent the refresh token: it still works, until the user revokes the app.
    fake.revokeUser(a.user.id);
    expect(await refresh(a.credentials)).toMatchObject({ state: 'revoked' });
    expect(await refresh({ ...a.credentials, refreshToken: null })).toMatchObject({ state: 'revoked', reason: expect.stringContaining('offline.access') });
  });
});

// ---------------------------------------------------------------------------

describe('the account', () => {
  it('readAccounts refuses a dead token with UPSTREAM_ERROR; readLimits gives subscribers 25,000 characters', async () => {
    const a = account();
    fake.revokeUser(a.user.id);
    await expect(x.readAccounts!({ endpoint: endpoint(), credentials: a.credentials, timeoutMs: TIMEOUT_MS })).rejects.toMatchObject({ code: 'UPSTREAM_ERROR', details: { reauth: true } });
    const plain = account();
    const premium = account({ subscriptionType: 'Premium' });
    expect(await x.readLimits!({ endpoint: endpoint(), credentials: plain.credentials, timeoutMs: TIMEOUT_MS })).toMatchObject({ captionMaxLength: 280, maxMedia: 4 });
    expect(await x.readLimits!({ endpoint: endpoint(), credentials: premium.credentials, timeoutMs: TIMEOUT_MS })).toMatchObject({ captionMaxLength: 25_000 });
  });
});

// ---------------------------------------------------------------------------

describe('publish', () => {
  it('a text post: one POST /2/tweets with the user token; the id and an x.com permalink', async () => {
    const a = account();
    const r = await connector().publish(a.integration, edition('Hello from Pressroom'));
    expect(r.state).toBe('published');
    const p = posts(a);
    expect(p).toHaveLength(1);
    expect(p[0].text).toBe('Hello from Pressroom');
    expect(r).toEqual({ state: 'published', platformPostId: p[0].id, permalink: `https://x.com/${a.user.username}/status/${p[0].id}` });
    const call = fake.callsTo('POST', '/2/tweets').at(-1)!;
    expect(call.headers.authorization).toBe(`Bearer ${a.credentials.accessToken}`);
    expect(call.body).toEqual({ text: 'Hello from Pressroom' });
  });

  it('an image with alt text: initialize, appends in chunks, finalize, metadata, then the post with its media id', async () => {
    const a = account();
    const img = media('image', PNG, 'A tiny test image');
    const r = await connector().publish(a.integration, edition('With a picture', { media: [img] }));
    expect(r.state).toBe('published');
    const init = fake.callsTo('POST', '/2/media/upload/initialize').at(-1)!;
    expect(init.body).toEqual({ media_type: 'image/png', total_bytes: PNG.length, media_category: 'tweet_image' });
    const id = [...fake.media.values()].find((m) => m.ownerId === a.user.id)!.id;
    const appends = fake.callsTo('POST', `/2/media/upload/${id}/append`);
    expect(appends.map((c) => c.body.segment_index)).toEqual(['0', '1', '2']);
    expect(appends.map((c) => c.files[0].data.length)).toEqual([1024, 1024, PNG.length - 2048]);
    expect(fake.media.get(id)!.bytes!.equals(PNG)).toBe(true);
    expect(fake.callsTo('POST', `/2/media/upload/${id}/finalize`)).toHaveLength(1);
    expect(fake.media.get(id)!.altText).toBe('A tiny test image');
    const meta = fake.callsTo('POST', '/2/media/metadata').at(-1)!;
    expect(meta.body).toEqual({ id, metadata: { alt_text: { text: 'A tiny test image' } } });
    expect(fake.callsTo('POST', '/2/tweets').at(-1)!.body).toEqual({ text: 'With a picture', media: { media_ids: [id] } });
    expect(posts(a)[0].mediaKeys).toEqual([fake.media.get(id)!.mediaKey]);
    // The metadata call came after finalize and before the post.
    const order = fake.calls.filter((c) => c.headers.authorization === `Bearer ${a.credentials.accessToken}`).map((c) => c.path.replace(/\/\d{6,}/g, '/:id'));
    expect(order).toEqual(['/2/media/upload/initialize', ...Array(3).fill('/2/media/upload/:id/append'), '/2/media/upload/:id/finalize', '/2/media/metadata', '/2/tweets']);
  });

  it('a video: STATUS is asked while pending / in_progress, waiting check_after_secs, then the post', async () => {
    const a = account();
    Object.assign(fake.processing, { steps: 2, checkAfterSecs: 1, fail: null });
    const vid = media('video', MP4, null, 'video/mp4');
    const r = await connector().publish(a.integration, edition('A video', { media: [vid] }));
    expect(r.state).toBe('published');
    const m = [...fake.media.values()].find((x) => x.ownerId === a.user.id)!;
    expect(fake.callsTo('POST', '/2/media/upload/initialize').at(-1)!.body).toMatchObject({ media_category: 'tweet_video', media_type: 'video/mp4' });
    expect(m.state).toBe('succeeded');
    const fin = fake.callsTo('POST', `/2/media/upload/${m.id}/finalize`)[0];
    const status = fake.callsTo('GET', '/2/media/upload').filter((c) => c.query.media_id === m.id);
    expect(status.map((c) => c.query.command)).toEqual(['STATUS', 'STATUS']);
    expect(status[0].at - fin.at).toBeGreaterThanOrEqual(950);
    expect(status[1].at - status[0].at).toBeGreaterThanOrEqual(950);
    const post = fake.callsTo('POST', '/2/tweets').at(-1)!;
    expect(post.at).toBeGreaterThanOrEqual(status[1].at);
    expect(post.body).toEqual({ text: 'A video', media: { media_ids: [m.id] } });
  });

  it('processing that fails is a permanent failure; processing past the bound a transient one; neither posts', async () => {
    const a = account();
    Object.assign(fake.processing, { steps: 2, checkAfterSecs: 0, fail: 'Unsupported video codec' });
    const failed = await connector().publish(a.integration, edition('Bad video', { media: [media('video', MP4, null, 'video/mp4')] }));
    expect(failed).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('Unsupported video codec') });
    Object.assign(fake.processing, { steps: 1_000_000, checkAfterSecs: 0, fail: null });
    const slow = await connector({ minPollMs: 100, maxProcessingWaitMs: 600 }).publish(a.integration, edition('Slow video', { media: [media('gif', Buffer.concat([Buffer.from('GIF89a'), randomBytes(100)]))] }));
    expect(slow).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('still processing') });
    expect(fake.callsTo('POST', '/2/media/upload/initialize').at(-1)!.body).toMatchObject({ media_category: 'tweet_gif', media_type: 'image/gif' });
    expect(posts(a)).toHaveLength(0);
    Object.assign(fake.processing, { steps: 2, checkAfterSecs: 0, fail: null });
  });

  it('a thread: every file uploaded first, then each message a reply to the one before; the first is the post', async () => {
    const a = account();
    Object.assign(fake.processing, { steps: 1, checkAfterSecs: 0, fail: null });
    const r = await connector().publish(
      a.integration,
      edition('1/3 The start', {
        thread: [
          { caption: '2/3 The middle', media: [media('image', PNG), media('image', PNG)] },
          { caption: '3/3 The end', media: [media('video', MP4, null, 'video/mp4')] },
        ],
      }),
    );
    const p = posts(a);
    expect(p.map((t) => t.text)).toEqual(['1/3 The start', '2/3 The middle', '3/3 The end']);
    expect(r).toMatchObject({ state: 'published', platformPostId: p[0].id });
    expect(p[0].inReplyTo).toBeNull();
    expect(p[1].inReplyTo).toBe(p[0].id);
    expect(p[2].inReplyTo).toBe(p[1].id);
    expect(p[1].mediaKeys).toHaveLength(2);
    expect(p[2].mediaKeys[0]).toMatch(/^7_/);
    const mine = fake.calls.filter((c) => c.headers.authorization === `Bearer ${a.credentials.accessToken}`);
    const firstPost = mine.findIndex((c) => c.path === '/2/tweets');
    expect(mine.slice(firstPost).every((c) => c.path === '/2/tweets')).toBe(true);
  });

  it('refuses what X would refuse before sending anything: 5 images, a video with an image, an empty message, a long alt text, bad replySettings', async () => {
    const a = account();
    const c = connector();
    const before = fake.calls.length;
    const cases: [PublishableEdition, string][] = [
      [edition('five', { media: Array.from({ length: 5 }, () => media('image', PNG)) }), 'at most 4'],
      [edition('mixed', { media: [media('video', MP4), media('image', PNG)] }), 'one video or one GIF alone'],
      [edition('ok', { thread: [{ caption: '  ', media: [] }] }), 'Message 2 of the thread has neither text nor media'],
      [edition('alt', { media: [media('image', PNG, 'a'.repeat(1001))] }), '1000'],
      [edition('huge', { media: [{ ...media('image', PNG), size: 6 * 1024 * 1024 }] }), 'at most 5242880'],
      [edition('rs', { settings: { replySettings: 'nobody' } }), 'replySettings'],
    ];
    for (const [e, msg] of cases) {
      expect(await c.publish(a.integration, e)).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining(msg) });
    }
    expect(fake.calls.length).toBe(before);
  });

  it('settings.replySettings is sent as reply_settings on the first post', async () => {
    const a = account();
    expect((await connector().publish(a.integration, edition('Only followers', { settings: { replySettings: 'following' } }))).state).toBe('published');
    expect(fake.callsTo('POST', '/2/tweets').at(-1)!.body).toEqual({ text: 'Only followers', reply_settings: 'following' });
    expect(posts(a)[0].replySettings).toBe('following');
  });
});

// ---------------------------------------------------------------------------

describe('faults', () => {
  it('429 from X: failed, not permanent, until the reset X announces (the 15-minute window)', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'rate-limited', resetInSeconds: 600 });
    const r = await connector().publish(a.integration, edition('limited'));
    expect(r).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('429') });
    const at = Date.parse((r as { retryAt: string }).retryAt);
    expect(at).toBeGreaterThan(Date.now() + 590_000);
    expect(at).toBeLessThan(Date.now() + 610_000);
    expect(posts(a)).toHaveLength(0);
  });

  it('429 for a spent daily cap: retryAt is the x-user-limit-24hour-reset, not the sooner window reset', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'rate-limited', resetInSeconds: 20 * 3600, window: 'user-24h' });
    const r = await connector().publish(a.integration, edition('daily cap'));
    const at = Date.parse((r as { retryAt: string }).retryAt);
    expect(at).toBeGreaterThan(Date.now() + 19 * 3600_000);
    // The pure reading of the headers.
    expect(xRetryAt({ 'x-rate-limit-remaining': '5', 'x-rate-limit-reset': '1700000000', 'x-app-limit-24hour-remaining': '0', 'x-app-limit-24hour-reset': '1700050000' })!.getTime()).toBe(1700050000_000);
    expect(xRetryAt({ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': '1700000000' })!.getTime()).toBe(1700000000_000);
    expect(xRetryAt({})).toBeNull();
  });

  it('the fake’s own limits: a spent per-user window answers 429 with its reset, every answer carries the headers', async () => {
    const a = account();
    fake.setLimit('POST /2/tweets', 1);
    fake.setDailyPostLimit(null);
    try {
      expect((await connector().publish(a.integration, edition('first of the window'))).state).toBe('published');
      const r = await connector().publish(a.integration, edition('second of the window'));
      expect(r).toMatchObject({ state: 'failed', permanent: false });
      const at = Date.parse((r as { retryAt: string }).retryAt);
      expect(at).toBeGreaterThan(Date.now() + 800_000);
      expect(at).toBeLessThanOrEqual(Date.now() + 901_000);
    } finally {
      fake.setLimit('POST /2/tweets', 100);
    }
    const b = account();
    fake.setDailyPostLimit(1);
    try {
      expect((await connector().publish(b.integration, edition('first of the day'))).state).toBe('published');
      const r = await connector().publish(b.integration, edition('second of the day'));
      expect(Date.parse((r as { retryAt: string }).retryAt)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    } finally {
      fake.setDailyPostLimit(null);
    }
    expect(posts(a)).toHaveLength(1);
    expect(posts(b)).toHaveLength(1);
  });

  it('401 (a revoked or expired token): failed, not permanent, reauth', async () => {
    const a = account();
    fake.revokeUser(a.user.id);
    expect(await connector().publish(a.integration, edition('revoked'))).toMatchObject({ state: 'failed', permanent: false, reauth: true });
    const b = account();
    fake.expireAccessToken(b.credentials.accessToken);
    expect(await connector().publish(b.integration, edition('expired', { media: [media('image', PNG)] }))).toMatchObject({ state: 'failed', reauth: true });
    expect(posts(b)).toHaveLength(0);
  });

  it('5xx is transient, a refused post permanent with X’s message, an unreachable X transient', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'status', status: 503 });
    const down = await connector().publish(a.integration, edition('five oh three'));
    expect(down).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('503') });
    expect(down).not.toHaveProperty('retryAt');
    expect(down).not.toHaveProperty('reauth');
    const long = await connector().publish(a.integration, edition('x'.repeat(281)));
    expect(long).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('Your Tweet text is too long') });
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'status', status: 400, body: { errors: [{ message: 'Invalid media ids' }], title: 'Invalid Request', type: 'https://api.twitter.com/2/problems/invalid-request' } });
    expect(await connector().publish(a.integration, edition('errors list'))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('Invalid media ids') });
    const away = { ...a.integration, endpoint: { baseUrl: 'http://127.0.0.1:1', allowPrivateNetworks: true } };
    expect(await connector().publish(away, edition('nobody home'))).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('could not be reached') });
    expect(posts(a)).toHaveLength(0);
  });

  it('a failed or unanswered upload leaves no post and is transient (an upload makes nothing visible)', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: /\/append$/, skip: 1 }, { type: 'no-answer' });
    const r = await connector({ appendTimeoutMs: 1000 }).publish(a.integration, edition('upload lost', { thread: [{ caption: 'with media', media: [media('image', PNG)] }] }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('append 1') });
    expect(posts(a)).toHaveLength(0);
  });

  it('error strings never carry the token, even when X’s answer quotes it', async () => {
    const a = account();
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'status', status: 400, body: { title: 'Invalid Request', detail: `bad header Bearer ${a.credentials.accessToken}`, type: 'about:blank', status: 400 } });
    const r = await connector().publish(a.integration, edition('leak?'));
    expect(r.state).toBe('failed');
    expect((r as { error: string }).error).toContain('[redacted]');
    expect((r as { error: string }).error).not.toContain(a.credentials.accessToken);
  });
});

// ---------------------------------------------------------------------------

describe('verify before resend (X has no idempotency)', () => {
  it('no answer after X committed: unknown; findPublished finds the post and the resend posts nothing: one post', async () => {
    const a = account();
    const c = connector();
    const e = edition('Posted while the answer was lost');
    const since = new Date(Date.now() - 1000);
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'timeout-after-commit' });
    const r = await c.publish(a.integration, e);
    expect(r).toMatchObject({ state: 'unknown' });
    expect(posts(a)).toHaveLength(1);
    const made = posts(a)[0];

    const found = await c.findPublished!(a.integration, e, since);
    expect(found).toEqual({ platformPostId: made.id, permalink: `https://x.com/${a.user.username}/status/${made.id}` });
    const look = fake.callsTo('GET', `/2/users/${a.user.id}/tweets`).at(-1)!;
    expect(look.query).toMatchObject({ max_results: '100', exclude: 'retweets' });
    expect(Date.parse(look.query.start_time)).toBeLessThanOrEqual(since.getTime());
    expect(look.query.start_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // Had the engine sent it again anyway (attempt 2), the connector finds it first.
    const postsBefore = fake.callsTo('POST', '/2/tweets').length;
    expect(await c.publish(a.integration, { ...e, attempt: 2 })).toEqual({ state: 'published', platformPostId: made.id, permalink: found!.permalink });
    expect(fake.callsTo('POST', '/2/tweets').length).toBe(postsBefore);
    expect(posts(a)).toHaveLength(1);
  });

  it('findPublished compares the text exactly as written: escapes, t.co links, the media link and long posts are undone', async () => {
    const a = account({ subscriptionType: 'Premium', keepUserId: false });
    const c = connector();
    const since = new Date(Date.now() - 1000);
    const tricky = 'Tom & Jerry <3 https://example.com/a?b=1&c=2';
    const long = `${'A long post. '.repeat(30)}https://example.org/end`;
    const e1 = edition(tricky, { media: [media('image', PNG)] });
    const e2 = edition(long);
    expect((await c.publish(a.integration, e1)).state).toBe('published');
    expect((await c.publish(a.integration, e2)).state).toBe('published');
    const shown = fake.callsTo('POST', '/2/tweets').at(-2)!;
    expect(shown.status).toBe(201);
    // What X shows is not what was written...
    const view = await fetch(`${fake.url}/2/tweets/${posts(a)[0].id}?tweet.fields=entities,attachments`, { headers: { authorization: `Bearer ${a.credentials.accessToken}` } }).then((r) => r.json() as Promise<any>);
    expect(view.data.text).toMatch(/^Tom &amp; Jerry &lt;3 https:\/\/t\.co\/\w+ https:\/\/t\.co\/m\w+$/);
    expect(authoredText(view.data)).toBe(tricky);
    // ...and findPublished still recognises both (the user id is asked for: none was kept).
    expect(await c.findPublished!(a.integration, e1, since)).toMatchObject({ platformPostId: posts(a)[0].id });
    expect(await c.findPublished!(a.integration, e2, since)).toMatchObject({ platformPostId: posts(a)[1].id });
    expect(fake.callsTo('GET', '/2/users/me').length).toBeGreaterThan(0);
    // Not the same text, not the same media count, or before `since`: not found.
    expect(await c.findPublished!(a.integration, edition('Tom & Jerry <3'), since)).toBeNull();
    expect(await c.findPublished!(a.integration, { ...e1, media: [] }, since)).toBeNull();
    expect(await c.findPublished!(a.integration, e1, new Date(Date.now() + 120_000))).toBeNull();
    const old = account();
    fake.seedTweet(old.user.id, 'Written by hand last week', { createdAt: new Date(Date.now() - 7 * 86_400_000) });
    expect(await c.findPublished!(old.integration, edition('Written by hand last week'), new Date(Date.now() - 3600_000))).toBeNull();
  });

  it('duplicate content: X’s refusal of this edition’s own earlier post is taken as published; of another post it stands', async () => {
    const a = account();
    const c = connector();
    const e = edition('Same words twice');
    fake.inject({ method: 'POST', path: '/2/tweets' }, { type: 'timeout-after-commit' });
    expect((await c.publish(a.integration, e)).state).toBe('unknown');
    // Sent again as attempt 1 (no lookup first): X refuses the duplicate, the lookup finds ours.
    const r = await c.publish(a.integration, e);
    expect(fake.callsTo('POST', '/2/tweets').at(-1)!.status).toBe(403);
    expect(r).toMatchObject({ state: 'published', platformPostId: posts(a)[0].id });
    expect(posts(a)).toHaveLength(1);

    const b = account();
    fake.seedTweet(b.user.id, 'Said it by hand an hour ago', { createdAt: new Date(Date.now() - 3600_000) });
    const refused = await c.publish(b.integration, edition('Said it by hand an hour ago'));
    expect(refused).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('duplicate content') });
    expect(posts(b)).toHaveLength(1);
  });

  it('a thread broken by a 503 resumes after the last message posted: no message twice', async () => {
    const a = account();
    const c = connector();
    const e = edition('T1 first', { thread: [{ caption: 'T2 second', media: [media('image', PNG)] }, { caption: 'T3 third', media: [] }] });
    fake.inject({ method: 'POST', path: '/2/tweets', skip: 1 }, { type: 'status', status: 503 });
    const r1 = await c.publish(a.integration, e);
    expect(r1).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('1 of 3 messages are on X') });
    expect(posts(a).map((t) => t.text)).toEqual(['T1 first']);
    const sent = fake.callsTo('POST', '/2/tweets').length;
    const r2 = await c.publish(a.integration, { ...e, attempt: 2 });
    // The resend read the timeline first: only the two missing messages were sent (no duplicate refused on the way).
    expect(fake.callsTo('POST', '/2/tweets').slice(sent).map((call) => call.status)).toEqual([201, 201]);
    const p = posts(a);
    expect(p.map((t) => t.text)).toEqual(['T1 first', 'T2 second', 'T3 third']);
    expect(r2).toMatchObject({ state: 'published', platformPostId: p[0].id });
    expect(p[1].inReplyTo).toBe(p[0].id);
    expect(p[2].inReplyTo).toBe(p[1].id);
  });

  it('a thread with no answer mid-way: unknown; findPublished says not found (partial), and the resend completes it', async () => {
    const a = account();
    const c = connector();
    const since = new Date(Date.now() - 1000);
    const e = edition('U1 first', { thread: [{ caption: 'U2 second', media: [] }, { caption: 'U3 third', media: [] }] });
    fake.inject({ method: 'POST', path: '/2/tweets', skip: 1 }, { type: 'timeout-after-commit' });
    expect(await c.publish(a.integration, e)).toMatchObject({ state: 'unknown', error: expect.stringContaining('1 of 3 messages are on X') });
    expect(posts(a).map((t) => t.text)).toEqual(['U1 first', 'U2 second']);
    expect(await c.findPublished!(a.integration, e, since)).toBeNull();
    const sent = fake.callsTo('POST', '/2/tweets').length;
    const r = await c.publish(a.integration, { ...e, attempt: 2 });
    expect(fake.callsTo('POST', '/2/tweets').slice(sent).map((call) => call.status)).toEqual([201]);
    const p = posts(a);
    expect(p.map((t) => t.text)).toEqual(['U1 first', 'U2 second', 'U3 third']);
    expect(p[2].inReplyTo).toBe(p[1].id);
    expect(r).toMatchObject({ state: 'published', platformPostId: p[0].id });
    expect(await c.findPublished!(a.integration, e, since)).toMatchObject({ platformPostId: p[0].id });
  });

  it('findPublished throws when X cannot be asked: RATE_LIMITED with the reset, UPSTREAM_ERROR otherwise', async () => {
    const a = account();
    const c = connector();
    fake.inject({ method: 'GET', path: `/2/users/${a.user.id}/tweets` }, { type: 'rate-limited', resetInSeconds: 120 });
    const err = await c.findPublished!(a.integration, edition('anything'), new Date()).catch((e) => e);
    expect(err).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Date.parse(err.details.retryAt)).toBeGreaterThan(Date.now() + 100_000);
    fake.inject({ method: 'GET', path: `/2/users/${a.user.id}/tweets` }, { type: 'status', status: 500 });
    await expect(c.findPublished!(a.integration, edition('anything'), new Date())).rejects.toMatchObject({ code: 'UPSTREAM_ERROR' });
    // A resend whose lookup fails sends nothing.
    fake.inject({ method: 'GET', path: `/2/users/${a.user.id}/tweets` }, { type: 'status', status: 503 });
    expect(await c.publish(a.integration, edition('resend', { attempt: 2 }))).toMatchObject({ state: 'failed', permanent: false });
    expect(posts(a)).toHaveLength(0);
  });
});

// ---------------------------------------------------------------------------

describe('metrics', () => {
  it('fetchMetrics maps public_metrics (retweets + quotes = shares, bookmarks = saves); a deleted post is null; 429 RATE_LIMITED', async () => {
    const a = account();
    const c = connector();
    const r = await c.publish(a.integration, edition('Measure me'));
    const id = (r as { platformPostId: string }).platformPostId;
    Object.assign(fake.tweets.get(id)!.metrics, { impression_count: 1234, like_count: 56, reply_count: 7, retweet_count: 8, quote_count: 2, bookmark_count: 9 });
    const m = await c.fetchMetrics(a.integration, { platformPostId: id });
    expect(m).toMatchObject({ impressions: 1234, likes: 56, comments: 7, shares: 10, saves: 9, clicks: 0 });
    expect(fake.callsTo('GET', `/2/tweets/${id}`).at(-1)!.query['tweet.fields']).toBe('public_metrics');
    fake.inject({ method: 'GET', path: `/2/tweets/${id}` }, { type: 'rate-limited', resetInSeconds: 60 });
    await expect(c.fetchMetrics(a.integration, { platformPostId: id })).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    fake.tweets.get(id)!.deleted = true;
    expect(await c.fetchMetrics(a.integration, { platformPostId: id })).toBeNull();
  });

  it('fetchAccountMetrics reads followers_count', async () => {
    const a = account();
    const m = await connector().fetchAccountMetrics(a.integration);
    expect(m).toMatchObject({ followers: a.user.followers, profileViews: null, demographics: null });
    expect(fake.callsTo('GET', '/2/users/me').at(-1)!.query['user.fields']).toBe('public_metrics');
    fake.revokeUser(a.user.id);
    await expect(connector().fetchAccountMetrics(a.integration)).rejects.toMatchObject({ code: 'UPSTREAM_ERROR', details: { reauth: true } });
  });
});

// ---------------------------------------------------------------------------

describe('inbox', () => {
  const reply = (text: string, o: Partial<Parameters<ReturnType<typeof connector>['reply']>[1]> = {}) => ({
    messageId: 'msg-1', threadKind: 'comment' as const, platformThreadId: '1', inReplyTo: null, text, attempt: 1, idempotencyToken: `t-${++n}`, ...o,
  });

  it('a reply is a post in reply to the message answered; direct messages need dm.write', async () => {
    const a = account();
    const other = account();
    const theirs = fake.seedTweet(other.user.id, 'A question for you');
    const r = await connector().reply(a.integration, reply('An answer', { platformThreadId: theirs.id, inReplyTo: theirs.id }));
    const mine = posts(a);
    expect(r).toEqual({ state: 'done', platformMessageId: mine[0].id });
    expect(mine[0].inReplyTo).toBe(theirs.id);
    expect(await connector().reply(a.integration, reply('dm', { threadKind: 'message', platformThreadId: other.user.id }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('dm.write') });
    const dm = account({ scopes: ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access', 'dm.read', 'dm.write'] });
    expect(await connector().reply(dm.integration, reply('dm', { threadKind: 'message', platformThreadId: other.user.id }))).toMatchObject({ state: 'done', platformMessageId: expect.stringMatching(/^\d+$/) });
    fake.revokeUser(a.user.id);
    expect(await connector().reply(a.integration, reply('again', { platformThreadId: theirs.id }))).toMatchObject({ state: 'failed', permanent: false });
  });

  it('hide and unhide a reply in the account’s conversation, delete its own post; others’ posts cannot be deleted', async () => {
    const a = account();
    const other = account();
    const root = (await connector().publish(a.integration, edition('My conversation'))) as { platformPostId: string };
    const theirs = fake.seedTweet(other.user.id, 'A rude reply', { inReplyTo: root.platformPostId });
    const mod = (action: 'hide' | 'unhide' | 'delete', id: string, threadKind: 'comment' | 'message' = 'comment') =>
      connector().moderate(a.integration, { messageId: 'm', threadKind, platformThreadId: root.platformPostId, platformMessageId: id, action, idempotencyToken: `i-${++n}` });
    expect(await mod('hide', theirs.id)).toEqual({ state: 'done', platformMessageId: null });
    expect(fake.tweets.get(theirs.id)!.hidden).toBe(true);
    expect(fake.callsTo('PUT', `/2/tweets/${theirs.id}/hidden`).at(-1)!.body).toEqual({ hidden: true });
    expect(await mod('unhide', theirs.id)).toEqual({ state: 'done', platformMessageId: null });
    expect(fake.tweets.get(theirs.id)!.hidden).toBe(false);
    expect(await mod('delete', theirs.id)).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('not yours') });
    expect(fake.tweets.get(theirs.id)!.deleted).toBe(false);
    const own = fake.seedTweet(a.user.id, 'My own reply', { inReplyTo: root.platformPostId });
    expect(await mod('delete', own.id)).toEqual({ state: 'done', platformMessageId: null });
    expect(fake.tweets.get(own.id)!.deleted).toBe(true);
    expect(await mod('hide', theirs.id, 'message')).toMatchObject({ state: 'failed', permanent: true });
  });

  it('hiding without tweet.moderate.write is refused before any call', async () => {
    const a = account({ scopes: ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'] });
    const before = fake.calls.length;
    const r = await connector().moderate(a.integration, { messageId: 'm', threadKind: 'comment', platformThreadId: '1', platformMessageId: '2', action: 'hide', idempotencyToken: 'i' });
    expect(r).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('tweet.moderate.write') });
    expect(fake.calls.length).toBe(before);
  });
});
