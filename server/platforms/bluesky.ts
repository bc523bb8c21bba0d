// The Bluesky connector: an account on any AT Protocol PDS (bsky.social or a
// self-hosted one), reached through its XRPC API (https://docs.bsky.app), one
// file, one PlatformModule. Every call goes through platformRequest
// (server/platforms/http.ts); @atproto/api lends only its RichText facet
// detection and its types.
//
// Connecting (PasswordFlow, no operator app): the user gives a handle or DID
// and an app password (Bluesky settings, "App passwords"), and the connector
// opens a session at the sign-in service (endpoint.baseUrl, default
// https://bsky.social): com.atproto.server.createSession. The account's own
// password is refused (its session can change the account: the access token's
// scope says which kind of password made it), so Pressroom only ever holds a
// password the user can revoke alone. The session's access JWT (about two hours;
// its `exp` claim gives the expiry) and refresh JWT are the credentials; extra
// keeps {did, handle, pdsUrl}: pdsUrl is the account's PDS as its DID document
// names it (#atproto_pds), which the connector then calls for everything
// but the session, as the AT Protocol's own client does. Refresh:
// com.atproto.server.refreshSession with the refresh JWT, which rotates it
// (the answer holds a new pair). ExpiredToken/InvalidToken (a revoked app
// password, a deleted session) or any other 4xx: revoked; 429, 5xx, no answer:
// retry.
//
// Connecting through AT Protocol OAuth (POST {ws}/integrations/connect; the protocol is
// @atproto/oauth-client-node's, wired in server/platforms/bluesky-oauth.ts): the credentials are
// then a DPoP-bound session (extra.oauth holds its DPoP key, issuer, PDS and client), every call
// carries a DPoP proof instead of a bearer token (accessTokenOf, xrpc), and password.refresh hands
// such a session to the library's refresh.
//
// Publishing (Connector): each message of the thread is one app.bsky.feed.post
// record made by com.atproto.repo.createRecord under a record key derived from
// the edition's idempotency token and the message's place in the thread
// (recordKey below: TID-shaped, so valid where the lexicon asks for a TID).
// Before making a record, and again after a failed or unanswered
// createRecord, com.atproto.repo.getRecord with that key tells whether an
// earlier attempt made it already (the reference PDS answers a second
// createRecord on the same key with a 500, not a conflict): a re-sent edition
// finds its posts instead of making them twice, and a thread resumes where it
// stopped. So the connector accepts the idempotency token and never answers
// `unknown`. Per message: media first (com.atproto.repo.uploadBlob, the bytes
// from MediaRef.read(); images as app.bsky.embed.images with alt text and
// aspect ratio, at most 4 and 1,000,000 bytes each; one MP4 video as
// app.bsky.embed.video, at most 100,000,000 bytes: the lexicons' limits), else
// a link card (app.bsky.embed.external) for the first link: title and
// description from settings.linkCard, else the URL itself (the connector
// fetches no page for a preview). Facets (links, #tags, @mentions with the
// handle resolved to a DID by com.atproto.identity.resolveHandle; an unknown
// handle stays plain text) carry UTF-8 byte offsets. Replies chain with
// reply {root, parent} strong refs (uri + cid). settings.language (or
// settings.languages, at most 3) becomes `langs`.
//
// Outcomes: 2xx published (platformPostId the at:// URI of the first post,
// permalink https://bsky.app/profile/<handle>/post/<rkey>); 429 failed, retry
// at RateLimit-Reset (epoch seconds) or Retry-After; 401, or 400 ExpiredToken /
// InvalidToken (what the PDS answers for a stale access token), failed with
// reauth; other 4xx failed for good with the PDS's message; 5xx, nothing sent
// or no answer failed for now (a re-send finds what was made). Metrics come
// from the AppView through the PDS (app.bsky.feed.getPosts,
// app.bsky.actor.getProfile); a PDS that has no AppView to ask answers null.
// No message ever contains a token or a password.
import { createHash } from 'node:crypto';
import type { AppBskyRichtextFacet } from '@atproto/api';
import { dpopHeaders, noteDpopNonce, oauthExtra, refreshOAuthSession } from './bluesky-oauth.ts';
import { platformRequest, type PlatformRequest, type PlatformResponse, httpUrl, isOk as ok, jsonObject as obj, hostOf as safeHost, type PlatformAnswer as Answer, type OkAnswer } from './http.ts';
import {
  ConnectorError,
  type AccountLimits,
  type AccountMetrics,
  type Connector,
  type ConnectorOptions,
  type InboxActionResult,
  type InboxModeration,
  type InboxReply,
  type IntegrationCredentials,
  type IntegrationRef,
  type MediaRef,
  type MetricsQuery,
  type PlatformAccount,
  type PlatformEndpoint,
  type PlatformModule,
  type PostMetrics,
  type PublishableEdition,
  type PublishResult,
  type RefreshOutcome,
  type TokenSet,
} from './types.ts';

export const BLUESKY_DEFAULT_BASE_URL = 'https://bsky.social';
export const POST_COLLECTION = 'app.bsky.feed.post';
/** The lexicons' limits (app.bsky.feed.post, app.bsky.embed.images, app.bsky.embed.video). */
export const BLUESKY_LIMITS = {
  textMaxGraphemes: 300,
  maxImages: 4,
  imageMaxBytes: 1_000_000,
  videoMaxBytes: 100_000_000,
  maxLangs: 3,
} as const;

const MAX_ERROR_TEXT = 500;

// ---------------------------------------------------------------------------
// Record keys
// ---------------------------------------------------------------------------

const S32 = '234567abcdefghijklmnopqrstuvwxyz';
/** 2023-01-01T00:00:00Z in microseconds: the derived keys' timestamps fall in the 2.2 years after it (never in the future). */
const RKEY_EPOCH_US = 1_672_531_200_000_000n;

/**
 * The record key of message `index` (0: the first post) of the edition whose
 * attempts share `token`: a TID (13 base32-sortable characters of a 64-bit
 * number whose top bit is 0: 53 bits of microseconds, 10 of clock id), both
 * parts taken from SHA-256 of the token and index, so every attempt names the
 * same record and two editions do not collide.
 */
export function recordKey(token: string, index: number): string {
  const h = createHash('sha256').update(`pressroom-bluesky:${token}:${index}`).digest();
  const n = h.readBigUInt64BE(0);
  const clock = n & 0x3ffn;
  const micros = RKEY_EPOCH_US + ((n >> 10n) & ((1n << 46n) - 1n));
  let v = (micros << 10n) | clock;
  let out = '';
  for (let i = 0; i < 13; i++) {
    out = S32[Number(v & 31n)] + out;
    v >>= 5n;
  }
  return out;
}

/** at://<did>/<collection>/<rkey> split into its parts; null when it is not one. */
export function parseAtUri(uri: string): { repo: string; collection: string; rkey: string } | null {
  const m = /^at:\/\/([^/?#]+)\/([^/?#]+)\/([^/?#]+)$/.exec(uri);
  return m ? { repo: m[1], collection: m[2], rkey: m[3] } : null;
}

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

export interface BlueskyLinkCard {
  /** The link the card shows; default the message's first link. */
  uri?: string;
  title?: string;
  description?: string;
}

export interface BlueskySettings {
  langs?: string[];
  /** false: no card; an object: the card's data; absent: a card titled with the URL. */
  linkCard?: BlueskyLinkCard | false;
}

const LANG = /^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/;

/** An edition's Bluesky settings, checked: the value, or the reason it is refused. */
export function parseBlueskySettings(settings: Record<string, unknown> | null | undefined): { ok: true; value: BlueskySettings } | { ok: false; error: string } {
  const s = settings ?? {};
  const out: BlueskySettings = {};
  const langs: string[] = [];
  if (s.language !== undefined && s.language !== null) {
    if (typeof s.language !== 'string' || !LANG.test(s.language)) {
      return { ok: false, error: 'settings.language must be a BCP 47 language tag (e.g. "en" or "pt-BR").' };
    }
    langs.push(s.language);
  }
  if (s.languages !== undefined && s.languages !== null) {
    if (!Array.isArray(s.languages) || s.languages.some((l) => typeof l !== 'string' || !LANG.test(l))) {
      return { ok: false, error: 'settings.languages must be a list of BCP 47 language tags.' };
    }
    for (const l of s.languages as string[]) if (!langs.includes(l)) langs.push(l);
  }
  if (langs.length > BLUESKY_LIMITS.maxLangs) return { ok: false, error: `A Bluesky post names at most ${BLUESKY_LIMITS.maxLangs} languages.` };
  if (langs.length > 0) out.langs = langs;
  if (s.linkCard !== undefined && s.linkCard !== null) {
    if (s.linkCard === false) out.linkCard = false;
    else if (typeof s.linkCard !== 'object' || Array.isArray(s.linkCard)) {
      return { ok: false, error: 'settings.linkCard must be false or an object {uri?, title?, description?}.' };
    } else {
      const c = s.linkCard as Record<string, unknown>;
      const card: BlueskyLinkCard = {};
      for (const k of ['uri', 'title', 'description'] as const) {
        if (c[k] === undefined || c[k] === null) continue;
        if (typeof c[k] !== 'string') return { ok: false, error: `settings.linkCard.${k} must be a string.` };
        card[k] = c[k] as string;
      }
      if (card.uri !== undefined && !httpUrl(card.uri)) return { ok: false, error: 'settings.linkCard.uri must be an http(s) URL.' };
      out.linkCard = card;
    }
  }
  return { ok: true, value: out };
}

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

type Failed = Exclude<PlatformResponse, Answer> | Answer;


interface Target {
  baseUrl: string;
  allowPrivateNetworks: boolean;
}

function trimBase(u: string): string {
  return u.replace(/\/+$/, '');
}

function originOf(u: string): string | null {
  try {
    return new URL(u).origin;
  } catch {
    return null;
  }
}


/**
 * The access token a call carries: an app-password session's JWT (Authorization: Bearer), or an
 * AT Protocol OAuth session's DPoP-bound token with its key (Authorization: DPoP and a proof
 * signed per request, server/platforms/bluesky-oauth.ts).
 */
export type AccessToken = string | { accessToken: string; dpopJwk: Record<string, unknown> };

/** One XRPC call. A host that must be public is reached over https only (the tokens travel in it). */
async function xrpc(
  target: Target,
  r: Omit<PlatformRequest, 'url' | 'allowPrivateNetworks'> & { nsid: string; params?: Record<string, string | string[]>; token?: AccessToken },
): Promise<PlatformResponse> {
  const u = `${trimBase(target.baseUrl)}/xrpc/${r.nsid}`;
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return { kind: 'not-sent', permanent: true, error: `The Bluesky service address is not a URL (${u.slice(0, 200)}).` };
  }
  if (!target.allowPrivateNetworks && url.protocol !== 'https:') {
    return { kind: 'not-sent', permanent: true, error: `A Bluesky service is reached over https only (${safeHost(u)}).` };
  }
  for (const [k, v] of Object.entries(r.params ?? {})) for (const x of Array.isArray(v) ? v : [v]) url.searchParams.append(k, x);
  const { nsid: _n, params: _p, token, ...rest } = r;
  if (token && typeof token === 'object') {
    // DPoP: a fresh proof per request; a PDS that wants a (new) nonce answers 401 use_dpop_nonce once.
    const send = () =>
      platformRequest({
        ...rest,
        url,
        headers: { ...dpopHeaders({ method: r.method, url, accessToken: token.accessToken, dpopJwk: token.dpopJwk }), ...(r.headers ?? {}) },
        allowPrivateNetworks: target.allowPrivateNetworks,
      });
    const first = await send();
    if (first.kind === 'answer' && noteDpopNonce(url, first.status, first.headers)) return send();
    return first;
  }
  return platformRequest({
    ...rest,
    url,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(r.headers ?? {}) },
    allowPrivateNetworks: target.allowPrivateNetworks,
  });
}

/** The token of a call made with stored credentials: the OAuth session's (DPoP) or the app-password session's. */
export function accessTokenOf(credentials: IntegrationCredentials): AccessToken {
  const o = oauthExtra(credentials);
  return o ? { accessToken: credentials.accessToken, dpopJwk: o.dpopJwk } : credentials.accessToken;
}


function str(v: unknown): string | null {
  return typeof v === 'string' && v ? v : null;
}

/** The XRPC error name ({"error": "ExpiredToken", "message": ...}). */
function errorName(o: Answer): string | null {
  const e = obj(o.json).error;
  return typeof e === 'string' && /^[A-Za-z]+$/.test(e) ? e : null;
}

function platformMessage(o: Answer): string {
  const b = obj(o.json);
  const parts: string[] = [];
  if (typeof b.error === 'string') parts.push(b.error);
  if (typeof b.message === 'string') parts.push(b.message);
  const text = parts.join(': ') || (o.text && !o.text.trimStart().startsWith('<') ? o.text.trim() : '');
  return text.slice(0, MAX_ERROR_TEXT);
}

function describe(o: Answer, what: string): string {
  const m = platformMessage(o);
  return `Bluesky refused ${what} (HTTP ${o.status}${m ? `: ${m}` : ''}).`;
}

/** The access token was not accepted: the PDS answers 400 ExpiredToken/InvalidToken for a stale or foreign one, 401 when it is missing or refused. */
function tokenRefused(o: Answer): boolean {
  const e = errorName(o);
  return o.status === 401 || (o.status === 400 && (e === 'ExpiredToken' || e === 'InvalidToken'));
}

/** A ConnectorError for the methods that throw (sign-in, account reads, metrics). */
function upstream(o: Failed, what: string): ConnectorError {
  if (o.kind === 'answer') {
    if (o.status === 429) return new ConnectorError('RATE_LIMITED', describe(o, what), { status: 429, retryAt: o.rateLimit?.resetAt?.toISOString() ?? null });
    const e = errorName(o);
    return new ConnectorError('UPSTREAM_ERROR', describe(o, what), { status: o.status, ...(e ? { error: e } : {}), retryable: o.status >= 500 });
  }
  if (o.kind === 'not-sent' && o.permanent) return new ConnectorError('UNSAFE_URL', o.error);
  return new ConnectorError('UPSTREAM_ERROR', o.error, { retryable: true });
}

type NotPublished = Exclude<PublishResult, { state: 'published' }>;

/** A failed call's publish outcome. Every Bluesky step is safe to re-send (blobs by content, records by key): never `unknown`. */
function failure(o: Failed, what: string): NotPublished & { state: 'failed' } {
  if (o.kind === 'not-sent') return { state: 'failed', permanent: o.permanent, error: o.error };
  if (o.kind === 'unknown') return { state: 'failed', permanent: false, error: `${o.error}; the next attempt looks the post up by its record key before making it.` };
  if (o.status === 429) {
    const at = o.rateLimit?.resetAt ?? null;
    return { state: 'failed', permanent: false, error: describe(o, what), ...(at ? { retryAt: at.toISOString() } : {}) };
  }
  if (tokenRefused(o)) return { state: 'failed', permanent: false, reauth: true, error: describe(o, what) };
  if (o.status >= 400 && o.status < 500) return { state: 'failed', permanent: true, error: describe(o, what) };
  return { state: 'failed', permanent: false, error: describe(o, what) };
}

/** The AppView's reads (app.bsky.*) are not served by this PDS: none is configured (400 "No service configured"), it has none reachable (502 UpstreamFailure), or it lacks the method (404, 501). */
function appViewMissing(o: PlatformResponse): boolean {
  if (o.kind !== 'answer') return false;
  const e = errorName(o);
  const m = String(obj(o.json).message ?? '');
  if (o.status === 400 && e === 'InvalidRequest' && /^No service configured/i.test(m)) return true;
  if (o.status === 502 && e === 'UpstreamFailure') return true;
  if (o.status === 501 || (o.status === 404 && (e === null || e === 'MethodNotImplemented' || e === 'XRPCNotSupported'))) return true;
  return false;
}

// ---------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------

/** A JWT's claims, read without checking the signature (the PDS checks it; we only read its expiry and scope). */
export function jwtClaims(jwt: string): Record<string, unknown> {
  const part = jwt.split('.')[1];
  if (!part) return {};
  try {
    return obj(JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
  } catch {
    return {};
  }
}

function secondsLeft(jwt: string, now = Date.now()): number | null {
  const exp = jwtClaims(jwt).exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? Math.max(0, Math.floor(exp - now / 1000)) : null;
}

/** The account's PDS from a DID document (the #atproto_pds service), when it names one. */
export function pdsFromDidDoc(didDoc: unknown): string | null {
  const services = obj(didDoc).service;
  if (!Array.isArray(services)) return null;
  for (const s of services) {
    const o = obj(s);
    const id = typeof o.id === 'string' ? o.id : '';
    if ((id === '#atproto_pds' || id.endsWith('#atproto_pds')) && o.type === 'AtprotoPersonalDataServer') {
      const u = httpUrl(o.serviceEndpoint);
      if (u) return trimBase(u);
    }
  }
  return null;
}

/** Full-account sessions (the account's own password) carry this scope; app passwords carry com.atproto.appPass[Privileged]. */
const FULL_ACCOUNT_SCOPE = 'com.atproto.access';

function sessionTokens(json: unknown, what: string): TokenSet {
  const b = obj(json);
  const accessJwt = str(b.accessJwt);
  const refreshJwt = str(b.refreshJwt);
  const did = str(b.did);
  if (!accessJwt || !refreshJwt || !did) throw new ConnectorError('UPSTREAM_ERROR', `Bluesky answered ${what} without accessJwt, refreshJwt and did.`);
  const scope = str(jwtClaims(accessJwt).scope);
  const pdsUrl = pdsFromDidDoc(b.didDoc);
  return {
    accessToken: accessJwt,
    refreshToken: refreshJwt,
    expiresIn: secondsLeft(accessJwt),
    refreshExpiresIn: secondsLeft(refreshJwt),
    scopes: scope ? [scope] : [],
    extra: { did, handle: str(b.handle), ...(pdsUrl ? { pdsUrl } : {}) },
  };
}

function sessionTarget(endpoint: PlatformEndpoint): Target {
  return { baseUrl: endpoint.baseUrl || BLUESKY_DEFAULT_BASE_URL, allowPrivateNetworks: endpoint.allowPrivateNetworks };
}

/**
 * Where the account's repository calls go: its PDS as its DID document names
 * it (credentials.extra.pdsUrl), else the sign-in service. The DID document
 * is the account holder's to write, so its address passes the SSRF guard
 * unless it is the trusted endpoint's own origin or private networks are
 * allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS).
 */
export function repoTarget(endpoint: PlatformEndpoint | undefined, credentials: IntegrationCredentials | null | undefined, allowPrivateNetworks: boolean, fallbackBaseUrl?: string): Target {
  const pds = httpUrl(credentials?.extra?.pdsUrl);
  const base = endpoint ?? { baseUrl: fallbackBaseUrl ?? BLUESKY_DEFAULT_BASE_URL, allowPrivateNetworks: fallbackBaseUrl ? true : allowPrivateNetworks };
  if (pds) {
    const same = originOf(pds) !== null && originOf(pds) === originOf(base.baseUrl);
    return { baseUrl: trimBase(pds), allowPrivateNetworks: allowPrivateNetworks || (same && base.allowPrivateNetworks) };
  }
  return { baseUrl: base.baseUrl || BLUESKY_DEFAULT_BASE_URL, allowPrivateNetworks: base.allowPrivateNetworks };
}

async function readProfile(target: Target, token: AccessToken, did: string, timeoutMs: number): Promise<{ kind: 'profile'; json: Record<string, any> } | { kind: 'no-appview' } | { kind: 'failed'; o: Failed }> {
  const o = await xrpc(target, { method: 'GET', nsid: 'app.bsky.actor.getProfile', params: { actor: did }, token, timeoutMs });
  if (ok(o)) return { kind: 'profile', json: obj(o.json) };
  if (appViewMissing(o)) return { kind: 'no-appview' };
  return { kind: 'failed', o };
}

// ---------------------------------------------------------------------------
// Text: facets, link cards
// ---------------------------------------------------------------------------

type Facet = AppBskyRichtextFacet.Main;

let richTextModule: Promise<typeof import('@atproto/api')> | null = null;
/** @atproto/api is loaded on first use (it is large and only publishing needs it). */
function loadRichText() {
  richTextModule ??= import('@atproto/api');
  return richTextModule;
}

/** Links, tags and mentions of a text with UTF-8 byte offsets; mentions still hold the handle in `did`. */
export async function detectFacets(text: string): Promise<Facet[]> {
  const { RichText } = await loadRichText();
  const rt = new RichText({ text });
  rt.detectFacetsWithoutResolution();
  return (rt.facets ?? []) as Facet[];
}

function firstLink(facets: Facet[]): string | null {
  const links = facets
    .filter((f) => f.features.some((x) => x.$type === 'app.bsky.richtext.facet#link'))
    .sort((a, b) => a.index.byteStart - b.index.byteStart);
  const f = links[0]?.features.find((x) => x.$type === 'app.bsky.richtext.facet#link') as { uri?: string } | undefined;
  return f?.uri ?? null;
}

// ---------------------------------------------------------------------------
// Media
// ---------------------------------------------------------------------------

/** The file's type: as stored, else from its first bytes. */
export function mediaContentType(data: Buffer, given?: string | null): string {
  if (given && /^[a-z]+\/[a-z0-9.+-]+$/i.test(given) && given !== 'application/octet-stream') return given.toLowerCase();
  const hex = data.subarray(0, 12).toString('hex');
  if (hex.startsWith('ffd8ff')) return 'image/jpeg';
  if (hex.startsWith('89504e470d0a1a0a')) return 'image/png';
  if (hex.startsWith('47494638')) return 'image/gif';
  if (hex.startsWith('52494646') && data.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (data.subarray(4, 8).toString('latin1') === 'ftyp') return 'video/mp4';
  return 'application/octet-stream';
}

type Step<T> = { ok: true; value: T } | { ok: false; result: NotPublished & { state: 'failed' } };

function aspectRatio(m: MediaRef): { width: number; height: number } | undefined {
  const w = m.width ?? 0;
  const h = m.height ?? 0;
  return Number.isInteger(w) && Number.isInteger(h) && w > 0 && h > 0 ? { width: w, height: h } : undefined;
}

/** Checks a message's media against the embeds' rules before anything is uploaded. */
function checkMedia(media: MediaRef[], label: string): string | null {
  const videos = media.filter((m) => m.type === 'video');
  const images = media.filter((m) => m.type !== 'video');
  if (videos.length > 0 && images.length > 0) return `A Bluesky post embeds images or one video, not both (${label}).`;
  if (videos.length > 1) return `A Bluesky post embeds at most one video (${label} has ${videos.length}).`;
  if (images.length > BLUESKY_LIMITS.maxImages) return `A Bluesky post embeds at most ${BLUESKY_LIMITS.maxImages} images (${label} has ${images.length}).`;
  for (const m of media) {
    const max = m.type === 'video' ? BLUESKY_LIMITS.videoMaxBytes : BLUESKY_LIMITS.imageMaxBytes;
    if (typeof m.size === 'number' && m.size > max) return `${m.type === 'video' ? 'A video' : 'An image'} on Bluesky is at most ${max} bytes; media ${m.id} of ${label} has ${m.size}.`;
  }
  return null;
}

// ---------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------

async function getSession(target: Target, token: AccessToken, timeoutMs: number) {
  return xrpc(target, { method: 'GET', nsid: 'com.atproto.server.getSession', token, timeoutMs });
}

export const bluesky: PlatformModule = {
  name: 'bluesky',
  platforms: ['bluesky'],
  connect: 'password',
  // And through AT Protocol OAuth (POST {ws}/integrations/connect, server/platforms/bluesky-oauth.ts).
  atprotoOAuth: true,
  defaultBaseUrl: BLUESKY_DEFAULT_BASE_URL,

  password: {
    async signIn({ endpoint, identifier, password, timeoutMs }): Promise<TokenSet> {
      const id = identifier.trim().replace(/^@/, '');
      if (!id) throw new ConnectorError('UPSTREAM_ERROR', 'Give the Bluesky handle (name.bsky.social) or DID to sign in with.');
      if (!password) throw new ConnectorError('UPSTREAM_ERROR', 'Give an app password (Bluesky settings, "App passwords").');
      const o = await xrpc(sessionTarget(endpoint), { method: 'POST', nsid: 'com.atproto.server.createSession', json: { identifier: id, password }, timeoutMs });
      if (!ok(o)) throw upstream(o, 'the sign-in');
      const tokens = sessionTokens(o.json, 'the sign-in');
      if (tokens.scopes.includes(FULL_ACCOUNT_SCOPE)) {
        // Close the session the account's own password opened: Pressroom keeps none.
        await xrpc(sessionTarget(endpoint), { method: 'POST', nsid: 'com.atproto.server.deleteSession', token: tokens.refreshToken!, timeoutMs });
        throw new ConnectorError(
          'UPSTREAM_ERROR',
          "That is the account's own password; connect with an app password instead (Bluesky settings, \"App passwords\"), which can be revoked without changing the account's password.",
          { error: 'AppPasswordRequired' },
        );
      }
      return tokens;
    },

    async refresh({ endpoint, credentials, timeoutMs, oauthClient }): Promise<RefreshOutcome> {
      // An OAuth session is refreshed at its authorization server, with its DPoP key (@atproto/oauth-client-node).
      if (oauthExtra(credentials)) return refreshOAuthSession({ credentials, config: oauthClient, handleResolver: sessionTarget(endpoint).baseUrl });
      if (!credentials.refreshToken) return { state: 'revoked', reason: 'The Bluesky session has no refresh token; sign in again with an app password.' };
      const o = await xrpc(sessionTarget(endpoint), { method: 'POST', nsid: 'com.atproto.server.refreshSession', token: credentials.refreshToken, timeoutMs });
      if (ok(o)) {
        try {
          const tokens = sessionTokens(o.json, 'the session refresh');
          return { state: 'refreshed', tokens: { ...tokens, extra: { ...credentials.extra, ...tokens.extra } } };
        } catch (e) {
          return { state: 'retry', error: (e as Error).message, retryAt: null };
        }
      }
      if (o.kind === 'answer') {
        if (o.status === 429) return { state: 'retry', error: describe(o, 'the session refresh'), retryAt: o.rateLimit?.resetAt ?? null };
        // ExpiredToken ("Token has been revoked": the app password was revoked or the session deleted), InvalidToken, AccountTakedown, ...
        if (o.status >= 400 && o.status < 500 && o.status !== 408) return { state: 'revoked', reason: describe(o, 'the session refresh') };
        return { state: 'retry', error: describe(o, 'the session refresh'), retryAt: null };
      }
      return { state: 'retry', error: o.error, retryAt: null };
    },
  },

  async readAccounts({ endpoint, credentials, timeoutMs }): Promise<PlatformAccount[]> {
    // An OAuth session is its PDS's (the token's audience, checked by the library against the DID document).
    const oauth = oauthExtra(credentials);
    const target = oauth ? repoTarget(endpoint, credentials, endpoint.allowPrivateNetworks) : sessionTarget(endpoint);
    const token = accessTokenOf(credentials);
    const s = await getSession(target, token, timeoutMs);
    if (!ok(s)) throw upstream(s, 'the account lookup');
    const sess = obj(s.json);
    const did = str(sess.did);
    if (!did) throw new ConnectorError('UPSTREAM_ERROR', 'Bluesky answered getSession without a did.');
    const handle = str(sess.handle);
    // With an app password everything is read at connect time from the sign-in service (bsky.social's
    // entryway serves the account's PDS methods too): the DID document's PDS is called only by the
    // publishing side. An OAuth session is read where its token is valid: its PDS.
    let name: string | null = null;
    let avatarUrl: string | null = null;
    // The session proved the credentials; the profile only names the account. An AppView that
    // is missing, down or has not indexed a new account yet leaves the profile record in the
    // account's own repository, then the handle.
    const p = await readProfile(target, token, did, timeoutMs);
    if (p.kind === 'profile') {
      name = str(p.json.displayName)?.trim() || null;
      avatarUrl = httpUrl(p.json.avatar);
    } else {
      const r = await xrpc(target, { method: 'GET', nsid: 'com.atproto.repo.getRecord', params: { repo: did, collection: 'app.bsky.actor.profile', rkey: 'self' }, timeoutMs });
      if (ok(r)) name = str(obj(obj(r.json).value).displayName)?.trim() || null;
    }
    return [
      {
        id: did,
        username: handle,
        name: name ?? handle ?? did,
        avatarUrl,
        profileUrl: `https://bsky.app/profile/${handle ?? did}`,
        kind: 'person',
      },
    ];
  },

  async readLimits(): Promise<AccountLimits | null> {
    // Bluesky's limits are the lexicons', the same for every account.
    return {
      captionMaxLength: BLUESKY_LIMITS.textMaxGraphemes,
      maxMedia: BLUESKY_LIMITS.maxImages,
      imageMaxBytes: BLUESKY_LIMITS.imageMaxBytes,
      videoMaxBytes: BLUESKY_LIMITS.videoMaxBytes,
    };
  },

  create: createBlueskyConnector,
};

interface StrongRef {
  uri: string;
  cid: string;
}

export function createBlueskyConnector(options: ConnectorOptions): Connector {
  const timeoutMs = options.timeoutMs;
  const account = (i: IntegrationRef) => {
    const c = i.credentials;
    if (!c?.accessToken) throw new ConnectorError('MISSING_SECRET', 'The Bluesky session was not provided to the connector (only the worker reads it).', { integrationId: i.id });
    const did = str(c.extra?.did);
    if (!did) throw new ConnectorError('MISSING_SECRET', 'This Bluesky integration names no DID (connect the account again).', { integrationId: i.id });
    const handle = str(c.extra?.handle) ?? (i.username ? i.username.replace(/^@/, '') : null);
    return { token: accessTokenOf(c), did, handle, target: repoTarget(i.endpoint, c, options.allowPrivateNetworks, options.baseUrl) };
  };

  /** The record at `rkey`, if an earlier attempt made it: found, not there, or the failed lookup. */
  async function lookup(target: Target, did: string, rkey: string): Promise<{ kind: 'found'; ref: StrongRef } | { kind: 'absent' } | { kind: 'failed'; o: Failed }> {
    const o = await xrpc(target, { method: 'GET', nsid: 'com.atproto.repo.getRecord', params: { repo: did, collection: POST_COLLECTION, rkey }, timeoutMs });
    if (ok(o)) {
      const b = obj(o.json);
      if (str(b.uri) && str(b.cid)) return { kind: 'found', ref: { uri: b.uri, cid: b.cid } };
      return { kind: 'failed', o: { kind: 'unknown', error: 'Bluesky answered getRecord without uri and cid.' } };
    }
    if (o.kind === 'answer' && o.status === 400 && errorName(o) === 'RecordNotFound') return { kind: 'absent' };
    return { kind: 'failed', o };
  }

  async function uploadBlob(target: Target, token: AccessToken, m: MediaRef, label: string): Promise<Step<Record<string, unknown>>> {
    if (!m.read) return { ok: false, result: { state: 'failed', permanent: true, error: `The bytes of ${label} were not provided to the connector.` } };
    let data: Buffer;
    try {
      data = await m.read();
    } catch (e) {
      return { ok: false, result: { state: 'failed', permanent: false, error: `${label} could not be read from media storage: ${e instanceof Error ? e.message : String(e)}` } };
    }
    const contentType = mediaContentType(data, m.contentType);
    const max = m.type === 'video' ? BLUESKY_LIMITS.videoMaxBytes : BLUESKY_LIMITS.imageMaxBytes;
    if (data.length > max) return { ok: false, result: { state: 'failed', permanent: true, error: `${label} has ${data.length} bytes; Bluesky takes at most ${max}.` } };
    if (m.type === 'video' && contentType !== 'video/mp4') return { ok: false, result: { state: 'failed', permanent: true, error: `A Bluesky video is an MP4 file; ${label} is ${contentType}.` } };
    if (m.type !== 'video' && !contentType.startsWith('image/')) return { ok: false, result: { state: 'failed', permanent: true, error: `${label} is ${contentType}, not an image.` } };
    const o = await xrpc(target, { method: 'POST', nsid: 'com.atproto.repo.uploadBlob', token, headers: { 'content-type': contentType }, body: data, timeoutMs });
    // An upload is named by its content: sending it again is harmless.
    if (!ok(o)) return { ok: false, result: failure(o, `the upload of ${label}`) };
    const blob = obj(obj(o.json).blob);
    if (!blob.ref || !str(blob.mimeType)) return { ok: false, result: { state: 'failed', permanent: false, error: `Bluesky accepted ${label} but answered no blob.` } };
    return { ok: true, value: blob };
  }

  /** Facets with mentions resolved to DIDs (an unknown handle stays plain text). */
  async function facetsOf(target: Target, text: string, cache: Map<string, string | null>): Promise<Step<Facet[]>> {
    const out: Facet[] = [];
    for (const f of await detectFacets(text)) {
      const mention = f.features.find((x) => x.$type === 'app.bsky.richtext.facet#mention') as { did: string } | undefined;
      if (!mention) {
        out.push(f);
        continue;
      }
      const handle = mention.did.toLowerCase();
      if (!cache.has(handle)) {
        const o = await xrpc(target, { method: 'GET', nsid: 'com.atproto.identity.resolveHandle', params: { handle }, timeoutMs });
        if (ok(o) && str(obj(o.json).did)?.startsWith('did:')) cache.set(handle, obj(o.json).did);
        else if (o.kind === 'answer' && o.status === 400) cache.set(handle, null);
        else return { ok: false, result: failure(o, `the mention @${handle}`) };
      }
      const did = cache.get(handle);
      if (did) out.push({ ...f, features: [{ $type: 'app.bsky.richtext.facet#mention', did }] });
    }
    return { ok: true, value: out };
  }

  /**
   * Makes the post at `rkey` once: looks it up first (an earlier attempt may have made it),
   * builds and creates it otherwise, and after a create that got no answer or a 5xx (the
   * PDS's answer to a key that is taken) looks again before calling it failed.
   */
  async function postOnce(target: Target, token: AccessToken, did: string, rkey: string, label: string, build: () => Promise<Step<Record<string, unknown>>>): Promise<Step<StrongRef>> {
    const before = await lookup(target, did, rkey);
    if (before.kind === 'found') return { ok: true, value: before.ref };
    if (before.kind === 'failed') return { ok: false, result: failure(before.o, `the lookup of ${label}`) };
    const record = await build();
    if (!record.ok) return record;
    const o = await xrpc(target, { method: 'POST', nsid: 'com.atproto.repo.createRecord', token, json: { repo: did, collection: POST_COLLECTION, rkey, record: record.value }, timeoutMs });
    if (ok(o)) {
      const b = obj(o.json);
      if (str(b.uri) && str(b.cid)) return { ok: true, value: { uri: b.uri, cid: b.cid } };
    }
    let afterNote = '';
    if (o.kind === 'unknown' || (o.kind === 'answer' && (o.status >= 500 || (o.status >= 200 && o.status < 300)))) {
      const after = await lookup(target, did, rkey);
      if (after.kind === 'found') return { ok: true, value: after.ref };
      if (after.kind === 'failed') afterNote = ` (looking it up afterwards failed too: ${failure(after.o, 'the lookup').error})`;
    }
    if (ok(o)) return { ok: false, result: { state: 'failed', permanent: false, error: `Bluesky accepted ${label} but answered no uri and cid${afterNote}.` } };
    const f = failure(o, label);
    return { ok: false, result: { ...f, error: `${f.error}${afterNote}` } };
  }

  return {
    name: 'bluesky',
    // A record key derived from the token: a re-sent edition finds the records it made.
    acceptsIdempotencyToken: true,
    // The PDS's write limit is 5,000 points an hour per account (3 per record made): at most
    // 500 editions an hour leaves room for threads and the account's other apps; a 429 puts
    // the edition back until RateLimit-Reset.
    publishLimits: { perIntegration: { maxInFlight: 2, maxPerWindow: 500, windowSeconds: 3600 } },

    async publish(integration: IntegrationRef, edition: PublishableEdition): Promise<PublishResult> {
      const settings = parseBlueskySettings(edition.settings);
      if (!settings.ok) return { state: 'failed', permanent: true, error: settings.error };
      const { token, did, handle, target } = account(integration);
      const key = edition.idempotencyToken ?? `pressroom-${edition.id}`;
      const messages = [{ caption: edition.caption, media: edition.media }, ...edition.thread];
      for (let n = 0; n < messages.length; n++) {
        const problem = checkMedia(messages[n].media, messages.length > 1 ? `thread message ${n + 1}` : 'the post');
        if (problem) return { state: 'failed', permanent: true, error: problem };
      }
      const posted: StrongRef[] = [];
      const mentions = new Map<string, string | null>();
      const partial = (r: NotPublished & { state: 'failed' }): PublishResult => {
        if (posted.length === 0) return r;
        const note = ` (posts 1 to ${posted.length} of ${messages.length} are published: ${posted.map((p) => p.uri).join(', ')}${r.permanent ? '' : '; the next attempt finds them and goes on'})`;
        return { ...r, error: `${r.error}${note}` };
      };

      for (let n = 0; n < messages.length; n++) {
        const msg = messages[n];
        const label = messages.length > 1 ? `thread message ${n + 1}` : 'the post';
        const made = await postOnce(target, token, did, recordKey(key, n), label, async () => {
          const record: Record<string, unknown> = { $type: POST_COLLECTION, text: msg.caption, createdAt: new Date().toISOString() };
          if (settings.value.langs) record.langs = settings.value.langs;
          const facets = await facetsOf(target, msg.caption, mentions);
          if (!facets.ok) return facets;
          if (facets.value.length > 0) record.facets = facets.value;
          if (n > 0) record.reply = { root: posted[0], parent: posted[n - 1] };
          if (msg.media.length > 0) {
            const blobs: Record<string, unknown>[] = [];
            for (let k = 0; k < msg.media.length; k++) {
              const up = await uploadBlob(target, token, msg.media[k], `media ${k + 1} of ${label}`);
              if (!up.ok) return up;
              blobs.push(up.value);
            }
            if (msg.media[0].type === 'video') {
              const m = msg.media[0];
              const ar = aspectRatio(m);
              record.embed = { $type: 'app.bsky.embed.video', video: blobs[0], ...(m.altText ? { alt: m.altText } : {}), ...(ar ? { aspectRatio: ar } : {}) };
            } else {
              record.embed = {
                $type: 'app.bsky.embed.images',
                images: msg.media.map((m, k) => {
                  const ar = aspectRatio(m);
                  return { image: blobs[k], alt: m.altText ?? '', ...(ar ? { aspectRatio: ar } : {}) };
                }),
              };
            }
          } else if (settings.value.linkCard !== false) {
            const card = n === 0 ? (settings.value.linkCard ?? {}) : {};
            const uri = card.uri ?? firstLink(facets.value);
            if (uri) record.embed = { $type: 'app.bsky.embed.external', external: { uri, title: card.title ?? uri, description: card.description ?? '' } };
          }
          return { ok: true, value: record };
        });
        if (!made.ok) return partial(made.result);
        posted.push(made.value);
      }
      const root = parseAtUri(posted[0].uri);
      return {
        state: 'published',
        platformPostId: posted[0].uri,
        permalink: root ? `https://bsky.app/profile/${handle ?? did}/post/${root.rkey}` : null,
      };
    },

    async editPublishedCaption(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} posts cannot be edited once published.`);
    },

    async createDraft(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no article drafts.`);
    },

    async fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics | null> {
      const { token, target } = account(integration);
      if (!parseAtUri(post.platformPostId)) throw new ConnectorError('UPSTREAM_ERROR', `Not a Bluesky post URI: ${post.platformPostId.slice(0, 200)}`);
      const o = await xrpc(target, { method: 'GET', nsid: 'app.bsky.feed.getPosts', params: { uris: [post.platformPostId] }, token, timeoutMs });
      // Counts come from an AppView; a PDS without one cannot know them.
      if (appViewMissing(o)) return null;
      if (!ok(o)) throw upstream(o, 'the post metrics');
      const p = (Array.isArray(obj(o.json).posts) ? obj(o.json).posts : []).map(obj).find((x: Record<string, any>) => x.uri === post.platformPostId);
      // A post the AppView does not have (deleted, or not indexed yet): nothing to report.
      if (!p) return null;
      const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
      // Bluesky reports no impressions or clicks: they stay 0. Quotes count as shares with reposts.
      return { impressions: 0, likes: n(p.likeCount), comments: n(p.replyCount), shares: n(p.repostCount) + n(p.quoteCount), clicks: 0, fetchedAt: new Date().toISOString() };
    },

    async fetchAccountMetrics(integration: IntegrationRef): Promise<AccountMetrics | null> {
      const { token, did, target } = account(integration);
      const p = await readProfile(target, token, did, timeoutMs);
      if (p.kind === 'no-appview') return null;
      if (p.kind === 'failed') throw upstream(p.o, 'the account metrics');
      const f = p.json.followersCount;
      return { followers: typeof f === 'number' && f >= 0 ? Math.floor(f) : 0, profileViews: null, demographics: null, fetchedAt: new Date().toISOString() };
    },

    async listBoards(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no boards.`);
    },

    async listVideoCategories(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no video categories.`);
    },

    // Inbox: a reply is a post in reply to the message (or, with none, to the thread's post),
    // made once under a key derived from the reply's idempotency token like a published post.
    // Direct messages (chat.bsky.convo, a separate service) are not answered.
    async reply(integration: IntegrationRef, reply: InboxReply): Promise<InboxActionResult> {
      if (reply.threadKind === 'message') return { state: 'failed', permanent: true, error: 'NOT_SUPPORTED: the Bluesky connector does not answer direct messages.' };
      const { token, did, target } = account(integration);
      const parentUri = reply.inReplyTo ?? reply.platformThreadId;
      const at = parentUri ? parseAtUri(parentUri) : null;
      if (!at) return { state: 'failed', permanent: true, error: `The reply names no Bluesky post to answer (${String(parentUri).slice(0, 200)}).` };
      const made = await postOnce(target, token, did, recordKey(`reply:${reply.idempotencyToken}`, 0), 'the reply', async () => {
        const p = await xrpc(target, { method: 'GET', nsid: 'com.atproto.repo.getRecord', params: { repo: at.repo, collection: at.collection, rkey: at.rkey }, timeoutMs });
        if (!ok(p)) return { ok: false, result: failure(p, 'the post replied to') };
        const b = obj(p.json);
        if (!str(b.uri) || !str(b.cid)) return { ok: false, result: { state: 'failed', permanent: false, error: 'Bluesky answered the post replied to without uri and cid.' } };
        const parent = { uri: b.uri as string, cid: b.cid as string };
        const root = obj(obj(b.value).reply).root;
        const facets = await facetsOf(target, reply.text, new Map());
        if (!facets.ok) return facets;
        return {
          ok: true,
          value: {
            $type: POST_COLLECTION,
            text: reply.text,
            createdAt: new Date().toISOString(),
            ...(facets.value.length > 0 ? { facets: facets.value } : {}),
            reply: { root: str(obj(root).uri) && str(obj(root).cid) ? { uri: root.uri, cid: root.cid } : parent, parent },
          },
        };
      });
      if (!made.ok) return { state: 'failed', permanent: made.result.permanent, error: made.result.error, ...('reauth' in made.result && made.result.reauth ? { reauth: true } : {}) };
      return { state: 'done', platformMessageId: made.value.uri };
    },

    // Only the account's own posts can be deleted (com.atproto.repo.deleteRecord, which answers
    // the same for a record already gone); hiding a reply is a threadgate edit this connector does not make.
    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      if (m.action !== 'delete') return { state: 'failed', permanent: true, error: `NOT_SUPPORTED: the Bluesky connector cannot ${m.action} replies; only the account's own posts can be deleted.` };
      const { token, did, target } = account(integration);
      const at = parseAtUri(m.platformMessageId);
      if (!at) return { state: 'failed', permanent: true, error: `Not a Bluesky post URI: ${m.platformMessageId.slice(0, 200)}` };
      if (at.repo !== did) return { state: 'failed', permanent: true, error: "NOT_SUPPORTED: Bluesky deletes only the account's own posts; this one is another account's." };
      const o = await xrpc(target, { method: 'POST', nsid: 'com.atproto.repo.deleteRecord', token, json: { repo: did, collection: at.collection, rkey: at.rkey }, timeoutMs });
      if (ok(o)) return { state: 'done', platformMessageId: m.platformMessageId };
      const f = failure(o, 'the deletion');
      return { state: 'failed', permanent: f.permanent, error: f.error, ...(f.reauth ? { reauth: true } : {}) };
    },
  };
}
