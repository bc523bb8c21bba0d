// A local fake of X (Twitter) for the X connector (server/platforms/x.ts), a
// real HTTP server on 127.0.0.1 that follows X's published formats
// (docs.x.com: OAuth 2.0 Authorization Code with PKCE, API v2 posts, users,
// media upload v2, rate limits). One origin serves both the consent page and
// the API, as the connector's xAuthorizeEndpoint() expects of a non-`api.`
// base.
//
//   GET  /i/oauth2/authorize         the consent page: as if the user clicked allow, 302 to
//                                    redirect_uri?state&code (or ?error=access_denied&state
//                                    when `consent.refuse`); a bad client or request: 400
//   POST /2/oauth2/token             form; HTTP Basic client_id:client_secret (a confidential
//                                    client); authorization_code with code_verifier checked
//                                    against the S256 (or plain) challenge, codes single-use;
//                                    refresh_token ROTATES: the token sent dies, a reused or
//                                    revoked one is 400 invalid_request "Value passed for the
//                                    token was invalid."
//   GET  /2/users/me                 user.fields profile_image_url, public_metrics, subscription_type
//   POST /2/media/upload/initialize  JSON {media_type, total_bytes, media_category}
//   POST /2/media/upload/{id}/append multipart media + segment_index (at most 5 MB a chunk)
//   POST /2/media/upload/{id}/finalize  videos and GIFs go through processing_info states
//                                    pending -> in_progress -> succeeded | failed
//   GET  /2/media/upload?command=STATUS&media_id=
//   POST /2/media/metadata           {id, metadata: {alt_text: {text}}}
//   POST /2/tweets                   {text, media: {media_ids}, reply: {in_reply_to_tweet_id},
//                                    reply_settings}; 403 "duplicate content" for a repeat of the
//                                    author's text within 24 hours
//   GET  /2/tweets/{id}              tweet.fields; a missing post is 200 with errors (as X does)
//   DELETE /2/tweets/{id}            own posts only
//   PUT  /2/tweets/{id}/hidden       replies in the caller's own conversations only
//   GET  /2/users/{id}/tweets        start_time, end_time, max_results (5-100), pagination_token,
//                                    exclude, tweet.fields; newest first
//   POST /2/dm_conversations/with/{id}/messages   dm.write scope
// Returned post text is what X makes of it: &, < and > escaped as entities,
// each URL replaced by a t.co link (entities.urls names the expanded URL),
// attached media as a trailing t.co link (an entities.urls entry with its
// media_key); more than 280 characters: `text` cut, the whole in `note_tweet`.
// Errors are X's problem JSON {title, detail, type, status} (and {errors: [...]}
// for invalid parameters). Every answer carries x-rate-limit-limit,
// -remaining and -reset (epoch seconds) for the endpoint's window per user
// (setLimit); POST /2/tweets also the x-user-limit-24hour-* and
// x-app-limit-24hour-* caps; a spent window answers 429 until its reset.
//
// Every request is recorded (`calls`). Faults (`inject`) match by method and
// path: an answer with any status, a 429 with reset headers, a timeout after
// X committed (the request is carried out, no answer ever comes) or a request
// lost without effect (no answer, nothing done). `revokeUser` kills a user's
// tokens; `expireAccessToken` one access token; `tokenState` tells whether a
// token is live, spent (rotated), expired or revoked. `latencyMs` delays every
// answer (after the request took effect), as X's round trip does.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeXUser {
  id: string;
  username: string;
  name: string;
  subscriptionType: 'None' | 'Basic' | 'Premium' | 'PremiumPlus';
  followers: number;
}

export interface FakeXTweet {
  id: string;
  authorId: string;
  /** The text as the author sent it. */
  text: string;
  createdAt: Date;
  mediaKeys: string[];
  inReplyTo: string | null;
  conversationId: string;
  replySettings: string | null;
  hidden: boolean;
  deleted: boolean;
  metrics: { retweet_count: number; reply_count: number; like_count: number; quote_count: number; bookmark_count: number; impression_count: number };
}

export interface FakeXMedia {
  id: string;
  mediaKey: string;
  ownerId: string;
  mediaType: string;
  category: string;
  totalBytes: number;
  segments: Map<number, Buffer>;
  bytes: Buffer | null;
  state: 'uploading' | 'pending' | 'in_progress' | 'succeeded' | 'failed';
  stepsLeft: number;
  altText: string | null;
}

export interface FakeXCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  /** JSON or form body; for multipart, its fields. */
  body: Record<string, unknown>;
  files: { name: string; filename: string; contentType: string; data: Buffer }[];
  at: number;
  /** The answer's status; null when none was sent (a fault). */
  status: number | null;
}

export type FakeXFault =
  | { type: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** 429; `window` says which limit is spent (default the endpoint's 15-minute window). */
  | { type: 'rate-limited'; resetInSeconds: number; window?: '15min' | 'user-24h' | 'app-24h' }
  /** X carries the request out and never answers. */
  | { type: 'timeout-after-commit' }
  /** The request is lost: nothing is done and no answer comes. */
  | { type: 'no-answer' };

interface FaultRule {
  method: string | null;
  path: string | RegExp;
  skip: number;
  times: number;
  fault: FakeXFault;
}

interface TokenRecord {
  kind: 'access' | 'refresh';
  userId: string;
  clientId: string;
  scopes: string[];
  expiresAt: number | null;
  used: boolean;
  revoked: boolean;
}

interface CodeRecord {
  userId: string;
  clientId: string;
  redirectUri: string;
  scopes: string[];
  challenge: string;
  method: 'S256' | 'plain';
  expiresAt: number;
  used: boolean;
}

export interface FakeX {
  /** The API base and the consent page's origin. */
  url: string;
  clientId: string;
  clientSecret: string;
  calls: FakeXCall[];
  users: Map<string, FakeXUser>;
  tweets: Map<string, FakeXTweet>;
  media: Map<string, FakeXMedia>;
  /** Who "clicks" on the consent page, and whether they refuse; `scopes` narrows the grant. */
  consent: { userId: string | null; refuse: boolean; scopes: string[] | null };
  /** How videos and GIFs are processed: STATUS answers before success, the wait X announces, and a failure reason. */
  processing: { steps: number; checkAfterSecs: number; fail: string | null };
  addUser(u: Partial<FakeXUser> & { username: string }): FakeXUser;
  /** Tokens as a finished consent would give them. */
  issueTokens(userId: string, scopes?: string[]): { accessToken: string; refreshToken: string };
  revokeUser(userId: string): void;
  expireAccessToken(token: string): void;
  /** A post made outside Pressroom (by hand, earlier). */
  seedTweet(userId: string, text: string, opts?: { createdAt?: Date; inReplyTo?: string; mediaKeys?: string[] }): FakeXTweet;
  inject(match: { method?: string; path: string | RegExp; skip?: number; times?: number }, fault: FakeXFault): void;
  /** The endpoint's per-user window, e.g. setLimit('POST /2/tweets', 2). */
  setLimit(route: string, limit: number, windowSeconds?: number): void;
  /** The daily cap of posts per user (x-user-limit-24hour-*). */
  setDailyPostLimit(limit: number | null): void;
  /** The user's posts that still exist, oldest first. */
  postsBy(userId: string): FakeXTweet[];
  /**
   * What X makes of a token now: `live` (an access token not expired, a refresh token not yet
   * spent), `spent` (a refresh token already exchanged: rotation killed it), `expired`,
   * `revoked`, or `unknown` (never issued). Asks nothing of the API (no call recorded).
   */
  tokenState(token: string): 'live' | 'spent' | 'expired' | 'revoked' | 'unknown';
  /** Every answer is sent this many milliseconds after its request took effect (default 0); may be changed while it runs. */
  options: { latencyMs: number };
  callsTo(method: string, path: string | RegExp): FakeXCall[];
  close(): Promise<void>;
}

export const S256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

const KNOWN_SCOPES = new Set([
  'tweet.read', 'tweet.write', 'tweet.moderate.write', 'users.read', 'follows.read', 'follows.write', 'offline.access', 'space.read',
  'mute.read', 'mute.write', 'like.read', 'like.write', 'list.read', 'list.write', 'block.read', 'block.write', 'bookmark.read',
  'bookmark.write', 'dm.read', 'dm.write', 'media.write',
]);

/** The per-user windows X documents (docs.x.com, "Rate limits"), per 15 minutes. */
const DEFAULT_LIMITS: Record<string, number> = {
  'POST /2/tweets': 100,
  'DELETE /2/tweets/:id': 50,
  'PUT /2/tweets/:id/hidden': 50,
  'GET /2/tweets/:id': 900,
  'GET /2/users/me': 75,
  'GET /2/users/:id/tweets': 900,
  'POST /2/media/upload/initialize': 1875,
  'POST /2/media/upload/:id/append': 1875,
  'POST /2/media/upload/:id/finalize': 1875,
  'GET /2/media/upload': 1875,
  'POST /2/media/metadata': 500,
  'POST /2/dm_conversations/with/:id/messages': 15,
  'POST /2/oauth2/token': 1000,
  'GET /i/oauth2/authorize': 1000,
};

const ROUTES: [string, string, RegExp][] = [
  ['GET', 'GET /i/oauth2/authorize', /^\/i\/oauth2\/authorize$/],
  ['POST', 'POST /2/oauth2/token', /^\/2\/oauth2\/token$/],
  ['GET', 'GET /2/users/me', /^\/2\/users\/me$/],
  ['GET', 'GET /2/users/:id/tweets', /^\/2\/users\/([^/]+)\/tweets$/],
  ['POST', 'POST /2/media/upload/initialize', /^\/2\/media\/upload\/initialize$/],
  ['POST', 'POST /2/media/upload/:id/append', /^\/2\/media\/upload\/([^/]+)\/append$/],
  ['POST', 'POST /2/media/upload/:id/finalize', /^\/2\/media\/upload\/([^/]+)\/finalize$/],
  ['GET', 'GET /2/media/upload', /^\/2\/media\/upload$/],
  ['POST', 'POST /2/media/metadata', /^\/2\/media\/metadata$/],
  ['POST', 'POST /2/tweets', /^\/2\/tweets$/],
  ['GET', 'GET /2/tweets/:id', /^\/2\/tweets\/([^/]+)$/],
  ['DELETE', 'DELETE /2/tweets/:id', /^\/2\/tweets\/([^/]+)$/],
  ['PUT', 'PUT /2/tweets/:id/hidden', /^\/2\/tweets\/([^/]+)\/hidden$/],
  ['POST', 'POST /2/dm_conversations/with/:id/messages', /^\/2\/dm_conversations\/with\/([^/]+)\/messages$/],
];

const MEDIA_LIMITS: Record<string, number> = { tweet_image: 5 * 1024 * 1024, tweet_gif: 15 * 1024 * 1024, tweet_video: 512 * 1024 * 1024 };
const MEDIA_TYPES = ['video/mp4', 'video/webm', 'video/mp2t', 'video/quicktime', 'image/jpeg', 'image/gif', 'image/bmp', 'image/png', 'image/webp', 'image/pjpeg', 'image/tiff'];
const MAX_CHUNK = 5 * 1024 * 1024;
const TWEET_FIELDS = new Set(['attachments', 'author_id', 'conversation_id', 'created_at', 'edit_history_tweet_ids', 'entities', 'id', 'in_reply_to_user_id', 'lang', 'note_tweet', 'public_metrics', 'referenced_tweets', 'reply_settings', 'text']);

interface Answer {
  status: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
}

const problem = (status: number, title: string, detail: string, type = 'about:blank'): Answer => ({ status, json: { title, detail, type, status } });
const invalidParam = (name: string, value: string, message: string): Answer => ({
  status: 400,
  json: { errors: [{ parameters: { [name]: [value] }, message }], title: 'Invalid Request', detail: 'One or more parameters to your request was invalid.', type: 'https://api.twitter.com/2/problems/invalid-request' },
});
const oauthError = (status: number, error: string, description: string): Answer => ({ status, json: { error, error_description: description } });

function parseMultipart(raw: Buffer, contentType: string): { fields: Record<string, string>; files: FakeXCall['files'] } | null {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!m) return null;
  const boundary = Buffer.from(`--${m[1] ?? m[2]}`);
  const fields: Record<string, string> = {};
  const files: FakeXCall['files'] = [];
  let pos = raw.indexOf(boundary);
  if (pos < 0) return null;
  while (true) {
    const start = pos + boundary.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const headEnd = raw.indexOf('\r\n\r\n', start);
    const next = raw.indexOf(boundary, headEnd);
    if (headEnd < 0 || next < 0) return null;
    const head = raw.subarray(start + 2, headEnd).toString('utf8');
    const data = raw.subarray(headEnd + 4, next - 2);
    const name = /name="([^"]*)"/i.exec(head)?.[1] ?? '';
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? 'application/octet-stream';
    if (filename !== undefined) files.push({ name, filename, contentType: type, data: Buffer.from(data) });
    else fields[name] = data.toString('utf8');
    pos = next;
  }
  return { fields, files };
}

const escapeText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const cp = (s: string) => [...s].length;

export async function startFakeX(opts: { clientId?: string; clientSecret?: string; accessTokenTtlSeconds?: number; latencyMs?: number } = {}): Promise<FakeX> {
  const clientId = opts.clientId ?? 'fake-x-client-id';
  const clientSecret = opts.clientSecret ?? 'fake-x-client-secret';
  const ttl = opts.accessTokenTtlSeconds ?? 7200;
  const options = { latencyMs: opts.latencyMs ?? 0 };
  const calls: FakeXCall[] = [];
  const users = new Map<string, FakeXUser>();
  const tweets = new Map<string, FakeXTweet>();
  const media = new Map<string, FakeXMedia>();
  const tokens = new Map<string, TokenRecord>();
  const codes = new Map<string, CodeRecord>();
  const faults: FaultRule[] = [];
  const limits = new Map<string, { limit: number; windowSeconds: number }>();
  const buckets = new Map<string, { used: number; resetAt: number }>();
  const daily = { userLimit: null as number | null, appLimit: 10_000, app: { used: 0, resetAt: 0 }, users: new Map<string, { used: number; resetAt: number }>() };
  const held = new Set<http.ServerResponse>();
  const consent: FakeX['consent'] = { userId: null, refuse: false, scopes: null };
  const processing: FakeX['processing'] = { steps: 2, checkAfterSecs: 1, fail: null };
  let seq = 0;
  let userSeq = 0;

  // Snowflake-like ids: they grow with time, as X's do.
  const snowflake = (at = Date.now()) => String(((BigInt(at) - 1288834974657n) << 22n) + BigInt(++seq % 4096));
  const secret = (prefix: string) => `${prefix}-${randomBytes(18).toString('base64url')}`;

  function addUser(u: Partial<FakeXUser> & { username: string }): FakeXUser {
    const user: FakeXUser = { id: u.id ?? String(1_600_000_000_000_000_000n + BigInt(++userSeq)), username: u.username, name: u.name ?? u.username, subscriptionType: u.subscriptionType ?? 'None', followers: u.followers ?? 0 };
    users.set(user.id, user);
    return user;
  }

  function issueTokens(userId: string, scopes: string[] = ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access', 'tweet.moderate.write']) {
    const accessToken = secret('xat');
    tokens.set(accessToken, { kind: 'access', userId, clientId, scopes, expiresAt: Date.now() + ttl * 1000, used: false, revoked: false });
    const refreshToken = secret('xrt');
    if (scopes.includes('offline.access')) tokens.set(refreshToken, { kind: 'refresh', userId, clientId, scopes, expiresAt: null, used: false, revoked: false });
    return { accessToken, refreshToken };
  }

  function tokenAnswer(userId: string, scopes: string[]): Answer {
    const t = issueTokens(userId, scopes);
    const json: Record<string, unknown> = { token_type: 'bearer', expires_in: ttl, access_token: t.accessToken, scope: scopes.join(' ') };
    if (scopes.includes('offline.access')) json.refresh_token = t.refreshToken;
    return { status: 200, json };
  }

  // --- rate limits -----------------------------------------------------------
  function window(route: string) {
    return limits.get(route) ?? { limit: DEFAULT_LIMITS[route] ?? 1000, windowSeconds: 900 };
  }
  function bucket(route: string, who: string) {
    const key = `${route}|${who}`;
    const now = Date.now();
    let b = buckets.get(key);
    if (!b || b.resetAt <= now) {
      b = { used: 0, resetAt: now + window(route).windowSeconds * 1000 };
      buckets.set(key, b);
    }
    return b;
  }
  function dailyUser(who: string) {
    const now = Date.now();
    let b = daily.users.get(who);
    if (!b || b.resetAt <= now) daily.users.set(who, (b = { used: 0, resetAt: now + 86_400_000 }));
    return b;
  }
  function dailyApp() {
    const now = Date.now();
    if (daily.app.resetAt <= now) daily.app = { used: 0, resetAt: now + 86_400_000 };
    return daily.app;
  }
  const epoch = (ms: number) => String(Math.ceil(ms / 1000));
  function rateHeaders(route: string, who: string): Record<string, string> {
    const b = bucket(route, who);
    const w = window(route);
    const h: Record<string, string> = { 'x-rate-limit-limit': String(w.limit), 'x-rate-limit-remaining': String(Math.max(0, w.limit - b.used)), 'x-rate-limit-reset': epoch(b.resetAt) };
    if (route === 'POST /2/tweets') {
      const a = dailyApp();
      Object.assign(h, { 'x-app-limit-24hour-limit': String(daily.appLimit), 'x-app-limit-24hour-remaining': String(Math.max(0, daily.appLimit - a.used)), 'x-app-limit-24hour-reset': epoch(a.resetAt) });
      if (daily.userLimit !== null) {
        const u = dailyUser(who);
        Object.assign(h, { 'x-user-limit-24hour-limit': String(daily.userLimit), 'x-user-limit-24hour-remaining': String(Math.max(0, daily.userLimit - u.used)), 'x-user-limit-24hour-reset': epoch(u.resetAt) });
      }
    }
    return h;
  }
  /** Counts the call; a 429 when a window is spent. */
  function spend(route: string, who: string): Answer | null {
    const b = bucket(route, who);
    if (b.used >= window(route).limit) return { ...problem(429, 'Too Many Requests', 'Too Many Requests'), headers: rateHeaders(route, who) };
    if (route === 'POST /2/tweets') {
      if (daily.userLimit !== null && dailyUser(who).used >= daily.userLimit) return { ...problem(429, 'Too Many Requests', 'Too Many Requests'), headers: rateHeaders(route, who) };
      if (dailyApp().used >= daily.appLimit) return { ...problem(429, 'Too Many Requests', 'Too Many Requests'), headers: rateHeaders(route, who) };
    }
    b.used++;
    return null;
  }

  // --- post views ------------------------------------------------------------
  function view(t: FakeXTweet, fields: Set<string>) {
    const author = users.get(t.authorId);
    const urls: Record<string, unknown>[] = [];
    let shown = escapeText(t.text).replace(/https?:\/\/[^\s]+/g, (u) => {
      const short = `https://t.co/${createHash('sha1').update(u).digest('hex').slice(0, 10)}`;
      urls.push({ url: short, expanded_url: u.replace(/&amp;/g, '&'), display_url: u.replace(/^https?:\/\//, '').slice(0, 26) });
      return short;
    });
    if (t.mediaKeys.length) {
      const short = `https://t.co/m${t.id.slice(-9)}`;
      shown = `${shown}${shown ? ' ' : ''}${short}`;
      urls.push({ url: short, expanded_url: `https://x.com/${author?.username ?? 'i'}/status/${t.id}/photo/1`, display_url: `pic.x.com/m${t.id.slice(-9)}`, media_key: t.mediaKeys[0] });
    }
    const withIndices = (list: Record<string, unknown>[], text: string): Record<string, unknown>[] =>
      list.map((u) => {
        const at = text.indexOf(u.url as string);
        const start = at < 0 ? 0 : cp(text.slice(0, at));
        return { start, end: start + cp(u.url as string), ...u };
      });
    const long = cp(shown) > 280;
    const text = long ? [...shown].slice(0, 280).join('') : shown;
    const out: Record<string, unknown> = { id: t.id, text, edit_history_tweet_ids: [t.id] };
    if (fields.has('created_at')) out.created_at = t.createdAt.toISOString();
    if (fields.has('author_id')) out.author_id = t.authorId;
    if (fields.has('conversation_id')) out.conversation_id = t.conversationId;
    if (fields.has('public_metrics')) out.public_metrics = { ...t.metrics };
    if (fields.has('reply_settings')) out.reply_settings = t.replySettings ?? 'everyone';
    if (fields.has('attachments') && t.mediaKeys.length) out.attachments = { media_keys: [...t.mediaKeys] };
    if (fields.has('referenced_tweets') && t.inReplyTo) out.referenced_tweets = [{ type: 'replied_to', id: t.inReplyTo }];
    if (fields.has('entities') && urls.length) out.entities = { urls: withIndices(urls, text).filter((u) => text.includes(u.url as string)) };
    if (fields.has('note_tweet') && long) out.note_tweet = { text: shown, entities: { urls: withIndices(urls, shown) } };
    return out;
  }

  function postTweet(author: FakeXUser, body: Record<string, any>): Answer {
    const text = typeof body.text === 'string' ? body.text : '';
    const ids: unknown = body.media?.media_ids;
    if (ids !== undefined && (!Array.isArray(ids) || ids.some((i) => typeof i !== 'string'))) return invalidParam('media.media_ids', JSON.stringify(ids), 'media.media_ids must be an array of strings.');
    const mediaIds = (ids as string[] | undefined) ?? [];
    if (!text && mediaIds.length === 0) return invalidParam('text', '', 'Post text or media is required.');
    const weighted = cp(text.replace(/https?:\/\/[^\s]+/g, 'x'.repeat(23)));
    const max = author.subscriptionType === 'None' ? 280 : 25_000;
    if (weighted > max) return problem(400, 'Invalid Request', `Your Tweet text is too long. (${weighted} > ${max})`);
    const items = mediaIds.map((id) => media.get(id));
    if (items.some((m) => !m || m.ownerId !== author.id || m.state !== 'succeeded')) return problem(400, 'Invalid Request', 'Your media IDs are invalid.');
    const kinds = items.map((m) => m!.category);
    if (mediaIds.length > 4 || (kinds.some((k) => k !== 'tweet_image') && mediaIds.length > 1)) return problem(400, 'Invalid Request', 'Your media IDs are invalid.');
    let parent: FakeXTweet | null = null;
    const replyTo = body.reply?.in_reply_to_tweet_id;
    if (body.reply !== undefined) {
      if (typeof replyTo !== 'string') return invalidParam('reply.in_reply_to_tweet_id', String(replyTo), 'reply.in_reply_to_tweet_id must be a string.');
      parent = tweets.get(replyTo) ?? null;
      if (!parent || parent.deleted) return problem(403, 'Forbidden', 'You attempted to reply to a Tweet that is deleted or not visible to you.');
    }
    if (body.reply_settings !== undefined && !['following', 'mentionedUsers', 'subscribers', 'verified'].includes(body.reply_settings)) {
      return invalidParam('reply_settings', String(body.reply_settings), 'reply_settings is not one of [following, mentionedUsers, subscribers, verified].');
    }
    const dayAgo = Date.now() - 86_400_000;
    if (text && [...tweets.values()].some((t) => t.authorId === author.id && !t.deleted && t.text === text && t.createdAt.getTime() > dayAgo)) {
      return problem(403, 'Forbidden', 'You are not allowed to create a Tweet with duplicate content.');
    }
    const t = makeTweet(author.id, text, { inReplyTo: parent?.id, mediaKeys: items.map((m) => m!.mediaKey), replySettings: body.reply_settings ?? null });
    dailyUser(author.id).used++;
    dailyApp().used++;
    return { status: 201, json: { data: { id: t.id, text: view(t, new Set()).text, edit_history_tweet_ids: [t.id] } } };
  }

  function makeTweet(authorId: string, text: string, o: { createdAt?: Date; inReplyTo?: string | null; mediaKeys?: string[]; replySettings?: string | null } = {}): FakeXTweet {
    const createdAt = o.createdAt ?? new Date();
    const id = snowflake(createdAt.getTime());
    const parent = o.inReplyTo ? tweets.get(o.inReplyTo) : undefined;
    const t: FakeXTweet = {
      id,
      authorId,
      text,
      createdAt,
      mediaKeys: o.mediaKeys ?? [],
      inReplyTo: parent?.id ?? null,
      conversationId: parent?.conversationId ?? id,
      replySettings: o.replySettings ?? null,
      hidden: false,
      deleted: false,
      metrics: { retweet_count: 0, reply_count: 0, like_count: 0, quote_count: 0, bookmark_count: 0, impression_count: 0 },
    };
    tweets.set(id, t);
    return t;
  }

  const fieldsOf = (q: Record<string, string>) => new Set((q['tweet.fields'] ?? '').split(',').filter((f) => TWEET_FIELDS.has(f)));

  // --- the API -----------------------------------------------------------------
  function handle(call: FakeXCall, route: string, match: RegExpExecArray, raw: Buffer): Answer {
    const q = call.query;
    if (route === 'GET /i/oauth2/authorize') {
      const page = (detail: string): Answer => ({ status: 400, text: `Something went wrong. ${detail}` });
      if (q.client_id !== clientId) return page('Unknown client_id.');
      let redirect: URL;
      try {
        redirect = new URL(q.redirect_uri ?? '');
      } catch {
        return page('redirect_uri is not a URL.');
      }
      if (q.response_type !== 'code') return page('response_type must be code.');
      const scopes = (q.scope ?? '').split(' ').filter(Boolean);
      if (scopes.length === 0 || scopes.some((s) => !KNOWN_SCOPES.has(s))) return page('Invalid scope.');
      if (!q.code_challenge) return page('code_challenge is required.');
      const method = q.code_challenge_method ?? 'plain';
      if (method !== 'S256' && method !== 'plain') return page('code_challenge_method must be S256 or plain.');
      if (!q.state) return page('state is required.');
      if (consent.refuse || !consent.userId) {
        redirect.searchParams.set('error', 'access_denied');
        redirect.searchParams.set('state', q.state);
        return { status: 302, headers: { location: redirect.toString() } };
      }
      const granted = consent.scopes ? scopes.filter((s) => consent.scopes!.includes(s)) : scopes;
      const code = secret('xcode');
      codes.set(code, { userId: consent.userId, clientId, redirectUri: q.redirect_uri, scopes: granted, challenge: q.code_challenge, method, expiresAt: Date.now() + 30_000, used: false });
      redirect.searchParams.set('state', q.state);
      redirect.searchParams.set('code', code);
      return { status: 302, headers: { location: redirect.toString() } };
    }

    if (route === 'POST /2/oauth2/token') {
      const b = call.body as Record<string, string>;
      const basic = /^Basic (.+)$/.exec(String(call.headers.authorization ?? ''));
      if (!basic) return oauthError(401, 'unauthorized_client', 'Missing valid authorization header');
      const [id, pw] = Buffer.from(basic[1], 'base64').toString('utf8').split(':').map(decodeURIComponent);
      if (id !== clientId || pw !== clientSecret) return oauthError(401, 'invalid_client', 'Client authentication failed');
      if (b.client_id !== undefined && b.client_id !== clientId) return oauthError(400, 'invalid_request', 'client_id does not match the authenticated client.');
      if (b.grant_type === 'authorization_code') {
        const c = codes.get(b.code ?? '');
        if (!c || c.used || c.expiresAt < Date.now()) {
          if (c) c.used = true;
          return oauthError(400, 'invalid_request', 'Value passed for the authorization code was invalid.');
        }
        c.used = true;
        if (b.redirect_uri !== c.redirectUri) return oauthError(400, 'invalid_request', 'Value passed for the redirect uri did not match the uri of the authorization code.');
        const verifier = b.code_verifier ?? '';
        if (!verifier || (c.method === 'S256' ? S256(verifier) : verifier) !== c.challenge) return oauthError(400, 'invalid_request', 'Value passed for the code verifier did not match the code challenge.');
        return tokenAnswer(c.userId, c.scopes);
      }
      if (b.grant_type === 'refresh_token') {
        const t = tokens.get(b.refresh_token ?? '');
        if (!t || t.kind !== 'refresh' || t.used || t.revoked) return oauthError(400, 'invalid_request', 'Value passed for the token was invalid.');
        t.used = true; // rotation: this refresh token dies now
        return tokenAnswer(t.userId, t.scopes);
      }
      return oauthError(400, 'unsupported_grant_type', 'grant_type is not supported.');
    }

    // Everything else takes a user's bearer token.
    const bearer = /^Bearer (.+)$/.exec(String(call.headers.authorization ?? ''))?.[1] ?? '';
    const tok = tokens.get(bearer);
    if (!tok || tok.kind !== 'access' || tok.revoked || (tok.expiresAt !== null && tok.expiresAt <= Date.now())) return problem(401, 'Unauthorized', 'Unauthorized');
    const me = users.get(tok.userId)!;
    const need = (...scopes: string[]) => {
      const missing = scopes.filter((s) => !tok.scopes.includes(s));
      return missing.length ? problem(403, 'Forbidden', `Missing required OAuth 2.0 scope: ${missing.join(', ')}.`) : null;
    };
    const limited = spend(route, me.id);
    if (limited) return limited;
    const ct = String(call.headers['content-type'] ?? '');
    const jsonBody = () => (ct.startsWith('application/json') ? call.body : null);

    switch (route) {
      case 'GET /2/users/me': {
        const denied = need('users.read', 'tweet.read');
        if (denied) return denied;
        const f = new Set((q['user.fields'] ?? '').split(','));
        const data: Record<string, unknown> = { id: me.id, name: me.name, username: me.username };
        if (f.has('profile_image_url')) data.profile_image_url = `https://pbs.twimg.com/profile_images/${me.id}/avatar_normal.jpg`;
        if (f.has('public_metrics')) data.public_metrics = { followers_count: me.followers, following_count: 10, tweet_count: [...tweets.values()].filter((t) => t.authorId === me.id && !t.deleted).length, listed_count: 0, like_count: 0 };
        if (f.has('subscription_type')) data.subscription_type = me.subscriptionType;
        return { status: 200, json: { data } };
      }
      case 'GET /2/users/:id/tweets': {
        const denied = need('users.read', 'tweet.read');
        if (denied) return denied;
        const id = decodeURIComponent(match[1]);
        if (!users.has(id)) return { status: 200, json: { errors: [{ value: id, detail: `Could not find user with id: [${id}].`, title: 'Not Found Error', resource_type: 'user', parameter: 'id', resource_id: id, type: 'https://api.twitter.com/2/problems/resource-not-found' }] } };
        const max = q.max_results === undefined ? 10 : Number(q.max_results);
        if (!Number.isInteger(max) || max < 5 || max > 100) return invalidParam('max_results', String(q.max_results), `The \`max_results\` query parameter value [${q.max_results}] is not between 5 and 100`);
        const time = (name: string) => {
          const v = q[name];
          if (v === undefined) return null;
          if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(v) || Number.isNaN(Date.parse(v))) return NaN;
          return Date.parse(v);
        };
        const from = time('start_time');
        const to = time('end_time');
        if (Number.isNaN(from)) return invalidParam('start_time', q.start_time, `Invalid 'start_time':'${q.start_time}'. 'start_time' must be a valid RFC 3339 date-time.`);
        if (Number.isNaN(to)) return invalidParam('end_time', q.end_time, `Invalid 'end_time':'${q.end_time}'. 'end_time' must be a valid RFC 3339 date-time.`);
        const exclude = new Set((q.exclude ?? '').split(',').filter(Boolean));
        const list = [...tweets.values()]
          .filter((t) => t.authorId === id && !t.deleted && (from === null || t.createdAt.getTime() >= from) && (to === null || t.createdAt.getTime() <= to) && !(exclude.has('replies') && t.inReplyTo))
          .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1));
        const offset = q.pagination_token ? Number(Buffer.from(q.pagination_token, 'base64url').toString()) : 0;
        if (!Number.isInteger(offset) || offset < 0) return invalidParam('pagination_token', q.pagination_token, 'Invalid pagination_token.');
        const page = list.slice(offset, offset + max);
        const meta: Record<string, unknown> = { result_count: page.length };
        if (page.length) Object.assign(meta, { newest_id: page[0].id, oldest_id: page[page.length - 1].id });
        if (offset + max < list.length) meta.next_token = Buffer.from(String(offset + max)).toString('base64url');
        const fields = fieldsOf(q);
        return { status: 200, json: page.length ? { data: page.map((t) => view(t, fields)), meta } : { meta } };
      }
      case 'POST /2/media/upload/initialize': {
        const denied = need('media.write');
        if (denied) return denied;
        const b = jsonBody();
        if (!b) return problem(400, 'Invalid Request', 'The Content-Type must be application/json.');
        const type = String(b.media_type ?? '');
        const category = String(b.media_category ?? 'tweet_image');
        const total = b.total_bytes;
        if (!MEDIA_TYPES.includes(type)) return invalidParam('media_type', type, `media_type [${type}] is not supported.`);
        if (!(category in MEDIA_LIMITS)) return invalidParam('media_category', category, `media_category [${category}] is not one of tweet_image, tweet_gif, tweet_video.`);
        if (typeof total !== 'number' || !Number.isInteger(total) || total <= 0) return invalidParam('total_bytes', String(total), 'total_bytes must be a positive integer.');
        const kindOk = category === 'tweet_video' ? type.startsWith('video/') : category === 'tweet_gif' ? type === 'image/gif' : type.startsWith('image/');
        if (!kindOk) return invalidParam('media_category', category, `media_category [${category}] does not fit media_type [${type}].`);
        if (total > MEDIA_LIMITS[category]) return problem(400, 'Invalid Request', `File size exceeds ${MEDIA_LIMITS[category]} bytes.`);
        const id = snowflake();
        const prefix = category === 'tweet_video' ? '7' : category === 'tweet_gif' ? '16' : '3';
        media.set(id, { id, mediaKey: `${prefix}_${id}`, ownerId: me.id, mediaType: type, category, totalBytes: total, segments: new Map(), bytes: null, state: 'uploading', stepsLeft: 0, altText: null });
        return { status: 200, json: { data: { id, media_key: `${prefix}_${id}`, expires_after_secs: 86400 } } };
      }
      case 'POST /2/media/upload/:id/append': {
        const denied = need('media.write');
        if (denied) return denied;
        const m = media.get(decodeURIComponent(match[1]));
        if (!m || m.ownerId !== me.id) return problem(400, 'Invalid Request', 'Invalid media id.');
        if (m.state !== 'uploading') return problem(400, 'Invalid Request', 'The upload is already finalized.');
        const parts = ct.startsWith('multipart/form-data') ? parseMultipart(raw, ct) : null;
        if (!parts) return problem(400, 'Invalid Request', 'The Content-Type must be multipart/form-data.');
        const index = Number(parts.fields.segment_index);
        if (!/^\d+$/.test(parts.fields.segment_index ?? '') || index > 999) return invalidParam('segment_index', String(parts.fields.segment_index), 'segment_index must be an integer between 0 and 999.');
        const file = parts.files.find((f) => f.name === 'media');
        const data = file?.data ?? (parts.fields.media !== undefined ? Buffer.from(parts.fields.media, 'base64') : null);
        if (!data) return invalidParam('media', '', 'media is required.');
        if (data.length > MAX_CHUNK) return problem(400, 'Invalid Request', `A segment may be at most ${MAX_CHUNK} bytes.`);
        m.segments.set(index, data);
        return { status: 200, json: { data: { expires_at: Math.floor(Date.now() / 1000) + 86400 } } };
      }
      case 'POST /2/media/upload/:id/finalize': {
        const denied = need('media.write');
        if (denied) return denied;
        const m = media.get(decodeURIComponent(match[1]));
        if (!m || m.ownerId !== me.id) return problem(400, 'Invalid Request', 'Invalid media id.');
        if (m.state !== 'uploading') return problem(400, 'Invalid Request', 'The upload is already finalized.');
        const order = [...m.segments.keys()].sort((a, b) => a - b);
        if (order.some((k, i) => k !== i)) return problem(400, 'Invalid Request', 'Segments are missing.');
        const bytes = Buffer.concat(order.map((k) => m.segments.get(k)!));
        if (bytes.length !== m.totalBytes) return problem(400, 'Invalid Request', `File size mismatch: ${bytes.length} bytes received, ${m.totalBytes} announced.`);
        m.bytes = bytes;
        const data: Record<string, unknown> = { id: m.id, media_key: m.mediaKey, size: bytes.length, expires_after_secs: 86400 };
        if (m.category === 'tweet_image') m.state = 'succeeded';
        else {
          m.state = 'pending';
          m.stepsLeft = processing.steps;
          data.processing_info = { state: 'pending', check_after_secs: processing.checkAfterSecs };
        }
        return { status: 200, json: { data } };
      }
      case 'GET /2/media/upload': {
        const denied = need('media.write');
        if (denied) return denied;
        if (q.command !== 'STATUS') return invalidParam('command', String(q.command), 'command must be STATUS.');
        const m = media.get(q.media_id ?? '');
        if (!m || m.ownerId !== me.id) return problem(400, 'Invalid Request', 'Invalid media id.');
        const data: Record<string, unknown> = { id: m.id, media_key: m.mediaKey };
        if (m.state === 'pending' || m.state === 'in_progress') {
          if (m.stepsLeft <= 1) m.state = processing.fail ? 'failed' : 'succeeded';
          else {
            m.stepsLeft--;
            m.state = 'in_progress';
          }
        }
        if (m.category !== 'tweet_image') {
          const info: Record<string, unknown> = { state: m.state };
          if (m.state === 'in_progress') Object.assign(info, { check_after_secs: processing.checkAfterSecs, progress_percent: 50 });
          if (m.state === 'succeeded') info.progress_percent = 100;
          if (m.state === 'failed') info.error = { code: 1, name: 'InvalidMedia', message: processing.fail };
          data.processing_info = info;
        }
        return { status: 200, json: { data } };
      }
      case 'POST /2/media/metadata': {
        const denied = need('media.write');
        if (denied) return denied;
        const b = jsonBody();
        if (!b) return problem(400, 'Invalid Request', 'The Content-Type must be application/json.');
        const m = media.get(String(b.id ?? ''));
        if (!m || m.ownerId !== me.id) return problem(400, 'Invalid Request', 'Invalid media id.');
        const alt = (b.metadata as any)?.alt_text?.text;
        if (typeof alt !== 'string' || cp(alt) > 1000) return invalidParam('metadata.alt_text.text', String(alt).slice(0, 50), 'alt_text.text must be a string of at most 1000 characters.');
        m.altText = alt;
        return { status: 200, json: { data: { id: m.id, associated_metadata: { alt_text: { text: alt } } } } };
      }
      case 'POST /2/tweets': {
        const denied = need('tweet.write', 'tweet.read', 'users.read');
        if (denied) return denied;
        const b = jsonBody();
        if (!b) return problem(400, 'Invalid Request', 'The Content-Type must be application/json.');
        return postTweet(me, b as Record<string, any>);
      }
      case 'GET /2/tweets/:id': {
        const denied = need('tweet.read', 'users.read');
        if (denied) return denied;
        const id = decodeURIComponent(match[1]);
        const t = tweets.get(id);
        if (!t || t.deleted) return { status: 200, json: { errors: [{ value: id, detail: `Could not find tweet with id: [${id}].`, title: 'Not Found Error', resource_type: 'tweet', parameter: 'id', resource_id: id, type: 'https://api.twitter.com/2/problems/resource-not-found' }] } };
        return { status: 200, json: { data: view(t, fieldsOf(q)) } };
      }
      case 'DELETE /2/tweets/:id': {
        const denied = need('tweet.write', 'tweet.read', 'users.read');
        if (denied) return denied;
        const t = tweets.get(decodeURIComponent(match[1]));
        if (!t || t.deleted) return problem(404, 'Not Found Error', 'Could not find the Tweet.');
        if (t.authorId !== me.id) return problem(403, 'Forbidden', 'You are not allowed to delete a Tweet that is not yours.');
        t.deleted = true;
        return { status: 200, json: { data: { deleted: true } } };
      }
      case 'PUT /2/tweets/:id/hidden': {
        const denied = need('tweet.moderate.write', 'tweet.read', 'users.read');
        if (denied) return denied;
        const b = jsonBody();
        if (!b || typeof b.hidden !== 'boolean') return invalidParam('hidden', String(b?.hidden), 'hidden must be a boolean.');
        const t = tweets.get(decodeURIComponent(match[1]));
        if (!t || t.deleted) return problem(404, 'Not Found Error', 'Could not find the Tweet.');
        const root = tweets.get(t.conversationId);
        if (!t.inReplyTo || root?.authorId !== me.id || t.authorId === me.id) return problem(403, 'Forbidden', 'You can only hide or unhide replies to conversations you authored.');
        t.hidden = b.hidden;
        return { status: 200, json: { data: { hidden: t.hidden } } };
      }
      case 'POST /2/dm_conversations/with/:id/messages': {
        const denied = need('dm.write', 'dm.read', 'tweet.read', 'users.read');
        if (denied) return denied;
        const b = jsonBody();
        if (!b || typeof b.text !== 'string' || !b.text) return invalidParam('text', '', 'text is required.');
        return { status: 201, json: { data: { dm_conversation_id: `${me.id}-${match[1]}`, dm_event_id: snowflake() } } };
      }
    }
    return problem(404, 'Not Found Error', `No ${call.method} ${call.path}.`);
  }

  function takeFault(call: FakeXCall): FakeXFault | null {
    for (const r of faults) {
      if (r.times <= 0) continue;
      if (r.method && r.method !== call.method) continue;
      if (typeof r.path === 'string' ? r.path !== call.path : !r.path.test(call.path)) continue;
      if (r.skip > 0) {
        r.skip--;
        continue;
      }
      r.times--;
      return r.fault;
    }
    return null;
  }

  function who(call: FakeXCall): string {
    const bearer = /^Bearer (.+)$/.exec(String(call.headers.authorization ?? ''))?.[1];
    const t = bearer ? tokens.get(bearer) : undefined;
    return t?.userId ?? 'app';
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      let body: Record<string, unknown> = {};
      let files: FakeXCall['files'] = [];
      try {
        if (type.startsWith('application/json')) body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
        else if (type.startsWith('application/x-www-form-urlencoded')) body = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
        else if (type.startsWith('multipart/form-data')) {
          const p = parseMultipart(raw, type);
          if (p) {
            body = p.fields;
            files = p.files;
          }
        }
      } catch {
        body = { __unparsable: raw.toString('utf8').slice(0, 200) };
      }
      const call: FakeXCall = { method: req.method ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body, files, at: Date.now(), status: null };
      calls.push(call);
      const found = ROUTES.find(([m, , re]) => m === call.method && re.test(call.path));
      const route = found?.[1] ?? `${call.method} ${call.path}`;
      const match = found ? found[2].exec(call.path)! : ([] as unknown as RegExpExecArray);
      const user = who(call);

      const send = (a: Answer) => {
        call.status = a.status;
        const headers: Record<string, string> = { ...rateHeaders(route, user), ...(a.headers ?? {}) };
        if (a.json !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
        else if (a.text !== undefined) headers['content-type'] = 'text/plain; charset=utf-8';
        const write = () => {
          if (res.destroyed) return;
          res.writeHead(a.status, headers);
          res.end(a.json !== undefined ? JSON.stringify(a.json) : (a.text ?? ''));
        };
        // The request took effect already; its answer comes after X's latency.
        if (options.latencyMs > 0) setTimeout(write, options.latencyMs);
        else write();
      };
      const hold = () => {
        held.add(res);
        res.on('close', () => held.delete(res));
      };

      const fault = takeFault(call);
      if (fault?.type === 'status') {
        const a: Answer = { status: fault.status, headers: fault.headers };
        if (fault.body !== undefined) a.json = fault.body;
        else if (call.path === '/2/oauth2/token') a.json = { error: 'server_error', error_description: 'Internal error' };
        else a.json = { title: http.STATUS_CODES[fault.status] ?? 'Error', detail: http.STATUS_CODES[fault.status] ?? 'Error', type: 'about:blank', status: fault.status };
        return send(a);
      }
      if (fault?.type === 'rate-limited') {
        const reset = epoch(Date.now() + fault.resetInSeconds * 1000);
        const soon = epoch(Date.now() + 60_000);
        const w = fault.window ?? '15min';
        const h: Record<string, string> = { 'x-rate-limit-limit': '100', 'x-rate-limit-remaining': w === '15min' ? '0' : '42', 'x-rate-limit-reset': w === '15min' ? reset : soon };
        if (w === 'user-24h') Object.assign(h, { 'x-user-limit-24hour-limit': '17', 'x-user-limit-24hour-remaining': '0', 'x-user-limit-24hour-reset': reset });
        if (w === 'app-24h') Object.assign(h, { 'x-app-limit-24hour-limit': '10000', 'x-app-limit-24hour-remaining': '0', 'x-app-limit-24hour-reset': reset });
        return send({ ...problem(429, 'Too Many Requests', 'Too Many Requests'), headers: h });
      }
      if (fault?.type === 'no-answer') return hold();
      const a = found ? handle(call, route, match, raw) : problem(404, 'Not Found Error', `No ${call.method} ${call.path}.`);
      if (fault?.type === 'timeout-after-commit') {
        call.status = a.status;
        return hold();
      }
      send(a);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    clientId,
    clientSecret,
    calls,
    users,
    tweets,
    media,
    consent,
    processing,
    addUser,
    issueTokens,
    revokeUser(userId) {
      for (const t of tokens.values()) if (t.userId === userId) t.revoked = true;
    },
    expireAccessToken(token) {
      const t = tokens.get(token);
      if (t) t.expiresAt = Date.now() - 1;
    },
    seedTweet(userId, text, o = {}) {
      return makeTweet(userId, text, { createdAt: o.createdAt, inReplyTo: o.inReplyTo, mediaKeys: o.mediaKeys });
    },
    inject(match, fault) {
      faults.push({ method: match.method ?? null, path: match.path, skip: match.skip ?? 0, times: match.times ?? 1, fault });
    },
    setLimit(route, limit, windowSeconds = 900) {
      limits.set(route, { limit, windowSeconds });
    },
    setDailyPostLimit(limit) {
      daily.userLimit = limit;
    },
    postsBy(userId) {
      return [...tweets.values()].filter((t) => t.authorId === userId && !t.deleted).sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    },
    callsTo(method, path) {
      return calls.filter((c) => c.method === method && (typeof path === 'string' ? c.path === path : path.test(c.path)));
    },
    tokenState(token) {
      const t = tokens.get(token);
      if (!t) return 'unknown';
      if (t.revoked) return 'revoked';
      if (t.kind === 'refresh') return t.used ? 'spent' : 'live';
      return t.expiresAt !== null && t.expiresAt <= Date.now() ? 'expired' : 'live';
    },
    options,
    close: () =>
      new Promise<void>((r) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
