// A local fake of LinkedIn (the consent screen and token endpoints of
// www.linkedin.com and the API of api.linkedin.com on one origin), following
// LinkedIn's published formats closely enough for the connector in
// server/platforms/linkedin.ts to be tested over real HTTP:
//
//   GET  /oauth/v2/authorization      the consent screen, answered as if the member clicked
//                                     (consent 'allow': 302 to redirect_uri?code=&state=; 'cancel':
//                                     ?error=user_cancelled_authorize; a scope the app is not approved
//                                     for: ?error=unauthorized_scope_error); an unknown client or a
//                                     redirect_uri not registered: a 400 page, no redirect
//   POST /oauth/v2/accessToken        form; client_id + client_secret checked (401 invalid_client);
//                                     authorization_code (redirect_uri checked, a code works once;
//                                     400 invalid_request as LinkedIn answers); refresh_token for apps
//                                     with programmatic refresh: the same refresh token back, its
//                                     refresh_token_expires_in counting down from the consent (never
//                                     renewed), 400 invalid_grant for a revoked or expired one. Scopes
//                                     are answered comma-separated, as LinkedIn does.
//   POST /oauth/v2/introspectToken    {active, status, expires_at, scope, ...}
//   GET  /v2/userinfo                 OpenID (openid + profile): sub, name, picture
//   GET  /v2/me                       r_basicprofile: id, localizedFirstName, localizedLastName
//   GET  /rest/organizationAcls       q=roleAssignee (role, state, start, count)
//   GET  /rest/organizations/{id}, /rest/organizations?ids=List(...)
//   POST /rest/images?action=initializeUpload, PUT <uploadUrl>, GET /rest/images/{urn}
//   POST /rest/videos?action=initializeUpload (parts of `partSize` bytes), PUT <part url> (answers an
//                                     ETag), POST /rest/videos?action=finalizeUpload (token and the ETags
//                                     in order checked), GET /rest/videos/{urn} (PROCESSING for
//                                     `processing.videoPolls` asks, then AVAILABLE, or PROCESSING_FAILED)
//   POST /rest/posts                  201, empty body, the URN in x-restli-id (urn:li:share:N, a video post
//                                     urn:li:ugcPost:N); the commentary is read as "little" text: an
//                                     unescaped reserved character cuts the post there, silently, as
//                                     LinkedIn does; 422 DUPLICATE_POST for a post identical to one of
//                                     the author's last `duplicateWindowMs`; the member's daily post limit
//   GET  /rest/posts/{urn}, GET /rest/posts?q=author (sortBy LAST_MODIFIED | CREATED), POST
//                                     /rest/posts/{urn} with X-RestLi-Method: PARTIAL_UPDATE
//   GET  /rest/organizationalEntityShareStatistics?q=organizationalEntity (shares / ugcPosts=List(...))
//   GET  /rest/networkSizes/{org urn}?edgeType=COMPANY_FOLLOWED_BY_MEMBER
//   POST|GET /rest/socialActions/{urn}/comments, DELETE /rest/socialActions/{urn}/comments/{id}?actor=
//
// Every /rest call needs LinkedIn-Version (400 VERSION_MISSING without it, 426 NONEXISTENT_VERSION for a
// version that is not active) and X-Restli-Protocol-Version: 2.0.0 (the fake refuses Rest.li 1.0 calls:
// LinkedIn misreads their List(...) and encoded keys); URN keys in paths must be URL-encoded. Errors use
// LinkedIn's envelope {"status", "serviceErrorCode", "code", "message"} (validation errors add
// errorDetails.inputErrors); OAuth endpoints answer {"error", "error_description"}. Scopes are checked per
// endpoint (403 ACCESS_DENIED). Faults: `inject` answers the next matching request with an error status,
// a 429 (LinkedIn sends no reset header; Retry-After only when asked), or no answer at all (before or
// after the request took effect). Every request is recorded.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LinkedInCall {
  method: string;
  /** The raw path (URNs stay percent-encoded). */
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  /** JSON or form fields; raw uploads as {bytes: n}. */
  body: Record<string, any>;
  status?: number;
}

export interface FakeMember {
  id: string;
  name: string;
  givenName: string;
  familyName: string;
  picture: string;
}

export interface FakeOrganization {
  id: string;
  name: string;
  vanityName: string;
  followers: number;
  /** memberId -> role and state. */
  roles: Map<string, { role: 'ADMINISTRATOR' | 'CONTENT_ADMINISTRATOR' | 'ANALYST'; state: 'APPROVED' | 'REQUESTED' }>;
}

export interface FakeApp {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** The scopes the app's products allow. */
  scopes: string[];
  /** Approved for programmatic refresh tokens. */
  programmaticRefresh: boolean;
}

export interface FakeToken {
  token: string;
  clientId: string | null;
  memberId: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number;
  revoked: boolean;
}

export interface FakeRefreshToken {
  token: string;
  clientId: string;
  memberId: string;
  scopes: string[];
  /** Fixed at the consent: a refresh never moves it. */
  expiresAt: number;
  revoked: boolean;
}

export interface FakeImage {
  urn: string;
  owner: string;
  status: 'WAITING_UPLOAD' | 'AVAILABLE';
  size: number;
  sha256: string | null;
}

export interface FakeVideo {
  urn: string;
  owner: string;
  fileSizeBytes: number;
  uploadToken: string;
  parts: { firstByte: number; lastByte: number; etag: string | null; sha256: string | null }[];
  status: 'WAITING_UPLOAD' | 'PROCESSING' | 'AVAILABLE' | 'PROCESSING_FAILED';
  pollsLeft: number;
  finalizedWith: string[] | null;
}

export interface FakePost {
  urn: string;
  activityUrn: string;
  author: string;
  /** The commentary as sent. */
  commentary: string;
  /** What LinkedIn shows: the little text read (cut at an unescaped reserved character). */
  text: string;
  /** Hashtags as LinkedIn found them in the little text. */
  hashtags: string[];
  /** Whether an unescaped reserved character cut the text. */
  truncated: boolean;
  visibility: string;
  content: Record<string, any> | null;
  lifecycleState: string;
  createdAt: number;
  lastModifiedAt: number;
  edited: boolean;
  stats: { impressions: number; uniqueImpressions: number; likes: number; comments: number; shares: number; clicks: number; engagement: number };
}

export interface FakeComment {
  id: string;
  urn: string;
  /** The post's URN the comment is on. */
  object: string;
  actor: string;
  text: string;
  parentComment: string | null;
  createdAt: number;
  deleted: boolean;
}

export type FakeFault = {
  method?: string;
  /** The raw path (exact) or a pattern it must match. */
  path?: string | RegExp;
  times?: number;
  /** Matching requests let through first. */
  skip?: number;
} & (
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  /** 429 as LinkedIn answers it: no reset header, unless retryAfterSeconds. */
  | { kind: 'rate-limit'; retryAfterSeconds?: number }
  /** The request takes effect (the post is made) and no answer ever comes. */
  | { kind: 'hang-after-commit' }
  /** No answer and no effect. */
  | { kind: 'hang' }
);

export interface FakeLinkedInOptions {
  /** Bytes per video part (LinkedIn: 4 MiB). */
  partSize?: number;
  /** Posts per member (or page) per day (LinkedIn: about 150). */
  dailyPostLimit?: number;
  /** The oldest active LinkedIn-Version; later versions up to the current month are active. */
  minVersion?: string;
  /** How long an identical post is refused as DUPLICATE_POST. */
  duplicateWindowMs?: number;
}

export interface FakeLinkedIn {
  url: string;
  calls: LinkedInCall[];
  members: Map<string, FakeMember>;
  organizations: Map<string, FakeOrganization>;
  apps: Map<string, FakeApp>;
  tokens: Map<string, FakeToken>;
  refreshTokens: Map<string, FakeRefreshToken>;
  images: Map<string, FakeImage>;
  videos: Map<string, FakeVideo>;
  posts: Map<string, FakePost>;
  comments: Map<string, FakeComment>;
  /** The operator's app (all products, programmatic refresh). */
  app: FakeApp;
  /** The member signed in at the consent screen. */
  signedIn: string;
  consent: 'allow' | 'cancel';
  processing: { videoPolls: number; videoFails: boolean };
  options: Required<FakeLinkedInOptions>;
  alice: FakeMember;
  bob: FakeMember;
  /** Alice administers Acme (and Beta as a pending request); Bob administers Gamma. */
  acme: FakeOrganization;
  createMember(m: { name: string }): FakeMember;
  createOrganization(o: { name: string; vanityName: string; followers?: number; admins?: Record<string, { role?: 'ADMINISTRATOR' | 'CONTENT_ADMINISTRATOR' | 'ANALYST'; state?: 'APPROVED' | 'REQUESTED' }> }): FakeOrganization;
  registerApp(a: { redirectUris: string[]; scopes?: string[]; programmaticRefresh?: boolean }): FakeApp;
  /** A token as the OAuth flow would issue it (for tests that skip the flow). */
  issueToken(memberId: string, scopes?: string[], o?: { expiresInSeconds?: number }): string;
  revokeToken(token: string): void;
  revokeRefreshToken(token: string): void;
  /** The fake's clock: now, and moving it on (tokens expire, refresh tokens count down). */
  now(): number;
  advance(seconds: number): void;
  /** Back to the real clock. */
  resetClock(): void;
  commentAs(actor: string, postUrn: string, text: string, parentComment?: string): FakeComment;
  postsOf(author: string): FakePost[];
  inject(fault: FakeFault): void;
  callsTo(method: string, path: string | RegExp): LinkedInCall[];
  close(): Promise<void>;
}

const ALL_SCOPES = ['openid', 'profile', 'email', 'r_basicprofile', 'w_member_social', 'r_member_social', 'r_organization_social', 'w_organization_social', 'rw_organization_admin', 'r_organization_admin'];
const ACCESS_SECONDS = 60 * 24 * 3600;
const REFRESH_SECONDS = 365 * 24 * 3600;
const CODE_LIFETIME_MS = 30 * 60 * 1000;
const RESERVED = new Set(['\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~']);

/**
 * Reads LinkedIn's little text: escapes, hashtags (`#tag`, `{hashtag|\#|tag}`), mentions
 * (`@[Name](urn)`). An unescaped reserved character anywhere else ends the text there, as
 * LinkedIn's parser does (the post is published cut short, without an error).
 */
export function readLittle(little: string): { text: string; hashtags: string[]; truncated: boolean; readForm: string } {
  const chars = [...little];
  let text = '';
  let readForm = '';
  const hashtags: string[] = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i];
    if (c === '\\' && i + 1 < chars.length) {
      text += chars[i + 1];
      readForm += `\\${chars[i + 1]}`;
      i += 2;
      continue;
    }
    const rest = chars.slice(i).join('');
    if (c === '#') {
      const m = /^#([\p{L}\p{N}]+)/u.exec(rest);
      if (m && /\p{L}/u.test(m[1])) {
        hashtags.push(m[1]);
        text += `#${m[1]}`;
        readForm += `{hashtag|\\#|${m[1]}}`;
        i += [...m[0]].length;
        continue;
      }
    }
    if (c === '{') {
      const m = /^\{hashtag\|\\#\|([\p{L}\p{N}]+)\}/u.exec(rest);
      if (m) {
        hashtags.push(m[1]);
        text += `#${m[1]}`;
        readForm += m[0];
        i += [...m[0]].length;
        continue;
      }
    }
    if (c === '@') {
      const m = /^@\[([^\]\\]+)\]\((urn:li:(?:person|organization):[A-Za-z0-9_-]+)\)/.exec(rest);
      if (m) {
        text += m[1];
        readForm += m[0];
        i += [...m[0]].length;
        continue;
      }
    }
    if (RESERVED.has(c)) return { text, hashtags, truncated: true, readForm };
    text += c;
    readForm += c;
    i++;
  }
  return { text, hashtags, truncated: false, readForm };
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function currentVersion(now: number): string {
  const d = new Date(now);
  return `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The entries of a Rest.li 2.0 `List(a,b)` (already percent-decoded by URLSearchParams). */
function restliList(v: string | undefined): string[] | null {
  if (v === undefined) return null;
  const m = /^List\((.*)\)$/.exec(v);
  if (!m) return null;
  return m[1] === '' ? [] : m[1].split(',').map((x) => decodeURIComponent(x));
}

export async function startFakeLinkedIn(opts: FakeLinkedInOptions = {}): Promise<FakeLinkedIn> {
  const options: Required<FakeLinkedInOptions> = {
    partSize: opts.partSize ?? 4 * 1024 * 1024,
    dailyPostLimit: opts.dailyPostLimit ?? 150,
    minVersion: opts.minVersion ?? '202511',
    duplicateWindowMs: opts.duplicateWindowMs ?? 24 * 3600 * 1000,
  };
  const calls: LinkedInCall[] = [];
  const members = new Map<string, FakeMember>();
  const organizations = new Map<string, FakeOrganization>();
  const apps = new Map<string, FakeApp>();
  const tokens = new Map<string, FakeToken>();
  const refreshTokens = new Map<string, FakeRefreshToken>();
  const codes = new Map<string, { clientId: string; memberId: string; redirectUri: string; scopes: string[]; expires: number; used: boolean }>();
  const images = new Map<string, FakeImage>();
  const videos = new Map<string, FakeVideo>();
  const posts = new Map<string, FakePost>();
  const comments = new Map<string, FakeComment>();
  const postCounts = new Map<string, number>();
  const faults: FakeFault[] = [];
  const hanging = new Set<http.ServerResponse>();
  let offsetMs = 0;
  let seq = 7_200_000_000_000_000_000n;
  const nextId = () => String((seq += 1_000n));
  const secret = () => randomBytes(24).toString('base64url');
  const now = () => Date.now() + offsetMs;
  let url = '';

  const fake = {} as FakeLinkedIn;

  function createMember(m: { name: string }): FakeMember {
    const id = randomBytes(6).toString('base64url').replace(/[^A-Za-z0-9]/g, 'x');
    const [givenName, ...rest] = m.name.split(' ');
    const member: FakeMember = { id, name: m.name, givenName, familyName: rest.join(' '), picture: `https://media.licdn.com/dms/image/${id}/profile-displayphoto-shrink_100_100/0` };
    members.set(id, member);
    return member;
  }
  function createOrganization(o: { name: string; vanityName: string; followers?: number; admins?: Record<string, { role?: 'ADMINISTRATOR' | 'CONTENT_ADMINISTRATOR' | 'ANALYST'; state?: 'APPROVED' | 'REQUESTED' }> }): FakeOrganization {
    const id = String(10_000_000 + organizations.size * 7 + 3);
    const org: FakeOrganization = { id, name: o.name, vanityName: o.vanityName, followers: o.followers ?? 0, roles: new Map() };
    for (const [memberId, r] of Object.entries(o.admins ?? {})) org.roles.set(memberId, { role: r.role ?? 'ADMINISTRATOR', state: r.state ?? 'APPROVED' });
    organizations.set(id, org);
    return org;
  }
  function registerApp(a: { redirectUris: string[]; scopes?: string[]; programmaticRefresh?: boolean }): FakeApp {
    const app: FakeApp = { clientId: `78${randomBytes(6).toString('hex')}`, clientSecret: secret(), redirectUris: a.redirectUris, scopes: a.scopes ?? ALL_SCOPES, programmaticRefresh: a.programmaticRefresh ?? true };
    apps.set(app.clientId, app);
    return app;
  }
  function issue(memberId: string, scopes: string[], clientId: string | null, expiresInSeconds = ACCESS_SECONDS): FakeToken {
    const t: FakeToken = { token: `AQ${secret()}`, clientId, memberId, scopes, createdAt: now(), expiresAt: now() + expiresInSeconds * 1000, revoked: false };
    tokens.set(t.token, t);
    return t;
  }

  const alice = createMember({ name: 'Alice Example' });
  const bob = createMember({ name: 'Bob Other' });
  const acme = createOrganization({ name: 'Acme Corp', vanityName: 'acme-corp', followers: 1234, admins: { [alice.id]: {} } });
  createOrganization({ name: 'Beta Labs', vanityName: 'beta-labs', admins: { [alice.id]: { state: 'REQUESTED' } } });
  createOrganization({ name: 'Gamma Analytics', vanityName: 'gamma', admins: { [alice.id]: { role: 'ANALYST' }, [bob.id]: {} } });
  const app = registerApp({ redirectUris: ['https://pressroom.example/v1/oauth/callback/linkedin'] });

  const personUrn = (m: FakeMember) => `urn:li:person:${m.id}`;
  const canPostAs = (t: FakeToken, author: string): 'ok' | 'scope' | 'forbidden' => {
    const person = /^urn:li:person:(.+)$/.exec(author);
    if (person) {
      if (!t.scopes.includes('w_member_social')) return 'scope';
      return person[1] === t.memberId ? 'ok' : 'forbidden';
    }
    const org = /^urn:li:organization:(\d+)$/.exec(author);
    if (!org) return 'forbidden';
    if (!t.scopes.includes('w_organization_social')) return 'scope';
    const role = organizations.get(org[1])?.roles.get(t.memberId);
    return role && role.state === 'APPROVED' && (role.role === 'ADMINISTRATOR' || role.role === 'CONTENT_ADMINISTRATOR') ? 'ok' : 'forbidden';
  };
  const canRead = (t: FakeToken, author: string): boolean => {
    const person = /^urn:li:person:(.+)$/.exec(author);
    if (person) return t.scopes.includes('r_member_social') && person[1] === t.memberId;
    const org = /^urn:li:organization:(\d+)$/.exec(author);
    const role = org ? organizations.get(org[1])?.roles.get(t.memberId) : undefined;
    return t.scopes.includes('r_organization_social') && !!role && role.state === 'APPROVED';
  };
  const postJson = (p: FakePost) => ({
    id: p.urn,
    author: p.author,
    commentary: readLittle(p.commentary).readForm,
    visibility: p.visibility,
    distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
    ...(p.content ? { content: p.content } : {}),
    lifecycleState: p.lifecycleState,
    lifecycleStateInfo: { isEditedByAuthor: p.edited },
    isReshareDisabledByAuthor: false,
    createdAt: p.createdAt,
    publishedAt: p.createdAt,
    lastModifiedAt: p.lastModifiedAt,
  });
  const commentJson = (c: FakeComment) => ({
    actor: c.actor,
    agent: c.actor,
    object: c.object,
    message: { text: c.text, attributes: [] },
    id: c.id,
    commentUrn: c.urn,
    $URN: c.urn,
    ...(c.parentComment ? { parentComment: c.parentComment } : {}),
    created: { actor: c.actor, time: c.createdAt },
    lastModified: { actor: c.actor, time: c.createdAt },
  });
  /** A post by its URN or its activity URN. */
  const postBy = (urn: string) => posts.get(urn) ?? [...posts.values()].find((p) => p.activityUrn === urn);

  function commentAs(actor: string, postUrn: string, text: string, parentComment?: string): FakeComment {
    const p = postBy(postUrn);
    if (!p) throw new Error(`fake: no post ${postUrn}`);
    const id = nextId();
    const parent = p.urn.startsWith('urn:li:ugcPost:') ? p.urn : p.activityUrn;
    const c: FakeComment = { id, urn: `urn:li:comment:(${parent},${id})`, object: p.urn, actor, text, parentComment: parentComment ?? null, createdAt: now(), deleted: false };
    comments.set(c.urn, c);
    p.stats.comments++;
    return c;
  }

  Object.assign(fake, {
    calls,
    members,
    organizations,
    apps,
    tokens,
    refreshTokens,
    images,
    videos,
    posts,
    comments,
    app,
    signedIn: alice.id,
    consent: 'allow',
    processing: { videoPolls: 2, videoFails: false },
    options,
    alice,
    bob,
    acme,
    createMember,
    createOrganization,
    registerApp,
    issueToken(memberId: string, scopes = ['openid', 'profile', 'w_member_social'], o: { expiresInSeconds?: number } = {}) {
      return issue(memberId, scopes, null, o.expiresInSeconds).token;
    },
    revokeToken(token: string) {
      const t = tokens.get(token);
      if (t) t.revoked = true;
    },
    revokeRefreshToken(token: string) {
      const t = refreshTokens.get(token);
      if (t) t.revoked = true;
    },
    now,
    advance(seconds: number) {
      offsetMs += seconds * 1000;
    },
    resetClock() {
      offsetMs = 0;
    },
    commentAs,
    postsOf(author: string) {
      return [...posts.values()].filter((p) => p.author === author).sort((a, b) => a.createdAt - b.createdAt);
    },
    inject(f: FakeFault) {
      faults.push({ times: 1, ...f });
    },
    callsTo(method: string, path: string | RegExp) {
      return calls.filter((c) => c.method === method && (typeof path === 'string' ? c.path === path : path.test(c.path)));
    },
  });

  function takeFault(method: string, path: string): FakeFault | null {
    const i = faults.findIndex((f) => (!f.method || f.method === method) && (!f.path || (typeof f.path === 'string' ? f.path === path : f.path.test(path))));
    if (i < 0) return null;
    const f = faults[i];
    if ((f.skip ?? 0) > 0) {
      f.skip = (f.skip ?? 0) - 1;
      return null;
    }
    f.times = (f.times ?? 1) - 1;
    if (f.times <= 0) faults.splice(i, 1);
    return f;
  }

  type Send = (status: number, json: unknown, headers?: Record<string, string>) => void;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      let body: Record<string, any> = {};
      let unparsable = false;
      try {
        if (type.startsWith('application/json')) body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
        else if (type.startsWith('application/x-www-form-urlencoded')) body = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
        else if (raw.length) body = { bytes: raw.length };
      } catch {
        unparsable = true;
      }
      const method = req.method ?? 'GET';
      const path = u.pathname;
      const query = Object.fromEntries(u.searchParams);
      const call: LinkedInCall = { method, path, query, headers: req.headers, body };
      calls.push(call);
      const send: Send = (status, json, headers = {}) => {
        call.status = status;
        res.writeHead(status, { ...(json === undefined ? {} : { 'content-type': 'application/json' }), 'x-li-uuid': randomBytes(8).toString('base64'), ...headers });
        res.end(json === undefined ? '' : JSON.stringify(json));
      };
      const fault = takeFault(method, path);
      if (fault?.kind === 'hang') {
        hanging.add(res);
        return;
      }
      if (fault?.kind === 'error') return send(fault.status, fault.body ?? { status: fault.status, message: 'Internal Server Error' }, fault.headers);
      if (fault?.kind === 'rate-limit') {
        return send(
          429,
          { status: 429, serviceErrorCode: 101, code: 'TOO_MANY_REQUESTS', message: 'Resource level throttle APPLICATION DAY limit for calls to this resource is reached.' },
          fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {},
        );
      }
      const answer: Send =
        fault?.kind === 'hang-after-commit'
          ? (status) => {
              call.status = status;
              hanging.add(res);
            }
          : send;
      if (unparsable) return answer(400, { status: 400, code: 'ILLEGAL_ARGUMENT', message: 'Request body could not be converted to data map' });
      try {
        route(req, method, path, query, body, raw, answer);
      } catch (e) {
        send(500, { status: 500, message: `fake: ${(e as Error).message}` });
      }
    });
  });

  function route(req: http.IncomingMessage, method: string, path: string, query: Record<string, string>, body: Record<string, any>, raw: Buffer, send: Send) {
    const apiError = (status: number, code: string, message: string, serviceErrorCode?: number, extra: Record<string, unknown> = {}) =>
      send(status, { status, ...(serviceErrorCode !== undefined ? { serviceErrorCode } : {}), code, message, ...extra });
    const oauthError = (status: number, error: string, description: string) => send(status, { error, error_description: description });

    // --- OAuth (www.linkedin.com) ----------------------------------------------
    if (method === 'GET' && path === '/oauth/v2/authorization') {
      const a = apps.get(query.client_id ?? '');
      // LinkedIn shows an error page and does not redirect to a URL it cannot trust.
      const page = (text: string) => send(400, { error: 'invalid_request', error_description: text });
      if (!a) return page('The passed in client_id is invalid.');
      const redirect = query.redirect_uri ?? '';
      if (!a.redirectUris.includes(redirect)) return page('The redirect_uri does not match the registered value.');
      const back = (params: Record<string, string>) => {
        const to = new URL(redirect);
        for (const [k, v] of Object.entries(params)) to.searchParams.set(k, v);
        if (query.state !== undefined) to.searchParams.set('state', query.state);
        send(302, undefined, { location: to.toString() });
      };
      if (query.response_type !== 'code') return back({ error: 'invalid_request', error_description: 'The response_type must be code.' });
      const scopes = (query.scope ?? '').split(/[\s,]+/).filter(Boolean);
      const denied = scopes.find((s) => !a.scopes.includes(s));
      if (denied) return back({ error: 'unauthorized_scope_error', error_description: `Scope "${denied}" is not authorized for your application` });
      if (fake.consent === 'cancel') return back({ error: 'user_cancelled_authorize', error_description: 'The user cancelled the authorization' });
      const code = `AQ${secret()}`;
      codes.set(code, { clientId: a.clientId, memberId: fake.signedIn, redirectUri: redirect, scopes, expires: now() + CODE_LIFETIME_MS, used: false });
      return back({ code });
    }
    if (method === 'POST' && (path === '/oauth/v2/accessToken' || path === '/oauth/v2/introspectToken')) {
      const a = apps.get(String(body.client_id ?? ''));
      if (!a || a.clientSecret !== body.client_secret) return oauthError(401, 'invalid_client', 'Client authentication failed');
      if (path === '/oauth/v2/introspectToken') {
        const t = tokens.get(String(body.token ?? ''));
        if (!t || t.clientId !== a.clientId) return send(200, { active: false });
        const status = t.revoked ? 'revoked' : t.expiresAt <= now() ? 'expired' : 'active';
        return send(200, {
          active: status === 'active',
          client_id: a.clientId,
          authorized_at: Math.floor(t.createdAt / 1000),
          created_at: Math.floor(t.createdAt / 1000),
          status,
          expires_at: Math.floor(t.expiresAt / 1000),
          scope: t.scopes.join(','),
          auth_type: '3L',
        });
      }
      const tokenAnswer = (t: FakeToken, r: FakeRefreshToken | null) =>
        send(200, {
          access_token: t.token,
          expires_in: Math.floor((t.expiresAt - now()) / 1000),
          ...(r ? { refresh_token: r.token, refresh_token_expires_in: Math.floor((r.expiresAt - now()) / 1000) } : {}),
          scope: t.scopes.join(','),
          token_type: 'Bearer',
          ...(t.scopes.includes('openid') ? { id_token: `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify({ sub: t.memberId })).toString('base64url')}.sig` } : {}),
        });
      if (body.grant_type === 'authorization_code') {
        const c = codes.get(String(body.code ?? ''));
        if (!c || c.used || c.clientId !== a.clientId || c.expires < now() || c.redirectUri !== body.redirect_uri) {
          return oauthError(400, 'invalid_request', 'Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired. Or external member binding exists');
        }
        c.used = true;
        const t = issue(c.memberId, c.scopes, a.clientId);
        let r: FakeRefreshToken | null = null;
        if (a.programmaticRefresh) {
          r = { token: `AQ${secret()}`, clientId: a.clientId, memberId: c.memberId, scopes: c.scopes, expiresAt: now() + REFRESH_SECONDS * 1000, revoked: false };
          refreshTokens.set(r.token, r);
        }
        return tokenAnswer(t, r);
      }
      if (body.grant_type === 'refresh_token') {
        if (!a.programmaticRefresh) return oauthError(400, 'unauthorized_client', 'The client is not authorized to use programmatic refresh tokens');
        const r = refreshTokens.get(String(body.refresh_token ?? ''));
        if (!r || r.revoked || r.clientId !== a.clientId || r.expiresAt <= now()) {
          return oauthError(400, 'invalid_grant', 'The provided authorization grant or refresh token is invalid, expired or revoked.');
        }
        const t = issue(r.memberId, r.scopes, a.clientId);
        return tokenAnswer(t, r);
      }
      return oauthError(400, 'unsupported_grant_type', 'The grant_type is not supported');
    }

    // --- Uploads (the URLs LinkedIn hands out) -----------------------------------
    const imageUpload = /^\/dms-uploads\/image\/([A-Za-z0-9_-]+)$/.exec(path);
    if (method === 'PUT' && imageUpload) {
      const img = images.get(`urn:li:image:${imageUpload[1]}`);
      if (!img) return apiError(404, 'NOT_FOUND', 'Upload not found');
      if (raw.length === 0) return apiError(400, 'ILLEGAL_ARGUMENT', 'Empty upload');
      Object.assign(img, { status: 'AVAILABLE', size: raw.length, sha256: createHash('sha256').update(raw).digest('hex') });
      return send(201, undefined);
    }
    const videoPart = /^\/dms-uploads\/video\/([A-Za-z0-9_-]+)\/part\/(\d+)$/.exec(path);
    if (method === 'PUT' && videoPart) {
      const v = videos.get(`urn:li:video:${videoPart[1]}`);
      const part = v?.parts[Number(videoPart[2])];
      if (!v || !part) return apiError(404, 'NOT_FOUND', 'Upload not found');
      const expected = part.lastByte - part.firstByte + 1;
      if (raw.length !== expected) return apiError(400, 'ILLEGAL_ARGUMENT', `Part ${videoPart[2]} must be ${expected} bytes, got ${raw.length}`);
      part.sha256 = createHash('sha256').update(raw).digest('hex');
      part.etag = `/ambry-video/signedId/${randomBytes(9).toString('base64url')}`;
      return send(201, undefined, { etag: part.etag });
    }

    // --- The API (api.linkedin.com) -----------------------------------------------
    const rest = path.startsWith('/rest/');
    if (rest) {
      const version = req.headers['linkedin-version'];
      if (typeof version !== 'string' || !version) return apiError(400, 'VERSION_MISSING', 'A version must be present. Please specify a version by adding the LinkedIn-Version header.');
      if (!/^\d{6}(\.\d{2})?$/.test(version) || version.slice(0, 6) < options.minVersion || version.slice(0, 6) > currentVersion(now())) {
        return apiError(426, 'NONEXISTENT_VERSION', `Requested version ${version} is not active`);
      }
      if (req.headers['x-restli-protocol-version'] !== '2.0.0') return apiError(400, 'ILLEGAL_ARGUMENT', 'This fake serves Rest.li protocol 2.0.0 only (X-Restli-Protocol-Version).');
    }
    const auth = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1] ?? null;
    const token = auth ? tokens.get(auth) : undefined;
    if (!token) return apiError(401, 'INVALID_ACCESS_TOKEN', 'Invalid access token', 65600);
    if (token.revoked) return apiError(401, 'REVOKED_ACCESS_TOKEN', 'The token used in the request has been revoked by the user', 65601);
    if (token.expiresAt <= now()) return apiError(401, 'EXPIRED_ACCESS_TOKEN', 'The token used in the request has expired', 65601);
    const me = members.get(token.memberId)!;
    const denied = (what: string) => apiError(403, 'ACCESS_DENIED', `Not enough permissions to access: ${what}.${options.minVersion}`, 100);
    const has = (...s: string[]) => s.some((x) => token.scopes.includes(x));
    /** A URN key of the path: must be percent-encoded (Rest.li 2.0). */
    const key = (segment: string): string | null => (/[:(),]/.test(segment) ? null : decodeURIComponent(segment));
    const badKey = () => apiError(400, 'ILLEGAL_ARGUMENT', 'Invalid key: URNs in the path must be URL-encoded (Rest.li 2.0)');

    if (method === 'GET' && path === '/v2/userinfo') {
      if (!has('openid') || !has('profile')) return denied('openid');
      return send(200, { sub: me.id, email_verified: true, name: me.name, locale: { country: 'US', language: 'en' }, given_name: me.givenName, family_name: me.familyName, picture: me.picture });
    }
    if (method === 'GET' && path === '/v2/me') {
      if (!has('r_basicprofile', 'r_liteprofile')) return denied('me.GET.NO_VERSION');
      return send(200, { id: me.id, localizedFirstName: me.givenName, localizedLastName: me.familyName, firstName: { localized: { en_US: me.givenName } }, lastName: { localized: { en_US: me.familyName } }, vanityName: me.givenName.toLowerCase() });
    }
    if (!rest) return apiError(404, 'NOT_FOUND', `No resource ${path}`);

    if (method === 'GET' && path === '/rest/organizationAcls') {
      if (!has('rw_organization_admin', 'r_organization_admin')) return denied('organizationAclsByRoleAssignee');
      if (query.q !== 'roleAssignee') return apiError(400, 'ILLEGAL_ARGUMENT', 'Unsupported finder');
      const start = Number(query.start ?? 0);
      const count = Math.min(Number(query.count ?? 10), 100);
      const all = [...organizations.values()]
        .map((o) => ({ o, r: o.roles.get(me.id) }))
        .filter((x) => x.r && (!query.role || x.r.role === query.role) && (!query.state || x.r.state === query.state))
        .map(({ o, r }) => ({ roleAssignee: personUrn(me), state: r!.state, role: r!.role, organization: `urn:li:organization:${o.id}`, lastModified: { actor: personUrn(me), time: 0 }, created: { actor: personUrn(me), time: 0 } }));
      return send(200, { paging: { start, count, links: [], total: all.length }, elements: all.slice(start, start + count) });
    }
    const orgJson = (o: FakeOrganization) => ({ id: Number(o.id), localizedName: o.name, vanityName: o.vanityName, name: { localized: { en_US: o.name }, preferredLocale: { country: 'US', language: 'en' } }, logoV2: { original: `urn:li:digitalmediaAsset:${o.id}` } });
    if (method === 'GET' && path === '/rest/organizations') {
      if (!has('rw_organization_admin', 'r_organization_admin')) return denied('organizations.BATCH_GET');
      const ids = restliList(query.ids);
      if (!ids) return apiError(400, 'ILLEGAL_ARGUMENT', 'ids must be List(...)');
      const results: Record<string, unknown> = {};
      const statuses: Record<string, number> = {};
      const errors: Record<string, unknown> = {};
      for (const id of ids) {
        const o = organizations.get(id);
        if (o) {
          results[id] = orgJson(o);
          statuses[id] = 200;
        } else {
          statuses[id] = 404;
          errors[id] = { status: 404, message: 'Not Found' };
        }
      }
      return send(200, { results, statuses, errors });
    }
    const orgPath = /^\/rest\/organizations\/(\d+)$/.exec(path);
    if (method === 'GET' && orgPath) {
      if (!has('rw_organization_admin', 'r_organization_admin')) return denied('organizations.GET');
      const o = organizations.get(orgPath[1]);
      return o ? send(200, orgJson(o)) : apiError(404, 'NOT_FOUND', 'Not Found');
    }

    // Images and videos
    if (method === 'POST' && path === '/rest/images' && query.action === 'initializeUpload') {
      const owner = body.initializeUploadRequest?.owner;
      if (typeof owner !== 'string') return apiError(422, 'UNPROCESSABLE_ENTITY', 'ERROR :: /initializeUploadRequest/owner :: field is required but not found and has no default value');
      const can = canPostAs(token, owner);
      if (can !== 'ok') return can === 'scope' ? denied('images.ACTION-initializeUpload') : apiError(403, 'ACCESS_DENIED', `Member is not allowed to upload for ${owner}`, 100);
      const id = `D4E10AQ${randomBytes(9).toString('base64url').replace(/[^A-Za-z0-9]/g, 'x')}`;
      const urn = `urn:li:image:${id}`;
      images.set(urn, { urn, owner, status: 'WAITING_UPLOAD', size: 0, sha256: null });
      return send(200, { value: { uploadUrlExpiresAt: now() + 24 * 3600e3, uploadUrl: `${url}/dms-uploads/image/${id}`, image: urn } });
    }
    const imagePath = /^\/rest\/images\/([^/]+)$/.exec(path);
    if (method === 'GET' && imagePath) {
      const k = key(imagePath[1]);
      if (!k) return badKey();
      const img = images.get(k);
      return img ? send(200, { id: img.urn, owner: img.owner, status: img.status }) : apiError(404, 'NOT_FOUND', 'Not Found');
    }
    if (method === 'POST' && path === '/rest/videos' && query.action === 'initializeUpload') {
      const r = body.initializeUploadRequest ?? {};
      if (typeof r.owner !== 'string' || typeof r.fileSizeBytes !== 'number' || r.fileSizeBytes <= 0) {
        return apiError(422, 'UNPROCESSABLE_ENTITY', 'ERROR :: /initializeUploadRequest :: owner and fileSizeBytes are required');
      }
      const can = canPostAs(token, r.owner);
      if (can !== 'ok') return can === 'scope' ? denied('videos.ACTION-initializeUpload') : apiError(403, 'ACCESS_DENIED', `Member is not allowed to upload for ${r.owner}`, 100);
      const id = `D5610AQ${randomBytes(9).toString('base64url').replace(/[^A-Za-z0-9]/g, 'x')}`;
      const urn = `urn:li:video:${id}`;
      const parts: FakeVideo['parts'] = [];
      for (let first = 0; first < r.fileSizeBytes; first += options.partSize) parts.push({ firstByte: first, lastByte: Math.min(first + options.partSize, r.fileSizeBytes) - 1, etag: null, sha256: null });
      const v: FakeVideo = { urn, owner: r.owner, fileSizeBytes: r.fileSizeBytes, uploadToken: parts.length > 1 ? secret() : '', parts, status: 'WAITING_UPLOAD', pollsLeft: 0, finalizedWith: null };
      videos.set(urn, v);
      return send(200, {
        value: {
          uploadUrlsExpireAt: now() + 24 * 3600e3,
          video: urn,
          uploadInstructions: parts.map((p, n) => ({ uploadUrl: `${url}/dms-uploads/video/${id}/part/${n}`, lastByte: p.lastByte, firstByte: p.firstByte })),
          uploadToken: v.uploadToken,
        },
      });
    }
    if (method === 'POST' && path === '/rest/videos' && query.action === 'finalizeUpload') {
      const r = body.finalizeUploadRequest ?? {};
      const v = typeof r.video === 'string' ? videos.get(r.video) : undefined;
      if (!v) return apiError(404, 'NOT_FOUND', 'Video not found');
      if (canPostAs(token, v.owner) !== 'ok') return apiError(403, 'ACCESS_DENIED', 'Not the owner of the video', 100);
      if ((r.uploadToken ?? '') !== v.uploadToken) return apiError(400, 'ILLEGAL_ARGUMENT', 'Invalid uploadToken');
      const ids: unknown[] = Array.isArray(r.uploadedPartIds) ? r.uploadedPartIds : [];
      if (v.parts.some((p) => !p.etag)) return apiError(400, 'ILLEGAL_ARGUMENT', 'Not every part was uploaded');
      if (ids.length !== v.parts.length || v.parts.some((p, n) => p.etag !== ids[n])) return apiError(400, 'ILLEGAL_ARGUMENT', 'uploadedPartIds do not match the uploaded parts (in order)');
      v.finalizedWith = ids as string[];
      v.status = 'PROCESSING';
      v.pollsLeft = fake.processing.videoPolls;
      return send(200, undefined);
    }
    const videoPath = /^\/rest\/videos\/([^/]+)$/.exec(path);
    if (method === 'GET' && videoPath) {
      const k = key(videoPath[1]);
      if (!k) return badKey();
      const v = videos.get(k);
      if (!v) return apiError(404, 'NOT_FOUND', 'Not Found');
      if (v.status === 'PROCESSING') {
        if (fake.processing.videoFails) v.status = 'PROCESSING_FAILED';
        else if (v.pollsLeft-- <= 0) v.status = 'AVAILABLE';
      }
      return send(200, {
        id: v.urn,
        owner: v.owner,
        status: v.status,
        ...(v.status === 'AVAILABLE' ? { downloadUrl: `${url}/playlist/${encodeURIComponent(v.urn)}.mp4`, duration: 12000, aspectRatioWidth: 16, aspectRatioHeight: 9 } : {}),
        ...(v.status === 'PROCESSING_FAILED' ? { processingFailureReason: 'The video could not be transcoded' } : {}),
      });
    }

    // Posts
    if (method === 'POST' && path === '/rest/posts') {
      const b = body;
      const missing = ['author', 'commentary', 'visibility', 'distribution', 'lifecycleState'].filter((f) => b[f] === undefined);
      if (missing.length) {
        return send(422, { message: missing.map((f) => `ERROR :: /${f} :: field is required but not found and has no default value`).join('\n') + '\n', status: 422 });
      }
      if (typeof b.author !== 'string' || typeof b.commentary !== 'string') return apiError(422, 'UNPROCESSABLE_ENTITY', 'ERROR :: /author :: invalid');
      const can = canPostAs(token, b.author);
      if (can !== 'ok') return can === 'scope' ? denied('partnerApiPostsExternal.CREATE') : apiError(403, 'ACCESS_DENIED', `Member is not allowed to post as ${b.author}`, 100);
      if (!['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'].includes(b.visibility)) return send(422, { message: `ERROR :: /visibility :: "${b.visibility}" is not an enum symbol`, status: 422 });
      if (b.visibility === 'CONNECTIONS' && b.author.startsWith('urn:li:organization:')) return send(422, { message: 'ERROR :: /visibility :: CONNECTIONS is not allowed for an organization', status: 422 });
      if (b.distribution?.feedDistribution !== 'MAIN_FEED' && b.distribution?.feedDistribution !== 'NONE') return send(422, { message: 'ERROR :: /distribution/feedDistribution :: field is required', status: 422 });
      if (!['PUBLISHED', 'DRAFT'].includes(b.lifecycleState)) return send(422, { message: 'ERROR :: /lifecycleState :: invalid', status: 422 });
      const little = readLittle(b.commentary);
      if ([...little.text].length > 3000) return send(422, { message: 'ERROR :: /commentary :: length 3000 exceeded', status: 422 });
      let isVideo = false;
      const content = b.content as Record<string, any> | undefined;
      if (content !== undefined) {
        const refs: { id: string; altText?: string }[] = content.media ? [content.media] : Array.isArray(content.multiImage?.images) ? content.multiImage.images : [];
        if (content.multiImage && (refs.length < 2 || refs.length > 20)) return send(422, { message: 'ERROR :: /content/multiImage/images :: must have 2 to 20 images', status: 422 });
        if (!content.media && !content.multiImage) return send(422, { message: 'ERROR :: /content :: unsupported content', status: 422 });
        for (const ref of refs) {
          if (typeof ref.altText === 'string' && ref.altText.length > 4086) return send(422, { message: 'ERROR :: /content/media/altText :: length 4086 exceeded', status: 422 });
          if (typeof ref.id === 'string' && ref.id.startsWith('urn:li:image:')) {
            const img = images.get(ref.id);
            if (!img || img.owner !== b.author) return send(422, { message: `ERROR :: /content :: ${ref.id} is not an image of ${b.author}`, status: 422 });
            if (img.status !== 'AVAILABLE') return send(422, { message: `ERROR :: /content :: ${ref.id} has not been uploaded`, status: 422 });
          } else if (typeof ref.id === 'string' && ref.id.startsWith('urn:li:video:') && content.media) {
            const v = videos.get(ref.id);
            if (!v || v.owner !== b.author) return send(422, { message: `ERROR :: /content :: ${ref.id} is not a video of ${b.author}`, status: 422 });
            if (v.status !== 'AVAILABLE') return send(422, { message: `ERROR :: /content :: ${ref.id} is not AVAILABLE (status ${v.status})`, status: 422 });
            isVideo = true;
          } else return send(422, { message: `ERROR :: /content :: unsupported media ${String(ref.id)}`, status: 422 });
        }
      } else if (!little.text.trim()) return send(422, { message: 'ERROR :: /commentary :: a post needs text or content', status: 422 });
      const dup = [...posts.values()].find((p) => p.author === b.author && p.lifecycleState === 'PUBLISHED' && p.commentary === b.commentary && JSON.stringify(p.content ?? null) === JSON.stringify(content ?? null) && now() - p.createdAt < options.duplicateWindowMs);
      if (dup) {
        return send(422, {
          errorDetailType: 'com.linkedin.common.error.BadRequest',
          message: `com.linkedin.content.common.exception.BadRequestResponseException: Content is a duplicate of ${dup.urn}`,
          errorDetails: { inputErrors: [{ description: 'Duplicate post is detected', input: {}, code: 'DUPLICATE_POST' }] },
          status: 422,
        });
      }
      const day = `${b.author}:${new Date(now()).toISOString().slice(0, 10)}`;
      const n = (postCounts.get(day) ?? 0) + 1;
      if (n > options.dailyPostLimit) return apiError(429, 'TOO_MANY_REQUESTS', 'Resource level throttle MEMBER DAY limit for calls to this resource is reached.', 101);
      postCounts.set(day, n);
      const id = nextId();
      const urn = isVideo ? `urn:li:ugcPost:${id}` : `urn:li:share:${id}`;
      const p: FakePost = {
        urn,
        activityUrn: `urn:li:activity:${id}`,
        author: b.author,
        commentary: b.commentary,
        text: little.text,
        hashtags: little.hashtags,
        truncated: little.truncated,
        visibility: b.visibility,
        content: content ?? null,
        lifecycleState: b.lifecycleState,
        createdAt: now(),
        lastModifiedAt: now(),
        edited: false,
        stats: { impressions: 0, uniqueImpressions: 0, likes: 0, comments: 0, shares: 0, clicks: 0, engagement: 0 },
      };
      posts.set(urn, p);
      return send(201, undefined, { 'x-restli-id': urn, 'x-linkedin-id': urn });
    }
    if (method === 'GET' && path === '/rest/posts') {
      if (query.q !== 'author' || !query.author) return apiError(400, 'ILLEGAL_ARGUMENT', 'Unsupported finder');
      if (!canRead(token, query.author)) return denied('partnerApiPostsExternal.FINDER-author');
      const start = Number(query.start ?? 0);
      const count = Math.min(Number(query.count ?? 10), 100);
      const sortKey = query.sortBy === 'CREATED' ? 'createdAt' : 'lastModifiedAt';
      const all = [...posts.values()].filter((p) => p.author === query.author && p.lifecycleState !== 'DELETED').sort((a, b) => b[sortKey] - a[sortKey] || (BigInt(b.urn.split(':').pop()!) > BigInt(a.urn.split(':').pop()!) ? 1 : -1));
      return send(200, { paging: { start, count, links: [], total: all.length }, elements: all.slice(start, start + count).map(postJson) });
    }
    const postPath = /^\/rest\/posts\/([^/]+)$/.exec(path);
    if (postPath) {
      const k = key(postPath[1]);
      if (!k) return badKey();
      const p = posts.get(k);
      if (method === 'GET') {
        if (!p) return apiError(404, 'NOT_FOUND', 'Not Found', 100);
        if (!canRead(token, p.author)) return denied('partnerApiPostsExternal.GET');
        return send(200, postJson(p));
      }
      if (method === 'POST') {
        if (String(req.headers['x-restli-method'] ?? '').toUpperCase() !== 'PARTIAL_UPDATE') return apiError(400, 'ILLEGAL_ARGUMENT', 'A POST to an entity needs X-RestLi-Method: PARTIAL_UPDATE');
        if (!p) return apiError(404, 'NOT_FOUND', 'Not Found', 100);
        const can = canPostAs(token, p.author);
        if (can !== 'ok') return can === 'scope' ? denied('partnerApiPostsExternal.PARTIAL_UPDATE') : apiError(403, 'ACCESS_DENIED', 'Not the author of the post', 100);
        const set = body.patch?.$set;
        if (!set || typeof set !== 'object') return apiError(400, 'ILLEGAL_ARGUMENT', 'patch.$set is required');
        const allowed = ['commentary', 'contentCallToActionLabel', 'contentLandingPage', 'lifecycleState', 'adContext'];
        const bad = Object.keys(set).find((f) => !allowed.includes(f));
        if (bad) return send(422, { message: `ERROR :: /patch/$set/${bad} :: field cannot be updated`, status: 422 });
        if (typeof set.commentary === 'string') {
          const little = readLittle(set.commentary);
          if ([...little.text].length > 3000) return send(422, { message: 'ERROR :: /commentary :: length 3000 exceeded', status: 422 });
          Object.assign(p, { commentary: set.commentary, text: little.text, hashtags: little.hashtags, truncated: little.truncated, edited: true, lastModifiedAt: now() });
        }
        return send(204, undefined);
      }
    }

    // Statistics
    if (method === 'GET' && path === '/rest/organizationalEntityShareStatistics') {
      if (query.q !== 'organizationalEntity') return apiError(400, 'ILLEGAL_ARGUMENT', 'Unsupported finder');
      const org = /^urn:li:organization:(\d+)$/.exec(query.organizationalEntity ?? '');
      const role = org ? organizations.get(org[1])?.roles.get(me.id) : undefined;
      if (!has('rw_organization_admin', 'r_organization_social', 'r_organization_admin') || !role || role.state !== 'APPROVED') return denied('organizationalEntityShareStatistics');
      const shares = restliList(query.shares);
      const ugc = restliList(query.ugcPosts);
      if (query.shares !== undefined && !shares) return apiError(400, 'ILLEGAL_ARGUMENT', 'shares must be List(...)');
      if (query.ugcPosts !== undefined && !ugc) return apiError(400, 'ILLEGAL_ARGUMENT', 'ugcPosts must be List(...)');
      if ((shares ?? []).some((u) => !u.startsWith('urn:li:share:')) || (ugc ?? []).some((u) => !u.startsWith('urn:li:ugcPost:'))) {
        return apiError(400, 'ILLEGAL_ARGUMENT', 'shares takes share URNs and ugcPosts ugcPost URNs');
      }
      const stat = (p: FakePost) => ({
        uniqueImpressionsCount: p.stats.uniqueImpressions,
        shareCount: p.stats.shares,
        engagement: p.stats.engagement,
        clickCount: p.stats.clicks,
        likeCount: p.stats.likes,
        impressionCount: p.stats.impressions,
        commentCount: p.stats.comments,
      });
      const elements = [...(shares ?? []), ...(ugc ?? [])]
        .map((u) => posts.get(u))
        .filter((p): p is FakePost => !!p && p.author === query.organizationalEntity)
        .map((p) => ({ totalShareStatistics: stat(p), organizationalEntity: query.organizationalEntity, ...(p.urn.startsWith('urn:li:share:') ? { share: p.urn } : { ugcPost: p.urn }) }));
      return send(200, { paging: { start: 0, count: 10, links: [] }, elements });
    }
    const sizes = /^\/rest\/networkSizes\/([^/]+)$/.exec(path);
    if (method === 'GET' && sizes) {
      const k = key(sizes[1]);
      if (!k) return badKey();
      if (query.edgeType !== 'COMPANY_FOLLOWED_BY_MEMBER') return apiError(400, 'ILLEGAL_ARGUMENT', 'edgeType must be COMPANY_FOLLOWED_BY_MEMBER');
      const org = /^urn:li:organization:(\d+)$/.exec(k);
      const o = org ? organizations.get(org[1]) : undefined;
      if (!o) return apiError(404, 'NOT_FOUND', 'Not Found');
      return send(200, { firstDegreeSize: o.followers });
    }

    // Comments
    const commentsPath = /^\/rest\/socialActions\/([^/]+)\/comments(?:\/([^/]+))?$/.exec(path);
    if (commentsPath) {
      const target = key(commentsPath[1]);
      if (!target) return badKey();
      const parentComment = target.startsWith('urn:li:comment:') ? comments.get(target) : undefined;
      const post = parentComment ? postBy(parentComment.object) : postBy(target);
      if (!post || (target.startsWith('urn:li:comment:') && (!parentComment || parentComment.deleted))) return apiError(404, 'NOT_FOUND', 'Not Found');
      if (method === 'POST' && !commentsPath[2]) {
        const actor = body.actor;
        if (typeof actor !== 'string' || typeof body.message?.text !== 'string' || typeof body.object !== 'string') return send(422, { message: 'ERROR :: /actor, /object and /message/text are required', status: 422 });
        const can = canPostAs(token, actor);
        if (can !== 'ok') return can === 'scope' ? denied('socialActions.comments.CREATE') : apiError(403, 'ACCESS_DENIED', `Member is not allowed to comment as ${actor}`, 100);
        if (postBy(body.object)?.urn !== post.urn) return send(422, { message: 'ERROR :: /object :: does not match the post commented on', status: 422 });
        if (parentComment && body.parentComment !== parentComment.urn) return send(422, { message: 'ERROR :: /parentComment :: must name the comment replied to', status: 422 });
        const c = commentAs(actor, post.urn, body.message.text, parentComment?.urn);
        return send(201, commentJson(c), { 'x-restli-id': c.urn });
      }
      if (method === 'GET' && !commentsPath[2]) {
        if (!has('r_member_social', 'r_organization_social')) return denied('socialActions.comments.FINDER');
        const list = [...comments.values()].filter((c) => !c.deleted && c.object === post.urn && (parentComment ? c.parentComment === parentComment.urn : true));
        return send(200, { paging: { start: 0, count: list.length, links: [], total: list.length }, elements: list.map(commentJson) });
      }
      if (method === 'DELETE' && commentsPath[2]) {
        const id = decodeURIComponent(commentsPath[2]);
        const c = [...comments.values()].find((x) => x.id === id && x.object === post.urn);
        if (!c || c.deleted) return apiError(404, 'NOT_FOUND', 'Not Found');
        const actor = query.actor ?? '';
        if (canPostAs(token, actor) !== 'ok') return apiError(403, 'ACCESS_DENIED', `Member is not allowed to act as ${actor}`, 100);
        if (c.actor !== actor) return apiError(403, 'ACCESS_DENIED', 'Only the author of a comment can delete it', 100);
        c.deleted = true;
        post.stats.comments = Math.max(0, post.stats.comments - 1);
        return send(204, undefined);
      }
    }
    return apiError(404, 'NOT_FOUND', `No resource ${esc(path)}`);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = url;
  fake.close = async () => {
    for (const r of hanging) r.destroy();
    hanging.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}
