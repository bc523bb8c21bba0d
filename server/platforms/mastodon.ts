// The Mastodon connector: any instance of Mastodon 4.3+ (the Mastodon REST API,
// https://docs.joinmastodon.org/methods/), one file, one PlatformModule.
//
// Connecting (OAuthFlow; no operator app): the user names an instance and
// Pressroom registers its own app there (POST /api/v1/apps: client_name
// "Pressroom", the callback URL, the scopes below, website), which the
// framework keeps and reuses per instance. The authorization-code flow runs
// with PKCE S256 (GET /oauth/authorize, POST /oauth/token; Mastodon 4.3 added
// PKCE and the `profile` scope). Scopes, the narrowest that cover what the
// connector does:
//   profile          GET /api/v1/accounts/verify_credentials (account, followers)
//   read:statuses    GET /api/v1/statuses/:id (metrics, caption edits, replies)
//   write:statuses   POST/PUT/DELETE /api/v1/statuses
//   write:media      POST /api/v2/media, GET /api/v1/media/:id
// Mastodon scopes are hierarchical (`read` covers `read:statuses`, `write`
// covers `write:*`, `read`/`read:accounts` reach verify_credentials like
// `profile`): a grant naming a parent scope is read as the granular scopes it
// covers (grantedScopes below). Mastodon tokens do not expire and come with no
// refresh token: a "refresh" asks verify_credentials whether the token still
// works; a 401 is a revoked grant, anything else keeps the token.
//
// Publishing (Connector): media first (POST /api/v2/media, multipart `file` and
// `description` = alt text; 200 = processed, 202 = processing: GET
// /api/v1/media/:id until it answers 200 with a url, bounded by the call
// timeout), then POST /api/v1/statuses with `Idempotency-Key`: the edition's
// token for the first status, `<token>~<n>` for thread message n, each reply
// chained by in_reply_to_id. Mastodon keeps a key for one hour and answers a
// repeated key with the status it already made, so an interrupted call is
// re-sent safely (acceptsIdempotencyToken) and a thread resumes where it
// stopped. Settings (edition.settings): visibility (public, unlisted, private,
// direct), spoilerText (the content warning), language (ISO 639-1), sensitive.
//
// Outcomes: 2xx published; 429 failed, retry at X-RateLimit-Reset; 401 failed
// with reauth; 422 and other 4xx failed for good with Mastodon's `error`;
// 5xx, nothing sent, or no answer (safe to re-send with the same key) failed
// for now. No message ever contains the access token.
import { platformRequest, type PlatformRequest, type PlatformResponse, httpUrl, isOk as ok, sleep, jsonObject as obj, hostOf as safeHost, type PlatformAnswer as Answer } from './http.ts';
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
  type IntegrationRef,
  type MediaRef,
  type MetricsQuery,
  type PlatformAccount,
  type PlatformApp,
  type PlatformEndpoint,
  type PlatformModule,
  type PostMetrics,
  type PublishableEdition,
  type PublishResult,
  type RefreshOutcome,
  type TokenSet,
} from './types.ts';

export const MASTODON_SCOPES = ['profile', 'read:statuses', 'write:statuses', 'write:media'] as const;
export const MASTODON_VISIBILITIES = ['public', 'unlisted', 'private', 'direct'] as const;
export type MastodonVisibility = (typeof MASTODON_VISIBILITIES)[number];

/** How long Mastodon remembers an Idempotency-Key (PostStatusService: one hour). */
export const MASTODON_IDEMPOTENCY_WINDOW_MS = 60 * 60 * 1000;
/** A rate-limited thread is resumed only when its reset falls this far inside the idempotency window. */
const IDEMPOTENCY_MARGIN_MS = 10 * 60 * 1000;

const MAX_ERROR_TEXT = 500;

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

export interface MastodonSettings {
  visibility?: MastodonVisibility;
  spoilerText?: string;
  language?: string;
  sensitive?: boolean;
}

/**
 * An edition's Mastodon settings, checked: the value, or the reason it is
 * refused (so a caller can answer a 4xx before anything reaches the instance).
 */
export function parseMastodonSettings(settings: Record<string, unknown> | null | undefined): { ok: true; value: MastodonSettings } | { ok: false; error: string } {
  const s = settings ?? {};
  const out: MastodonSettings = {};
  if (s.visibility !== undefined && s.visibility !== null) {
    if (typeof s.visibility !== 'string' || !(MASTODON_VISIBILITIES as readonly string[]).includes(s.visibility)) {
      return { ok: false, error: `settings.visibility must be one of ${MASTODON_VISIBILITIES.join(', ')}.` };
    }
    out.visibility = s.visibility as MastodonVisibility;
  }
  if (s.spoilerText !== undefined && s.spoilerText !== null) {
    if (typeof s.spoilerText !== 'string') return { ok: false, error: 'settings.spoilerText (the content warning) must be a string.' };
    if (s.spoilerText !== '') out.spoilerText = s.spoilerText;
  }
  if (s.language !== undefined && s.language !== null) {
    if (typeof s.language !== 'string' || !/^[a-z]{2}$/.test(s.language)) {
      return { ok: false, error: 'settings.language must be an ISO 639-1 code (two lower-case letters, e.g. "en").' };
    }
    out.language = s.language;
  }
  if (s.sensitive !== undefined && s.sensitive !== null) {
    if (typeof s.sensitive !== 'boolean') return { ok: false, error: 'settings.sensitive must be true or false.' };
    out.sensitive = s.sensitive;
  }
  return { ok: true, value: out };
}

// ---------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------

const READ_CHILDREN = ['read:accounts', 'read:statuses'];
const WRITE_CHILDREN = ['write:statuses', 'write:media'];

/**
 * The scopes a grant covers: the ones Mastodon names plus the granular ones a
 * named parent implies (`read` covers read:*, `write` covers write:*, and
 * `read`/`read:accounts` reach verify_credentials as `profile` does).
 */
export function grantedScopes(scope: string | string[] | null | undefined): string[] {
  const named = (Array.isArray(scope) ? scope : String(scope ?? '').split(/[\s+]+/)).map((s) => s.trim()).filter(Boolean);
  const out = new Set(named);
  if (out.has('read')) READ_CHILDREN.forEach((s) => out.add(s));
  if (out.has('write')) WRITE_CHILDREN.forEach((s) => out.add(s));
  if (out.has('read:accounts')) out.add('profile');
  return [...out];
}

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

function base(endpoint: PlatformEndpoint): string {
  return endpoint.baseUrl.replace(/\/+$/, '');
}

/** One call to the instance. A user-given instance is reached over https only (the token travels in it). */
async function call(endpoint: PlatformEndpoint, r: Omit<PlatformRequest, 'url' | 'allowPrivateNetworks'> & { path: string; token?: string }): Promise<PlatformResponse> {
  const url = `${base(endpoint)}${r.path}`;
  if (!endpoint.allowPrivateNetworks && !/^https:\/\//i.test(url)) {
    return { kind: 'not-sent', permanent: true, error: `A Mastodon instance is reached over https only (${safeHost(url)}).` };
  }
  const { path: _path, token, ...rest } = r;
  return platformRequest({
    ...rest,
    url,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(r.headers ?? {}) },
    allowPrivateNetworks: endpoint.allowPrivateNetworks,
  });
}



/** Mastodon's error envelope: {"error": "..."} (OAuth errors add error_description). */
function platformMessage(o: Answer): string {
  const b = o.json as Record<string, unknown> | null;
  const parts: string[] = [];
  if (b && typeof b === 'object') {
    if (typeof b.error === 'string') parts.push(b.error);
    if (typeof b.error_description === 'string') parts.push(b.error_description);
  }
  const text = parts.join(': ') || (o.text && !o.text.trimStart().startsWith('<') ? o.text.trim() : '');
  return text.slice(0, MAX_ERROR_TEXT);
}

function describe(o: Answer, what: string): string {
  const m = platformMessage(o);
  return `Mastodon ${o.status >= 500 ? 'failed on' : 'refused'} ${what} (HTTP ${o.status}${m ? `: ${m}` : ''}).`;
}


function idOf(v: unknown): string | null {
  const id = obj(v).id;
  return typeof id === 'string' && id ? id : typeof id === 'number' ? String(id) : null;
}

/** A ConnectorError for an answer or a failed call, for the methods that throw (auth, metrics). */
function upstream(o: Exclude<PlatformResponse, Answer> | Answer, what: string): ConnectorError {
  if (o.kind === 'answer') {
    if (o.status === 429) {
      return new ConnectorError('RATE_LIMITED', describe(o, what), { status: 429, retryAt: o.rateLimit?.resetAt?.toISOString() ?? null });
    }
    const b = obj(o.json);
    return new ConnectorError('UPSTREAM_ERROR', describe(o, what), {
      status: o.status,
      ...(typeof b.error === 'string' && /^[a-z_]+$/.test(b.error) ? { error: b.error } : {}),
      retryable: o.status >= 500,
    });
  }
  if (o.kind === 'not-sent' && o.permanent) return new ConnectorError('UNSAFE_URL', o.error);
  return new ConnectorError('UPSTREAM_ERROR', o.error, { retryable: true });
}

// ---------------------------------------------------------------------------
// Media
// ---------------------------------------------------------------------------

const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/heic': 'heic',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
};

/** The file's type: as stored, else from its first bytes (Mastodon refuses a file without a MIME type). */
export function sniffContentType(data: Buffer, given?: string | null): string {
  if (given && /^[a-z]+\/[a-z0-9.+-]+$/i.test(given) && given !== 'application/octet-stream') return given.toLowerCase();
  const hex = data.subarray(0, 12).toString('hex');
  if (hex.startsWith('ffd8ff')) return 'image/jpeg';
  if (hex.startsWith('89504e470d0a1a0a')) return 'image/png';
  if (hex.startsWith('47494638')) return 'image/gif';
  if (hex.startsWith('52494646') && data.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (hex.startsWith('1a45dfa3')) return 'video/webm';
  if (data.subarray(4, 8).toString('latin1') === 'ftyp') return data.subarray(8, 12).toString('latin1') === 'qt  ' ? 'video/quicktime' : 'video/mp4';
  return 'application/octet-stream';
}

type Step<T> = { ok: true; value: T } | { ok: false; result: PublishResult };


// ---------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------

function tokenSetFrom(json: unknown, endpoint: PlatformEndpoint): TokenSet {
  const b = obj(json);
  if (typeof b.access_token !== 'string' || !b.access_token) {
    throw new ConnectorError('UPSTREAM_ERROR', 'Mastodon answered the token request without an access_token.');
  }
  const expiresIn = typeof b.expires_in === 'number' && b.expires_in > 0 ? b.expires_in : null;
  return {
    accessToken: b.access_token,
    refreshToken: typeof b.refresh_token === 'string' && b.refresh_token ? b.refresh_token : null,
    expiresIn,
    scopes: grantedScopes(typeof b.scope === 'string' ? b.scope : ''),
    extra: { instanceUrl: base(endpoint) },
  };
}

function accountOf(json: unknown): PlatformAccount {
  const a = obj(json);
  const id = idOf(a);
  if (!id) throw new ConnectorError('UPSTREAM_ERROR', 'Mastodon answered verify_credentials without an account id.');
  const acct = typeof a.acct === 'string' && a.acct ? a.acct : typeof a.username === 'string' ? a.username : null;
  const name = typeof a.display_name === 'string' && a.display_name.trim() ? a.display_name : (acct ?? id);
  return { id, username: acct, name, avatarUrl: httpUrl(a.avatar), profileUrl: httpUrl(a.url), kind: 'person' };
}

async function verifyCredentials(endpoint: PlatformEndpoint, token: string, timeoutMs: number) {
  return call(endpoint, { method: 'GET', path: '/api/v1/accounts/verify_credentials', token, timeoutMs });
}

export const mastodon: PlatformModule = {
  name: 'mastodon',
  platforms: ['mastodon'],
  connect: 'oauth',

  oauth: {
    scopes: [...MASTODON_SCOPES],
    requiredScopes: [...MASTODON_SCOPES],
    pkce: true,
    needsOperatorApp: false,

    async registerApp({ endpoint, redirectUri, scopes, timeoutMs }): Promise<PlatformApp> {
      let website: string | undefined;
      try {
        website = new URL(redirectUri).origin;
      } catch {
        throw new ConnectorError('UPSTREAM_ERROR', 'The callback URL is not a URL; set PUBLIC_BASE_URL.');
      }
      const o = await call(endpoint, {
        method: 'POST',
        path: '/api/v1/apps',
        json: { client_name: 'Pressroom', redirect_uris: [redirectUri], scopes: scopes.join(' '), website },
        timeoutMs,
      });
      if (!ok(o)) throw upstream(o, 'the app registration');
      const b = obj(o.json);
      if (typeof b.client_id !== 'string' || !b.client_id || typeof b.client_secret !== 'string' || !b.client_secret) {
        throw new ConnectorError('UPSTREAM_ERROR', 'Mastodon registered the app but answered no client_id and client_secret.');
      }
      return { clientId: b.client_id, clientSecret: b.client_secret };
    },

    authorizeUrl({ endpoint, app, redirectUri, state, codeChallenge, scopes }): string {
      const q = new URLSearchParams({ response_type: 'code', client_id: app.clientId, redirect_uri: redirectUri, scope: scopes.join(' '), state });
      if (codeChallenge) {
        q.set('code_challenge', codeChallenge);
        q.set('code_challenge_method', 'S256');
      }
      return `${base(endpoint)}/oauth/authorize?${q.toString()}`;
    },

    async exchangeCode({ endpoint, app, redirectUri, code, codeVerifier, timeoutMs }): Promise<TokenSet> {
      const form: Record<string, string> = {
        grant_type: 'authorization_code',
        code,
        client_id: app.clientId,
        client_secret: app.clientSecret ?? '',
        redirect_uri: redirectUri,
      };
      if (codeVerifier) form.code_verifier = codeVerifier;
      const o = await call(endpoint, { method: 'POST', path: '/oauth/token', form, timeoutMs });
      if (!ok(o)) throw upstream(o, 'the authorization code');
      const tokens = tokenSetFrom(o.json, endpoint);
      const missing = MASTODON_SCOPES.filter((s) => !tokens.scopes.includes(s));
      if (missing.length > 0) {
        throw new ConnectorError('UPSTREAM_ERROR', `Mastodon granted too few scopes: ${missing.join(', ')} missing.`, { missingScopes: missing });
      }
      return tokens;
    },

    async refresh({ endpoint, credentials, timeoutMs }): Promise<RefreshOutcome> {
      // Mastodon tokens live until revoked: check the token, keep it when it works.
      const o = await verifyCredentials(endpoint, credentials.accessToken, timeoutMs);
      if (ok(o)) {
        return {
          state: 'refreshed',
          tokens: { accessToken: credentials.accessToken, refreshToken: credentials.refreshToken, expiresIn: null, scopes: credentials.scopes, extra: credentials.extra },
        };
      }
      if (o.kind === 'answer' && o.status === 401) {
        return { state: 'revoked', reason: describe(o, 'the access token') };
      }
      if (o.kind === 'answer') return { state: 'retry', error: describe(o, 'the token check'), retryAt: o.status === 429 ? (o.rateLimit?.resetAt ?? null) : null };
      return { state: 'retry', error: o.error, retryAt: null };
    },
  },

  async readAccounts({ endpoint, credentials, timeoutMs }): Promise<PlatformAccount[]> {
    const o = await verifyCredentials(endpoint, credentials.accessToken, timeoutMs);
    if (!ok(o)) throw upstream(o, 'the account lookup');
    return [accountOf(o.json)];
  },

  async readLimits({ endpoint, credentials, timeoutMs }): Promise<AccountLimits | null> {
    const o = await call(endpoint, { method: 'GET', path: '/api/v2/instance', token: credentials.accessToken, timeoutMs });
    // An instance older than 4.0 has no /api/v2/instance: its limits are unknown.
    if (o.kind === 'answer' && o.status === 404) return null;
    if (!ok(o)) throw upstream(o, 'the instance lookup');
    const c = obj(obj(o.json).configuration);
    const positive = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : undefined);
    const limits: AccountLimits = {};
    const set = <K extends keyof AccountLimits>(k: K, v: number | undefined) => {
      if (v !== undefined) limits[k] = v;
    };
    set('captionMaxLength', positive(obj(c.statuses).max_characters));
    set('maxMedia', positive(obj(c.statuses).max_media_attachments));
    set('imageMaxBytes', positive(obj(c.media_attachments).image_size_limit));
    set('videoMaxBytes', positive(obj(c.media_attachments).video_size_limit));
    return Object.keys(limits).length > 0 ? limits : null;
  },

  create: createMastodonConnector,
};

/** The result of a publish that got no further than the failed call. */
type NotPublished = Exclude<PublishResult, { state: 'published' }>;

const RESEND_STATUS = 're-sent with the same Idempotency-Key, Mastodon answers with the status it may have made.';
const RESEND_UPLOAD = 'no status was made; the file is uploaded again.';

/**
 * What a failed call means. `resend`: why a call that got no answer may be sent again (the
 * Idempotency-Key, an upload that only leaves an unattached file, an edit that sets the same
 * text): a temporary failure then; without one, an unknown outcome.
 */
function failure(o: Exclude<PlatformResponse, Answer> | Answer, what: string, resend: string | null): NotPublished {
  if (o.kind === 'not-sent') return { state: 'failed', permanent: o.permanent, error: o.error };
  if (o.kind === 'unknown') {
    return resend ? { state: 'failed', permanent: false, error: `${o.error} (${what}); ${resend}` } : { state: 'unknown', error: o.error };
  }
  if (o.status === 429) {
    const at = o.rateLimit?.resetAt ?? null;
    return { state: 'failed', permanent: false, error: describe(o, what), ...(at ? { retryAt: at.toISOString() } : {}) };
  }
  if (o.status === 401) return { state: 'failed', permanent: false, reauth: true, error: describe(o, what) };
  if (o.status >= 400 && o.status < 500) return { state: 'failed', permanent: true, error: describe(o, what) };
  return { state: 'failed', permanent: false, error: describe(o, what) };
}

export function createMastodonConnector(options: ConnectorOptions): Connector {
  const endpointOf = (i: IntegrationRef): PlatformEndpoint => {
    if (i.endpoint) return i.endpoint;
    const inst = i.credentials?.extra?.instanceUrl;
    if (typeof inst === 'string' && inst) return { baseUrl: inst, allowPrivateNetworks: options.allowPrivateNetworks };
    if (options.baseUrl) return { baseUrl: options.baseUrl, allowPrivateNetworks: true };
    throw new ConnectorError('MISSING_SECRET', 'This Mastodon integration names no instance (connect the account again).', { integrationId: i.id });
  };
  const tokenOf = (i: IntegrationRef): string => {
    const t = i.credentials?.accessToken;
    if (!t) throw new ConnectorError('MISSING_SECRET', 'The Mastodon access token was not provided to the connector (only the worker reads it).', { integrationId: i.id });
    return t;
  };
  const timeoutMs = options.timeoutMs;
  const pollInterval = Math.max(50, Math.min(1000, Math.floor(timeoutMs / 20)));

  /** Uploads one file with its alt text; waits (bounded by the call timeout) until Mastodon has processed it. */
  async function upload(endpoint: PlatformEndpoint, token: string, m: MediaRef, label: string): Promise<Step<string>> {
    if (!m.read) return { ok: false, result: { state: 'failed', permanent: true, error: `The bytes of ${label} were not provided to the connector.` } };
    let data: Buffer;
    try {
      data = await m.read();
    } catch (e) {
      return { ok: false, result: { state: 'failed', permanent: false, error: `${label} could not be read from media storage: ${e instanceof Error ? e.message : String(e)}` } };
    }
    const contentType = sniffContentType(data, m.contentType);
    const fields: Record<string, string> = {};
    if (m.altText) fields.description = m.altText;
    const o = await call(endpoint, {
      method: 'POST',
      path: '/api/v2/media',
      token,
      multipart: { fields, files: [{ name: 'file', filename: `${m.id}.${EXTENSIONS[contentType] ?? 'bin'}`, contentType, data }] },
      timeoutMs,
    });
    // An upload that got no answer left at most an unattached file behind: never unknown.
    if (!ok(o)) return { ok: false, result: failure(o, `the upload of ${label}`, RESEND_UPLOAD) };
    const id = idOf(o.json);
    if (!id) return { ok: false, result: { state: 'failed', permanent: false, error: `Mastodon accepted ${label} but answered no media id.` } };
    if (o.status === 200 && obj(o.json).url) return { ok: true, value: id };
    // 202: still processing. Poll GET /api/v1/media/:id (206 while processing, 200 with a url when done).
    const deadline = Date.now() + timeoutMs;
    let wait = pollInterval;
    while (Date.now() + wait <= deadline) {
      await sleep(wait);
      wait = Math.min(wait * 2, 2000);
      const p = await call(endpoint, { method: 'GET', path: `/api/v1/media/${encodeURIComponent(id)}`, token, timeoutMs: Math.max(1, Math.min(timeoutMs, deadline - Date.now())) });
      if (p.kind === 'answer' && p.status === 200 && obj(p.json).url) return { ok: true, value: id };
      if (p.kind === 'answer' && p.status === 206) continue;
      if (p.kind === 'answer' && p.status === 200) continue;
      if (p.kind === 'not-sent' && p.permanent) return { ok: false, result: failure(p, `the processing of ${label}`, RESEND_UPLOAD) };
      if (p.kind !== 'answer') continue;
      return { ok: false, result: failure(p, `the processing of ${label}`, RESEND_UPLOAD) };
    }
    return { ok: false, result: { state: 'failed', permanent: false, error: `Mastodon was still processing ${label} after ${timeoutMs} ms; it is uploaded again on the next attempt.` } };
  }

  return {
    name: 'mastodon',
    // Mastodon answers a repeated Idempotency-Key with the status it already made (for one hour).
    acceptsIdempotencyToken: true,
    // Mastodon's defaults per account: 300 requests per 5 minutes, 30 media uploads per
    // 30 minutes, 300 statuses per 3 hours. The claim keeps to the statuses' window and two
    // posts in flight per account; a 429 on the others puts the edition back until the reset.
    publishLimits: { perIntegration: { maxInFlight: 2, maxPerWindow: 300, windowSeconds: 3 * 60 * 60 } },

    async publish(integration: IntegrationRef, edition: PublishableEdition): Promise<PublishResult> {
      const settings = parseMastodonSettings(edition.settings);
      if (!settings.ok) return { state: 'failed', permanent: true, error: settings.error };
      const endpoint = endpointOf(integration);
      const token = tokenOf(integration);
      const key = edition.idempotencyToken ?? `pressroom-${edition.id}`;
      const messages = [{ caption: edition.caption, media: edition.media }, ...edition.thread];
      const posted: { id: string; url: string | null; createdAt: number }[] = [];
      const partial = (r: PublishResult): PublishResult => {
        if (posted.length === 0 || r.state !== 'failed') return r;
        const note = ` (statuses 1 to ${posted.length} of ${messages.length} were published: ${posted.map((p) => p.id).join(', ')})`;
        if (r.permanent) return { ...r, error: `${r.error}${note}` };
        // Resuming re-sends the published statuses with their keys: only inside the hour Mastodon
        // keeps the oldest one's key (counted from when that status was made, maybe an attempt ago).
        const resumeAt = r.retryAt ? Date.parse(r.retryAt) : Date.now();
        const oldest = Math.min(...posted.map((p) => p.createdAt));
        if (resumeAt - oldest > MASTODON_IDEMPOTENCY_WINDOW_MS - IDEMPOTENCY_MARGIN_MS) {
          return { state: 'failed', permanent: true, error: `${r.error}${note}; the rest cannot be sent before Mastodon forgets the thread's idempotency keys.` };
        }
        return { ...r, error: `${r.error}${note}` };
      };

      for (let n = 0; n < messages.length; n++) {
        const msg = messages[n];
        const label = messages.length > 1 ? `thread message ${n + 1}` : 'the status';
        const mediaIds: string[] = [];
        for (let k = 0; k < msg.media.length; k++) {
          const up = await upload(endpoint, token, msg.media[k], `media ${k + 1} of ${label}`);
          if (!up.ok) return partial(up.result);
          mediaIds.push(up.value);
        }
        const body: Record<string, unknown> = { status: msg.caption };
        if (mediaIds.length > 0) body.media_ids = mediaIds;
        if (n > 0) body.in_reply_to_id = posted[n - 1].id;
        if (settings.value.visibility) body.visibility = settings.value.visibility;
        if (settings.value.spoilerText) body.spoiler_text = settings.value.spoilerText;
        if (settings.value.language) body.language = settings.value.language;
        if (settings.value.sensitive !== undefined) body.sensitive = settings.value.sensitive;
        const o = await call(endpoint, {
          method: 'POST',
          path: '/api/v1/statuses',
          token,
          headers: { 'idempotency-key': n === 0 ? key : `${key}~${n}` },
          json: body,
          timeoutMs,
        });
        if (!ok(o)) return partial(failure(o, label, RESEND_STATUS));
        const id = idOf(o.json);
        if (!id) return partial({ state: 'failed', permanent: false, error: `Mastodon accepted ${label} but answered no status id.` });
        const s = obj(o.json);
        const made = typeof s.created_at === 'string' ? Date.parse(s.created_at) : NaN;
        posted.push({ id, url: httpUrl(s.url) ?? httpUrl(s.uri), createdAt: Number.isNaN(made) ? Date.now() : Math.min(made, Date.now()) });
      }
      return {
        state: 'published',
        platformPostId: posted[0].id,
        permalink: posted[0].url,
        ...(posted.length > 1 ? { threadPostIds: posted.slice(1).map((p) => p.id) } : {}),
      };
    },

    async editPublishedCaption(integration: IntegrationRef, post: { platformPostId: string; caption: string; attempt: number }): Promise<CaptionEditResult> {
      const endpoint = endpointOf(integration);
      const token = tokenOf(integration);
      const path = `/api/v1/statuses/${encodeURIComponent(post.platformPostId)}`;
      // PUT replaces what it is not given (media, content warning, sensitivity): read them first and send them back.
      const g = await call(endpoint, { method: 'GET', path, token, timeoutMs });
      if (!ok(g)) return captionFailure(g, 'the status lookup');
      const s = obj(g.json);
      const body: Record<string, unknown> = {
        status: post.caption,
        media_ids: (Array.isArray(s.media_attachments) ? s.media_attachments : []).map(idOf).filter((x: string | null): x is string => !!x),
        spoiler_text: typeof s.spoiler_text === 'string' ? s.spoiler_text : '',
        sensitive: s.sensitive === true,
      };
      if (typeof s.language === 'string' && s.language) body.language = s.language;
      const o = await call(endpoint, { method: 'PUT', path, token, json: body, timeoutMs });
      if (ok(o)) return { state: 'updated' };
      return captionFailure(o, 'the caption edit');
    },

    async createDraft(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no article drafts.`);
    },

    async fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics> {
      const o = await call(endpointOf(integration), { method: 'GET', path: `/api/v1/statuses/${encodeURIComponent(post.platformPostId)}`, token: tokenOf(integration), timeoutMs });
      if (!ok(o)) throw upstream(o, 'the status metrics');
      const s = obj(o.json);
      const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
      // Mastodon counts no impressions or clicks: they stay 0.
      return { impressions: 0, likes: n(s.favourites_count), comments: n(s.replies_count), shares: n(s.reblogs_count), clicks: 0, fetchedAt: new Date().toISOString() };
    },

    async fetchAccountMetrics(integration: IntegrationRef): Promise<AccountMetrics> {
      const o = await verifyCredentials(endpointOf(integration), tokenOf(integration), timeoutMs);
      if (!ok(o)) throw upstream(o, 'the account metrics');
      const a = obj(o.json);
      const followers = typeof a.followers_count === 'number' && a.followers_count >= 0 ? Math.floor(a.followers_count) : 0;
      return { followers, profileViews: null, demographics: null, fetchedAt: new Date().toISOString() };
    },

    async listBoards(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no boards.`);
    },

    async listVideoCategories(integration: IntegrationRef) {
      throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no video categories.`);
    },

    // Inbox: a reply is a status in reply to the message (or, with no message, to the post),
    // mentioning the author replied to (Mastodon delivers a status to the accounts it mentions)
    // and, in a direct-message thread, with `direct` visibility.
    async reply(integration: IntegrationRef, reply: InboxReply): Promise<InboxActionResult> {
      const endpoint = endpointOf(integration);
      const token = tokenOf(integration);
      // A direct message is a status: the answer goes to the message (its author is who it mentions).
      if (reply.threadKind === 'message' && !reply.inReplyTo) {
        return { state: 'failed', permanent: true, error: 'A Mastodon direct message is answered by replying to one of its messages; none was named.' };
      }
      const target = reply.inReplyTo ?? reply.platformThreadId;
      if (!target) return { state: 'failed', permanent: true, error: 'The reply names no Mastodon status to answer.' };
      let text = reply.text;
      let visibility: string | null = reply.threadKind === 'message' ? 'direct' : null;
      if (reply.inReplyTo) {
        const g = await call(endpoint, { method: 'GET', path: `/api/v1/statuses/${encodeURIComponent(target)}`, token, timeoutMs });
        if (!ok(g)) return inboxFailure(g, 'the message replied to');
        const s = obj(g.json);
        const acct = typeof obj(s.account).acct === 'string' ? (obj(s.account).acct as string) : null;
        const own = acct !== null && integration.username !== null && acct.toLowerCase() === integration.username.replace(/^@/, '').toLowerCase();
        if (acct && !own && !new RegExp(`(^|\\s)@${acct.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\b|$)`, 'i').test(text)) text = `@${acct} ${text}`;
        // Never wider than the message answered (Mastodon's own clients do the same).
        if (!visibility && (s.visibility === 'private' || s.visibility === 'direct' || s.visibility === 'unlisted')) visibility = s.visibility;
      }
      const body: Record<string, unknown> = { status: text, in_reply_to_id: target };
      if (visibility) body.visibility = visibility;
      const o = await call(endpoint, { method: 'POST', path: '/api/v1/statuses', token, headers: { 'idempotency-key': reply.idempotencyToken }, json: body, timeoutMs });
      if (!ok(o)) return inboxFailure(o, 'the reply');
      return { state: 'done', platformMessageId: idOf(o.json) };
    },

    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      if (m.action !== 'delete') {
        return { state: 'failed', permanent: true, error: `NOT_SUPPORTED: Mastodon cannot ${m.action} replies; only the account's own statuses can be deleted.` };
      }
      const endpoint = endpointOf(integration);
      const token = tokenOf(integration);
      const path = `/api/v1/statuses/${encodeURIComponent(m.platformMessageId)}`;
      const o = await call(endpoint, { method: 'DELETE', path, token, timeoutMs });
      if (ok(o)) return { state: 'done', platformMessageId: m.platformMessageId };
      if (o.kind === 'answer' && o.status === 404) {
        // Not ours, or already gone (an earlier try that got no answer): tell them apart.
        const g = await call(endpoint, { method: 'GET', path, token, timeoutMs });
        if (g.kind === 'answer' && g.status === 404) return { state: 'done', platformMessageId: m.platformMessageId };
        if (ok(g)) return { state: 'failed', permanent: true, error: "NOT_SUPPORTED: Mastodon deletes only the account's own statuses; this one is another account's." };
        return inboxFailure(g, 'the status lookup');
      }
      return inboxFailure(o, 'the deletion');
    },
  };
}

function captionFailure(o: Exclude<PlatformResponse, Answer> | Answer, what: string): CaptionEditResult {
  const r = failure(o, what, 'sending the same caption again changes nothing more.');
  return r.state === 'failed' ? { state: 'failed', permanent: r.permanent, error: r.error, ...(r.reauth ? { reauth: true } : {}) } : { state: 'unknown', error: r.error };
}

function inboxFailure(o: Exclude<PlatformResponse, Answer> | Answer, what: string): InboxActionResult {
  const r = failure(o, what, RESEND_STATUS);
  return { state: 'failed', permanent: r.state === 'failed' ? r.permanent : false, error: r.error, ...(r.state === 'failed' && r.reauth ? { reauth: true } : {}) };
}
