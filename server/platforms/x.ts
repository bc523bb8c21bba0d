// The X (Twitter) connector: X API v2 with an OAuth 2.0 user token
// (Authorization Code with PKCE, confidential client), docs/connectors-x.md.
//
// Connecting (the framework runs the flow, this module knows X's side of it):
//   authorize   GET  https://x.com/i/oauth2/authorize?response_type=code&client_id&redirect_uri
//                    &scope&state&code_challenge&code_challenge_method=S256
//   token       POST /2/oauth2/token  (form; HTTP Basic client_id:client_secret)
//                    grant_type=authorization_code + code + redirect_uri + code_verifier, or
//                    grant_type=refresh_token + refresh_token
//   account     GET  /2/users/me?user.fields=profile_image_url,subscription_type
// The authorize page lives on x.com and the API on api.x.com. There is one
// configurable base, the API's (PlatformEndpoint.baseUrl, from
// X_API_BASE_URL): the authorize URL is derived from it (xAuthorizeEndpoint):
// an `api.` host loses that label (api.x.com -> x.com, api.twitter.com ->
// twitter.com), any other base (a local fake) serves /i/oauth2/authorize
// itself. Access tokens live 2 hours; X ROTATES refresh tokens: the one sent
// dies at its first use and the answer carries the next. Two refreshes with
// the same token race: the first wins, the second is told "Value passed for
// the token was invalid" (invalid_request), which this module reports as
// `revoked`. That is why the framework refreshes under a lock and saves the
// new refresh token in the same transaction: without the lock the loser of
// the race would mark a healthy account reconnect_required.
//
// Publishing, per message of the edition (the caption, then each thread
// message as a reply to the one before):
//   media     POST /2/media/upload/initialize {media_type, total_bytes, media_category}
//             POST /2/media/upload/{id}/append   multipart media + segment_index, 4 MiB chunks
//             POST /2/media/upload/{id}/finalize
//             GET  /2/media/upload?command=STATUS&media_id={id}   while processing_info.state
//                  is pending or in_progress, waiting check_after_secs between asks (bounded)
//             POST /2/media/metadata {id, metadata: {alt_text: {text}}}   images and GIFs
//   post      POST /2/tweets {text, media: {media_ids}, reply: {in_reply_to_tweet_id}}
// Every file of every message is uploaded before the first post is made, so a
// refused or failed upload leaves nothing on X.
//
// X has no idempotency key (acceptsIdempotencyToken false). After an unknown
// outcome the engine asks findPublished, which reads the account's timeline
// (GET /2/users/{id}/tweets, start_time = since) and compares each message's
// text exactly (after undoing X's changes: &amp; &lt; &gt; escapes, t.co
// links back to their expanded URL, the trailing link of attached media) and
// its number of media. A thread counts as found only when every message is
// there, chained; a partial thread is "not found" so the resend completes it:
// publish on a resend (attempt > 1) reads the timeline first and continues
// after the last message already posted, so no message is ever posted twice.
// X refuses a post identical to a recent one of the account (403 "duplicate
// content"): the timeline is then searched the same way; a match is this
// edition's own post, anything else a permanent refusal.
//
// Outcomes: 2xx published; 401 failed with reauth; 429 failed until the reset
// X announces (x-rate-limit-reset, or the x-user-limit-24hour-reset /
// x-app-limit-24hour-reset of the daily post caps when those are spent);
// other 4xx permanent with X's message (problem JSON `detail`, or
// `errors[0].message`); 5xx and calls that never left transient; no answer
// to POST /2/tweets unknown. Error strings never carry a token.
import type http from 'node:http';
import { platformRequest, type PlatformRequest, type PlatformResponse, isOk as ok, sleep, redactSecrets as scrub } from './http.ts';
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

export const X_DEFAULT_BASE_URL = 'https://api.x.com';
/** Required: posting, reading back (findPublished, metrics), the account, media upload v2, a refresh token. */
export const X_REQUIRED_SCOPES = ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'] as const;
/**
 * Asked for: the required ones and tweet.moderate.write, which hiding replies
 * (PUT /2/tweets/{id}/hidden, the inbox's moderation) needs; an account that
 * declines it publishes, and its hide/unhide fail with a message naming the scope.
 */
export const X_SCOPES = [...X_REQUIRED_SCOPES, 'tweet.moderate.write'] as const;

/**
 * X's own limits on POST /2/tweets (docs.x.com, "Rate limits": 100 per 15
 * minutes per user, 10,000 per 24 hours per app). A thread is one edition
 * but one post per message, so the engine's per-window count is an upper
 * bound of editions, not of posts: X's 429 with its reset covers the rest.
 */
export const X_PUBLISH_LIMITS: PublishLimits = {
  perIntegration: { maxInFlight: 1, maxPerWindow: 100, windowSeconds: 15 * 60 },
  perApp: { maxPerWindow: 10_000, windowSeconds: 24 * 60 * 60 },
};

/** X's media rules for a post (docs.x.com, media best practices). */
export const X_MEDIA_RULES = {
  maxImages: 4,
  imageMaxBytes: 5 * 1024 * 1024,
  gifMaxBytes: 15 * 1024 * 1024,
  videoMaxBytes: 512 * 1024 * 1024,
  altTextMaxLength: 1000,
} as const;

/** The knobs of the upload and lookups; tests shrink them. */
export interface XTuning {
  /** Bytes per APPEND (X takes at most 5 MB). */
  chunkBytes: number;
  /** Longest total wait for X to process one video or GIF before the attempt fails (transient). */
  maxProcessingWaitMs: number;
  /** Shortest wait between two STATUS asks, whatever check_after_secs says. */
  minPollMs: number;
  /** Pages of 100 posts read from the timeline when looking for a post. */
  lookupPages: number;
  /** Time limit of one APPEND (a chunk is larger than any other call). */
  appendTimeoutMs: number;
}

export const X_DEFAULT_TUNING: XTuning = {
  chunkBytes: 4 * 1024 * 1024,
  maxProcessingWaitMs: 5 * 60_000,
  minPollMs: 1000,
  lookupPages: 5,
  appendTimeoutMs: 120_000,
};

/**
 * The authorize page for an API base: `https://api.x.com` -> `https://x.com/i/oauth2/authorize`
 * (an `api.` label is dropped); any other base serves `/i/oauth2/authorize` on its own origin.
 */
export function xAuthorizeEndpoint(apiBaseUrl: string): string {
  const u = new URL(apiBaseUrl);
  if (/^api\./i.test(u.hostname)) u.hostname = u.hostname.slice(4);
  return `${u.origin}/i/oauth2/authorize`;
}

const trim = (u: string) => u.replace(/\/+$/, '');
const seg = encodeURIComponent;

// ---------------------------------------------------------------------------
// X's answers
// ---------------------------------------------------------------------------

type Json = Record<string, any>;

/** The reason X gives: problem JSON `detail`, `errors[0]`, OAuth's `error_description`, or the title. */
export function xMessage(body: unknown, text = ''): string {
  const b = (body && typeof body === 'object' ? body : null) as Json | null;
  const first = Array.isArray(b?.errors) ? b.errors[0] : null;
  const m =
    (typeof b?.detail === 'string' && b.detail) ||
    (typeof first?.message === 'string' && first.message) ||
    (typeof first?.detail === 'string' && first.detail) ||
    (typeof b?.error_description === 'string' && b.error_description) ||
    (typeof b?.error === 'string' && b.error) ||
    (typeof b?.title === 'string' && b.title) ||
    text.replace(/\s+/g, ' ').slice(0, 200);
  return m || 'no reason given';
}

function headerNum(h: http.IncomingHttpHeaders, name: string): number | null {
  const v = h[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && /^\s*\d+\s*$/.test(s) ? Number(s) : null;
}

/**
 * When a 429 lifts: the latest reset among X's spent windows (the endpoint's
 * 15-minute window, the daily per-user and per-app post caps), else the
 * endpoint window's reset, else Retry-After, else null.
 */
export function xRetryAt(h: http.IncomingHttpHeaders, fallback: Date | null = null): Date | null {
  const windows: [string, string][] = [
    ['x-rate-limit-remaining', 'x-rate-limit-reset'],
    ['x-user-limit-24hour-remaining', 'x-user-limit-24hour-reset'],
    ['x-app-limit-24hour-remaining', 'x-app-limit-24hour-reset'],
  ];
  let latest: number | null = null;
  for (const [remaining, reset] of windows) {
    const r = headerNum(h, reset);
    if (headerNum(h, remaining) === 0 && r !== null && (latest === null || r > latest)) latest = r;
  }
  latest ??= headerNum(h, 'x-rate-limit-reset');
  if (latest !== null) return new Date(latest * 1000);
  return fallback;
}

type Failure =
  | { kind: 'reauth'; error: string }
  | { kind: 'rate'; error: string; retryAt: Date | null }
  | { kind: 'permanent'; error: string; status?: number; duplicate?: boolean }
  | { kind: 'transient'; error: string }
  | { kind: 'unknown'; error: string };

/** What a non-2xx answer (or no answer) means. */
function classify(o: PlatformResponse, what: string): Failure {
  if (o.kind === 'not-sent') return o.permanent ? { kind: 'permanent', error: `${what}: ${o.error}` } : { kind: 'transient', error: `${what}: ${o.error}` };
  if (o.kind === 'unknown') return { kind: 'unknown', error: `${what}: ${o.error}` };
  const msg = xMessage(o.json, o.text);
  const error = `${what}: X answered ${o.status}: ${msg}`;
  if (o.status === 401) return { kind: 'reauth', error };
  if (o.status === 429) return { kind: 'rate', error, retryAt: xRetryAt(o.headers, o.rateLimit?.resetAt ?? null) };
  if (o.status >= 400 && o.status < 500) return { kind: 'permanent', error, status: o.status, duplicate: o.status === 403 && /duplicate content/i.test(msg) };
  return { kind: 'transient', error };
}


/** Removes any secret that might have found its way into a message. */

// ---------------------------------------------------------------------------
// Comparing a post with a message (findPublished)
// ---------------------------------------------------------------------------

export interface XTweet {
  id: string;
  text: string;
  created_at?: string;
  author_id?: string;
  referenced_tweets?: { type: string; id: string }[];
  attachments?: { media_keys?: string[] };
  entities?: { urls?: { url: string; expanded_url?: string; media_key?: string }[] };
  note_tweet?: { text: string; entities?: { urls?: { url: string; expanded_url?: string; media_key?: string }[] } };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>' };

function normalizeText(s: string): string {
  return s.normalize('NFC').replace(/\r\n?/g, '\n').trim();
}

/** The text the author wrote, as far as X lets it be recovered. */
export function authoredText(t: XTweet): string {
  const long = t.note_tweet?.text;
  let text = long ?? t.text ?? '';
  const urls = (long ? t.note_tweet?.entities?.urls : t.entities?.urls) ?? t.entities?.urls ?? [];
  for (const u of urls) {
    if (!u.url) continue;
    // A media link is X's own addition; any other t.co link stands for what was written.
    text = text.split(u.url).join(u.media_key ? '' : (u.expanded_url ?? u.url));
  }
  return normalizeText(text.replace(/&(amp|lt|gt);/g, (_, e: string) => ENTITIES[e]));
}

function repliedTo(t: XTweet): string | null {
  return t.referenced_tweets?.find((r) => r.type === 'replied_to')?.id ?? null;
}

interface Part {
  caption: string;
  media: MediaRef[];
}

function matches(t: XTweet, p: Part): boolean {
  return authoredText(t) === normalizeText(p.caption) && (t.attachments?.media_keys?.length ?? 0) === p.media.length;
}

/** Snowflake ids grow with time: the oldest of equal candidates is the first post made. */
const byAge = (a: XTweet, b: XTweet) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0);

/** The ids of the edition's messages found on the timeline, in order, as far as the chain goes. */
export function matchChain(tweets: XTweet[], parts: Part[], since: Date, known: string[] = []): string[] {
  const found = [...known];
  const sorted = [...tweets].filter((t) => /^\d+$/.test(t.id)).sort(byAge);
  for (let i = found.length; i < parts.length; i++) {
    const prev = i === 0 ? null : found[i - 1];
    const hit = sorted.find(
      (t) =>
        repliedTo(t) === prev &&
        !found.includes(t.id) &&
        (t.created_at === undefined || Date.parse(t.created_at) >= since.getTime()) &&
        matches(t, parts[i]),
    );
    if (!hit) break;
    found.push(hit.id);
  }
  return found;
}

// ---------------------------------------------------------------------------
// The connector
// ---------------------------------------------------------------------------

interface Ctx {
  base: string;
  allowPrivateNetworks: boolean;
  token: string;
  credentials: IntegrationCredentials;
  timeoutMs: number;
}

type Step<T> = { ok: true; value: T } | { ok: false; failure: Failure };

function mediaCategory(kind: MediaRef['type']): string {
  return kind === 'video' ? 'tweet_video' : kind === 'gif' ? 'tweet_gif' : 'tweet_image';
}

/** The MIME type X is told: the stored one, else from the bytes. */
function mediaType(m: MediaRef, bytes: Buffer): string {
  if (m.contentType) return m.contentType;
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (bytes.subarray(4, 8).toString('latin1') === 'ftyp') return 'video/mp4';
  return m.type === 'video' ? 'video/mp4' : m.type === 'gif' ? 'image/gif' : 'image/jpeg';
}

/** X's rules a message must meet, checked before anything is sent; null when it does. */
function refusal(parts: Part[]): string | null {
  for (const [i, p] of parts.entries()) {
    const where = parts.length > 1 ? `Message ${i + 1} of the thread` : 'The post';
    if (!p.caption.trim() && p.media.length === 0) return `${where} has neither text nor media; X needs one of them.`;
    const videos = p.media.filter((m) => m.type === 'video').length;
    const gifs = p.media.filter((m) => m.type === 'gif').length;
    if (p.media.length > X_MEDIA_RULES.maxImages) return `${where} has ${p.media.length} media; X takes at most ${X_MEDIA_RULES.maxImages} images per post.`;
    if ((videos || gifs) && p.media.length > 1) return `${where} mixes a video or GIF with other media; X takes one video or one GIF alone, or up to 4 images.`;
    for (const m of p.media) {
      const max = m.type === 'video' ? X_MEDIA_RULES.videoMaxBytes : m.type === 'gif' ? X_MEDIA_RULES.gifMaxBytes : X_MEDIA_RULES.imageMaxBytes;
      if (m.size !== undefined && m.size > max) return `${where}: the ${m.type} ${m.id} is ${m.size} bytes; X takes at most ${max}.`;
      if (m.altText && [...m.altText].length > X_MEDIA_RULES.altTextMaxLength) return `${where}: the alt text of ${m.id} is longer than X's ${X_MEDIA_RULES.altTextMaxLength} characters.`;
      if (!m.read) return `${where}: the bytes of media ${m.id} were not given to the connector (MediaRef.read).`;
    }
  }
  return null;
}

const REPLY_SETTINGS = ['following', 'mentionedUsers', 'subscribers', 'verified'] as const;

/** Where a resend looks for the messages an earlier attempt may have posted. */
function resumeSince(edition: PublishableEdition, now = Date.now()): Date {
  const at = edition.scheduledAt ? Date.parse(edition.scheduledAt) : NaN;
  if (!Number.isNaN(at) && at <= now) return new Date(at - 10 * 60_000);
  return new Date(now - 24 * 60 * 60_000);
}

/** Our clock and X's may differ a little: posts are looked for from a minute before `since`. */
const CLOCK_SKEW_MS = 60_000;

/** X's start_time: RFC 3339 in whole seconds. */
function startTime(from: Date): string {
  return new Date(Math.floor(from.getTime() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}


export function createXConnector(options: ConnectorOptions, tuning: Partial<XTuning> = {}): Connector {
  const tune: XTuning = { ...X_DEFAULT_TUNING, ...tuning };
  const fallbackEndpoint: PlatformEndpoint = {
    baseUrl: options.baseUrl ?? X_DEFAULT_BASE_URL,
    // An operator-set base (X_API_BASE_URL) is trusted, a local fake included.
    allowPrivateNetworks: options.baseUrl !== undefined,
  };

  const context = (i: IntegrationRef): Ctx => {
    const credentials = i.credentials;
    if (!credentials?.accessToken) {
      throw new ConnectorError('MISSING_SECRET', 'The X access token was not provided to the connector (only the worker reads it).', { integrationId: i.id });
    }
    const endpoint = i.endpoint ?? fallbackEndpoint;
    return { base: trim(endpoint.baseUrl), allowPrivateNetworks: endpoint.allowPrivateNetworks, token: credentials.accessToken, credentials, timeoutMs: options.timeoutMs };
  };

  const call = (ctx: Ctx, r: Omit<PlatformRequest, 'url' | 'timeoutMs' | 'allowPrivateNetworks'> & { path: string; timeoutMs?: number }) =>
    platformRequest({
      ...r,
      url: `${ctx.base}${r.path}`,
      headers: { authorization: `Bearer ${ctx.token}`, ...(r.headers ?? {}) },
      timeoutMs: r.timeoutMs ?? ctx.timeoutMs,
      allowPrivateNetworks: ctx.allowPrivateNetworks,
    });

  const secretsOf = (ctx: Ctx) => [ctx.token, ctx.credentials.refreshToken];

  const username = (i: IntegrationRef, ctx: Ctx): string | null => {
    const u = i.username ?? (typeof ctx.credentials.extra?.username === 'string' ? ctx.credentials.extra.username : null);
    return u ? u.replace(/^@/, '') : null;
  };
  const permalink = (i: IntegrationRef, ctx: Ctx, id: string) => {
    const u = username(i, ctx);
    return u ? `https://x.com/${seg(u)}/status/${id}` : `https://x.com/i/web/status/${id}`;
  };

  /** The account's user id: kept with the credentials at connect (readAccounts), else asked. */
  async function userId(ctx: Ctx): Promise<Step<string>> {
    const kept = ctx.credentials.extra?.userId;
    if (typeof kept === 'string' && /^\d+$/.test(kept)) return { ok: true, value: kept };
    const o = await call(ctx, { method: 'GET', path: '/2/users/me' });
    if (!ok(o)) return { ok: false, failure: classify(o, 'Reading the X account') };
    const id = (o.json as Json)?.data?.id;
    if (typeof id !== 'string') return { ok: false, failure: { kind: 'transient', error: 'Reading the X account: X named no user id.' } };
    return { ok: true, value: id };
  }

  /** The account's posts since `from` (newest first, at most lookupPages pages of 100). */
  async function timeline(ctx: Ctx, from: Date): Promise<Step<XTweet[]>> {
    const uid = await userId(ctx);
    if (!uid.ok) return uid;
    const out: XTweet[] = [];
    let next: string | null = null;
    for (let page = 0; page < tune.lookupPages; page++) {
      const q = new URLSearchParams({
        start_time: startTime(from),
        max_results: '100',
        exclude: 'retweets',
        'tweet.fields': 'created_at,author_id,referenced_tweets,attachments,entities,note_tweet',
      });
      if (next) q.set('pagination_token', next);
      const o = await call(ctx, { method: 'GET', path: `/2/users/${seg(uid.value)}/tweets?${q}` });
      if (!ok(o)) return { ok: false, failure: classify(o, 'Reading the X timeline') };
      const b = (o.json ?? {}) as Json;
      if (Array.isArray(b.data)) out.push(...(b.data as XTweet[]));
      next = typeof b.meta?.next_token === 'string' ? b.meta.next_token : null;
      if (!next) break;
    }
    return { ok: true, value: out };
  }

  async function locate(ctx: Ctx, parts: Part[], since: Date, known: string[] = []): Promise<Step<string[]>> {
    const from = new Date(since.getTime() - CLOCK_SKEW_MS);
    const t = await timeline(ctx, from);
    if (!t.ok) return t;
    return { ok: true, value: matchChain(t.value, parts, from, known) };
  }

  /** Uploads one file by the chunked v2 upload, waits for its processing, sets its alt text. */
  async function upload(ctx: Ctx, m: MediaRef): Promise<Step<string>> {
    let bytes: Buffer;
    try {
      bytes = await m.read!();
    } catch (e) {
      return { ok: false, failure: { kind: 'transient', error: `Reading media ${m.id} from storage failed: ${e instanceof Error ? e.message : String(e)}` } };
    }
    const what = `Uploading media ${m.id} to X`;
    // No post is made by any upload call: a lost answer leaves at most an unused
    // upload (X drops it when it expires), so it is a transient failure, not unknown.
    const fail = (o: PlatformResponse, step: string): Step<string> => {
      const f = classify(o, `${what} (${step})`);
      return { ok: false, failure: f.kind === 'unknown' ? { kind: 'transient', error: f.error } : f };
    };
    const init = await call(ctx, {
      method: 'POST',
      path: '/2/media/upload/initialize',
      json: { media_type: mediaType(m, bytes), total_bytes: bytes.length, media_category: mediaCategory(m.type) },
    });
    if (!ok(init)) return fail(init, 'initialize');
    const id = (init.json as Json)?.data?.id;
    if (typeof id !== 'string' || !id) return { ok: false, failure: { kind: 'transient', error: `${what}: X named no media id.` } };
    const chunks = Math.max(1, Math.ceil(bytes.length / tune.chunkBytes));
    for (let index = 0; index < chunks; index++) {
      const chunk = bytes.subarray(index * tune.chunkBytes, (index + 1) * tune.chunkBytes);
      const o = await call(ctx, {
        method: 'POST',
        path: `/2/media/upload/${seg(id)}/append`,
        multipart: { fields: { segment_index: String(index) }, files: [{ name: 'media', filename: 'blob', contentType: 'application/octet-stream', data: chunk }] },
        timeoutMs: Math.max(ctx.timeoutMs, tune.appendTimeoutMs),
      });
      if (!ok(o)) return fail(o, `append ${index}`);
    }
    const fin = await call(ctx, { method: 'POST', path: `/2/media/upload/${seg(id)}/finalize` });
    if (!ok(fin)) return fail(fin, 'finalize');
    let info = (fin.json as Json)?.data?.processing_info as Json | undefined;
    const started = Date.now();
    while (info && (info.state === 'pending' || info.state === 'in_progress')) {
      const wait = Math.max(tune.minPollMs, Number(info.check_after_secs ?? 1) * 1000);
      if (Date.now() - started + wait > tune.maxProcessingWaitMs) {
        return { ok: false, failure: { kind: 'transient', error: `${what}: X was still processing it after ${Math.round((Date.now() - started) / 1000)} s (state ${info.state}).` } };
      }
      await sleep(wait);
      const st = await call(ctx, { method: 'GET', path: `/2/media/upload?${new URLSearchParams({ command: 'STATUS', media_id: id })}` });
      if (!ok(st)) return fail(st, 'status');
      info = (st.json as Json)?.data?.processing_info as Json | undefined;
    }
    if (info?.state === 'failed') {
      const reason = typeof info.error?.message === 'string' ? info.error.message : (info.error?.name ?? 'no reason given');
      return { ok: false, failure: { kind: 'permanent', error: `${what}: X could not process it: ${reason}` } };
    }
    if (m.altText && m.type !== 'video') {
      const o = await call(ctx, { method: 'POST', path: '/2/media/metadata', json: { id, metadata: { alt_text: { text: m.altText } } } });
      if (!ok(o)) return fail(o, 'alt text');
    }
    return { ok: true, value: id };
  }

  async function createTweet(ctx: Ctx, body: Json): Promise<PlatformResponse> {
    return call(ctx, { method: 'POST', path: '/2/tweets', json: body });
  }

  /** A failure as the engine wants it; `partial` names what is already on X. */
  function result(ctx: Ctx, f: Failure, partial: string | null): PublishResult {
    const tail = partial ? ` ${partial}` : '';
    const error = scrub(f.error + tail, secretsOf(ctx));
    switch (f.kind) {
      case 'reauth':
        return { state: 'failed', permanent: false, reauth: true, error };
      case 'rate':
        return { state: 'failed', permanent: false, error, ...(f.retryAt ? { retryAt: f.retryAt.toISOString() } : {}) };
      case 'permanent':
        return { state: 'failed', permanent: true, error };
      case 'transient':
        return { state: 'failed', permanent: false, error };
      case 'unknown':
        return { state: 'unknown', error };
    }
  }

  async function publish(integration: IntegrationRef, edition: PublishableEdition): Promise<PublishResult> {
    const ctx = context(integration);
    const parts: Part[] = [{ caption: edition.caption, media: edition.media }, ...edition.thread.map((t) => ({ caption: t.caption, media: t.media }))];
    const refused = refusal(parts);
    if (refused) return { state: 'failed', permanent: true, error: refused };
    const rs = edition.settings?.replySettings ?? edition.settings?.reply_settings;
    if (rs !== undefined && rs !== null && !(REPLY_SETTINGS as readonly unknown[]).includes(rs)) {
      return { state: 'failed', permanent: true, error: `settings.replySettings must be one of ${REPLY_SETTINGS.join(', ')}.` };
    }
    const since = resumeSince(edition);
    const partial = (posted: string[]) =>
      posted.length === 0 ? null : `(${posted.length} of ${parts.length} messages are on X, the first is ${posted[0]}; a retry continues after them.)`;

    // A resend first looks for what an earlier attempt posted, and continues after it.
    let posted: string[] = [];
    if (edition.attempt > 1) {
      const found = await locate(ctx, parts, since);
      if (!found.ok) return result(ctx, found.failure.kind === 'unknown' ? { kind: 'transient', error: found.failure.error } : found.failure, null);
      posted = found.value;
    }
    const done = (): PublishResult => ({ state: 'published', platformPostId: posted[0], permalink: permalink(integration, ctx, posted[0]) });
    if (posted.length === parts.length) return done();

    // Every file first: an upload that fails leaves no post behind.
    const mediaIds: string[][] = [];
    for (let i = posted.length; i < parts.length; i++) {
      const ids: string[] = [];
      for (const m of parts[i].media) {
        const u = await upload(ctx, m);
        if (!u.ok) return result(ctx, u.failure, partial(posted));
        ids.push(u.value);
      }
      mediaIds[i] = ids;
    }

    for (let i = posted.length; i < parts.length; i++) {
      const body: Json = {};
      if (parts[i].caption.trim()) body.text = parts[i].caption;
      if (mediaIds[i].length) body.media = { media_ids: mediaIds[i] };
      if (i > 0) body.reply = { in_reply_to_tweet_id: posted[i - 1] };
      if (i === 0 && typeof rs === 'string') body.reply_settings = rs;
      const o = await createTweet(ctx, body);
      const id = ok(o) ? (o.json as Json)?.data?.id : undefined;
      if (ok(o) && typeof id === 'string' && /^\d+$/.test(id)) {
        posted.push(id);
        continue;
      }
      if (ok(o)) return result(ctx, { kind: 'unknown', error: `Posting to X: X answered ${o.status} without a post id.` }, partial(posted));
      const f = classify(o, parts.length > 1 ? `Posting message ${i + 1} of the thread to X` : 'Posting to X');
      if (f.kind === 'permanent' && f.duplicate) {
        // X refuses a repeat of a recent post: when that post is this very message (an
        // earlier attempt made it), it is ours; otherwise the refusal stands.
        const found = await locate(ctx, parts.slice(0, i + 1), since, posted);
        if (found.ok && found.value.length === i + 1) {
          posted = found.value;
          continue;
        }
        if (!found.ok && found.failure.kind !== 'permanent') return result(ctx, { kind: 'transient', error: `${f.error} (and the timeline could not be read to check whether it is this edition's own post: ${found.failure.error})` }, partial(posted));
      }
      return result(ctx, f, partial(posted));
    }
    return done();
  }

  /** Throws the ConnectorError of a failed read (analytics, findPublished). */
  function raise(ctx: Ctx, f: Failure): never {
    const error = scrub(f.error, secretsOf(ctx));
    if (f.kind === 'rate') throw new ConnectorError('RATE_LIMITED', error, { retryAt: f.retryAt?.toISOString() ?? null });
    throw new ConnectorError('UPSTREAM_ERROR', error, { reauth: f.kind === 'reauth' });
  }

  function inboxFailure(ctx: Ctx, o: PlatformResponse, what: string): InboxActionResult {
    const f = classify(o, what);
    return { state: 'failed', permanent: f.kind === 'permanent', error: scrub(f.error, secretsOf(ctx)), ...(f.kind === 'reauth' ? { reauth: true } : {}) };
  }

  const unsupported = (what: string) => {
    throw new ConnectorError('NOT_SUPPORTED', `X does not support ${what} through its API.`, { platform: 'x' });
  };

  return {
    name: 'x',
    acceptsIdempotencyToken: false,
    publishLimits: X_PUBLISH_LIMITS,
    publish,

    async findPublished(integration, edition, since) {
      const ctx = context(integration);
      const parts: Part[] = [{ caption: edition.caption, media: edition.media }, ...edition.thread.map((t) => ({ caption: t.caption, media: t.media }))];
      const found = await locate(ctx, parts, since);
      if (!found.ok) raise(ctx, found.failure);
      // A thread counts only whole: for a partial one the resend (publish, attempt > 1) continues it.
      if (found.value.length < parts.length) return null;
      return { platformPostId: found.value[0], permalink: permalink(integration, ctx, found.value[0]) };
    },

    async editPublishedCaption() {
      return unsupported('editing a published post');
    },
    async createDraft() {
      return unsupported('article drafts in Pressroom yet');
    },
    async listBoards() {
      return unsupported('boards');
    },
    async listVideoCategories() {
      return unsupported('video categories');
    },

    async fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics | null> {
      const ctx = context(integration);
      if (!/^\d+$/.test(post.platformPostId)) return null;
      const o = await call(ctx, { method: 'GET', path: `/2/tweets/${seg(post.platformPostId)}?tweet.fields=public_metrics` });
      if (o.kind === 'answer' && o.status === 404) return null;
      if (!ok(o)) raise(ctx, classify(o, 'Reading the post metrics from X'));
      const m = (o.json as Json)?.data?.public_metrics as Json | undefined;
      // A deleted or hidden post is answered 200 with errors and no data.
      if (!m) return null;
      const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
      return {
        impressions: n(m.impression_count),
        likes: n(m.like_count),
        comments: n(m.reply_count),
        shares: n(m.retweet_count) + n(m.quote_count),
        saves: n(m.bookmark_count),
        clicks: 0,
        fetchedAt: new Date().toISOString(),
      };
    },

    async fetchAccountMetrics(integration: IntegrationRef): Promise<AccountMetrics | null> {
      const ctx = context(integration);
      const o = await call(ctx, { method: 'GET', path: '/2/users/me?user.fields=public_metrics' });
      if (!ok(o)) raise(ctx, classify(o, 'Reading the account metrics from X'));
      const followers = (o.json as Json)?.data?.public_metrics?.followers_count;
      if (typeof followers !== 'number') return null;
      return { followers, profileViews: null, demographics: null, fetchedAt: new Date().toISOString() };
    },

    async reply(integration: IntegrationRef, r: InboxReply): Promise<InboxActionResult> {
      const ctx = context(integration);
      if (r.threadKind === 'message') {
        if (!ctx.credentials.scopes.includes('dm.write')) {
          return { state: 'failed', permanent: true, error: 'Answering X direct messages needs the dm.write scope, which this account did not grant.' };
        }
        const o = await call(ctx, { method: 'POST', path: `/2/dm_conversations/with/${seg(r.platformThreadId)}/messages`, json: { text: r.text } });
        if (!ok(o)) return inboxFailure(ctx, o, 'Sending the X direct message');
        const id = (o.json as Json)?.data?.dm_event_id;
        return { state: 'done', platformMessageId: typeof id === 'string' ? id : null };
      }
      const o = await createTweet(ctx, { text: r.text, reply: { in_reply_to_tweet_id: r.inReplyTo ?? r.platformThreadId } });
      if (!ok(o)) return inboxFailure(ctx, o, 'Replying on X');
      const id = (o.json as Json)?.data?.id;
      return { state: 'done', platformMessageId: typeof id === 'string' ? id : null };
    },

    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      const ctx = context(integration);
      if (m.threadKind === 'message') return { state: 'failed', permanent: true, error: 'X has no moderation of direct messages.' };
      if (!/^\d+$/.test(m.platformMessageId)) return { state: 'failed', permanent: true, error: 'The message has no X post id.' };
      if (m.action === 'delete') {
        // X deletes only the account's own posts; another's reply can be hidden, not deleted.
        const o = await call(ctx, { method: 'DELETE', path: `/2/tweets/${seg(m.platformMessageId)}` });
        if (!ok(o)) return inboxFailure(ctx, o, 'Deleting the post on X');
        if ((o.json as Json)?.data?.deleted !== true) return { state: 'failed', permanent: false, error: 'X did not confirm the deletion.' };
        return { state: 'done', platformMessageId: null };
      }
      const hidden = m.action === 'hide';
      if (ctx.credentials.scopes.length > 0 && !ctx.credentials.scopes.includes('tweet.moderate.write')) {
        return { state: 'failed', permanent: true, error: 'Hiding replies on X needs the tweet.moderate.write scope, which this account did not grant; connect it again to grant it.' };
      }
      const o = await call(ctx, { method: 'PUT', path: `/2/tweets/${seg(m.platformMessageId)}/hidden`, json: { hidden } });
      if (!ok(o)) return inboxFailure(ctx, o, hidden ? 'Hiding the reply on X' : 'Unhiding the reply on X');
      if ((o.json as Json)?.data?.hidden !== hidden) return { state: 'failed', permanent: false, error: "X did not confirm the change of the reply's visibility." };
      return { state: 'done', platformMessageId: null };
    },
  };
}

// ---------------------------------------------------------------------------
// OAuth 2.0 (Authorization Code with PKCE, confidential client)
// ---------------------------------------------------------------------------

function basicAuth(app: { clientId: string; clientSecret: string | null }): Record<string, string> {
  // Confidential clients authenticate with HTTP Basic; a public client (no secret) sends client_id only.
  if (!app.clientSecret) return {};
  const enc = (s: string) => encodeURIComponent(s); // RFC 6749 §2.3.1: form-encode, then Base64
  return { authorization: `Basic ${Buffer.from(`${enc(app.clientId)}:${enc(app.clientSecret)}`).toString('base64')}` };
}

function tokenSet(json: unknown, previousRefresh: string | null = null): TokenSet | null {
  const b = (json && typeof json === 'object' ? json : {}) as Json;
  if (typeof b.access_token !== 'string' || !b.access_token) return null;
  return {
    accessToken: b.access_token,
    // X rotates: the answer carries the next refresh token; keep the old one only if it names none.
    refreshToken: typeof b.refresh_token === 'string' && b.refresh_token ? b.refresh_token : previousRefresh,
    expiresIn: typeof b.expires_in === 'number' ? b.expires_in : null,
    scopes: typeof b.scope === 'string' ? b.scope.split(/\s+/).filter(Boolean) : [],
  };
}

/** OAuth error codes that mean the grant itself is dead (X answers invalid_request for a used or revoked refresh token). */
const DEAD_GRANT = new Set(['invalid_grant', 'invalid_request', 'unauthorized_client']);

export const xOAuth: OAuthFlow = {
  scopes: [...X_SCOPES],
  requiredScopes: [...X_REQUIRED_SCOPES],
  pkce: true,
  needsOperatorApp: true,

  authorizeUrl({ endpoint, app, redirectUri, state, codeChallenge, scopes }) {
    if (!codeChallenge) throw new ConnectorError('NOT_SUPPORTED', 'X requires PKCE: a code challenge is needed.');
    const q: [string, string][] = [
      ['response_type', 'code'],
      ['client_id', app.clientId],
      ['redirect_uri', redirectUri],
      ['scope', scopes.join(' ')],
      ['state', state],
      ['code_challenge', codeChallenge],
      ['code_challenge_method', 'S256'],
    ];
    // %20 between scopes, as X's documentation writes them.
    return `${xAuthorizeEndpoint(endpoint.baseUrl)}?${q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
  },

  async exchangeCode({ endpoint, app, redirectUri, code, codeVerifier, timeoutMs }) {
    if (!codeVerifier) throw new ConnectorError('NOT_SUPPORTED', 'X requires PKCE: the code verifier is missing.');
    const o = await platformRequest({
      method: 'POST',
      url: `${trim(endpoint.baseUrl)}/2/oauth2/token`,
      headers: basicAuth(app),
      form: { code, grant_type: 'authorization_code', redirect_uri: redirectUri, code_verifier: codeVerifier, client_id: app.clientId },
      timeoutMs,
      allowPrivateNetworks: endpoint.allowPrivateNetworks,
    });
    const secrets = [code, codeVerifier, app.clientSecret];
    if (o.kind !== 'answer') throw new ConnectorError('UPSTREAM_ERROR', scrub(`X's token endpoint: ${o.error}`, secrets));
    if (o.status < 200 || o.status >= 300) {
      throw new ConnectorError('UPSTREAM_ERROR', scrub(`X refused the authorization code (HTTP ${o.status}): ${xMessage(o.json, o.text)}`, secrets), {
        status: o.status,
        error: typeof (o.json as Json)?.error === 'string' ? (o.json as Json).error : null,
      });
    }
    const t = tokenSet(o.json);
    if (!t) throw new ConnectorError('UPSTREAM_ERROR', 'X accepted the authorization code but answered no access token.');
    return t;
  },

  async refresh({ endpoint, app, credentials, timeoutMs }): Promise<RefreshOutcome> {
    if (!credentials.refreshToken) return { state: 'revoked', reason: 'X gave no refresh token (the offline.access scope was not granted); the account must be connected again.' };
    const secrets = [credentials.refreshToken, credentials.accessToken, app.clientSecret];
    const o = await platformRequest({
      method: 'POST',
      url: `${trim(endpoint.baseUrl)}/2/oauth2/token`,
      headers: basicAuth(app),
      form: { refresh_token: credentials.refreshToken, grant_type: 'refresh_token', client_id: app.clientId },
      timeoutMs,
      allowPrivateNetworks: endpoint.allowPrivateNetworks,
    });
    if (o.kind === 'not-sent') return { state: 'retry', error: scrub(`X's token endpoint could not be reached: ${o.error}`, secrets) };
    // No answer: X may have rotated the token (then the next try is told it is invalid); nothing better can be done.
    if (o.kind === 'unknown') return { state: 'retry', error: scrub(`X's token endpoint did not answer: ${o.error}`, secrets) };
    if (o.status >= 200 && o.status < 300) {
      const t = tokenSet(o.json, credentials.refreshToken);
      if (!t) return { state: 'retry', error: 'X answered the refresh without an access token.' };
      return { state: 'refreshed', tokens: t };
    }
    const msg = scrub(xMessage(o.json, o.text), secrets);
    if (o.status === 429 || o.status >= 500) {
      return { state: 'retry', error: `X's token endpoint answered ${o.status}: ${msg}`, retryAt: o.status === 429 ? xRetryAt(o.headers, o.rateLimit?.resetAt ?? null) : null };
    }
    const code = typeof (o.json as Json)?.error === 'string' ? ((o.json as Json).error as string) : null;
    // invalid_client: the operator's app id or secret is wrong; the user's grant may be fine, so do not disconnect.
    if (code === 'invalid_client') return { state: 'retry', error: `X refused the operator's app credentials (X_CLIENT_ID / X_CLIENT_SECRET): ${msg}` };
    if ((o.status === 400 || o.status === 401) && (code === null || DEAD_GRANT.has(code))) {
      return { state: 'revoked', reason: `X refused the refresh token (${code ?? `HTTP ${o.status}`}): ${msg}` };
    }
    return { state: 'retry', error: `X's token endpoint answered ${o.status}: ${msg}` };
  },
};

// ---------------------------------------------------------------------------
// The account
// ---------------------------------------------------------------------------

async function usersMe(input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number }, fields: string): Promise<Json> {
  const o = await platformRequest({
    method: 'GET',
    url: `${trim(input.endpoint.baseUrl)}/2/users/me?user.fields=${fields}`,
    headers: { authorization: `Bearer ${input.credentials.accessToken}` },
    timeoutMs: input.timeoutMs,
    allowPrivateNetworks: input.endpoint.allowPrivateNetworks,
  });
  const secrets = [input.credentials.accessToken, input.credentials.refreshToken];
  if (!ok(o)) {
    const f = classify(o, 'Reading the X account');
    if (f.kind === 'rate') throw new ConnectorError('RATE_LIMITED', scrub(f.error, secrets), { retryAt: f.retryAt?.toISOString() ?? null });
    throw new ConnectorError('UPSTREAM_ERROR', scrub(f.error, secrets), { reauth: f.kind === 'reauth' });
  }
  const d = (o.json as Json)?.data;
  if (!d || typeof d.id !== 'string' || typeof d.username !== 'string') throw new ConnectorError('UPSTREAM_ERROR', 'Reading the X account: X answered no user.');
  return d;
}

/** Characters a post may have: 280, or 25,000 for an account with an X subscription (longer posts). */
export function xCaptionLimit(subscriptionType: unknown): number {
  return typeof subscriptionType === 'string' && subscriptionType !== 'None' ? 25_000 : 280;
}

export const x: PlatformModule = {
  name: 'x',
  platforms: ['x'],
  connect: 'oauth',
  defaultBaseUrl: X_DEFAULT_BASE_URL,
  appEnv: { clientId: 'X_CLIENT_ID', clientSecret: 'X_CLIENT_SECRET' },
  oauth: xOAuth,

  async readAccounts(input): Promise<PlatformAccount[]> {
    const d = await usersMe(input, 'profile_image_url,subscription_type');
    return [
      {
        id: d.id,
        username: d.username,
        name: typeof d.name === 'string' && d.name ? d.name : d.username,
        avatarUrl: typeof d.profile_image_url === 'string' ? d.profile_image_url : null,
        profileUrl: `https://x.com/${seg(d.username)}`,
        kind: 'person',
        // Kept with the credentials: findPublished reads this user's timeline without asking who it is.
        extra: { userId: d.id, username: d.username },
      },
    ];
  },

  async readLimits(input): Promise<AccountLimits | null> {
    let d: Json;
    try {
      d = await usersMe(input, 'subscription_type');
    } catch {
      return null;
    }
    return { captionMaxLength: xCaptionLimit(d.subscription_type), maxMedia: X_MEDIA_RULES.maxImages, imageMaxBytes: X_MEDIA_RULES.imageMaxBytes, videoMaxBytes: X_MEDIA_RULES.videoMaxBytes };
  },

  create: (options) => createXConnector(options),
};
