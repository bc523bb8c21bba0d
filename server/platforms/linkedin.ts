// The LinkedIn connector: a member's profile or the organization pages the
// member administers, through LinkedIn's versioned REST API (the Posts, Images,
// Videos and Community Management APIs), docs/connectors-linkedin.md. One
// file, one PlatformModule; every call goes through platformRequest
// (server/platforms/http.ts).
//
// Where LinkedIn lives: the consent screen and the token endpoint are on
// https://www.linkedin.com (/oauth/v2/authorization, /oauth/v2/accessToken,
// /oauth/v2/introspectToken), the API on https://api.linkedin.com (/v2/userinfo
// and the versioned /rest/...). There is one configurable base, the API's
// (PlatformEndpoint.baseUrl, default LINKEDIN_DEFAULT_BASE_URL); the OAuth base
// is derived from it (linkedinOAuthBase): an `api.` host becomes `www.`
// (api.linkedin.com -> www.linkedin.com), any other base (a local fake) serves
// /oauth/v2/* itself. So one override points both at a fake.
//
// Connecting (OAuthFlow with the operator's app, LINKEDIN_CLIENT_ID /
// LINKEDIN_CLIENT_SECRET): LinkedIn's authorization code flow with the client
// secret. LinkedIn offers PKCE only to native apps it enables one by one
// ("authorization code flow native"), not to standard web apps, so `pkce` is
// false and a code challenge is never sent. Scopes: openid profile
// w_member_social for the member; r_organization_social w_organization_social
// rw_organization_admin for organization pages (the Community Management API,
// which the operator's app must be approved for). LinkedIn wants the Community
// Management API to be the only product of its app, so such an app has no
// OpenID Connect (openid, profile): it names the member with r_basicprofile
// instead (linkedinScopes({openid: false})), read from GET /v2/me. A grant must
// name the member (openid and profile, or r_basicprofile) and allow posting as
// someone (w_member_social, or w_organization_social with
// rw_organization_admin): exchangeCode checks both, so requiredScopes is
// empty. Access tokens live 60 days. Apps approved for
// programmatic refresh also get a refresh token that lives 365 days from the
// consent and is NOT renewed by a refresh (refresh_token_expires_in counts
// down: TokenSet.refreshExpiresIn), after which the member must consent again.
// A refresh LinkedIn refuses (invalid_grant, invalid_request, 401) is
// `revoked`; 5xx, 429 and no answer are `retry`; invalid_client (the
// operator's secret) is `retry` too: the member's grant is not at fault.
// Without a refresh token the access token is checked at
// /oauth/v2/introspectToken: active keeps it (the framework shows it as
// `expiring` as its 60 days run out), revoked or expired is `revoked`; past
// its expiry it is `revoked` without a call (the hard 60-day expiry).
//
// Accounts (readAccounts): the member (GET /v2/userinfo, OpenID: sub ->
// urn:li:person:<sub>, name, picture; or GET /v2/me with r_basicprofile: id,
// localized names) and, with the organization scopes, every
// organization the member is an approved ADMINISTRATOR of (GET
// /rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED,
// then the names by a batch GET /rest/organizations?ids=List(...)). Each is a
// PlatformAccount with extra.authorUrn (and the member's personUrn): the user
// chooses, one integration each.
//
// Every /rest call carries LinkedIn-Version: LINKEDIN_VERSION (LinkedIn
// refuses a call without it, and a sunset version with 426) and
// X-Restli-Protocol-Version: 2.0.0; URNs in paths and query values are
// URL-encoded, as Rest.li 2.0 wants them.
//
// Publishing (author = credentials.extra.authorUrn): images by POST
// /rest/images?action=initializeUpload {initializeUploadRequest: {owner}} and
// a PUT of the bytes to the uploadUrl it answers; a video by POST
// /rest/videos?action=initializeUpload (fileSizeBytes, no captions, no
// thumbnail), a PUT of each part (uploadInstructions: byte ranges and URLs)
// collecting the ETags, POST /rest/videos?action=finalizeUpload
// {finalizeUploadRequest: {video, uploadToken, uploadedPartIds}}, then GET
// /rest/videos/{urn} until AVAILABLE (bounded). Then POST /rest/posts
// {author, commentary (LinkedIn's "little" text: reserved characters escaped,
// escapeLittleText), visibility, distribution, lifecycleState PUBLISHED,
// isReshareDisabledByAuthor false, content: media {id, altText} for one image
// or a video, multiImage {images: [{id, altText}]} for 2 to 20 images}; 201
// with the post URN in x-restli-id. LinkedIn has no threads.
//
// LinkedIn has no idempotency key (acceptsIdempotencyToken false). After an
// unknown outcome findPublished reads the author's posts (GET
// /rest/posts?q=author&author=<urn>&sortBy=LAST_MODIFIED) and matches the
// commentary exactly (after undoing LinkedIn's little format) and the number
// of media, created since then. LinkedIn refuses a post identical to a recent
// one with 422 DUPLICATE_POST: the author's posts are then searched the same
// way; a match is this edition's own post, anything else a permanent refusal.
// Reading a member's posts needs r_member_social, which LinkedIn grants to
// few apps: without it findPublished answers NOT_SUPPORTED.
//
// Outcomes: 201 published; 401 failed with reauth; 429 failed until
// Retry-After, or LINKEDIN_DEFAULT_TUNING.rateLimitBackoffMs (60 s) when
// LinkedIn names no time (it usually does not; its daily limits reset at
// midnight UTC); 422/400 and other 4xx failed for good with LinkedIn's
// message ({"status", "serviceErrorCode", "code", "message"}); 5xx and calls
// that never left transient; no answer to POST /rest/posts unknown (a lost
// answer to an upload only leaves an unused upload: transient). Error strings
// never carry a token or the client secret.
import { platformRequest, type PlatformRequest, type PlatformResponse, httpUrl, isOk as ok, sleep, redactSecrets as scrub, type PlatformAnswer as Answer, type OkAnswer } from './http.ts';
import {
  ConnectorError,
  type AccountLimits,
  type AccountMetrics,
  type CaptionEditResult,
  type Connector,
  type ConnectorOptions,
  type InboxActionResult,
  type InboxModeration,
  type InboxReply,
  type IntegrationCredentials,
  type IntegrationRef,
  type MediaRef,
  type MetricsQuery,
  type OAuthFlow,
  type PlatformAccount,
  type PlatformEndpoint,
  type PlatformModule,
  type PostMetrics,
  type PublishableEdition,
  type PublishLimits,
  type PublishResult,
  type RefreshOutcome,
  type TokenSet,
} from './types.ts';

export const LINKEDIN_DEFAULT_BASE_URL = 'https://api.linkedin.com';
/**
 * The LinkedIn-Version header (YYYYMM). LinkedIn supports a version for at
 * least a year after its release and then answers 426 NONEXISTENT_VERSION:
 * move this on before then (docs/connectors-linkedin.md).
 */
export const LINKEDIN_VERSION = '202607';
export const LINKEDIN_MEMBER_SCOPES = ['openid', 'profile', 'w_member_social'] as const;
/** The Community Management API's scopes, for organization pages. */
export const LINKEDIN_ORGANIZATION_SCOPES = ['r_organization_social', 'w_organization_social', 'rw_organization_admin'] as const;
export const LINKEDIN_SCOPES = [...LINKEDIN_MEMBER_SCOPES, ...LINKEDIN_ORGANIZATION_SCOPES] as const;

/**
 * The scopes to ask for. An app not approved for the Community Management API
 * asks for the member's only (LinkedIn refuses the consent otherwise); an app
 * that has only the Community Management API (LinkedIn's rule for it) has no
 * OpenID Connect and names the member with r_basicprofile (`openid: false`).
 */
export function linkedinScopes(options: { organizations?: boolean; openid?: boolean } = {}): string[] {
  const organizations = options.organizations ?? true;
  const identity = (options.openid ?? true) ? ['openid', 'profile'] : ['r_basicprofile'];
  return [...identity, 'w_member_social', ...(organizations ? LINKEDIN_ORGANIZATION_SCOPES : [])];
}

/** LinkedIn's token lifetimes: access 60 days, programmatic refresh 365 days from the consent. */
export const LINKEDIN_ACCESS_TOKEN_SECONDS = 60 * 24 * 60 * 60;
export const LINKEDIN_REFRESH_TOKEN_SECONDS = 365 * 24 * 60 * 60;

/**
 * LinkedIn's posting limits: about 150 posts a day per member (LinkedIn's
 * daily limits reset at midnight UTC; the application's own daily limit is
 * shown in the operator's Developer Portal, not published). One post in flight
 * per account: LinkedIn refuses quick identical posts, and nothing is gained
 * by racing one account's uploads.
 */
export const LINKEDIN_PUBLISH_LIMITS: PublishLimits = {
  perIntegration: { maxInFlight: 1, maxPerWindow: 150, windowSeconds: 24 * 60 * 60 },
};

/** LinkedIn's rules for a post (Posts, Images and Videos APIs). */
export const LINKEDIN_MEDIA_RULES = {
  captionMaxLength: 3000,
  maxImages: 20,
  altTextMaxLength: 4086,
  videoMaxBytes: 500 * 1024 * 1024,
} as const;

export const LINKEDIN_VISIBILITIES = ['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'] as const;
export type LinkedInVisibility = (typeof LINKEDIN_VISIBILITIES)[number];

/** The knobs of uploads, lookups and backoff; tests shrink them. */
export interface LinkedInTuning {
  /** Longest wait for LinkedIn to process a video before the attempt fails (transient). */
  maxProcessingWaitMs: number;
  /** Wait between two GET /rest/videos/{urn}. */
  pollMs: number;
  /** Time limit of one PUT of media bytes (larger than any other call). */
  uploadTimeoutMs: number;
  /** Pages of posts read when looking for a post, and posts per page. */
  lookupPages: number;
  lookupPageSize: number;
  /** When LinkedIn answers 429 with no Retry-After: try again this much later. */
  rateLimitBackoffMs: number;
}

export const LINKEDIN_DEFAULT_TUNING: LinkedInTuning = {
  maxProcessingWaitMs: 5 * 60_000,
  pollMs: 3000,
  uploadTimeoutMs: 120_000,
  lookupPages: 4,
  lookupPageSize: 50,
  rateLimitBackoffMs: 60_000,
};

/**
 * The OAuth base for an API base: `https://api.linkedin.com` ->
 * `https://www.linkedin.com` (an `api.` label becomes `www.`); any other base
 * (a local fake) serves /oauth/v2/* itself.
 */
export function linkedinOAuthBase(apiBaseUrl: string): string {
  const u = new URL(apiBaseUrl);
  if (/^api\./i.test(u.hostname)) {
    u.hostname = `www.${u.hostname.slice(4)}`;
    return u.origin;
  }
  return trim(apiBaseUrl);
}

const trim = (u: string) => u.replace(/\/+$/, '');
/** A key or value for a Rest.li 2.0 URL: percent-encoded, ( ) and the rest of Rest.li's syntax included (encodeURIComponent leaves ( ) ! ' * as they are). */
export function restliEncode(v: string): string {
  return encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
const enc = restliEncode;

// ---------------------------------------------------------------------------
// LinkedIn's "little" text format (commentary of the Posts API)
// ---------------------------------------------------------------------------

const RESERVED = new Set(['\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~']);
const LETTER = /\p{L}/u;
const WORD = /[\p{L}\p{N}]/u;

/** Where a `#` at i starts a hashtag: `#` then letters and digits, at least one letter, not inside a word. */
function hashtagAt(chars: string[], i: number): number {
  if (i > 0 && WORD.test(chars[i - 1])) return 0;
  let j = i + 1;
  let letters = 0;
  while (j < chars.length && WORD.test(chars[j])) {
    if (LETTER.test(chars[j])) letters++;
    j++;
  }
  return letters > 0 ? j - i - 1 : 0;
}

/**
 * A caption as LinkedIn's little text: every reserved character (| { } @ [ ]
 * ( ) < > # \ * _ ~) escaped with a backslash, or LinkedIn cuts the post at the
 * first unescaped one without saying so, except a `#` that starts a hashtag,
 * which stays a HashtagElement (so it is still a hashtag on LinkedIn).
 */
export function escapeLittleText(text: string): string {
  const chars = [...text];
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === '#' && hashtagAt(chars, i) > 0) out += c;
    else out += RESERVED.has(c) ? `\\${c}` : c;
  }
  return out;
}

/**
 * The text a little-format commentary shows: escapes undone, hashtag templates
 * (`{hashtag|\#|tag}`, as LinkedIn answers hashtags) as `#tag`, mentions
 * (`@[Name](urn:li:...)`) as their name.
 */
export function littleToPlain(little: string): string {
  let out = '';
  let i = 0;
  while (i < little.length) {
    const c = little[i];
    if (c === '\\' && i + 1 < little.length) {
      out += little[i + 1];
      i += 2;
      continue;
    }
    if (c === '{') {
      const m = /^\{hashtag\|\\?#\|([^}]*)\}/.exec(little.slice(i));
      if (m) {
        out += `#${m[1]}`;
        i += m[0].length;
        continue;
      }
    }
    if (c === '@') {
      const m = /^@\[((?:\\.|[^\]\\])*)\]\((urn:li:[^)]*)\)/.exec(little.slice(i));
      if (m) {
        out += m[1].replace(/\\(.)/g, '$1');
        i += m[0].length;
        continue;
      }
    }
    out += c;
    i++;
  }
  return out;
}

function normalizeText(s: string): string {
  return s.normalize('NFC').replace(/\r\n?/g, '\n').trim();
}

// ---------------------------------------------------------------------------
// LinkedIn's answers
// ---------------------------------------------------------------------------

type Json = Record<string, any>;

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/**
 * LinkedIn's reason: the API envelope {"status", "serviceErrorCode", "code",
 * "message"} (with errorDetails.inputErrors on validation), or OAuth's
 * {"error", "error_description"}.
 */
export function linkedinMessage(body: unknown, text = ''): string {
  const b = obj(body);
  const input = Array.isArray(b.errorDetails?.inputErrors) ? obj(b.errorDetails.inputErrors[0]) : {};
  const code = typeof b.code === 'string' ? b.code : typeof input.code === 'string' ? input.code : typeof b.error === 'string' ? b.error : null;
  const message =
    (typeof b.message === 'string' && b.message) ||
    (typeof input.description === 'string' && input.description) ||
    (typeof b.error_description === 'string' && b.error_description) ||
    (text && !text.trimStart().startsWith('<') ? text.replace(/\s+/g, ' ').slice(0, 300) : '');
  const m = [code, message].filter(Boolean).join(': ');
  return (m || 'no reason given').slice(0, 600);
}

/** LinkedIn's 422 for a post identical to a recent one of the author. */
function isDuplicate(o: Answer): boolean {
  const b = obj(o.json);
  const inputs = Array.isArray(b.errorDetails?.inputErrors) ? b.errorDetails.inputErrors : [];
  return o.status === 422 && (inputs.some((e: unknown) => obj(e).code === 'DUPLICATE_POST') || b.code === 'DUPLICATE_POST' || /DUPLICATE_POST/.test(String(b.message ?? '')));
}

type Failure =
  | { kind: 'reauth'; error: string }
  | { kind: 'rate'; error: string; retryAt: Date }
  | { kind: 'permanent'; error: string; status?: number; duplicate?: boolean }
  | { kind: 'transient'; error: string }
  | { kind: 'unknown'; error: string };

/** Removes any secret that might have found its way into a message. */

// ---------------------------------------------------------------------------
// Settings and content rules
// ---------------------------------------------------------------------------

export interface LinkedInSettings {
  visibility: LinkedInVisibility;
}

/** An edition's LinkedIn settings, checked: `visibility` PUBLIC (default), CONNECTIONS (members only) or LOGGED_IN. */
export function parseLinkedInSettings(settings: Record<string, unknown> | null | undefined, authorKind: 'person' | 'organization'): { ok: true; value: LinkedInSettings } | { ok: false; error: string } {
  const v = (settings ?? {}).visibility;
  if (v === undefined || v === null) return { ok: true, value: { visibility: 'PUBLIC' } };
  const up = typeof v === 'string' ? v.toUpperCase() : '';
  if (!(LINKEDIN_VISIBILITIES as readonly string[]).includes(up)) return { ok: false, error: `settings.visibility must be one of ${LINKEDIN_VISIBILITIES.join(', ')}.` };
  if (up === 'CONNECTIONS' && authorKind === 'organization') return { ok: false, error: 'settings.visibility CONNECTIONS is for members; an organization page posts PUBLIC or LOGGED_IN.' };
  return { ok: true, value: { visibility: up as LinkedInVisibility } };
}

/** What LinkedIn would refuse in an edition, checked before anything is sent; null when it passes. */
function refusal(edition: PublishableEdition): string | null {
  if (edition.thread.length > 0) return 'LinkedIn has no threads: publish the further messages as separate posts.';
  const caption = edition.caption ?? '';
  if (!caption.trim() && edition.media.length === 0) return 'The post has neither text nor media; LinkedIn needs one of them.';
  if ([...caption].length > LINKEDIN_MEDIA_RULES.captionMaxLength) return `The caption is longer than LinkedIn's ${LINKEDIN_MEDIA_RULES.captionMaxLength} characters.`;
  const videos = edition.media.filter((m) => m.type === 'video').length;
  if (videos > 1 || (videos === 1 && edition.media.length > 1)) return 'LinkedIn takes one video alone, or up to 20 images.';
  if (edition.media.length > LINKEDIN_MEDIA_RULES.maxImages) return `The post has ${edition.media.length} images; LinkedIn takes at most ${LINKEDIN_MEDIA_RULES.maxImages}.`;
  for (const m of edition.media) {
    if (!m.read) return `The bytes of media ${m.id} were not given to the connector (MediaRef.read).`;
    if (m.type === 'video' && m.size !== undefined && m.size > LINKEDIN_MEDIA_RULES.videoMaxBytes) return `The video ${m.id} is ${m.size} bytes; LinkedIn takes at most ${LINKEDIN_MEDIA_RULES.videoMaxBytes}.`;
    if (m.altText && [...m.altText].length > LINKEDIN_MEDIA_RULES.altTextMaxLength) return `The alt text of ${m.id} is longer than LinkedIn's ${LINKEDIN_MEDIA_RULES.altTextMaxLength} characters.`;
  }
  return null;
}

// ---------------------------------------------------------------------------
// URNs
// ---------------------------------------------------------------------------

const AUTHOR_URN = /^urn:li:(person|organization):[A-Za-z0-9_-]+$/;

export function linkedinPermalink(postUrn: string): string {
  return `https://www.linkedin.com/feed/update/${postUrn}/`;
}

/** A comment URN's parent (activity, share or ugcPost) and id: urn:li:comment:(<parent>,<id>). */
function parseCommentUrn(urn: string): { parent: string; id: string } | null {
  const m = /^urn:li:comment:\((urn:li:[A-Za-z]+:[^,()]+),([^,()]+)\)$/.exec(urn);
  return m ? { parent: m[1], id: m[2] } : null;
}


/** Our clock and LinkedIn's may differ a little: posts are looked for from a minute before `since`. */
const CLOCK_SKEW_MS = 60_000;

/** Where a resend looks for the post an earlier attempt may have made. */
function resumeSince(edition: PublishableEdition, now = Date.now()): Date {
  const at = edition.scheduledAt ? Date.parse(edition.scheduledAt) : NaN;
  if (!Number.isNaN(at) && at <= now) return new Date(at - 10 * 60_000);
  return new Date(now - 24 * 60 * 60_000);
}

function mediaCount(content: unknown): number {
  const c = obj(content);
  if (Array.isArray(c.multiImage?.images)) return c.multiImage.images.length;
  if (c.media && typeof c.media === 'object') return 1;
  return 0;
}

// ---------------------------------------------------------------------------
// The connector
// ---------------------------------------------------------------------------

interface Ctx {
  base: string;
  allowPrivateNetworks: boolean;
  token: string;
  credentials: IntegrationCredentials;
  author: string;
  kind: 'person' | 'organization';
  secrets: (string | null | undefined)[];
}

type Step<T> = { ok: true; value: T } | { ok: false; failure: Failure };

/** The headers of every versioned call. */
function restHeaders(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}`, 'linkedin-version': LINKEDIN_VERSION, 'x-restli-protocol-version': '2.0.0' };
}

export function createLinkedInConnector(options: ConnectorOptions, tuning: Partial<LinkedInTuning> = {}): Connector {
  const tune: LinkedInTuning = { ...LINKEDIN_DEFAULT_TUNING, ...tuning };
  const timeoutMs = options.timeoutMs;
  const fallbackEndpoint: PlatformEndpoint = {
    baseUrl: options.baseUrl ?? LINKEDIN_DEFAULT_BASE_URL,
    // An operator-set base (a local fake in tests) is trusted.
    allowPrivateNetworks: options.baseUrl !== undefined,
  };

  const context = (i: IntegrationRef): Ctx => {
    const credentials = i.credentials;
    if (!credentials?.accessToken) {
      throw new ConnectorError('MISSING_SECRET', 'The LinkedIn access token was not provided to the connector (only the worker reads it).', { integrationId: i.id });
    }
    const author = credentials.extra?.authorUrn;
    if (typeof author !== 'string' || !AUTHOR_URN.test(author)) {
      throw new ConnectorError('MISSING_SECRET', 'This LinkedIn integration names no author (urn:li:person or urn:li:organization); connect the account again.', { integrationId: i.id });
    }
    const endpoint = i.endpoint ?? fallbackEndpoint;
    return {
      base: trim(endpoint.baseUrl),
      allowPrivateNetworks: endpoint.allowPrivateNetworks,
      token: credentials.accessToken,
      credentials,
      author,
      kind: author.startsWith('urn:li:organization:') ? 'organization' : 'person',
      secrets: [credentials.accessToken, credentials.refreshToken],
    };
  };

  const call = (ctx: Ctx, r: Omit<PlatformRequest, 'url' | 'timeoutMs' | 'allowPrivateNetworks'> & { path: string; timeoutMs?: number }) =>
    platformRequest({
      ...r,
      url: `${ctx.base}${r.path}`,
      headers: { ...restHeaders(ctx.token), ...(r.headers ?? {}) },
      timeoutMs: r.timeoutMs ?? timeoutMs,
      allowPrivateNetworks: ctx.allowPrivateNetworks,
    });

  /** What a non-2xx answer (or no answer) means. */
  function classify(ctx: Ctx, o: PlatformResponse, what: string): Failure {
    if (o.kind === 'not-sent') return o.permanent ? { kind: 'permanent', error: scrub(`${what}: ${o.error}`, ctx.secrets) } : { kind: 'transient', error: scrub(`${what}: ${o.error}`, ctx.secrets) };
    if (o.kind === 'unknown') return { kind: 'unknown', error: scrub(`${what}: ${o.error}`, ctx.secrets) };
    const error = scrub(`${what}: LinkedIn answered ${o.status}: ${linkedinMessage(o.json, o.text)}`, ctx.secrets);
    if (o.status === 401) return { kind: 'reauth', error };
    if (o.status === 429) return { kind: 'rate', error, retryAt: o.rateLimit?.resetAt ?? new Date(Date.now() + tune.rateLimitBackoffMs) };
    if (o.status === 426) return { kind: 'permanent', status: 426, error: `${error} (Pressroom sends LinkedIn-Version ${LINKEDIN_VERSION}, which LinkedIn no longer serves: update LINKEDIN_VERSION in server/platforms/linkedin.ts.)` };
    if (o.status >= 400 && o.status < 500) return { kind: 'permanent', error, status: o.status, duplicate: isDuplicate(o) };
    return { kind: 'transient', error };
  }

  function result(f: Failure): Exclude<PublishResult, { state: 'published' }> {
    switch (f.kind) {
      case 'reauth':
        return { state: 'failed', permanent: false, reauth: true, error: f.error };
      case 'rate':
        return { state: 'failed', permanent: false, error: f.error, retryAt: f.retryAt.toISOString() };
      case 'permanent':
        return { state: 'failed', permanent: true, error: f.error };
      case 'transient':
        return { state: 'failed', permanent: false, error: f.error };
      case 'unknown':
        return { state: 'unknown', error: f.error };
    }
  }

  /** Throws the ConnectorError of a failed read (metrics, findPublished). */
  function raise(f: Failure): never {
    if (f.kind === 'rate') throw new ConnectorError('RATE_LIMITED', f.error, { retryAt: f.retryAt.toISOString() });
    throw new ConnectorError('UPSTREAM_ERROR', f.error, { reauth: f.kind === 'reauth', retryable: f.kind === 'transient' || f.kind === 'unknown' });
  }

  /** A call to a URL LinkedIn named (an upload URL): https unless private networks are allowed; the token only to LinkedIn's own hosts. */
  function uploadTarget(ctx: Ctx, raw: unknown): { url: string; withToken: boolean } | null {
    if (typeof raw !== 'string') return null;
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return null;
    }
    if (u.protocol !== 'https:' && !(ctx.allowPrivateNetworks && u.protocol === 'http:')) return null;
    const sameOrigin = u.origin === new URL(ctx.base).origin;
    return { url: u.toString(), withToken: sameOrigin || /(^|\.)linkedin\.com$/i.test(u.hostname) };
  }

  async function readBytes(m: MediaRef): Promise<Step<Buffer>> {
    try {
      return { ok: true, value: await m.read!() };
    } catch (e) {
      return { ok: false, failure: { kind: 'transient', error: `Reading media ${m.id} from storage failed: ${e instanceof Error ? e.message : String(e)}` } };
    }
  }

  /** A failed upload step: nothing was posted, so even a lost answer is only transient. */
  function uploadFailure(ctx: Ctx, o: PlatformResponse, what: string): Step<never> {
    const f = classify(ctx, o, what);
    return { ok: false, failure: f.kind === 'unknown' ? { kind: 'transient', error: `${f.error} (no post was made; the file is uploaded again)` } : f };
  }

  async function uploadImage(ctx: Ctx, m: MediaRef): Promise<Step<string>> {
    const bytes = await readBytes(m);
    if (!bytes.ok) return bytes;
    const what = `Uploading image ${m.id} to LinkedIn`;
    const init = await call(ctx, { method: 'POST', path: '/rest/images?action=initializeUpload', json: { initializeUploadRequest: { owner: ctx.author } } });
    if (!ok(init)) return uploadFailure(ctx, init, `${what} (initializeUpload)`);
    const v = obj(obj(init.json).value);
    const target = uploadTarget(ctx, v.uploadUrl);
    if (typeof v.image !== 'string' || !target) return { ok: false, failure: { kind: 'transient', error: `${what}: LinkedIn answered no usable image URN and upload URL.` } };
    const put = await platformRequest({
      method: 'PUT',
      url: target.url,
      headers: { ...(target.withToken ? { authorization: `Bearer ${ctx.token}` } : {}), 'content-type': 'application/octet-stream' },
      body: bytes.value,
      timeoutMs: Math.max(timeoutMs, tune.uploadTimeoutMs),
      allowPrivateNetworks: ctx.allowPrivateNetworks,
    });
    if (!ok(put)) return uploadFailure(ctx, put, `${what} (PUT)`);
    return { ok: true, value: v.image };
  }

  async function uploadVideo(ctx: Ctx, m: MediaRef): Promise<Step<string>> {
    const bytes = await readBytes(m);
    if (!bytes.ok) return bytes;
    const data = bytes.value;
    const what = `Uploading video ${m.id} to LinkedIn`;
    const init = await call(ctx, {
      method: 'POST',
      path: '/rest/videos?action=initializeUpload',
      json: { initializeUploadRequest: { owner: ctx.author, fileSizeBytes: data.length, uploadCaptions: false, uploadThumbnail: false } },
    });
    if (!ok(init)) return uploadFailure(ctx, init, `${what} (initializeUpload)`);
    const v = obj(obj(init.json).value);
    const video = v.video;
    const instructions = Array.isArray(v.uploadInstructions) ? v.uploadInstructions.map(obj) : [];
    if (typeof video !== 'string' || instructions.length === 0) return { ok: false, failure: { kind: 'transient', error: `${what}: LinkedIn answered no video URN or upload instructions.` } };
    const etags: string[] = [];
    for (const [n, ins] of instructions.entries()) {
      const first = Number(ins.firstByte);
      const last = Number(ins.lastByte);
      const target = uploadTarget(ctx, ins.uploadUrl);
      if (!Number.isInteger(first) || !Number.isInteger(last) || first < 0 || last < first || last >= data.length || !target) {
        return { ok: false, failure: { kind: 'transient', error: `${what}: upload instruction ${n + 1} is not usable (bytes ${ins.firstByte}-${ins.lastByte} of ${data.length}).` } };
      }
      const put = await platformRequest({
        method: 'PUT',
        url: target.url,
        headers: { ...(target.withToken ? { authorization: `Bearer ${ctx.token}` } : {}), 'content-type': 'application/octet-stream' },
        body: data.subarray(first, last + 1),
        timeoutMs: Math.max(timeoutMs, tune.uploadTimeoutMs),
        allowPrivateNetworks: ctx.allowPrivateNetworks,
      });
      if (!ok(put)) return uploadFailure(ctx, put, `${what} (part ${n + 1} of ${instructions.length})`);
      const etag = put.headers.etag;
      const tag = Array.isArray(etag) ? etag[0] : etag;
      if (!tag) return { ok: false, failure: { kind: 'transient', error: `${what}: LinkedIn answered part ${n + 1} without an ETag.` } };
      etags.push(tag);
    }
    const fin = await call(ctx, {
      method: 'POST',
      path: '/rest/videos?action=finalizeUpload',
      json: { finalizeUploadRequest: { video, uploadToken: typeof v.uploadToken === 'string' ? v.uploadToken : '', uploadedPartIds: etags } },
    });
    if (!ok(fin)) return uploadFailure(ctx, fin, `${what} (finalizeUpload)`);
    // LinkedIn processes the video; a post may name it once it is AVAILABLE.
    const started = Date.now();
    while (true) {
      const st = await call(ctx, { method: 'GET', path: `/rest/videos/${enc(video)}` });
      if (!ok(st)) return uploadFailure(ctx, st, `${what} (status)`);
      const s = obj(st.json);
      if (s.status === 'AVAILABLE') return { ok: true, value: video };
      if (s.status === 'PROCESSING_FAILED') {
        const reason = typeof s.processingFailureReason === 'string' ? s.processingFailureReason : 'no reason given';
        return { ok: false, failure: { kind: 'permanent', error: `${what}: LinkedIn could not process it: ${reason}` } };
      }
      if (Date.now() - started + tune.pollMs > tune.maxProcessingWaitMs) {
        return { ok: false, failure: { kind: 'transient', error: `${what}: LinkedIn was still processing it after ${Math.round((Date.now() - started) / 1000)} s (status ${String(s.status)}); it is uploaded again on the next attempt.` } };
      }
      await sleep(tune.pollMs);
    }
  }

  /** The author's posts created since `from` that match the edition (oldest first). */
  async function locate(ctx: Ctx, edition: PublishableEdition, since: Date): Promise<Step<Json | null>> {
    const from = since.getTime() - CLOCK_SKEW_MS;
    const want = normalizeText(edition.caption ?? '');
    const hits: Json[] = [];
    for (let page = 0; page < tune.lookupPages; page++) {
      const q = `q=author&author=${enc(ctx.author)}&count=${tune.lookupPageSize}&start=${page * tune.lookupPageSize}&sortBy=LAST_MODIFIED`;
      const o = await call(ctx, { method: 'GET', path: `/rest/posts?${q}` });
      if (!ok(o)) return { ok: false, failure: classify(ctx, o, "Reading the author's LinkedIn posts") };
      const elements: Json[] = Array.isArray(obj(o.json).elements) ? obj(o.json).elements.map(obj) : [];
      for (const p of elements) {
        if (typeof p.id !== 'string' || typeof p.createdAt !== 'number' || p.createdAt < from) continue;
        if (p.lifecycleState && p.lifecycleState !== 'PUBLISHED') continue;
        if (normalizeText(littleToPlain(typeof p.commentary === 'string' ? p.commentary : '')) !== want) continue;
        if (mediaCount(p.content) !== edition.media.length) continue;
        hits.push(p);
      }
      // Sorted by last change, newest first: a page ending before `from` ends the search.
      const oldest = elements.reduce((min, p) => Math.min(min, typeof p.lastModifiedAt === 'number' ? p.lastModifiedAt : Infinity), Infinity);
      if (elements.length < tune.lookupPageSize || oldest < from) break;
    }
    hits.sort((a, b) => a.createdAt - b.createdAt);
    return { ok: true, value: hits[0] ?? null };
  }

  /** A member's posts can be read only with r_member_social (granted to few apps). */
  function canRead(ctx: Ctx): boolean {
    const scopes = ctx.credentials.scopes ?? [];
    if (scopes.length === 0) return true;
    return ctx.kind === 'organization' ? scopes.includes('r_organization_social') : scopes.includes('r_member_social');
  }

  const found = (p: Json) => ({ platformPostId: p.id as string, permalink: linkedinPermalink(p.id) });

  async function publish(integration: IntegrationRef, edition: PublishableEdition): Promise<PublishResult> {
    const ctx = context(integration);
    const refused = refusal(edition);
    if (refused) return { state: 'failed', permanent: true, error: refused };
    const settings = parseLinkedInSettings(edition.settings, ctx.kind);
    if (!settings.ok) return { state: 'failed', permanent: true, error: settings.error };
    const since = resumeSince(edition);

    // A resend first looks for what an earlier attempt may have posted. When the
    // posts cannot be read, LinkedIn's own DUPLICATE_POST refusal is the backstop.
    if (edition.attempt > 1 && canRead(ctx)) {
      const f = await locate(ctx, edition, since);
      if (f.ok && f.value) return { state: 'published', ...found(f.value) };
    }

    const ids: string[] = [];
    for (const m of edition.media) {
      const u = m.type === 'video' ? await uploadVideo(ctx, m) : await uploadImage(ctx, m);
      if (!u.ok) return result(u.failure);
      ids.push(u.value);
    }
    const body: Json = {
      author: ctx.author,
      commentary: escapeLittleText(edition.caption ?? ''),
      visibility: settings.value.visibility,
      distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
      lifecycleState: 'PUBLISHED',
      isReshareDisabledByAuthor: false,
    };
    if (ids.length === 1) body.content = { media: { id: ids[0], ...(edition.media[0].altText ? { altText: edition.media[0].altText } : {}) } };
    else if (ids.length > 1) body.content = { multiImage: { images: ids.map((id, n) => ({ id, ...(edition.media[n].altText ? { altText: edition.media[n].altText } : {}) })) } };

    const o = await call(ctx, { method: 'POST', path: '/rest/posts', json: body });
    if (ok(o)) {
      const h = o.headers['x-restli-id'];
      const urn = (Array.isArray(h) ? h[0] : h) ?? (typeof obj(o.json).id === 'string' ? obj(o.json).id : undefined);
      if (typeof urn === 'string' && /^urn:li:(share|ugcPost):\S+$/.test(urn)) return { state: 'published', platformPostId: urn, permalink: linkedinPermalink(urn) };
      return { state: 'unknown', error: `Posting to LinkedIn: LinkedIn answered ${o.status} without the post's URN (x-restli-id).` };
    }
    const f = classify(ctx, o, 'Posting to LinkedIn');
    if (f.kind === 'permanent' && f.duplicate) {
      // LinkedIn refuses a repeat of a recent post: when that post is this very
      // edition (an earlier attempt made it), it is ours; otherwise the refusal stands.
      if (!canRead(ctx)) return result({ kind: 'permanent', error: `${f.error} (LinkedIn names the earlier post; without r_member_social Pressroom cannot read it to tell whether it is this edition's own: check it on LinkedIn.)` });
      const l = await locate(ctx, edition, since);
      if (l.ok && l.value) return { state: 'published', ...found(l.value) };
      if (!l.ok && l.failure.kind !== 'permanent') return result({ kind: 'transient', error: `${f.error} (and the author's posts could not be read to check whether it is this edition's own: ${l.failure.error})` });
    }
    return result(f);
  }

  function inboxFailure(ctx: Ctx, o: PlatformResponse, what: string): InboxActionResult {
    const f = classify(ctx, o, what);
    if (f.kind === 'unknown') return { state: 'failed', permanent: false, error: `${f.error} (LinkedIn may have made it: a retry looks for it first)` };
    return { state: 'failed', permanent: f.kind === 'permanent', error: f.error, ...(f.kind === 'reauth' ? { reauth: true } : {}) };
  }

  const unsupported = (what: string): never => {
    throw new ConnectorError('NOT_SUPPORTED', `LinkedIn does not support ${what} through its API.`, { platform: 'linkedin' });
  };

  return {
    name: 'linkedin',
    acceptsIdempotencyToken: false,
    publishLimits: LINKEDIN_PUBLISH_LIMITS,
    publish,

    async findPublished(integration, edition, since) {
      const ctx = context(integration);
      if (!canRead(ctx)) {
        throw new ConnectorError('NOT_SUPPORTED', "Reading a LinkedIn member's posts needs the r_member_social permission, which this app was not granted: the post cannot be looked for.", { platform: 'linkedin' });
      }
      const l = await locate(ctx, edition, since);
      if (!l.ok) raise(l.failure);
      return l.value ? found(l.value) : null;
    },

    async editPublishedCaption(integration, post): Promise<CaptionEditResult> {
      const ctx = context(integration);
      if ([...post.caption].length > LINKEDIN_MEDIA_RULES.captionMaxLength) return { state: 'failed', permanent: true, error: `The caption is longer than LinkedIn's ${LINKEDIN_MEDIA_RULES.captionMaxLength} characters.` };
      const o = await call(ctx, {
        method: 'POST',
        path: `/rest/posts/${enc(post.platformPostId)}`,
        headers: { 'x-restli-method': 'PARTIAL_UPDATE' },
        json: { patch: { $set: { commentary: escapeLittleText(post.caption) } } },
      });
      if (ok(o)) return { state: 'updated' };
      const f = classify(ctx, o, 'Editing the LinkedIn post');
      // Setting the same text again changes nothing more: a lost answer is only transient.
      if (f.kind === 'unknown') return { state: 'failed', permanent: false, error: f.error };
      return { state: 'failed', permanent: f.kind === 'permanent', error: f.error, ...(f.kind === 'reauth' ? { reauth: true } : {}) };
    },

    async createDraft() {
      return unsupported('article drafts in Pressroom');
    },
    async listBoards() {
      return unsupported('boards');
    },
    async listVideoCategories() {
      return unsupported('video categories');
    },

    async fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics | null> {
      const ctx = context(integration);
      // A member's post analytics need the Member Post Statistics API (r_member_postAnalytics), not asked for.
      if (ctx.kind === 'person') return null;
      const kind = /^urn:li:(share|ugcPost):\S+$/.exec(post.platformPostId)?.[1];
      if (!kind) return null;
      const param = kind === 'share' ? 'shares' : 'ugcPosts';
      const o = await call(ctx, {
        method: 'GET',
        path: `/rest/organizationalEntityShareStatistics?q=organizationalEntity&organizationalEntity=${enc(ctx.author)}&${param}=List(${enc(post.platformPostId)})`,
      });
      if (!ok(o)) raise(classify(ctx, o, 'Reading the post statistics from LinkedIn'));
      const elements: Json[] = Array.isArray(obj(o.json).elements) ? obj(o.json).elements.map(obj) : [];
      const el = elements.find((e) => e.share === post.platformPostId || e.ugcPost === post.platformPostId) ?? elements[0];
      const s = el ? obj(el.totalShareStatistics) : null;
      if (!s || Object.keys(s).length === 0) return null;
      const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
      return {
        impressions: n(s.impressionCount),
        likes: n(s.likeCount),
        comments: n(s.commentCount),
        shares: n(s.shareCount),
        clicks: n(s.clickCount),
        reach: n(s.uniqueImpressionsCount),
        fetchedAt: new Date().toISOString(),
      };
    },

    async fetchAccountMetrics(integration: IntegrationRef): Promise<AccountMetrics | null> {
      const ctx = context(integration);
      // LinkedIn gives no follower count of a member to an app.
      if (ctx.kind === 'person') return null;
      const o = await call(ctx, { method: 'GET', path: `/rest/networkSizes/${enc(ctx.author)}?edgeType=COMPANY_FOLLOWED_BY_MEMBER` });
      if (!ok(o)) raise(classify(ctx, o, 'Reading the follower count from LinkedIn'));
      const size = obj(o.json).firstDegreeSize;
      if (typeof size !== 'number' || !Number.isFinite(size) || size < 0) return null;
      return { followers: Math.floor(size), profileViews: null, demographics: null, fetchedAt: new Date().toISOString() };
    },

    // Inbox: a reply is a comment of the account (actor = the author URN) under the post,
    // or under the comment answered (parentComment). LinkedIn's messaging is closed to apps.
    async reply(integration: IntegrationRef, r: InboxReply): Promise<InboxActionResult> {
      if (r.threadKind === 'message') return { state: 'failed', permanent: true, error: 'NOT_SUPPORTED: LinkedIn does not let apps answer direct messages.' };
      const ctx = context(integration);
      const post = r.platformThreadId;
      if (!/^urn:li:(share|ugcPost|activity):\S+$/.test(post)) return { state: 'failed', permanent: true, error: 'The thread names no LinkedIn post URN.' };
      const parent = r.inReplyTo && parseCommentUrn(r.inReplyTo) ? r.inReplyTo : null;
      const target = parent ?? post;
      const path = `/rest/socialActions/${enc(target)}/comments`;
      // No idempotency on LinkedIn: a retry first looks for the comment an earlier try may have made.
      if (r.attempt > 1) {
        const g = await call(ctx, { method: 'GET', path: `${path}?count=100` });
        if (ok(g)) {
          const mine = (Array.isArray(obj(g.json).elements) ? obj(g.json).elements.map(obj) : []).find(
            (c: Json) => c.actor === ctx.author && obj(c.message).text === r.text && (parent ? c.parentComment === parent : !c.parentComment),
          );
          if (mine) return { state: 'done', platformMessageId: typeof mine.commentUrn === 'string' ? mine.commentUrn : typeof mine.$URN === 'string' ? mine.$URN : null };
        }
      }
      const body: Json = { actor: ctx.author, object: post, message: { text: r.text } };
      if (parent) body.parentComment = parent;
      const o = await call(ctx, { method: 'POST', path, json: body });
      if (!ok(o)) return inboxFailure(ctx, o, 'Commenting on LinkedIn');
      const c = obj(o.json);
      const h = o.headers['x-restli-id'];
      const id = typeof c.commentUrn === 'string' ? c.commentUrn : typeof c.$URN === 'string' ? c.$URN : ((Array.isArray(h) ? h[0] : h) ?? null);
      return { state: 'done', platformMessageId: id };
    },

    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      if (m.threadKind === 'message') return { state: 'failed', permanent: true, error: 'NOT_SUPPORTED: LinkedIn has no moderation of direct messages for apps.' };
      if (m.action !== 'delete') return { state: 'failed', permanent: true, error: `NOT_SUPPORTED: LinkedIn cannot ${m.action} comments through its API; only the account's own comments can be deleted.` };
      const ctx = context(integration);
      const c = parseCommentUrn(m.platformMessageId);
      if (!c) return { state: 'failed', permanent: true, error: 'The message is not a LinkedIn comment (urn:li:comment:(...)).' };
      const o = await call(ctx, { method: 'DELETE', path: `/rest/socialActions/${enc(c.parent)}/comments/${enc(c.id)}?actor=${enc(ctx.author)}` });
      if (ok(o)) return { state: 'done', platformMessageId: m.platformMessageId };
      // Already gone (an earlier try that got no answer): deleted.
      if (o.kind === 'answer' && o.status === 404) return { state: 'done', platformMessageId: m.platformMessageId };
      if (o.kind === 'answer' && o.status === 403) {
        return { state: 'failed', permanent: true, error: `NOT_SUPPORTED: LinkedIn deletes only the account's own comments (${linkedinMessage(o.json, o.text)}).` };
      }
      return inboxFailure(ctx, o, 'Deleting the LinkedIn comment');
    },
  };
}

// ---------------------------------------------------------------------------
// OAuth 2.0 (authorization code with the client secret; no PKCE for web apps)
// ---------------------------------------------------------------------------

/** Scopes as LinkedIn answers them: comma-separated (or spaces). */
function parseScopes(scope: unknown): string[] | null {
  if (typeof scope !== 'string') return null;
  return scope.split(/[\s,]+/).filter(Boolean);
}

function tokenSetFrom(json: unknown, previous: IntegrationCredentials | null = null, now = Date.now()): TokenSet | null {
  const b = obj(json);
  if (typeof b.access_token !== 'string' || !b.access_token) return null;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : null);
  const refreshToken = typeof b.refresh_token === 'string' && b.refresh_token ? b.refresh_token : (previous?.refreshToken ?? null);
  // The refresh token keeps its first expiry: when LinkedIn does not repeat it, count down from what is known.
  const keptExpiry = previous?.refreshExpiresAt ? Math.floor((Date.parse(previous.refreshExpiresAt) - now) / 1000) : null;
  return {
    accessToken: b.access_token,
    refreshToken,
    expiresIn: num(b.expires_in),
    refreshExpiresIn: refreshToken ? (num(b.refresh_token_expires_in) ?? (keptExpiry !== null && keptExpiry > 0 ? keptExpiry : null)) : null,
    scopes: parseScopes(b.scope) ?? previous?.scopes ?? [],
  };
}

/** What a grant lacks: a way to name the member (openid and profile, or r_basicprofile), and to post as someone (w_member_social, or both organization scopes). */
export function missingPostingScopes(scopes: string[]): string[] {
  const has = (s: string) => scopes.includes(s);
  if (!has('r_basicprofile') && (!has('openid') || !has('profile'))) return ['openid', 'profile'].filter((s) => !has(s));
  if (has('w_member_social')) return [];
  if (has('w_organization_social') && has('rw_organization_admin')) return [];
  return ['w_member_social'];
}

/** OAuth error codes that mean the grant itself is dead. */
const DEAD_GRANT = new Set(['invalid_grant', 'invalid_request', 'unauthorized_client', 'access_denied']);

async function tokenCall(endpoint: PlatformEndpoint, path: string, form: Record<string, string>, timeoutMs: number) {
  return platformRequest({
    method: 'POST',
    url: `${linkedinOAuthBase(endpoint.baseUrl)}${path}`,
    form,
    timeoutMs,
    allowPrivateNetworks: endpoint.allowPrivateNetworks,
  });
}

export const linkedinOAuth: OAuthFlow = {
  scopes: [...LINKEDIN_SCOPES],
  // Either openid + profile or r_basicprofile, and either w_member_social or the page scopes: exchangeCode checks these alternatives.
  requiredScopes: [],
  pkce: false,
  needsOperatorApp: true,

  authorizeUrl({ endpoint, app, redirectUri, state, scopes }) {
    // LinkedIn offers PKCE to native apps only: no code challenge is sent.
    const q: [string, string][] = [
      ['response_type', 'code'],
      ['client_id', app.clientId],
      ['redirect_uri', redirectUri],
      ['state', state],
      ['scope', scopes.join(' ')],
    ];
    return `${linkedinOAuthBase(endpoint.baseUrl)}/oauth/v2/authorization?${q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
  },

  async exchangeCode({ endpoint, app, redirectUri, code, timeoutMs }) {
    if (!app.clientSecret) throw new ConnectorError('MISSING_SECRET', 'LinkedIn needs the operator app\'s client secret (LINKEDIN_CLIENT_SECRET).');
    const secrets = [code, app.clientSecret];
    const o = await tokenCall(endpoint, '/oauth/v2/accessToken', { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: app.clientId, client_secret: app.clientSecret }, timeoutMs);
    if (o.kind === 'not-sent' && o.permanent) throw new ConnectorError('UNSAFE_URL', scrub(o.error, secrets));
    if (o.kind !== 'answer') throw new ConnectorError('UPSTREAM_ERROR', scrub(`LinkedIn's token endpoint: ${o.error}`, secrets), { retryable: true });
    if (!ok(o)) {
      const b = obj(o.json);
      throw new ConnectorError('UPSTREAM_ERROR', scrub(`LinkedIn refused the authorization code (HTTP ${o.status}): ${linkedinMessage(o.json, o.text)}`, secrets), {
        status: o.status,
        error: typeof b.error === 'string' ? b.error : null,
        retryable: o.status >= 500 || o.status === 429,
      });
    }
    const t = tokenSetFrom(o.json);
    if (!t) throw new ConnectorError('UPSTREAM_ERROR', 'LinkedIn accepted the authorization code but answered no access token.');
    if (parseScopes(obj(o.json).scope) !== null) {
      const missing = missingPostingScopes(t.scopes);
      if (missing.length > 0) {
        throw new ConnectorError('UPSTREAM_ERROR', `LinkedIn granted too few scopes: ${missing.join(', ')} missing (openid and profile, or r_basicprofile, name the member; w_member_social, or w_organization_social with rw_organization_admin, allow posting).`, { missingScopes: missing });
      }
    }
    return t;
  },

  async refresh({ endpoint, app, credentials, timeoutMs }): Promise<RefreshOutcome> {
    const now = Date.now();
    const secrets = [credentials.accessToken, credentials.refreshToken, app.clientSecret];
    const expired = (iso: string | null | undefined) => !!iso && Date.parse(iso) <= now;
    if (!app.clientSecret) return { state: 'retry', error: "LinkedIn needs the operator app's client secret (LINKEDIN_CLIENT_SECRET)." };

    if (!credentials.refreshToken) {
      // No programmatic refresh for this app: the token lives its 60 days, then the member consents again.
      if (expired(credentials.expiresAt)) {
        return { state: 'revoked', reason: 'The LinkedIn access token expired (60 days) and LinkedIn gave no refresh token (programmatic refresh is for approved apps): connect the account again.' };
      }
      const o = await tokenCall(endpoint, '/oauth/v2/introspectToken', { client_id: app.clientId, client_secret: app.clientSecret, token: credentials.accessToken }, timeoutMs);
      if (o.kind !== 'answer') return { state: 'retry', error: scrub(`LinkedIn's token introspection: ${o.error}`, secrets) };
      if (!ok(o)) {
        return { state: 'retry', error: scrub(`LinkedIn's token introspection answered ${o.status}: ${linkedinMessage(o.json, o.text)}`, secrets), retryAt: o.status === 429 ? (o.rateLimit?.resetAt ?? null) : null };
      }
      const b = obj(o.json);
      if (b.active === true) {
        const expiresAt = typeof b.expires_at === 'number' ? b.expires_at * 1000 : credentials.expiresAt ? Date.parse(credentials.expiresAt) : NaN;
        return {
          state: 'refreshed',
          tokens: {
            accessToken: credentials.accessToken,
            refreshToken: null,
            expiresIn: Number.isNaN(expiresAt) ? null : Math.max(0, Math.floor((expiresAt - now) / 1000)),
            refreshExpiresIn: null,
            scopes: parseScopes(b.scope) ?? credentials.scopes,
            extra: credentials.extra,
          },
        };
      }
      return { state: 'revoked', reason: `LinkedIn says the access token is ${typeof b.status === 'string' ? b.status : 'no longer active'}: connect the account again.` };
    }

    if (expired(credentials.refreshExpiresAt)) {
      return { state: 'revoked', reason: "LinkedIn's refresh token expired (it lives 365 days from the consent and a refresh does not renew it): connect the account again." };
    }
    const o = await tokenCall(endpoint, '/oauth/v2/accessToken', { grant_type: 'refresh_token', refresh_token: credentials.refreshToken, client_id: app.clientId, client_secret: app.clientSecret }, timeoutMs);
    if (o.kind === 'not-sent') return { state: 'retry', error: scrub(`LinkedIn's token endpoint could not be reached: ${o.error}`, secrets) };
    if (o.kind === 'unknown') return { state: 'retry', error: scrub(`LinkedIn's token endpoint did not answer: ${o.error}`, secrets) };
    if (ok(o)) {
      const t = tokenSetFrom(o.json, credentials, now);
      if (!t) return { state: 'retry', error: 'LinkedIn answered the refresh without an access token.' };
      return { state: 'refreshed', tokens: { ...t, extra: credentials.extra } };
    }
    const msg = scrub(linkedinMessage(o.json, o.text), secrets);
    if (o.status === 429 || o.status >= 500) {
      return { state: 'retry', error: `LinkedIn's token endpoint answered ${o.status}: ${msg}`, retryAt: o.status === 429 ? (o.rateLimit?.resetAt ?? new Date(now + LINKEDIN_DEFAULT_TUNING.rateLimitBackoffMs)) : null };
    }
    const code = typeof obj(o.json).error === 'string' ? (obj(o.json).error as string) : null;
    // invalid_client: the operator's app id or secret is wrong; the member's grant may be fine, so do not disconnect.
    if (code === 'invalid_client') return { state: 'retry', error: `LinkedIn refused the operator's app credentials (LINKEDIN_CLIENT_ID / LINKEDIN_CLIENT_SECRET): ${msg}` };
    if (o.status === 401 || (o.status === 400 && (code === null || DEAD_GRANT.has(code)))) {
      return { state: 'revoked', reason: `LinkedIn refused the refresh token (${code ?? `HTTP ${o.status}`}): ${msg}` };
    }
    return { state: 'retry', error: `LinkedIn's token endpoint answered ${o.status}: ${msg}` };
  },
};

// ---------------------------------------------------------------------------
// The accounts
// ---------------------------------------------------------------------------

type ReadInput = { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number };

async function apiGet(input: ReadInput, path: string, what: string): Promise<Json> {
  const o = await platformRequest({
    method: 'GET',
    url: `${trim(input.endpoint.baseUrl)}${path}`,
    headers: restHeaders(input.credentials.accessToken),
    timeoutMs: input.timeoutMs,
    allowPrivateNetworks: input.endpoint.allowPrivateNetworks,
  });
  const secrets = [input.credentials.accessToken, input.credentials.refreshToken];
  if (o.kind === 'not-sent' && o.permanent) throw new ConnectorError('UNSAFE_URL', scrub(o.error, secrets));
  if (o.kind !== 'answer') throw new ConnectorError('UPSTREAM_ERROR', scrub(`${what}: ${o.error}`, secrets), { retryable: true });
  if (!ok(o)) {
    const error = scrub(`${what}: LinkedIn answered ${o.status}: ${linkedinMessage(o.json, o.text)}`, secrets);
    if (o.status === 429) throw new ConnectorError('RATE_LIMITED', error, { retryAt: (o.rateLimit?.resetAt ?? new Date(Date.now() + LINKEDIN_DEFAULT_TUNING.rateLimitBackoffMs)).toISOString() });
    throw new ConnectorError('UPSTREAM_ERROR', error, { status: o.status, reauth: o.status === 401, retryable: o.status >= 500 });
  }
  return obj(o.json);
}

/** Organization ids in batches of this many per batch GET. */
const ORG_BATCH = 50;

async function readAccounts(input: ReadInput): Promise<PlatformAccount[]> {
  const scopes = input.credentials.scopes ?? [];
  const known = scopes.length > 0;
  // OpenID Connect (openid, profile), or r_basicprofile for an app that has only the Community Management API.
  const openid = !known || scopes.includes('openid') || !scopes.includes('r_basicprofile');
  const me = openid ? await apiGet(input, '/v2/userinfo', 'Reading the LinkedIn member') : await apiGet(input, '/v2/me', 'Reading the LinkedIn member');
  const memberId = openid ? me.sub : me.id;
  if (typeof memberId !== 'string' || !/^[A-Za-z0-9_-]+$/.test(memberId)) throw new ConnectorError('UPSTREAM_ERROR', 'Reading the LinkedIn member: LinkedIn answered no member id.');
  const personUrn = `urn:li:person:${memberId}`;
  const accounts: PlatformAccount[] = [];
  if (!known || scopes.includes('w_member_social')) {
    const parts = openid ? [me.given_name, me.family_name] : [me.localizedFirstName, me.localizedLastName];
    const joined = parts.filter((x) => typeof x === 'string' && x).join(' ');
    const name = openid && typeof me.name === 'string' && me.name.trim() ? me.name : joined || personUrn;
    accounts.push({ id: personUrn, username: null, name, avatarUrl: openid ? httpUrl(me.picture) : null, profileUrl: null, kind: 'person', extra: { authorUrn: personUrn, personUrn } });
  }
  if (scopes.includes('rw_organization_admin') && scopes.includes('w_organization_social')) {
    const ids: string[] = [];
    for (let start = 0; start < 1000; start += 100) {
      const acl = await apiGet(input, `/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED&start=${start}&count=100`, 'Reading the LinkedIn pages the member administers');
      const elements: Json[] = Array.isArray(acl.elements) ? acl.elements.map(obj) : [];
      for (const e of elements) {
        const m = /^urn:li:organization:(\d+)$/.exec(typeof e.organization === 'string' ? e.organization : '');
        if (m && e.role === 'ADMINISTRATOR' && e.state === 'APPROVED' && !ids.includes(m[1])) ids.push(m[1]);
      }
      if (elements.length < 100) break;
    }
    const orgs = new Map<string, Json>();
    for (let i = 0; i < ids.length; i += ORG_BATCH) {
      const batch = ids.slice(i, i + ORG_BATCH);
      const r = await apiGet(input, `/rest/organizations?ids=List(${batch.join(',')})`, 'Reading the LinkedIn pages');
      for (const [k, v] of Object.entries(obj(r.results))) orgs.set(k, obj(v));
    }
    for (const id of ids) {
      const o = orgs.get(id) ?? {};
      const urn = `urn:li:organization:${id}`;
      const vanity = typeof o.vanityName === 'string' && /^[A-Za-z0-9_-]+$/.test(o.vanityName) ? o.vanityName : null;
      accounts.push({
        id: urn,
        username: vanity,
        name: typeof o.localizedName === 'string' && o.localizedName.trim() ? o.localizedName : `LinkedIn page ${id}`,
        avatarUrl: null,
        profileUrl: `https://www.linkedin.com/company/${vanity ?? id}/`,
        kind: 'organization',
        extra: { authorUrn: urn, personUrn, organizationId: id },
      });
    }
  }
  if (accounts.length === 0) throw new ConnectorError('UPSTREAM_ERROR', 'This LinkedIn grant can post as no one: it has neither w_member_social nor a page the member administers.', { missingScopes: ['w_member_social'] });
  return accounts;
}

export const linkedin: PlatformModule = {
  name: 'linkedin',
  platforms: ['linkedin'],
  connect: 'oauth',
  defaultBaseUrl: LINKEDIN_DEFAULT_BASE_URL,
  appEnv: { clientId: 'LINKEDIN_CLIENT_ID', clientSecret: 'LINKEDIN_CLIENT_SECRET' },
  oauth: linkedinOAuth,
  readAccounts,

  async readLimits(): Promise<AccountLimits> {
    return { captionMaxLength: LINKEDIN_MEDIA_RULES.captionMaxLength, maxMedia: LINKEDIN_MEDIA_RULES.maxImages, videoMaxBytes: LINKEDIN_MEDIA_RULES.videoMaxBytes };
  },

  create: (options) => createLinkedInConnector(options),
};

