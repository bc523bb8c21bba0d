// The Bluesky connector (server/platforms/bluesky.ts) against the REAL
// reference PDS (@atproto/pds with a PLC directory, in this process:
// tests/support/pds.ts): app-password sign-in (and the refusals), refresh
// rotation and revocation, account reads, publishing (an image with alt text
// and aspect ratio, a video, a link card, facets at UTF-8 byte offsets, a
// three-post thread), read back from the PDS with com.atproto.repo.*, and the
// exactly-once promise: a re-sent edition finds its records by their derived
// keys, after a crash, after a createRecord whose answer was lost, and when two
// attempts race. What the PDS cannot be made to do (a 429 on a write, a 5xx, a
// lost answer) a small proxy in front of it injects; the PDS's own rate
// limiter answers the sign-in 429. Metrics go through the PDS to a stand-in
// AppView, and to none.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bluesky, parseBlueskySettings, recordKey, repoTarget } from '../../server/platforms/bluesky.ts';
import { ConnectorError, type IntegrationCredentials, type IntegrationRef, type MediaRef, type PlatformEndpoint, type PublishableEdition, type TokenSet } from '../../server/platforms/types.ts';
import { startFakeAppView, startFaultProxy, startPds, type FakeAppView, type FaultProxy, type PdsAccount, type TestPds } from '../support/pds.ts';
import { mp4, png } from './media-fixtures.ts';

const TIMEOUT_MS = 15_000;
const TID = /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/;

let pds: TestPds;
let appView: FakeAppView;
let proxy: FaultProxy;
let alice: PdsAccount;
let bob: PdsAccount;
let endpoint: PlatformEndpoint;
let aliceTokens: TokenSet;
/** Every error string the connector produced, to check that none holds a secret. */
const errors: string[] = [];

const connector = bluesky.create({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: true });
const password = bluesky.password!;

beforeAll(async () => {
  appView = await startFakeAppView();
  pds = await startPds({ rateLimits: true, appViewUrl: appView.url });
  proxy = await startFaultProxy(pds.url);
  endpoint = { baseUrl: pds.url, allowPrivateNetworks: true };
  alice = await pds.createAccount(`al${randomBytes(3).toString('hex')}`);
  bob = await pds.createAccount(`bo${randomBytes(3).toString('hex')}`);
  aliceTokens = await password.signIn({ endpoint, identifier: alice.handle, password: alice.appPassword, timeoutMs: TIMEOUT_MS });
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await pds?.stop();
  await appView?.close().catch(() => {});
});

function creds(t: TokenSet, over: Partial<IntegrationCredentials['extra']> = {}): IntegrationCredentials {
  return { accessToken: t.accessToken, refreshToken: t.refreshToken, expiresAt: null, scopes: t.scopes, extra: { ...t.extra, ...over } };
}
/** Alice's integration: straight to the PDS, or (through: proxy) with her PDS reached through the fault proxy. */
function integ(opts: { through?: 'proxy'; tokens?: TokenSet; settings?: Record<string, unknown> } = {}): IntegrationRef {
  const t = opts.tokens ?? aliceTokens;
  const via = opts.through === 'proxy' ? proxy.url : pds.url;
  return {
    id: 'int-bsky',
    connector: 'bluesky',
    platform: 'bluesky',
    name: 'Alice',
    username: alice.handle,
    settings: opts.settings ?? {},
    credentials: creds(t, { pdsUrl: via }),
    endpoint: { baseUrl: via, allowPrivateNetworks: true },
  };
}
function mediaRef(id: string, data: Buffer, over: Partial<MediaRef> = {}): MediaRef {
  return { id, type: 'image', url: `urn:pressroom:media:${id}`, contentType: 'image/png', altText: null, size: data.length, read: async () => data, ...over };
}
let seq = 0;
function edition(over: Partial<PublishableEdition> = {}): PublishableEdition {
  const n = ++seq;
  return { id: `ed-${n}`, rootId: `root-${n}`, attempt: 1, caption: `Hello from Pressroom ${n}`, settings: {}, media: [], thread: [], scheduledAt: null, idempotencyToken: `tok-${n}-${randomBytes(6).toString('hex')}`, ...over };
}
async function publish(e: PublishableEdition, i: IntegrationRef = integ()) {
  const r = await connector.publish(i, e);
  if (r.state !== 'published') errors.push(r.error);
  return r;
}
async function postCount(did = alice.did): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const r = await pds.xrpc('GET', 'com.atproto.repo.listRecords', { params: { repo: did, collection: 'app.bsky.feed.post', limit: '100', ...(cursor ? { cursor } : {}) } });
    expect(r.status).toBe(200);
    n += r.json.records.length;
    cursor = r.json.records.length === 100 ? r.json.cursor : undefined;
  } while (cursor);
  return n;
}
async function record(uri: string): Promise<{ uri: string; cid: string; value: any }> {
  const [, , repo, collection, rkey] = uri.split('/');
  const r = await pds.xrpc('GET', 'com.atproto.repo.getRecord', { params: { repo, collection, rkey } });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json;
}
const callsTo = (nsid: string, from = 0) => proxy.calls.slice(from).filter((c) => c.nsid === nsid);
const rkeyOf = (uri: string) => uri.split('/').pop()!;
const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

describe('record keys', () => {
  it('derives a valid TID from the token and the message index, the same on every attempt, in the past', () => {
    const a = recordKey('tok-a', 0);
    expect(a).toMatch(TID);
    expect(recordKey('tok-a', 0)).toBe(a);
    expect(recordKey('tok-a', 1)).not.toBe(a);
    expect(recordKey('tok-b', 0)).not.toBe(a);
    // Base32-sortable back to microseconds: between 2023-01-01 and now.
    let v = 0n;
    for (const ch of a) v = v * 32n + BigInt('234567abcdefghijklmnopqrstuvwxyz'.indexOf(ch));
    const micros = Number(v >> 10n);
    expect(micros).toBeGreaterThanOrEqual(Date.UTC(2023, 0, 1) * 1000);
    expect(micros).toBeLessThan(Date.now() * 1000);
    const many = new Set(Array.from({ length: 2000 }, (_, i) => recordKey(`t${i}`, i % 3)));
    expect(many.size).toBe(2000);
  });
});

describe('sign-in with an app password', () => {
  it('opens a session: JWTs, expiry from exp, DID, handle and the PDS from the DID document', async () => {
    expect(aliceTokens.accessToken.split('.')).toHaveLength(3);
    expect(aliceTokens.refreshToken).not.toBe(aliceTokens.accessToken);
    // The PDS's access tokens live two hours.
    expect(aliceTokens.expiresIn).toBeGreaterThan(7000);
    expect(aliceTokens.expiresIn).toBeLessThanOrEqual(7200);
    expect(aliceTokens.refreshExpiresIn).toBeGreaterThan(80 * 24 * 3600);
    expect(aliceTokens.scopes).toEqual(['com.atproto.appPass']);
    expect(aliceTokens.extra).toEqual({ did: alice.did, handle: alice.handle, pdsUrl: pds.url });
    // The session works.
    const s = await pds.xrpc('GET', 'com.atproto.server.getSession', { token: aliceTokens.accessToken });
    expect(s.status).toBe(200);
    expect(s.json.did).toBe(alice.did);
  });

  it('takes the DID or an @handle as the identifier', async () => {
    const byDid = await password.signIn({ endpoint, identifier: alice.did, password: alice.appPassword, timeoutMs: TIMEOUT_MS });
    expect(byDid.extra).toMatchObject({ did: alice.did, handle: alice.handle });
    const byAt = await password.signIn({ endpoint, identifier: `@${alice.handle}`, password: alice.appPassword, timeoutMs: TIMEOUT_MS });
    expect(byAt.extra).toMatchObject({ did: alice.did });
  });

  it('refuses a wrong app password with the PDS reason, never echoing the password', async () => {
    const wrong = `${alice.appPassword.slice(0, -4)}zzzz`;
    const e = await password.signIn({ endpoint, identifier: alice.handle, password: wrong, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('UPSTREAM_ERROR');
    expect(e.message).toContain('Invalid identifier or password');
    expect(e.details).toMatchObject({ status: 401, error: 'AuthenticationRequired', retryable: false });
    expect(e.message).not.toContain(wrong);
  });

  it("refuses the account's own password and closes the session it opened", async () => {
    const sessions = await pds.sessionCount(bob.did);
    const e = await password.signIn({ endpoint, identifier: bob.handle, password: bob.password, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toMatchObject({ error: 'AppPasswordRequired' });
    expect(e.message).toMatch(/app password/);
    expect(e.message).not.toContain(bob.password);
    expect(await pds.sessionCount(bob.did)).toBe(sessions);
    // While an app password opens a session it keeps.
    await password.signIn({ endpoint, identifier: bob.handle, password: bob.appPassword, timeoutMs: TIMEOUT_MS });
    expect(await pds.sessionCount(bob.did)).toBe(sessions + 1);
  });

  it("answers the PDS's own 429 (30 sign-ins per 5 minutes per identifier) as RATE_LIMITED with its reset", async () => {
    const target = `nobody${randomBytes(3).toString('hex')}.test`;
    // The limit counts per identifier and client address: the connector makes all 31 tries.
    const tries = await Promise.all(Array.from({ length: 30 }, () => password.signIn({ endpoint, identifier: target, password: 'wrong-wrong-wrong', timeoutMs: TIMEOUT_MS }).catch((x) => x)));
    expect(tries.map((t) => t.details?.status)).toEqual(Array(30).fill(401));
    const before = Date.now();
    const e = await password.signIn({ endpoint, identifier: target, password: 'wrong-wrong-wrong', timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('RATE_LIMITED');
    const retryAt = Date.parse(e.details.retryAt);
    expect(retryAt).toBeGreaterThan(before);
    expect(retryAt).toBeLessThanOrEqual(before + 301_000);
  }, 60_000);

  it('refuses an unsafe sign-in service before sending anything', async () => {
    const e = await password.signIn({ endpoint: { baseUrl: pds.url, allowPrivateNetworks: false }, identifier: alice.handle, password: alice.appPassword, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('UNSAFE_URL');
    expect(e.message).toMatch(/https only/);
  });
});

describe('refresh', () => {
  it('rotates the pair; the new pair works; a revoked app password is revoked, not retried', async () => {
    const carol = await pds.createAccount(`ca${randomBytes(3).toString('hex')}`);
    const first = await password.signIn({ endpoint, identifier: carol.handle, password: carol.appPassword, timeoutMs: TIMEOUT_MS });
    const c1 = creds(first);
    const r = await password.refresh({ endpoint, credentials: c1, timeoutMs: TIMEOUT_MS });
    expect(r.state).toBe('refreshed');
    if (r.state !== 'refreshed') return;
    expect(r.tokens.refreshToken).not.toBe(first.refreshToken);
    expect(r.tokens.expiresIn).toBeGreaterThan(7000);
    expect(r.tokens.extra).toMatchObject({ did: carol.did, handle: carol.handle, pdsUrl: pds.url });
    const s = await pds.xrpc('GET', 'com.atproto.server.getSession', { token: r.tokens.accessToken });
    expect(s.status).toBe(200);
    // And again with the new refresh token.
    const r2 = await password.refresh({ endpoint, credentials: creds(r.tokens), timeoutMs: TIMEOUT_MS });
    expect(r2.state).toBe('refreshed');
    if (r2.state !== 'refreshed') return;

    // The user revokes the app password in Bluesky's settings.
    const revoke = await pds.xrpc('POST', 'com.atproto.server.revokeAppPassword', { token: carol.accessJwt, json: { name: carol.appPasswordName } });
    expect(revoke.status).toBe(200);
    const gone = await password.refresh({ endpoint, credentials: creds(r2.tokens), timeoutMs: TIMEOUT_MS });
    expect(gone.state).toBe('revoked');
    if (gone.state === 'revoked') {
      expect(gone.reason).toMatch(/ExpiredToken|revoked/);
      expect(gone.reason).not.toContain(r2.tokens.refreshToken!);
    }
  });

  it('a session with no refresh token is revoked', async () => {
    const r = await password.refresh({ endpoint, credentials: { ...creds(aliceTokens), refreshToken: null }, timeoutMs: TIMEOUT_MS });
    expect(r.state).toBe('revoked');
  });

  it('5xx, 429 and no answer are retried later, never revoked', async () => {
    const via = { baseUrl: proxy.url, allowPrivateNetworks: true };
    const dave = await pds.createAccount(`da${randomBytes(3).toString('hex')}`);
    const t = await password.signIn({ endpoint, identifier: dave.handle, password: dave.appPassword, timeoutMs: TIMEOUT_MS });
    proxy.inject('com.atproto.server.refreshSession', { kind: 'answer', status: 503, json: { error: 'InternalServerError', message: 'down' } });
    const a = await password.refresh({ endpoint: via, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(a).toMatchObject({ state: 'retry' });
    const reset = Math.floor(Date.now() / 1000) + 120;
    proxy.inject('com.atproto.server.refreshSession', { kind: 'answer', status: 429, json: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' }, headers: { 'ratelimit-limit': '30', 'ratelimit-remaining': '0', 'ratelimit-reset': String(reset) } });
    const b = await password.refresh({ endpoint: via, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(b.state).toBe('retry');
    if (b.state === 'retry') expect(b.retryAt?.getTime()).toBe(reset * 1000);
    // The PDS rotated the token but the answer was lost: the old one is still inside the PDS's
    // two-hour grace period, so the retry gets a pair (the same next token id) instead of a revocation.
    proxy.inject('com.atproto.server.refreshSession', { kind: 'drop-answer' });
    const c = await password.refresh({ endpoint: via, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(c.state).toBe('retry');
    const d = await password.refresh({ endpoint: via, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(d.state).toBe('refreshed');
  });
});

describe('accounts', () => {
  it('reads the account from the session and the AppView profile', async () => {
    appView.profiles.set(alice.did, { handle: alice.handle, displayName: 'Alice at the AppView', followersCount: 42 });
    const accounts = await bluesky.readAccounts!({ endpoint, credentials: creds(aliceTokens), timeoutMs: TIMEOUT_MS });
    expect(accounts).toEqual([{ id: alice.did, username: alice.handle, name: 'Alice at the AppView', avatarUrl: null, profileUrl: `https://bsky.app/profile/${alice.handle}`, kind: 'person' }]);
    // The PDS proxied the read with a service token.
    const call = appView.calls.find((c) => c.nsid === 'app.bsky.actor.getProfile' && c.query.actor?.[0] === alice.did);
    expect(call?.authorization).toMatch(/^Bearer /);
  });

  it('an account the AppView has not indexed yet is named from its profile record, else by its handle', async () => {
    const t = await password.signIn({ endpoint, identifier: bob.handle, password: bob.appPassword, timeoutMs: TIMEOUT_MS });
    const first = await bluesky.readAccounts!({ endpoint, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(first).toMatchObject([{ id: bob.did, username: bob.handle, name: bob.handle }]);
    const put = await pds.xrpc('POST', 'com.atproto.repo.putRecord', {
      token: bob.accessJwt,
      json: { repo: bob.did, collection: 'app.bsky.actor.profile', rkey: 'self', record: { $type: 'app.bsky.actor.profile', displayName: 'Bob (record)' } },
    });
    expect(put.status).toBe(200);
    const second = await bluesky.readAccounts!({ endpoint, credentials: creds(t), timeoutMs: TIMEOUT_MS });
    expect(second[0].name).toBe('Bob (record)');
    // The AppView was asked and did not know him.
    expect(appView.calls.some((c) => c.nsid === 'app.bsky.actor.getProfile' && c.query.actor?.[0] === bob.did)).toBe(true);
    // A refused session is an error, not an account.
    const e = await bluesky.readAccounts!({ endpoint, credentials: { ...creds(t), accessToken: pds.expiredAccessJwt(bob.did) }, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toMatchObject({ status: 400, error: 'ExpiredToken' });
  });

  it('gives the lexicons’ limits', async () => {
    expect(await bluesky.readLimits!({ endpoint, credentials: creds(aliceTokens), timeoutMs: TIMEOUT_MS })).toEqual({ captionMaxLength: 300, maxMedia: 4, imageMaxBytes: 1_000_000, videoMaxBytes: 100_000_000 });
  });
});

describe('publishing', () => {
  it('posts text with an image: alt text, aspect ratio, blob; permalink and at:// URI', async () => {
    const image = png(64, 48);
    const e = edition({ caption: 'A picture', media: [mediaRef('m1', image, { altText: 'A gradient, 64 by 48', width: 64, height: 48 })], settings: { language: 'en' } });
    const before = await postCount();
    const r = await publish(e);
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    const rkey = recordKey(e.idempotencyToken!, 0);
    expect(rkey).toMatch(TID);
    expect(r.platformPostId).toBe(`at://${alice.did}/app.bsky.feed.post/${rkey}`);
    expect(r.permalink).toBe(`https://bsky.app/profile/${alice.handle}/post/${rkey}`);
    expect(await postCount()).toBe(before + 1);
    const rec = await record(r.platformPostId);
    expect(rec.value.text).toBe('A picture');
    expect(rec.value.langs).toEqual(['en']);
    expect(rec.value.embed.$type).toBe('app.bsky.embed.images');
    expect(rec.value.embed.images).toHaveLength(1);
    const img = rec.value.embed.images[0];
    expect(img.alt).toBe('A gradient, 64 by 48');
    expect(img.aspectRatio).toEqual({ width: 64, height: 48 });
    expect(img.image).toMatchObject({ $type: 'blob', mimeType: 'image/png', size: image.length });
    // The bytes the PDS keeps are the file's.
    const blob = await fetch(`${pds.url}/xrpc/com.atproto.sync.getBlob?did=${alice.did}&cid=${img.image.ref.$link}`);
    expect(blob.status).toBe(200);
    expect(Buffer.from(await blob.arrayBuffer()).equals(image)).toBe(true);
  });

  it('writes facets at UTF-8 byte offsets (emoji before the link), resolves mentions to DIDs, and a link card from settings', async () => {
    const caption = `🎉 Launch day with @${bob.handle}! Read https://example.com/launch?x=1 #pressroom #日本語 — hi @nobody-here.test`;
    const e = edition({ caption, settings: { linkCard: { title: 'Launch notes', description: 'What is new' } } });
    const r = await publish(e);
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    const rec = await record(r.platformPostId);
    expect(rec.value.text).toBe(caption);
    const facets = rec.value.facets as { index: { byteStart: number; byteEnd: number }; features: any[] }[];
    const text = Buffer.from(caption, 'utf8');
    const slice = (f: { index: { byteStart: number; byteEnd: number } }) => text.subarray(f.index.byteStart, f.index.byteEnd).toString('utf8');
    const mention = facets.find((f) => f.features[0].$type === 'app.bsky.richtext.facet#mention')!;
    expect(mention.features[0].did).toBe(bob.did);
    expect(mention.index.byteStart).toBe(utf8('🎉 Launch day with '));
    expect(slice(mention)).toBe(`@${bob.handle}`);
    const link = facets.find((f) => f.features[0].$type === 'app.bsky.richtext.facet#link')!;
    expect(link.features[0].uri).toBe('https://example.com/launch?x=1');
    expect(link.index.byteStart).toBe(utf8(`🎉 Launch day with @${bob.handle}! Read `));
    expect(slice(link)).toBe('https://example.com/launch?x=1');
    const tags = facets.filter((f) => f.features[0].$type === 'app.bsky.richtext.facet#tag');
    expect(tags.map((t) => t.features[0].tag)).toEqual(['pressroom', '日本語']);
    expect(tags.map(slice)).toEqual(['#pressroom', '#日本語']);
    // The handle that does not resolve stays plain text.
    expect(facets.filter((f) => f.features[0].$type === 'app.bsky.richtext.facet#mention')).toHaveLength(1);
    expect(facets).toHaveLength(4);
    expect(rec.value.embed).toEqual({ $type: 'app.bsky.embed.external', external: { uri: 'https://example.com/launch?x=1', title: 'Launch notes', description: 'What is new' } });
  });

  it('titles the card with the URL when settings give none; linkCard false makes none', async () => {
    const r = await publish(edition({ caption: 'See example.org/docs for more' }));
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    const rec = await record(r.platformPostId);
    expect(rec.value.embed.external).toEqual({ uri: 'https://example.org/docs', title: 'https://example.org/docs', description: '' });
    const none = await publish(edition({ caption: 'No card for https://example.net', settings: { linkCard: false } }));
    expect(none.state).toBe('published');
    if (none.state !== 'published') return;
    const rec2 = await record(none.platformPostId);
    expect(rec2.value.embed).toBeUndefined();
    expect(rec2.value.facets).toHaveLength(1);
  });

  it('posts a video as app.bsky.embed.video with alt text and aspect ratio', async () => {
    const video = mp4({ width: 640, height: 360, durationMs: 1000 });
    const r = await publish(edition({ caption: 'A clip', media: [mediaRef('v1', video, { type: 'video', contentType: 'video/mp4', altText: 'A test clip', width: 640, height: 360 })] }));
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    const rec = await record(r.platformPostId);
    expect(rec.value.embed).toMatchObject({ $type: 'app.bsky.embed.video', alt: 'A test clip', aspectRatio: { width: 640, height: 360 }, video: { $type: 'blob', mimeType: 'video/mp4', size: video.length } });
  });

  it('posts a three-message thread chained by reply {root, parent} strong refs', async () => {
    const before = await postCount();
    const e = edition({
      caption: 'Thread 1/3',
      thread: [
        { caption: 'Thread 2/3 with https://example.com/two', media: [] },
        { caption: 'Thread 3/3', media: [mediaRef('t3', png(20, 10, 3), { altText: 'third', width: 20, height: 10 })] },
      ],
    });
    const r = await publish(e);
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    expect(await postCount()).toBe(before + 3);
    const uris = [0, 1, 2].map((n) => `at://${alice.did}/app.bsky.feed.post/${recordKey(e.idempotencyToken!, n)}`);
    expect(r.platformPostId).toBe(uris[0]);
    const [one, two, three] = await Promise.all(uris.map(record));
    expect(one.value.text).toBe('Thread 1/3');
    expect(one.value.reply).toBeUndefined();
    expect(two.value.reply).toEqual({ root: { uri: one.uri, cid: one.cid }, parent: { uri: one.uri, cid: one.cid } });
    expect(three.value.reply).toEqual({ root: { uri: one.uri, cid: one.cid }, parent: { uri: two.uri, cid: two.cid } });
    expect(two.value.embed.external.uri).toBe('https://example.com/two');
    expect(three.value.embed.images[0].alt).toBe('third');
  });

  it('refuses content the PDS refuses, for good, with its reason', async () => {
    const before = await postCount();
    const r = await publish(edition({ caption: 'x'.repeat(301) }));
    expect(r).toMatchObject({ state: 'failed', permanent: true });
    if (r.state === 'failed') expect(r.error).toMatch(/grapheme too big \(maximum 300, got 301\)/);
    expect(await postCount()).toBe(before);
  });

  it('refuses media Bluesky cannot embed before uploading anything', async () => {
    const from = proxy.calls.length;
    const big = Buffer.concat([png(8, 8), Buffer.alloc(1_000_001 - png(8, 8).length)]);
    const cases: [MediaRef[], RegExp][] = [
      [[mediaRef('big', big)], /at most 1000000 bytes/],
      [[1, 2, 3, 4, 5].map((k) => mediaRef(`i${k}`, png(4, 4, k))), /at most 4 images/],
      [[mediaRef('i', png(4, 4)), mediaRef('v', mp4({ width: 8, height: 8, durationMs: 10 }), { type: 'video', contentType: 'video/mp4' })], /images or one video/],
    ];
    for (const [media, why] of cases) {
      const r = await publish(edition({ media }), integ({ through: 'proxy' }));
      expect(r).toMatchObject({ state: 'failed', permanent: true });
      if (r.state === 'failed') expect(r.error).toMatch(why);
    }
    expect(callsTo('com.atproto.repo.uploadBlob', from)).toHaveLength(0);
    expect(callsTo('com.atproto.repo.createRecord', from)).toHaveLength(0);
  });

  it('refuses bad settings before calling the PDS', async () => {
    expect(parseBlueskySettings({ language: 'english!' })).toMatchObject({ ok: false });
    expect(parseBlueskySettings({ languages: ['en', 'de', 'fr', 'es'] })).toMatchObject({ ok: false });
    expect(parseBlueskySettings({ linkCard: { uri: 'ftp://x' } })).toMatchObject({ ok: false });
    expect(parseBlueskySettings({ language: 'pt-BR', languages: ['en'], linkCard: { title: 'T' } })).toEqual({ ok: true, value: { langs: ['pt-BR', 'en'], linkCard: { title: 'T' } } });
    const from = proxy.calls.length;
    const r = await publish(edition({ settings: { linkCard: 'yes' } }), integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: true });
    expect(proxy.calls.length).toBe(from);
  });
});

describe('exactly once', () => {
  it('publishing the same edition twice (a crash before the result was recorded) makes one post', async () => {
    const e = edition({ caption: 'Once only', media: [mediaRef('o1', png(10, 10, 9), { altText: 'once' })] });
    const before = await postCount();
    const from = proxy.calls.length;
    const first = await publish(e, integ({ through: 'proxy' }));
    expect(first.state).toBe('published');
    const second = await publish({ ...e, attempt: 2 }, integ({ through: 'proxy' }));
    expect(second).toEqual(first);
    expect(await postCount()).toBe(before + 1);
    // The second attempt looked the record up and made nothing: no upload, no createRecord.
    expect(callsTo('com.atproto.repo.createRecord', from)).toHaveLength(1);
    expect(callsTo('com.atproto.repo.uploadBlob', from)).toHaveLength(1);
    expect(callsTo('com.atproto.repo.getRecord', from).map((c) => c.query.rkey)).toEqual([recordKey(e.idempotencyToken!, 0), recordKey(e.idempotencyToken!, 0)]);
  });

  it('a createRecord that committed but whose answer was lost is found, not made again', async () => {
    const e = edition({ caption: 'Answer lost after commit' });
    const before = await postCount();
    const from = proxy.calls.length;
    proxy.inject('com.atproto.repo.createRecord', { kind: 'drop-answer' });
    const r = await publish(e, integ({ through: 'proxy' }));
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    expect(rkeyOf(r.platformPostId)).toBe(recordKey(e.idempotencyToken!, 0));
    const creates = callsTo('com.atproto.repo.createRecord', from);
    expect(creates).toHaveLength(1);
    expect(creates[0]).toMatchObject({ injected: true, status: null });
    expect(await postCount()).toBe(before + 1);
    // A later attempt of the same edition finds it too.
    expect(await publish({ ...e, attempt: 2 }, integ({ through: 'proxy' }))).toEqual(r);
    expect(await postCount()).toBe(before + 1);
  });

  it('when the lookup after a lost answer fails too, the attempt fails for now and the retry finds the post', async () => {
    const e = edition({ caption: 'Lost answer, failed lookup' });
    const before = await postCount();
    proxy.inject('com.atproto.repo.createRecord', { kind: 'drop-answer' });
    // The lookup before the create passes; the one after it fails.
    const from = proxy.calls.length;
    proxy.inject('com.atproto.repo.getRecord', { kind: 'barrier', count: 1 });
    proxy.inject('com.atproto.repo.getRecord', { kind: 'answer', status: 503, json: { error: 'InternalServerError', message: 'Internal Server Error' } });
    const r = await publish(e, integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: false });
    if (r.state === 'failed') expect(r.error).toMatch(/did not answer.*looking it up afterwards failed too.*HTTP 503/);
    expect(callsTo('com.atproto.repo.getRecord', from)).toHaveLength(2);
    expect(await postCount()).toBe(before + 1);
    const again = await publish({ ...e, attempt: 2 }, integ({ through: 'proxy' }));
    expect(again.state).toBe('published');
    if (again.state === 'published') expect(rkeyOf(again.platformPostId)).toBe(recordKey(e.idempotencyToken!, 0));
    expect(await postCount()).toBe(before + 1);
  });

  it('two attempts racing: both find nothing, one creates, the other meets the PDS 500 on the taken key and finds the post', async () => {
    const e = edition({ caption: 'Racing attempts' });
    const before = await postCount();
    const from = proxy.calls.length;
    proxy.inject('com.atproto.repo.getRecord', { kind: 'barrier', count: 2 }, 2);
    const [a, b] = await Promise.all([publish(e, integ({ through: 'proxy' })), publish({ ...e, attempt: 2 }, integ({ through: 'proxy' }))]);
    expect(a.state).toBe('published');
    expect(b).toEqual(a);
    expect(await postCount()).toBe(before + 1);
    const creates = callsTo('com.atproto.repo.createRecord', from);
    expect(creates.map((c) => c.status).sort()).toEqual([200, 500]);
    // The loser looked the record up after its 500.
    expect(callsTo('com.atproto.repo.getRecord', from)).toHaveLength(3);
  });

  it('a thread that failed midway resumes: the posts made are found, the rest are made, none twice', async () => {
    const e = edition({ caption: 'Resume 1/3', thread: [{ caption: 'Resume 2/3', media: [] }, { caption: 'Resume 3/3', media: [] }] });
    const before = await postCount();
    // The first createRecord passes, the second meets a 503.
    proxy.inject('com.atproto.repo.createRecord', { kind: 'barrier', count: 1 });
    proxy.inject('com.atproto.repo.createRecord', { kind: 'answer', status: 503, json: { error: 'InternalServerError', message: 'Internal Server Error' } });
    const r = await publish(e, integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: false });
    if (r.state === 'failed') expect(r.error).toContain('posts 1 to 1 of 3 are published');
    expect(await postCount()).toBe(before + 1);
    const again = await publish({ ...e, attempt: 2 }, integ({ through: 'proxy' }));
    expect(again.state).toBe('published');
    expect(await postCount()).toBe(before + 3);
    const uris = [0, 1, 2].map((n) => `at://${alice.did}/app.bsky.feed.post/${recordKey(e.idempotencyToken!, n)}`);
    const recs = await Promise.all(uris.map(record));
    expect(recs[2].value.reply.parent.uri).toBe(uris[1]);
    expect(recs[1].value.reply.root.uri).toBe(uris[0]);
  });
});

describe('faults', () => {
  it('429 puts the edition back until RateLimit-Reset', async () => {
    const reset = Math.floor(Date.now() / 1000) + 300;
    proxy.inject('com.atproto.repo.createRecord', {
      kind: 'answer',
      status: 429,
      json: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
      headers: { 'ratelimit-limit': '5000', 'ratelimit-remaining': '0', 'ratelimit-reset': String(reset), 'ratelimit-policy': '5000;w=3600' },
    });
    const before = await postCount();
    const r = await publish(edition(), integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, retryAt: new Date(reset * 1000).toISOString() });
    expect(await postCount()).toBe(before);
  });

  it('a 5xx on the upload fails for now', async () => {
    proxy.inject('com.atproto.repo.uploadBlob', { kind: 'answer', status: 502, json: { error: 'UpstreamFailure', message: 'blob store' } });
    const r = await publish(edition({ media: [mediaRef('u', png(5, 5))] }), integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: false });
    expect(r.state === 'failed' && r.reauth).toBeFalsy();
  });

  it('an expired access token (the PDS answers 400 ExpiredToken) asks for reauth; the refreshed one publishes', async () => {
    const stale: TokenSet = { ...aliceTokens, accessToken: pds.expiredAccessJwt(alice.did) };
    const r = await publish(edition({ caption: 'after reauth' }), integ({ tokens: stale }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, reauth: true });
    if (r.state === 'failed') expect(r.error).toContain('ExpiredToken');
    const forged: TokenSet = { ...aliceTokens, accessToken: `${aliceTokens.accessToken.slice(0, -6)}AAAAAA` };
    const f = await publish(edition(), integ({ tokens: forged }));
    expect(f).toMatchObject({ state: 'failed', reauth: true });
    if (f.state === 'failed') expect(f.error).toContain('InvalidToken');
    const refreshed = await password.refresh({ endpoint, credentials: creds(aliceTokens), timeoutMs: TIMEOUT_MS });
    expect(refreshed.state).toBe('refreshed');
    if (refreshed.state !== 'refreshed') return;
    aliceTokens = refreshed.tokens;
    const ok = await publish(edition({ caption: 'after reauth' }), integ({ tokens: refreshed.tokens }));
    expect(ok.state).toBe('published');
  });

  it('a 401 asks for reauth', async () => {
    proxy.inject('com.atproto.repo.createRecord', { kind: 'answer', status: 401, json: { error: 'AuthenticationRequired', message: 'Authentication Required' } });
    const r = await publish(edition(), integ({ through: 'proxy' }));
    expect(r).toMatchObject({ state: 'failed', permanent: false, reauth: true });
  });

  it("calls the DID document's PDS only when it is safe: a private address another origin names is refused unsent", async () => {
    const guarded = bluesky.create({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: false });
    const before = await postCount();
    // The sign-in service is the operator's (trusted), the DID document names another, loopback, host.
    const i: IntegrationRef = { ...integ(), endpoint: { baseUrl: proxy.url, allowPrivateNetworks: true }, credentials: creds(aliceTokens, { pdsUrl: pds.url }) };
    const r = await guarded.publish(i, edition());
    expect(r).toMatchObject({ state: 'failed', permanent: true });
    if (r.state === 'failed') expect(r.error).toMatch(/https only|loopback/);
    expect(await postCount()).toBe(before);
    // The same origin as the trusted endpoint passes.
    expect(repoTarget({ baseUrl: pds.url, allowPrivateNetworks: true }, creds(aliceTokens, { pdsUrl: pds.url }), false)).toEqual({ baseUrl: pds.url, allowPrivateNetworks: true });
    expect(repoTarget({ baseUrl: proxy.url, allowPrivateNetworks: true }, creds(aliceTokens, { pdsUrl: pds.url }), false)).toEqual({ baseUrl: pds.url, allowPrivateNetworks: false });
  });

  it('editing a published caption and article drafts are not supported', async () => {
    await expect(connector.editPublishedCaption(integ(), { platformPostId: 'at://x/y/z', caption: 'c', attempt: 1 })).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
  });
});

describe('metrics', () => {
  it('reads like, repost, quote and reply counts and followers from the AppView through the PDS', async () => {
    const r = await publish(edition({ caption: 'Count me' }));
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    appView.posts.set(r.platformPostId, { likeCount: 7, repostCount: 3, replyCount: 2, quoteCount: 1 });
    const m = await connector.fetchMetrics(integ(), { platformPostId: r.platformPostId });
    expect(m).toMatchObject({ likes: 7, shares: 4, comments: 2, impressions: 0, clicks: 0 });
    appView.profiles.set(alice.did, { handle: alice.handle, followersCount: 42 });
    const a = await connector.fetchAccountMetrics(integ());
    expect(a).toMatchObject({ followers: 42, profileViews: null, demographics: null });
    // A post the AppView has not indexed: nothing to report.
    expect(await connector.fetchMetrics(integ(), { platformPostId: `at://${alice.did}/app.bsky.feed.post/${recordKey('never', 0)}` })).toBeNull();
  });

  it('a 429 from the metrics read is RATE_LIMITED; a refused token an upstream error', async () => {
    const reset = Math.floor(Date.now() / 1000) + 60;
    proxy.inject('app.bsky.feed.getPosts', { kind: 'answer', status: 429, json: { error: 'RateLimitExceeded' }, headers: { 'ratelimit-reset': String(reset) } });
    const e = await connector.fetchMetrics(integ({ through: 'proxy' }), { platformPostId: `at://${alice.did}/app.bsky.feed.post/${recordKey('x', 0)}` }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('RATE_LIMITED');
    expect(e.details.retryAt).toBe(new Date(reset * 1000).toISOString());
    const stale: TokenSet = { ...aliceTokens, accessToken: pds.expiredAccessJwt(alice.did) };
    const f = await connector.fetchAccountMetrics(integ({ tokens: stale })).catch((x) => x);
    expect(f).toBeInstanceOf(ConnectorError);
    expect(f.code).toBe('UPSTREAM_ERROR');
  });

  it('a PDS whose AppView is unreachable (502 UpstreamFailure) answers null, and the account name comes from the profile record', async () => {
    const r = await publish(edition({ caption: 'No AppView' }));
    expect(r.state).toBe('published');
    if (r.state !== 'published') return;
    await appView.close();
    const raw = await pds.xrpc('GET', 'app.bsky.feed.getPosts', { token: aliceTokens.accessToken, params: { uris: r.platformPostId } });
    expect(raw.status).toBe(502);
    expect(await connector.fetchMetrics(integ(), { platformPostId: r.platformPostId })).toBeNull();
    expect(await connector.fetchAccountMetrics(integ())).toBeNull();
    const put = await pds.xrpc('POST', 'com.atproto.repo.putRecord', {
      token: aliceTokens.accessToken,
      json: { repo: alice.did, collection: 'app.bsky.actor.profile', rkey: 'self', record: { $type: 'app.bsky.actor.profile', displayName: 'Alice (record)' } },
    });
    expect(put.status).toBe(200);
    const accounts = await bluesky.readAccounts!({ endpoint, credentials: creds(aliceTokens), timeoutMs: TIMEOUT_MS });
    expect(accounts[0]).toMatchObject({ id: alice.did, username: alice.handle, name: 'Alice (record)' });
  });

  it('a PDS with no AppView configured answers null too; an account without a profile is named by its handle', async () => {
    const bare = await startPds({ appViewUrl: null });
    try {
      const eve = await bare.createAccount(`ev${randomBytes(3).toString('hex')}`);
      const ep = { baseUrl: bare.url, allowPrivateNetworks: true };
      const t = await password.signIn({ endpoint: ep, identifier: eve.handle, password: eve.appPassword, timeoutMs: TIMEOUT_MS });
      const i: IntegrationRef = { ...integ(), username: eve.handle, credentials: creds(t), endpoint: ep };
      const r = await connector.publish(i, edition({ caption: 'On a bare PDS' }));
      expect(r.state).toBe('published');
      if (r.state !== 'published') return;
      const raw = await bare.xrpc('GET', 'app.bsky.feed.getPosts', { token: t.accessToken, params: { uris: r.platformPostId } });
      expect(raw.status).toBe(400);
      expect(raw.json.message).toMatch(/No service configured/);
      expect(await connector.fetchMetrics(i, { platformPostId: r.platformPostId })).toBeNull();
      expect(await connector.fetchAccountMetrics(i)).toBeNull();
      const accounts = await bluesky.readAccounts!({ endpoint: ep, credentials: creds(t), timeoutMs: TIMEOUT_MS });
      expect(accounts[0]).toMatchObject({ id: eve.did, username: eve.handle, name: eve.handle });
    } finally {
      await bare.stop();
    }
  }, 60_000);
});

describe('inbox', () => {
  it("replies under a post once per idempotency token; a reply to a reply keeps the thread's root", async () => {
    const made = await pds.xrpc('POST', 'com.atproto.repo.createRecord', {
      token: bob.accessJwt,
      json: { repo: bob.did, collection: 'app.bsky.feed.post', record: { $type: 'app.bsky.feed.post', text: 'What do you think?', createdAt: new Date().toISOString() } },
    });
    expect(made.status).toBe(200);
    const bobPost = { uri: made.json.uri as string, cid: made.json.cid as string };
    const before = await postCount();
    const base = { messageId: 'msg-1', threadKind: 'comment' as const, platformThreadId: bobPost.uri, inReplyTo: null, attempt: 1 };
    const token = `reply-${randomBytes(4).toString('hex')}`;
    const r = await connector.reply(integ(), { ...base, text: `Thanks @${bob.handle}!`, idempotencyToken: token });
    expect(r.state).toBe('done');
    if (r.state !== 'done') return;
    expect(await connector.reply(integ(), { ...base, text: `Thanks @${bob.handle}!`, idempotencyToken: token, attempt: 2 })).toEqual(r);
    expect(await postCount()).toBe(before + 1);
    const rec = await record(r.platformMessageId!);
    expect(rec.value.reply).toEqual({ root: bobPost, parent: bobPost });
    expect(rec.value.facets[0].features[0]).toEqual({ $type: 'app.bsky.richtext.facet#mention', did: bob.did });
    const deeper = await connector.reply(integ(), { ...base, messageId: 'msg-2', inReplyTo: r.platformMessageId, text: 'And more', idempotencyToken: `${token}-2` });
    expect(deeper.state).toBe('done');
    if (deeper.state !== 'done') return;
    const rec2 = await record(deeper.platformMessageId!);
    expect(rec2.value.reply).toEqual({ root: bobPost, parent: { uri: rec.uri, cid: rec.cid } });

    // Deleting the account's own reply, twice (an earlier try that got no answer): done both times.
    const del = { messageId: 'msg-2', threadKind: 'comment' as const, platformThreadId: bobPost.uri, platformMessageId: deeper.platformMessageId!, action: 'delete' as const, idempotencyToken: 'del-1' };
    expect(await connector.moderate(integ(), del)).toEqual({ state: 'done', platformMessageId: deeper.platformMessageId });
    const [, , repo, collection, rkey] = deeper.platformMessageId!.split('/');
    const gone = await pds.xrpc('GET', 'com.atproto.repo.getRecord', { params: { repo, collection, rkey } });
    expect(gone.json.error).toBe('RecordNotFound');
    expect(await connector.moderate(integ(), del)).toEqual({ state: 'done', platformMessageId: deeper.platformMessageId });
    // Another account's post, hiding, direct messages: not supported.
    expect(await connector.moderate(integ(), { ...del, platformMessageId: bobPost.uri })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(await connector.moderate(integ(), { ...del, action: 'hide' })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(await connector.reply(integ(), { ...base, threadKind: 'message', text: 'hi', idempotencyToken: 'dm-1' })).toMatchObject({ state: 'failed', permanent: true });
    // A reply to a post that is gone is refused for good.
    const lost = await connector.reply(integ(), { ...base, inReplyTo: deeper.platformMessageId, text: 'too late', idempotencyToken: `${token}-3` });
    expect(lost).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('RecordNotFound') });
  });
});

describe('secrets', () => {
  it('no error string holds a token or a password', () => {
    expect(errors.length).toBeGreaterThan(5);
    const secrets = [aliceTokens.accessToken, aliceTokens.refreshToken!, alice.appPassword, alice.password, bob.password];
    for (const e of errors) for (const s of secrets) expect(e).not.toContain(s);
  });
});
