// The LinkedIn connector (server/platforms/linkedin.ts) over real HTTP against a
// local fake of LinkedIn that follows its published formats
// (tests/support/fakes/linkedin.ts): the OAuth flow (no PKCE for web apps),
// refresh with LinkedIn's non-renewing refresh tokens, introspection, the
// member and the pages they administer, publishing (text with little-format
// escaping, images with alt text, multi-part video with ETags and processing),
// every fault (timeout after the post was made, 5xx, 429, revoked token,
// validation, DUPLICATE_POST), verify-before-resend, caption edits, metrics,
// comments and their moderation.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createLinkedInConnector,
  escapeLittleText,
  linkedin,
  LINKEDIN_DEFAULT_BASE_URL,
  LINKEDIN_MEMBER_SCOPES,
  LINKEDIN_SCOPES,
  LINKEDIN_VERSION,
  linkedinOAuthBase,
  linkedinScopes,
  littleToPlain,
  parseLinkedInSettings,
  restliEncode,
} from '../../server/platforms/linkedin.ts';
import { ConnectorError, type IntegrationCredentials, type IntegrationRef, type MediaRef, type PlatformEndpoint, type PublishableEdition } from '../../server/platforms/types.ts';
import { readLittle, startFakeLinkedIn, type FakeLinkedIn } from '../support/fakes/linkedin.ts';

const TIMEOUT_MS = 1200;
const CALLBACK = 'https://pressroom.example/v1/oauth/callback/linkedin';
const DAY = 24 * 3600;

let fake: FakeLinkedIn;
let endpoint: PlatformEndpoint;
const oauth = linkedin.oauth!;
const connector = createLinkedInConnector({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: false }, { pollMs: 20, maxProcessingWaitMs: 400, lookupPageSize: 5, lookupPages: 3, uploadTimeoutMs: TIMEOUT_MS });

beforeAll(async () => {
  fake = await startFakeLinkedIn({ partSize: 100 });
  endpoint = { baseUrl: fake.url, allowPrivateNetworks: true };
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => {
  fake.resetClock();
  fake.consent = 'allow';
  fake.signedIn = fake.alice.id;
  fake.processing.videoPolls = 2;
  fake.processing.videoFails = false;
});

const PNG = () => Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), randomBytes(64)]);
const MP4 = (n: number) => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), randomBytes(n - 12)]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const personUrn = () => `urn:li:person:${fake.alice.id}`;
const acmeUrn = () => `urn:li:organization:${fake.acme.id}`;
const ORG_SCOPES = ['openid', 'profile', 'w_member_social', 'r_organization_social', 'w_organization_social', 'rw_organization_admin'];

function creds(token: string, author: string, scopes: string[] = ['openid', 'profile', 'w_member_social'], over: Partial<IntegrationCredentials> = {}): IntegrationCredentials {
  return { accessToken: token, refreshToken: null, expiresAt: null, scopes, extra: { authorUrn: author, personUrn: personUrn() }, ...over };
}
function integ(c: IntegrationCredentials, over: Partial<IntegrationRef> = {}): IntegrationRef {
  return { id: 'int-li', connector: 'linkedin', platform: 'linkedin', name: 'Alice', username: null, settings: {}, credentials: c, endpoint, ...over };
}
function mediaRef(id: string, data: Buffer, over: Partial<MediaRef> = {}): MediaRef {
  return { id, type: 'image', url: `urn:pressroom:media:${id}`, contentType: 'image/png', altText: null, size: data.length, read: async () => data, ...over };
}
let seq = 0;
function edition(over: Partial<PublishableEdition> = {}): PublishableEdition {
  const n = ++seq;
  return { id: `ed-${n}`, rootId: `root-${n}`, attempt: 1, caption: `Hello from Pressroom ${n} ${randomBytes(3).toString('hex')}`, settings: {}, media: [], thread: [], scheduledAt: null, ...over };
}
const published = (r: unknown) => {
  expect(r).toMatchObject({ state: 'published' });
  return r as { platformPostId: string; permalink: string };
};

/** Runs the consent step in a "browser": the authorize URL, answered with a redirect. */
async function consent(url: string): Promise<URL> {
  const r = await fetch(url, { redirect: 'manual' });
  expect(r.status, await r.clone().text()).toBe(302);
  return new URL(r.headers.get('location')!);
}
async function connect(scopes: string[] = [...LINKEDIN_SCOPES]) {
  const back = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 's', codeChallenge: null, scopes }));
  return oauth.exchangeCode({ endpoint, app: fake.app, redirectUri: CALLBACK, code: back.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS });
}

describe('connecting an account', () => {
  it('is an operator-app OAuth module without PKCE (LinkedIn offers PKCE to native apps only)', () => {
    expect(linkedin).toMatchObject({ name: 'linkedin', platforms: ['linkedin'], connect: 'oauth', defaultBaseUrl: 'https://api.linkedin.com', appEnv: { clientId: 'LINKEDIN_CLIENT_ID', clientSecret: 'LINKEDIN_CLIENT_SECRET' } });
    expect(oauth).toMatchObject({ pkce: false, needsOperatorApp: true, requiredScopes: [] });
    expect(oauth.scopes).toEqual(['openid', 'profile', 'w_member_social', 'r_organization_social', 'w_organization_social', 'rw_organization_admin']);
    expect(linkedinScopes({ organizations: false })).toEqual(['openid', 'profile', 'w_member_social']);
    expect(linkedinScopes({ openid: false })).toEqual(['r_basicprofile', 'w_member_social', 'r_organization_social', 'w_organization_social', 'rw_organization_admin']);
    // One base for the API; the OAuth pages are derived from it (www. for api.), a fake serves both.
    expect(linkedinOAuthBase(LINKEDIN_DEFAULT_BASE_URL)).toBe('https://www.linkedin.com');
    expect(linkedinOAuthBase('http://127.0.0.1:9999/')).toBe('http://127.0.0.1:9999');
    expect(LINKEDIN_VERSION).toMatch(/^\d{6}$/);
  });

  it('builds the authorize URL on www.linkedin.com with space-separated scopes and no code challenge', () => {
    const real = { baseUrl: LINKEDIN_DEFAULT_BASE_URL, allowPrivateNetworks: false };
    const url = oauth.authorizeUrl({ endpoint: real, app: { clientId: 'cid', clientSecret: 's' }, redirectUri: CALLBACK, state: 'st-1', codeChallenge: 'ignored', scopes: oauth.scopes });
    expect(url.startsWith('https://www.linkedin.com/oauth/v2/authorization?')).toBe(true);
    expect(url).toContain('scope=openid%20profile%20w_member_social%20r_organization_social');
    const u = new URL(url);
    expect(Object.fromEntries(u.searchParams)).toEqual({ response_type: 'code', client_id: 'cid', redirect_uri: CALLBACK, state: 'st-1', scope: oauth.scopes.join(' ') });
  });

  it('exchanges the code with the client secret for tokens that work, with LinkedIn lifetimes and comma-separated scopes', async () => {
    const back = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 'st-2', codeChallenge: null, scopes: oauth.scopes }));
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    expect(back.searchParams.get('state')).toBe('st-2');
    const code = back.searchParams.get('code')!;
    const tokens = await oauth.exchangeCode({ endpoint, app: fake.app, redirectUri: CALLBACK, code, codeVerifier: null, timeoutMs: TIMEOUT_MS });
    const sent = fake.callsTo('POST', '/oauth/v2/accessToken').at(-1)!;
    expect(sent.body).toEqual({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, client_id: fake.app.clientId, client_secret: fake.app.clientSecret });
    expect(fake.tokens.get(tokens.accessToken)?.memberId).toBe(fake.alice.id);
    expect(tokens.expiresIn).toBeGreaterThan(60 * DAY - 10);
    expect(tokens.expiresIn).toBeLessThanOrEqual(60 * DAY);
    expect(tokens.refreshToken).toBeTruthy();
    expect(tokens.refreshExpiresIn).toBeGreaterThan(365 * DAY - 10);
    expect(tokens.scopes).toEqual([...LINKEDIN_SCOPES]);
    // A code works once.
    const again = await oauth.exchangeCode({ endpoint, app: fake.app, redirectUri: CALLBACK, code, codeVerifier: null, timeoutMs: TIMEOUT_MS }).catch((e) => e);
    expect(again).toBeInstanceOf(ConnectorError);
    expect(again.details).toMatchObject({ status: 400, error: 'invalid_request', retryable: false });
  });

  it('refuses a wrong client secret (invalid_client) without echoing it', async () => {
    const back = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 's', codeChallenge: null, scopes: oauth.scopes }));
    const e = await oauth.exchangeCode({ endpoint, app: { clientId: fake.app.clientId, clientSecret: 'wrong-secret-123' }, redirectUri: CALLBACK, code: back.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(e.message).not.toContain('wrong-secret-123');
  });

  it('passes on a cancelled consent and a scope the app is not approved for, with the state', async () => {
    fake.consent = 'cancel';
    const back = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 'st-c', codeChallenge: null, scopes: oauth.scopes }));
    expect(back.searchParams.get('error')).toBe('user_cancelled_authorize');
    expect(back.searchParams.get('state')).toBe('st-c');
    expect(back.searchParams.get('code')).toBeNull();

    fake.consent = 'allow';
    const memberOnly = fake.registerApp({ redirectUris: [CALLBACK], scopes: ['openid', 'profile', 'w_member_social'], programmaticRefresh: false });
    const refused = await consent(oauth.authorizeUrl({ endpoint, app: memberOnly, redirectUri: CALLBACK, state: 'st-o', codeChallenge: null, scopes: oauth.scopes }));
    expect(refused.searchParams.get('error')).toBe('unauthorized_scope_error');
    // Such an app asks for the member's scopes only, and gets a token without a refresh token.
    const ok = await consent(oauth.authorizeUrl({ endpoint, app: memberOnly, redirectUri: CALLBACK, state: 'st-m', codeChallenge: null, scopes: linkedinScopes({ organizations: false }) }));
    const tokens = await oauth.exchangeCode({ endpoint, app: memberOnly, redirectUri: CALLBACK, code: ok.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS });
    expect(tokens).toMatchObject({ refreshToken: null, refreshExpiresIn: null, scopes: [...LINKEDIN_MEMBER_SCOPES] });
  });

  it('refuses a grant that can post as no one', async () => {
    const back = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 's', codeChallenge: null, scopes: ['openid', 'profile', 'r_organization_social'] }));
    const e = await oauth.exchangeCode({ endpoint, app: fake.app, redirectUri: CALLBACK, code: back.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.details).toEqual({ missingScopes: ['w_member_social'] });
    const anonymous = await consent(oauth.authorizeUrl({ endpoint, app: fake.app, redirectUri: CALLBACK, state: 's', codeChallenge: null, scopes: ['w_member_social'] }));
    const noName = await oauth.exchangeCode({ endpoint, app: fake.app, redirectUri: CALLBACK, code: anonymous.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(noName.details).toEqual({ missingScopes: ['openid', 'profile'] });
    // Pages only (no w_member_social) is enough.
    const pages = await connect(['openid', 'profile', 'w_organization_social', 'rw_organization_admin']);
    expect(pages.scopes).toEqual(['openid', 'profile', 'w_organization_social', 'rw_organization_admin']);
  });

  it('refreshes with the same refresh token, whose expiry counts down and is never renewed', async () => {
    const first = await connect();
    const c0 = { accessToken: first.accessToken, refreshToken: first.refreshToken, expiresAt: null, refreshExpiresAt: new Date(fake.now() + first.refreshExpiresIn! * 1000).toISOString(), scopes: first.scopes, extra: { authorUrn: personUrn() } };
    fake.advance(59 * DAY);
    const r1 = await oauth.refresh({ endpoint, app: fake.app, credentials: c0, timeoutMs: TIMEOUT_MS });
    expect(r1.state).toBe('refreshed');
    const t1 = (r1 as { tokens: { accessToken: string; refreshToken: string; expiresIn: number; refreshExpiresIn: number; extra: unknown } }).tokens;
    expect(t1.accessToken).not.toBe(first.accessToken);
    expect(t1.refreshToken).toBe(first.refreshToken);
    expect(t1.expiresIn).toBeGreaterThan(60 * DAY - 10);
    expect(Math.abs(t1.refreshExpiresIn - 306 * DAY)).toBeLessThan(10);
    expect(t1.extra).toEqual({ authorUrn: personUrn() });
    expect(fake.callsTo('POST', '/oauth/v2/accessToken').at(-1)!.body).toEqual({ grant_type: 'refresh_token', refresh_token: first.refreshToken, client_id: fake.app.clientId, client_secret: fake.app.clientSecret });
    fake.advance(100 * DAY);
    const r2 = await oauth.refresh({ endpoint, app: fake.app, credentials: { ...c0, accessToken: t1.accessToken }, timeoutMs: TIMEOUT_MS });
    expect(Math.abs((r2 as { tokens: { refreshExpiresIn: number } }).tokens.refreshExpiresIn - 206 * DAY)).toBeLessThan(10);
  });

  it('a refused refresh token is revoked; outages and an operator secret problem are retried', async () => {
    const t = await connect();
    const c = { accessToken: t.accessToken, refreshToken: t.refreshToken, expiresAt: null, scopes: t.scopes, extra: {} };
    fake.inject({ path: '/oauth/v2/accessToken', kind: 'error', status: 503, body: { error: 'temporarily_unavailable', error_description: 'Service Unavailable' } });
    expect(await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: TIMEOUT_MS })).toMatchObject({ state: 'retry', error: expect.stringContaining('503') });
    fake.inject({ path: '/oauth/v2/accessToken', kind: 'rate-limit', retryAfterSeconds: 120 });
    const limited = await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: TIMEOUT_MS });
    expect(limited.state).toBe('retry');
    const at = (limited as { retryAt: Date }).retryAt.getTime();
    expect(at).toBeGreaterThan(Date.now() + 100_000);
    expect(at).toBeLessThan(Date.now() + 125_000);
    fake.inject({ path: '/oauth/v2/accessToken', kind: 'hang' });
    expect(await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: 300 })).toMatchObject({ state: 'retry' });
    expect(await oauth.refresh({ endpoint, app: { ...fake.app, clientSecret: 'not-the-secret' }, credentials: c, timeoutMs: TIMEOUT_MS })).toMatchObject({ state: 'retry', error: expect.stringContaining('LINKEDIN_CLIENT_SECRET') });

    fake.revokeRefreshToken(t.refreshToken!);
    const revoked = await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: TIMEOUT_MS });
    expect(revoked).toMatchObject({ state: 'revoked', reason: expect.stringContaining('invalid_grant') });
    expect(JSON.stringify(revoked)).not.toContain(t.refreshToken!);
    expect(JSON.stringify(revoked)).not.toContain(fake.app.clientSecret);

    // A refresh token past its year is revoked without asking.
    const before = fake.calls.length;
    const old = await oauth.refresh({ endpoint, app: fake.app, credentials: { ...c, refreshToken: 'AQold', refreshExpiresAt: new Date(Date.now() - 1000).toISOString() }, timeoutMs: TIMEOUT_MS });
    expect(old).toMatchObject({ state: 'revoked', reason: expect.stringContaining('365 days') });
    expect(fake.calls.length).toBe(before);
  });

  it('without a refresh token: keeps an active token (introspection), revokes a revoked one, and one past its 60 days', async () => {
    const token = fake.issueToken(fake.alice.id);
    fake.tokens.get(token)!.clientId = fake.app.clientId;
    const c = creds(token, personUrn(), undefined, { expiresAt: new Date(fake.tokens.get(token)!.expiresAt).toISOString() });
    const kept = await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: TIMEOUT_MS });
    expect(kept).toMatchObject({ state: 'refreshed', tokens: { accessToken: token, refreshToken: null } });
    expect((kept as { tokens: { expiresIn: number } }).tokens.expiresIn).toBeGreaterThan(60 * DAY - 10);
    expect(fake.callsTo('POST', '/oauth/v2/introspectToken').at(-1)!.body).toEqual({ client_id: fake.app.clientId, client_secret: fake.app.clientSecret, token });

    fake.revokeToken(token);
    expect(await oauth.refresh({ endpoint, app: fake.app, credentials: c, timeoutMs: TIMEOUT_MS })).toMatchObject({ state: 'revoked', reason: expect.stringContaining('revoked') });

    const before = fake.calls.length;
    const expired = await oauth.refresh({ endpoint, app: fake.app, credentials: { ...c, expiresAt: new Date(Date.now() - 1000).toISOString() }, timeoutMs: TIMEOUT_MS });
    expect(expired).toMatchObject({ state: 'revoked', reason: expect.stringContaining('60 days') });
    expect(fake.calls.length).toBe(before);
  });

  it('reads the member and the pages the member administers (approved ADMINISTRATOR only)', async () => {
    const t = await connect();
    const accounts = await linkedin.readAccounts!({ endpoint, credentials: creds(t.accessToken, '', t.scopes), timeoutMs: TIMEOUT_MS });
    expect(accounts).toEqual([
      { id: personUrn(), username: null, name: 'Alice Example', avatarUrl: fake.alice.picture, profileUrl: null, kind: 'person', extra: { authorUrn: personUrn(), personUrn: personUrn() } },
      {
        id: acmeUrn(),
        username: 'acme-corp',
        name: 'Acme Corp',
        avatarUrl: null,
        profileUrl: 'https://www.linkedin.com/company/acme-corp/',
        kind: 'organization',
        extra: { authorUrn: acmeUrn(), personUrn: personUrn(), organizationId: fake.acme.id },
      },
    ]);
    const acl = fake.callsTo('GET', '/rest/organizationAcls').at(-1)!;
    expect(acl.query).toMatchObject({ q: 'roleAssignee', role: 'ADMINISTRATOR', state: 'APPROVED' });
    expect(acl.headers['linkedin-version']).toBe(LINKEDIN_VERSION);
    expect(fake.callsTo('GET', '/rest/organizations').at(-1)!.query.ids).toBe(`List(${fake.acme.id})`);

    // The member's scopes only: the member alone, and no page lookup.
    const acls = fake.callsTo('GET', '/rest/organizationAcls').length;
    const member = await linkedin.readAccounts!({ endpoint, credentials: creds(fake.issueToken(fake.alice.id), '', ['openid', 'profile', 'w_member_social']), timeoutMs: TIMEOUT_MS });
    expect(member.map((a) => a.id)).toEqual([personUrn()]);
    expect(fake.callsTo('GET', '/rest/organizationAcls').length).toBe(acls);

    // An app with only the Community Management API (no OpenID Connect) names the member with r_basicprofile.
    const cm = fake.registerApp({ redirectUris: [CALLBACK], scopes: linkedinScopes({ openid: false }) });
    const back = await consent(oauth.authorizeUrl({ endpoint, app: cm, redirectUri: CALLBACK, state: 's', codeChallenge: null, scopes: linkedinScopes({ openid: false }) }));
    const cmTokens = await oauth.exchangeCode({ endpoint, app: cm, redirectUri: CALLBACK, code: back.searchParams.get('code')!, codeVerifier: null, timeoutMs: TIMEOUT_MS });
    const viaMe = await linkedin.readAccounts!({ endpoint, credentials: creds(cmTokens.accessToken, '', cmTokens.scopes), timeoutMs: TIMEOUT_MS });
    expect(viaMe.map((a) => [a.id, a.name, a.kind])).toEqual([
      [personUrn(), 'Alice Example', 'person'],
      [acmeUrn(), 'Acme Corp', 'organization'],
    ]);
    expect(fake.calls.some((c) => c.path === '/v2/me' && c.status === 200)).toBe(true);

    const refused = await linkedin.readAccounts!({ endpoint, credentials: creds('not-a-token', ''), timeoutMs: TIMEOUT_MS }).catch((x) => x);
    expect(refused).toBeInstanceOf(ConnectorError);
    expect(refused.details).toMatchObject({ status: 401, reauth: true });
    expect(await linkedin.readLimits!({ endpoint, credentials: creds('x', ''), timeoutMs: TIMEOUT_MS })).toEqual({ captionMaxLength: 3000, maxMedia: 20, videoMaxBytes: 500 * 1024 * 1024 });
  });
});

describe('the fake follows LinkedIn', () => {
  it('refuses a /rest call without LinkedIn-Version, and a sunset version with 426', async () => {
    const token = fake.issueToken(fake.alice.id, ORG_SCOPES);
    const bare = await fetch(`${fake.url}/rest/organizationAcls?q=roleAssignee`, { headers: { authorization: `Bearer ${token}`, 'x-restli-protocol-version': '2.0.0' } });
    expect(bare.status).toBe(400);
    expect(await bare.json()).toMatchObject({ status: 400, code: 'VERSION_MISSING' });
    const sunset = await fetch(`${fake.url}/rest/organizationAcls?q=roleAssignee`, { headers: { authorization: `Bearer ${token}`, 'linkedin-version': '202401', 'x-restli-protocol-version': '2.0.0' } });
    expect(sunset.status).toBe(426);
    expect(await sunset.json()).toEqual({ status: 426, code: 'NONEXISTENT_VERSION', message: 'Requested version 202401 is not active' });
  });

  it('cuts a commentary at an unescaped reserved character, as LinkedIn does', () => {
    expect(readLittle('Launch (beta) today')).toMatchObject({ text: 'Launch ', truncated: true });
    expect(readLittle(escapeLittleText('Launch (beta) today'))).toMatchObject({ text: 'Launch (beta) today', truncated: false });
  });
});

describe('little text', () => {
  it('escapes every reserved character but keeps hashtags, and reads LinkedIn back', () => {
    expect(escapeLittleText('a|b{c}d@e[f]g(h)i<j>k\\l*m_n~o # #1 x#y')).toBe('a\\|b\\{c\\}d\\@e\\[f\\]g\\(h\\)i\\<j\\>k\\\\l\\*m\\_n\\~o \\# \\#1 x\\#y');
    expect(escapeLittleText('Ship it #Pressroom #2026launch')).toBe('Ship it #Pressroom #2026launch');
    expect(littleToPlain('Ship \\(it\\) {hashtag|\\#|Pressroom} @[Acme](urn:li:organization:1) done')).toBe('Ship (it) #Pressroom Acme done');
    const text = 'All of them: | { } @ [ ] ( ) < > # \\ * _ ~ and #tags';
    expect(littleToPlain(escapeLittleText(text))).toBe(text);
    expect(parseLinkedInSettings({ visibility: 'connections' }, 'person')).toEqual({ ok: true, value: { visibility: 'CONNECTIONS' } });
    expect(parseLinkedInSettings({ visibility: 'CONNECTIONS' }, 'organization').ok).toBe(false);
    expect(parseLinkedInSettings({ visibility: 'friends' }, 'person').ok).toBe(false);
  });
});

describe('publishing', () => {
  let member: IntegrationRef;
  let page: IntegrationRef;
  let pageToken: string;
  beforeAll(() => {
    member = integ(creds(fake.issueToken(fake.alice.id, ['openid', 'profile', 'w_member_social']), personUrn()));
    pageToken = fake.issueToken(fake.alice.id, ORG_SCOPES);
    page = integ(creds(pageToken, acmeUrn(), ORG_SCOPES));
  });

  it('declares no idempotency and LinkedIn daily posting limits', () => {
    expect(connector.acceptsIdempotencyToken).toBe(false);
    expect(connector.publishLimits).toEqual({ perIntegration: { maxInFlight: 1, maxPerWindow: 150, windowSeconds: 86400 } });
    expect(typeof connector.findPublished).toBe('function');
  });

  it('publishes a text post with the versioned headers, escaping reserved characters and keeping hashtags', async () => {
    const caption = 'Launch (beta) for *everyone* — ask @support_team [now] #Pressroom';
    const r = published(await connector.publish(member, edition({ caption })));
    expect(r.platformPostId).toMatch(/^urn:li:share:\d+$/);
    expect(r.permalink).toBe(`https://www.linkedin.com/feed/update/${r.platformPostId}/`);
    const call = fake.callsTo('POST', '/rest/posts').at(-1)!;
    expect(call.headers).toMatchObject({ 'linkedin-version': LINKEDIN_VERSION, 'x-restli-protocol-version': '2.0.0', authorization: `Bearer ${member.credentials!.accessToken}` });
    expect(call.body).toEqual({
      author: personUrn(),
      commentary: escapeLittleText(caption),
      visibility: 'PUBLIC',
      distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
      lifecycleState: 'PUBLISHED',
      isReshareDisabledByAuthor: false,
    });
    const p = fake.posts.get(r.platformPostId)!;
    expect(p).toMatchObject({ author: personUrn(), text: caption, truncated: false, hashtags: ['Pressroom'] });
  });

  it('publishes as an organization page, with a visibility setting', async () => {
    const r = published(await connector.publish(page, edition({ caption: 'From the page', settings: { visibility: 'LOGGED_IN' } })));
    expect(fake.posts.get(r.platformPostId)).toMatchObject({ author: acmeUrn(), visibility: 'LOGGED_IN', text: 'From the page' });
    const before = fake.calls.length;
    expect(await connector.publish(page, edition({ settings: { visibility: 'CONNECTIONS' } }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('CONNECTIONS') });
    expect(fake.calls.length).toBe(before);
  });

  it('uploads one image and sets its alt text in content.media', async () => {
    const png = PNG();
    const r = published(await connector.publish(member, edition({ media: [mediaRef('m1', png, { altText: 'A chart (Q3)' })] })));
    const init = fake.callsTo('POST', '/rest/images').at(-1)!;
    expect(init.query).toEqual({ action: 'initializeUpload' });
    expect(init.body).toEqual({ initializeUploadRequest: { owner: personUrn() } });
    const p = fake.posts.get(r.platformPostId)!;
    const img = fake.images.get(p.content!.media.id)!;
    expect(img).toMatchObject({ owner: personUrn(), status: 'AVAILABLE', sha256: sha(png) });
    expect(p.content).toEqual({ media: { id: img.urn, altText: 'A chart (Q3)' } });
  });

  it('uploads several images as a multiImage post with each alt text', async () => {
    const files = [PNG(), PNG(), PNG()];
    const r = published(await connector.publish(page, edition({ media: files.map((f, n) => mediaRef(`mi${n}`, f, { altText: n === 1 ? null : `Picture ${n}` })) })));
    const p = fake.posts.get(r.platformPostId)!;
    const images = p.content!.multiImage.images as { id: string; altText?: string }[];
    expect(images.map((i) => i.altText)).toEqual(['Picture 0', undefined, 'Picture 2']);
    expect(images.map((i) => fake.images.get(i.id)!.sha256)).toEqual(files.map(sha));
    expect(images.every((i) => fake.images.get(i.id)!.owner === acmeUrn())).toBe(true);
  });

  it('uploads a video in parts with their ETags, waits for processing, and posts it', async () => {
    const video = MP4(250);
    const r = published(await connector.publish(page, edition({ media: [mediaRef('v1', video, { type: 'video', contentType: 'video/mp4', altText: 'Demo' })] })));
    expect(r.platformPostId).toMatch(/^urn:li:ugcPost:\d+$/);
    const init = fake.callsTo('POST', '/rest/videos').find((c) => c.query.action === 'initializeUpload' && c.body.initializeUploadRequest.fileSizeBytes === 250)!;
    expect(init.body).toEqual({ initializeUploadRequest: { owner: acmeUrn(), fileSizeBytes: 250, uploadCaptions: false, uploadThumbnail: false } });
    const p = fake.posts.get(r.platformPostId)!;
    const v = fake.videos.get(p.content!.media.id)!;
    expect(v.parts.map((x) => [x.firstByte, x.lastByte])).toEqual([[0, 99], [100, 199], [200, 249]]);
    expect(v.parts.map((x) => x.sha256)).toEqual([sha(video.subarray(0, 100)), sha(video.subarray(100, 200)), sha(video.subarray(200))]);
    expect(v.finalizedWith).toEqual(v.parts.map((x) => x.etag));
    expect(v.uploadToken).not.toBe('');
    const fin = fake.callsTo('POST', '/rest/videos').find((c) => c.query.action === 'finalizeUpload' && c.body.finalizeUploadRequest.video === v.urn)!;
    expect(fin.body.finalizeUploadRequest.uploadToken).toBe(v.uploadToken);
    expect(fake.callsTo('GET', `/rest/videos/${encodeURIComponent(v.urn)}`).length).toBe(3);
    expect(p.content).toEqual({ media: { id: v.urn, altText: 'Demo' } });
  });

  it('fails a video LinkedIn cannot process for good, and one still processing for now, without a post', async () => {
    const posts = fake.posts.size;
    fake.processing.videoFails = true;
    expect(await connector.publish(page, edition({ media: [mediaRef('v2', MP4(120), { type: 'video' })] }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('could not be transcoded') });
    fake.processing.videoFails = false;
    fake.processing.videoPolls = 1000;
    expect(await connector.publish(page, edition({ media: [mediaRef('v3', MP4(120), { type: 'video' })] }))).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('still processing') });
    expect(fake.posts.size).toBe(posts);
  });

  it('refuses what LinkedIn cannot post before sending anything', async () => {
    const before = fake.calls.length;
    expect(await connector.publish(member, edition({ thread: [{ caption: 'two', media: [] }] }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('no threads') });
    expect(await connector.publish(member, edition({ caption: 'x'.repeat(3001) }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('3000') });
    expect(await connector.publish(member, edition({ media: [mediaRef('a', PNG()), mediaRef('b', MP4(100), { type: 'video' })] }))).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('one video alone') });
    expect(await connector.publish(member, edition({ caption: '  ' }))).toMatchObject({ state: 'failed', permanent: true });
    expect(fake.calls.length).toBe(before);
  });

  it('maps 5xx to transient, 429 to the Retry-After or a 60 s backoff, 401 to reauth, 422 to permanent', async () => {
    fake.inject({ method: 'POST', path: '/rest/posts', kind: 'error', status: 503, body: { status: 503, message: 'Service Unavailable' } });
    expect(await connector.publish(member, edition())).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('503') });

    fake.inject({ method: 'POST', path: '/rest/posts', kind: 'rate-limit' });
    const limited = await connector.publish(member, edition());
    expect(limited).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('TOO_MANY_REQUESTS') });
    const at = Date.parse((limited as { retryAt: string }).retryAt);
    expect(at).toBeGreaterThan(Date.now() + 55_000);
    expect(at).toBeLessThan(Date.now() + 61_000);
    fake.inject({ method: 'POST', path: '/rest/posts', kind: 'rate-limit', retryAfterSeconds: 600 });
    const later = Date.parse(((await connector.publish(member, edition())) as { retryAt: string }).retryAt);
    expect(later).toBeGreaterThan(Date.now() + 590_000);

    const revokedToken = fake.issueToken(fake.alice.id);
    fake.revokeToken(revokedToken);
    const reauth = await connector.publish(integ(creds(revokedToken, personUrn())), edition());
    expect(reauth).toMatchObject({ state: 'failed', permanent: false, reauth: true, error: expect.stringContaining('REVOKED_ACCESS_TOKEN') });
    expect(JSON.stringify(reauth)).not.toContain(revokedToken);

    fake.inject({ method: 'POST', path: '/rest/posts', kind: 'error', status: 422, body: { message: 'ERROR :: /commentary :: invalid', status: 422 } });
    expect(await connector.publish(member, edition())).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('/commentary :: invalid') });

    // A scope the member did not grant: LinkedIn's 403, for good.
    const noPages = integ(creds(fake.issueToken(fake.alice.id, ['openid', 'profile', 'w_member_social']), acmeUrn()));
    expect(await connector.publish(noPages, edition())).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('ACCESS_DENIED') });
  });

  it('a lost answer to an upload is only transient (no post was made)', async () => {
    const posts = fake.posts.size;
    fake.inject({ method: 'PUT', path: /^\/dms-uploads\/image\//, kind: 'hang' });
    expect(await connector.publish(member, edition({ media: [mediaRef('h', PNG())] }))).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('no post was made') });
    expect(fake.posts.size).toBe(posts);
  });

  it('a post made without an answer is unknown; findPublished finds it, and a resend gets it back through DUPLICATE_POST', async () => {
    const e = edition({ caption: 'Timed out (but made) #launch' });
    const since = new Date();
    fake.inject({ method: 'POST', path: '/rest/posts', kind: 'hang-after-commit' });
    const r = await connector.publish(page, e);
    expect(r.state).toBe('unknown');
    const made = fake.postsOf(acmeUrn()).at(-1)!;
    expect(made.text).toBe('Timed out (but made) #launch');

    const f = await connector.findPublished!(page, e, since);
    expect(f).toEqual({ platformPostId: made.urn, permalink: `https://www.linkedin.com/feed/update/${made.urn}/` });
    const list = fake.callsTo('GET', '/rest/posts').at(-1)!;
    expect(list.query).toMatchObject({ q: 'author', author: acmeUrn(), sortBy: 'LAST_MODIFIED' });
    expect(list.path).toBe('/rest/posts');

    // Not found: another caption, or only before `since`.
    expect(await connector.findPublished!(page, { ...e, caption: 'Something else' }, since)).toBeNull();
    expect(await connector.findPublished!(page, e, new Date(Date.now() + 10 * 60_000))).toBeNull();
    expect(await connector.findPublished!(page, { ...e, media: [mediaRef('z', PNG())] }, since)).toBeNull();

    // A resend on a first attempt (no lookup before): LinkedIn refuses the duplicate, the connector finds its own post.
    const posts = fake.postsOf(acmeUrn()).length;
    const again = published(await connector.publish(page, e));
    expect(again.platformPostId).toBe(made.urn);
    expect(fake.callsTo('POST', '/rest/posts').at(-1)!.status).toBe(422);
    expect(fake.postsOf(acmeUrn()).length).toBe(posts);

    // A later attempt looks first and does not post at all.
    const sends = fake.callsTo('POST', '/rest/posts').length;
    expect(published(await connector.publish(page, { ...e, attempt: 2 })).platformPostId).toBe(made.urn);
    expect(fake.callsTo('POST', '/rest/posts').length).toBe(sends);
  });

  it('pages through the author\'s posts to find an older match', async () => {
    const e = edition({ caption: 'Deep in the list' });
    const since = new Date(Date.now() - 1000);
    const target = published(await connector.publish(page, e));
    for (let i = 0; i < 7; i++) published(await connector.publish(page, edition()));
    const reads = fake.callsTo('GET', '/rest/posts').length;
    expect(await connector.findPublished!(page, e, since)).toMatchObject({ platformPostId: target.platformPostId });
    const starts = fake.callsTo('GET', '/rest/posts').slice(reads).map((c) => c.query.start);
    expect(starts.slice(0, 2)).toEqual(['0', '5']);
  });

  it('a DUPLICATE_POST of a post older than this edition stays a permanent refusal', async () => {
    const caption = `Weekly tip ${randomBytes(3).toString('hex')}`;
    const first = published(await connector.publish(page, edition({ caption })));
    // The identical post was made an hour ago (inside LinkedIn's duplicate window), before this edition's time.
    const old = fake.posts.get(first.platformPostId)!;
    old.createdAt -= 60 * 60_000;
    old.lastModifiedAt = old.createdAt;
    const refused = await connector.publish(page, edition({ caption, scheduledAt: new Date(Date.now() - 60_000).toISOString() }));
    expect(refused).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('DUPLICATE_POST') });
    expect(fake.postsOf(acmeUrn()).filter((p) => p.text === caption)).toHaveLength(1);
  });

  it("cannot look for a member's post without r_member_social, and says so", async () => {
    const e = edition();
    const nope = await connector.findPublished!(member, e, new Date()).catch((x) => x);
    expect(nope).toBeInstanceOf(ConnectorError);
    expect(nope.code).toBe('NOT_SUPPORTED');
    // With the permission the member's posts are read.
    const reader = integ(creds(fake.issueToken(fake.alice.id, ['openid', 'profile', 'w_member_social', 'r_member_social']), personUrn(), ['openid', 'profile', 'w_member_social', 'r_member_social']));
    const r = published(await connector.publish(reader, e));
    expect(await connector.findPublished!(reader, e, new Date(Date.now() - 5000))).toMatchObject({ platformPostId: r.platformPostId });
    // A duplicate a member cannot look for is refused, naming what LinkedIn said.
    expect(await connector.publish(member, e)).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('r_member_social') });
  });

  it("stops at LinkedIn's daily limit of the member (429)", async () => {
    const other = await startFakeLinkedIn({ dailyPostLimit: 2 });
    try {
      const c = createLinkedInConnector({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: false, baseUrl: other.url });
      // No endpoint on the integration: the connector's operator base (trusted, so a loopback fake works).
      const i = integ(creds(other.issueToken(other.alice.id), `urn:li:person:${other.alice.id}`), { endpoint: undefined });
      published(await c.publish(i, edition()));
      published(await c.publish(i, edition()));
      expect(await c.publish(i, edition())).toMatchObject({ state: 'failed', permanent: false, retryAt: expect.any(String), error: expect.stringContaining('MEMBER DAY limit') });
    } finally {
      await other.close();
    }
  });

  it('edits the caption with a PARTIAL_UPDATE of the commentary', async () => {
    const r = published(await connector.publish(page, edition({ caption: 'Before' })));
    expect(await connector.editPublishedCaption(page, { platformPostId: r.platformPostId, caption: 'After (edited) #now', attempt: 1 })).toEqual({ state: 'updated' });
    const call = fake.calls.at(-1)!;
    expect(call).toMatchObject({ method: 'POST', path: `/rest/posts/${encodeURIComponent(r.platformPostId)}`, body: { patch: { $set: { commentary: 'After \\(edited\\) #now' } } }, status: 204 });
    expect(call.headers['x-restli-method']).toBe('PARTIAL_UPDATE');
    expect(fake.posts.get(r.platformPostId)).toMatchObject({ text: 'After (edited) #now', edited: true });
    expect(await connector.editPublishedCaption(page, { platformPostId: 'urn:li:share:1', caption: 'x', attempt: 1 })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('404') });
    fake.inject({ method: 'POST', path: /^\/rest\/posts\/urn/, kind: 'hang' });
    expect(await connector.editPublishedCaption(page, { platformPostId: r.platformPostId, caption: 'Again', attempt: 1 })).toMatchObject({ state: 'failed', permanent: false });
  });

  it('reads share statistics of a page post and the page followers; a member post has none', async () => {
    const share = published(await connector.publish(page, edition({ caption: 'Count me' })));
    Object.assign(fake.posts.get(share.platformPostId)!.stats, { impressions: 900, uniqueImpressions: 700, likes: 12, shares: 3, clicks: 40 });
    fake.commentAs(`urn:li:person:${fake.bob.id}`, share.platformPostId, 'Nice');
    const m = await connector.fetchMetrics(page, { platformPostId: share.platformPostId });
    expect(m).toMatchObject({ impressions: 900, reach: 700, likes: 12, comments: 1, shares: 3, clicks: 40 });
    const q = fake.callsTo('GET', '/rest/organizationalEntityShareStatistics').at(-1)!;
    expect(q.query).toEqual({ q: 'organizationalEntity', organizationalEntity: acmeUrn(), shares: `List(${share.platformPostId})` });

    fake.processing.videoPolls = 0;
    const video = published(await connector.publish(page, edition({ media: [mediaRef('vm', MP4(50), { type: 'video' })] })));
    fake.posts.get(video.platformPostId)!.stats.impressions = 5;
    expect(await connector.fetchMetrics(page, { platformPostId: video.platformPostId })).toMatchObject({ impressions: 5 });
    expect(fake.callsTo('GET', '/rest/organizationalEntityShareStatistics').at(-1)!.query.ugcPosts).toBe(`List(${video.platformPostId})`);

    const before = fake.calls.length;
    expect(await connector.fetchMetrics(member, { platformPostId: share.platformPostId })).toBeNull();
    expect(await connector.fetchAccountMetrics(member)).toBeNull();
    expect(fake.calls.length).toBe(before);

    expect(await connector.fetchAccountMetrics(page)).toMatchObject({ followers: 1234, profileViews: null, demographics: null });
    expect(fake.calls.at(-1)!).toMatchObject({ path: `/rest/networkSizes/${encodeURIComponent(acmeUrn())}`, query: { edgeType: 'COMPANY_FOLLOWED_BY_MEMBER' } });

    fake.inject({ path: '/rest/organizationalEntityShareStatistics', kind: 'rate-limit' });
    const e = await connector.fetchMetrics(page, { platformPostId: share.platformPostId }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectorError);
    expect(e.code).toBe('RATE_LIMITED');
  });

  it('comments as the page under a post and under a comment; a retry finds the comment an earlier try made', async () => {
    const post = published(await connector.publish(page, edition({ caption: 'Ask us anything' })));
    const question = fake.commentAs(`urn:li:person:${fake.bob.id}`, post.platformPostId, 'What is Pressroom?');
    const top = await connector.reply(page, { messageId: 'm1', threadKind: 'comment', platformThreadId: post.platformPostId, inReplyTo: null, text: 'Thanks all', attempt: 1, idempotencyToken: 'k1' });
    expect(top.state).toBe('done');
    const made = fake.comments.get((top as { platformMessageId: string }).platformMessageId)!;
    expect(made).toMatchObject({ actor: acmeUrn(), object: post.platformPostId, text: 'Thanks all', parentComment: null });
    expect(fake.calls.at(-1)!.body).toEqual({ actor: acmeUrn(), object: post.platformPostId, message: { text: 'Thanks all' } });

    const nested = await connector.reply(page, { messageId: 'm2', threadKind: 'comment', platformThreadId: post.platformPostId, inReplyTo: question.urn, text: 'A publishing API.', attempt: 1, idempotencyToken: 'k2' });
    expect(nested).toMatchObject({ state: 'done' });
    const reply = fake.comments.get((nested as { platformMessageId: string }).platformMessageId)!;
    expect(reply).toMatchObject({ actor: acmeUrn(), parentComment: question.urn, text: 'A publishing API.' });
    expect(fake.calls.at(-1)!.path).toBe(`/rest/socialActions/${restliEncode(question.urn)}/comments`);
    expect(fake.calls.at(-1)!.path).toContain('%28urn%3Ali%3Aactivity%3A');

    // The answer is lost after LinkedIn made the comment; the retry looks first and makes no second one.
    fake.inject({ method: 'POST', path: /\/comments$/, kind: 'hang-after-commit' });
    const lost = await connector.reply(page, { messageId: 'm3', threadKind: 'comment', platformThreadId: post.platformPostId, inReplyTo: null, text: 'Once only', attempt: 1, idempotencyToken: 'k3' });
    expect(lost).toMatchObject({ state: 'failed', permanent: false, error: expect.stringContaining('looks for it first') });
    const retry = await connector.reply(page, { messageId: 'm3', threadKind: 'comment', platformThreadId: post.platformPostId, inReplyTo: null, text: 'Once only', attempt: 2, idempotencyToken: 'k3b' });
    expect(retry.state).toBe('done');
    expect([...fake.comments.values()].filter((c) => c.text === 'Once only' && !c.deleted)).toHaveLength(1);
    expect((retry as { platformMessageId: string }).platformMessageId).toBe([...fake.comments.values()].find((c) => c.text === 'Once only')!.urn);

    const before = fake.calls.length;
    expect(await connector.reply(page, { messageId: 'm4', threadKind: 'message', platformThreadId: 'x', inReplyTo: null, text: 'hi', attempt: 1, idempotencyToken: 'k4' })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(fake.calls.length).toBe(before);
  });

  it("deletes the page's own comments (idempotently) and cannot hide or delete others'", async () => {
    const post = published(await connector.publish(page, edition({ caption: 'Moderate me' })));
    const mine = fake.commentAs(acmeUrn(), post.platformPostId, 'Oops');
    const theirs = fake.commentAs(`urn:li:person:${fake.bob.id}`, post.platformPostId, 'Rude remark');
    const mod = { messageId: 'd1', threadKind: 'comment' as const, platformThreadId: post.platformPostId, platformMessageId: mine.urn, action: 'delete' as const, idempotencyToken: 'dk' };
    expect(await connector.moderate(page, mod)).toEqual({ state: 'done', platformMessageId: mine.urn });
    expect(fake.comments.get(mine.urn)!.deleted).toBe(true);
    const del = fake.callsTo('DELETE', /\/comments\//).at(-1)!;
    expect(del.path).toBe(`/rest/socialActions/${encodeURIComponent(fake.posts.get(post.platformPostId)!.activityUrn)}/comments/${mine.id}`);
    expect(del.query).toEqual({ actor: acmeUrn() });
    expect(await connector.moderate(page, mod)).toEqual({ state: 'done', platformMessageId: mine.urn });

    expect(await connector.moderate(page, { ...mod, platformMessageId: theirs.urn })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(fake.comments.get(theirs.urn)!.deleted).toBe(false);
    const before = fake.calls.length;
    expect(await connector.moderate(page, { ...mod, platformMessageId: theirs.urn, action: 'hide' })).toMatchObject({ state: 'failed', permanent: true, error: expect.stringContaining('NOT_SUPPORTED') });
    expect(fake.calls.length).toBe(before);
  });

  it('has no boards, categories or drafts, and needs its credentials', async () => {
    for (const p of [connector.listBoards(page), connector.listVideoCategories(page), connector.createDraft(page, { contentId: 'c', title: 't', bodyHtml: '', cover: null, images: [] })]) {
      await expect(p).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
    }
    await expect(connector.publish(integ(creds('t', 'not-an-urn')), edition())).rejects.toMatchObject({ code: 'MISSING_SECRET' });
    await expect(connector.publish(integ(null as unknown as IntegrationCredentials), edition())).rejects.toMatchObject({ code: 'MISSING_SECRET' });
  });
});
