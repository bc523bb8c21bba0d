// A local fake of one Mastodon instance (4.3+), following the published API
// (https://docs.joinmastodon.org/methods/) closely enough for the connector in
// server/platforms/mastodon.ts to be tested over real HTTP:
//
//   POST /api/v1/apps                         register an app (JSON or form) -> CredentialApplication
//   GET  /oauth/authorize                     the consent screen, answered as if the user clicked
//                                             (consent 'allow': 302 to redirect_uri?code=&state=;
//                                             'deny': ?error=access_denied); PKCE S256 only
//   POST /oauth/token                         authorization_code (client secret, redirect_uri and
//                                             the PKCE verifier checked; a code works once) and
//                                             client_credentials; no refresh tokens (Mastodon issues none)
//   POST /oauth/revoke
//   GET  /api/v1/accounts/verify_credentials  scope profile | read | read:accounts
//   GET  /api/v2/instance                     public; configuration.statuses / media_attachments
//   POST /api/v2/media                        multipart `file` (+ `description`); images 200 processed,
//                                             videos (or every file with `processing`) 202 with url null
//   GET  /api/v1/media/:id                    206 while processing, 200 with the url when done
//   POST /api/v1/statuses                     JSON or form; Idempotency-Key honoured for an hour
//                                             (a repeated key answers the status it made, whatever the body,
//                                             as PostStatusService does); 422 validation errors; 404 for an
//                                             unknown in_reply_to_id
//   GET|PUT|DELETE /api/v1/statuses/:id       PUT as Mastodon's controller passes it on: fields it is not
//                                             given are cleared (media, content warning, sensitive)
//
// Errors use Mastodon's envelope {"error": "..."} (OAuth endpoints add error_description):
// 401 "The access token is invalid", 403 "This action is outside the authorized scopes",
// 404 "Record not found", 422 "Validation failed: ...", 429 "Too many requests". Every
// authenticated answer carries X-RateLimit-Limit / -Remaining / -Reset (ISO 8601); the per-account
// limits (300 requests per 5 minutes, 30 media uploads per 30 minutes) are enforced, and can be
// lowered for a test; `latencyMs` delays every answer (after the request took effect), as a
// real instance's round trip does. Faults: `inject` answers the next matching request with an error, a 429,
// or no answer at all (before or after the request took effect). Every request is recorded.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MastodonCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  /** JSON, form or multipart fields (repeated `x[]` fields as arrays). */
  body: Record<string, unknown>;
  files: { name: string; filename: string; contentType: string; size: number }[];
  status?: number;
}

export interface FakeAccount {
  id: string;
  username: string;
  /** null: a local account; otherwise the account's own instance (acct = username@domain). */
  domain: string | null;
  displayName: string;
  followers: number;
}

export interface FakeStatus {
  id: string;
  accountId: string;
  text: string;
  spoilerText: string;
  sensitive: boolean;
  visibility: 'public' | 'unlisted' | 'private' | 'direct';
  language: string | null;
  inReplyToId: string | null;
  mediaIds: string[];
  createdAt: string;
  editedAt: string | null;
  edits: number;
  favourites: number;
  reblogs: number;
  deleted: boolean;
  idempotencyKey: string | null;
}

export interface FakeMedia {
  id: string;
  accountId: string;
  type: 'image' | 'video' | 'gifv' | 'unknown';
  contentType: string;
  size: number;
  description: string | null;
  statusId: string | null;
  /** GET /api/v1/media/:id answers 206 this many more times before the file is processed. */
  pollsLeft: number;
  bytesSha256: string;
}

export interface FakeApp {
  id: string;
  name: string;
  website: string | null;
  redirectUris: string[];
  scopes: string[];
  clientId: string;
  clientSecret: string;
}

export interface FakeToken {
  token: string;
  appId: string | null;
  accountId: string | null;
  scopes: string[];
  revoked: boolean;
}

export type FakeFault = {
  method?: string;
  /** The path (exact) or a pattern it must match. */
  path?: string | RegExp;
  /** How many matching requests it applies to (default 1). */
  times?: number;
  /** Matching requests let through first (default 0): `skip: 1` hits the second. */
  skip?: number;
} & (
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'rate-limit'; resetInSeconds: number }
  /** The request takes effect (the status is made), and no answer ever comes. */
  | { kind: 'hang-after-commit' }
  /** No answer and no effect. */
  | { kind: 'hang' }
);

export interface FakeMastodonOptions {
  maxCharacters?: number;
  maxMediaAttachments?: number;
  imageSizeLimit?: number;
  videoSizeLimit?: number;
  descriptionLimit?: number;
  /** Requests per account per 5 minutes (Mastodon: 300). */
  requestLimit?: number;
  /** Media uploads per account per 30 minutes (Mastodon: 30). */
  mediaLimit?: number;
  /**
   * Every answer is sent this many milliseconds after its request took effect (a real
   * instance's processing and network time; default 0). Read per request: a test may change
   * `fake.options.latencyMs` while it runs.
   */
  latencyMs?: number;
}

export interface FakeMastodon {
  url: string;
  calls: MastodonCall[];
  accounts: Map<string, FakeAccount>;
  apps: Map<string, FakeApp>;
  tokens: Map<string, FakeToken>;
  statuses: Map<string, FakeStatus>;
  media: Map<string, FakeMedia>;
  /** The account signed in at the consent screen (default: the first account, @alice). */
  signedIn: string;
  /** What the user does at the consent screen. */
  consent: 'allow' | 'deny';
  /** Uploads that answer 202 and need this many 206 polls (videos always; images when > 0). */
  processing: { images: number; videos: number };
  options: Required<FakeMastodonOptions>;
  alice: FakeAccount;
  createAccount(a: { username: string; domain?: string | null; displayName?: string; followers?: number }): FakeAccount;
  /** A token as the OAuth flow would issue it (for tests that skip the flow). */
  issueToken(accountId: string, scopes?: string[]): string;
  revokeToken(token: string): void;
  /** A status made by any account (a commenter's reply, for instance). */
  postAs(accountId: string, text: string, opts?: { inReplyToId?: string; visibility?: FakeStatus['visibility'] }): FakeStatus;
  /** The live statuses of an account, oldest first. */
  statusesOf(accountId: string): FakeStatus[];
  inject(fault: FakeFault): void;
  /** Requests answered or hanging so far that match. */
  callsTo(method: string, path: string | RegExp): MastodonCall[];
  close(): Promise<void>;
}

const SCOPES_KNOWN = new Set([
  'read', 'write', 'push', 'follow', 'profile',
  'read:accounts', 'read:blocks', 'read:bookmarks', 'read:favourites', 'read:filters', 'read:follows', 'read:lists', 'read:mutes', 'read:notifications', 'read:search', 'read:statuses',
  'write:accounts', 'write:blocks', 'write:bookmarks', 'write:conversations', 'write:favourites', 'write:filters', 'write:follows', 'write:lists', 'write:media', 'write:mutes', 'write:notifications', 'write:reports', 'write:statuses',
]);

const IDEMPOTENCY_SECONDS = 3600;
const CODE_LIFETIME_MS = 10 * 60 * 1000;

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Mastodon counts every URL as 23 characters and a mention by its username only. */
function countCharacters(text: string): number {
  const t = text.replace(/https?:\/\/\S+/g, 'x'.repeat(23)).replace(/(^|\s)@(\w+)@[\w.-]+\w/g, '$1@$2');
  return [...t].length;
}

/** Splits a multipart/form-data body (RFC 7578). */
function parseMultipart(raw: Buffer, contentType: string): { fields: Record<string, unknown>; files: { name: string; filename: string; contentType: string; data: Buffer }[] } | null {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!m) return null;
  const boundary = Buffer.from(`--${m[1] ?? m[2]}`);
  const fields: Record<string, unknown> = {};
  const files: { name: string; filename: string; contentType: string; data: Buffer }[] = [];
  let pos = raw.indexOf(boundary);
  if (pos < 0) return null;
  while (true) {
    pos += boundary.length;
    if (raw.subarray(pos, pos + 2).toString() === '--') break;
    pos += 2; // CRLF
    const headerEnd = raw.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) return null;
    const head = raw.subarray(pos, headerEnd).toString('utf8');
    const next = raw.indexOf(boundary, headerEnd + 4);
    if (next < 0) return null;
    const data = raw.subarray(headerEnd + 4, next - 2);
    const name = /name="([^"]*)"/i.exec(head)?.[1] ?? '';
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1]?.trim() ?? '';
    if (filename !== undefined) files.push({ name, filename, contentType: type, data: Buffer.from(data) });
    else addField(fields, name, data.toString('utf8'));
    pos = next;
  }
  return { fields, files };
}

function addField(fields: Record<string, unknown>, name: string, value: string) {
  if (name.endsWith('[]')) {
    const k = name.slice(0, -2);
    const cur = fields[k];
    fields[k] = Array.isArray(cur) ? [...cur, value] : [value];
  } else fields[name] = value;
}

function bool(v: unknown): boolean | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'boolean') return v;
  return ['true', '1', 'on'].includes(String(v).toLowerCase());
}

export async function startFakeMastodon(opts: FakeMastodonOptions = {}): Promise<FakeMastodon> {
  const options: Required<FakeMastodonOptions> = {
    maxCharacters: opts.maxCharacters ?? 500,
    maxMediaAttachments: opts.maxMediaAttachments ?? 4,
    imageSizeLimit: opts.imageSizeLimit ?? 16 * 1024 * 1024,
    videoSizeLimit: opts.videoSizeLimit ?? 99 * 1024 * 1024,
    descriptionLimit: opts.descriptionLimit ?? 1500,
    requestLimit: opts.requestLimit ?? 300,
    mediaLimit: opts.mediaLimit ?? 30,
    latencyMs: opts.latencyMs ?? 0,
  };
  const calls: MastodonCall[] = [];
  const accounts = new Map<string, FakeAccount>();
  const apps = new Map<string, FakeApp>();
  const tokens = new Map<string, FakeToken>();
  const codes = new Map<string, { appId: string; accountId: string; redirectUri: string; scopes: string[]; challenge: string | null; expires: number; used: boolean }>();
  const statuses = new Map<string, FakeStatus>();
  const media = new Map<string, FakeMedia>();
  const idempotency = new Map<string, { statusId: string; expires: number }>();
  const windows = new Map<string, { start: number; count: number }>();
  const faults: FakeFault[] = [];
  const hanging = new Set<http.ServerResponse>();
  let seq = 0;
  const nextId = () => String(113_000_000_000_000_000n + BigInt(++seq) * 1_000n);
  const secret = () => randomBytes(32).toString('base64url');
  let url = '';

  const fake = {} as FakeMastodon;

  function createAccount(a: { username: string; domain?: string | null; displayName?: string; followers?: number }): FakeAccount {
    const acc: FakeAccount = { id: nextId(), username: a.username, domain: a.domain ?? null, displayName: a.displayName ?? a.username, followers: a.followers ?? 0 };
    accounts.set(acc.id, acc);
    return acc;
  }
  const acctOf = (a: FakeAccount) => (a.domain ? `${a.username}@${a.domain}` : a.username);
  const accountJson = (a: FakeAccount, credential = false) => ({
    id: a.id,
    username: a.username,
    acct: acctOf(a),
    display_name: a.displayName,
    locked: false,
    bot: false,
    created_at: '2024-01-01T00:00:00.000Z',
    note: '',
    url: a.domain ? `https://${a.domain}/@${a.username}` : `${url}/@${a.username}`,
    avatar: `${url}/system/accounts/avatars/${a.id}/original/avatar.png`,
    avatar_static: `${url}/system/accounts/avatars/${a.id}/original/avatar.png`,
    header: `${url}/headers/original/missing.png`,
    followers_count: a.followers,
    following_count: 0,
    statuses_count: [...statuses.values()].filter((s) => s.accountId === a.id && !s.deleted).length,
    emojis: [],
    fields: [],
    ...(credential ? { source: { privacy: 'public', sensitive: false, language: '', note: '', fields: [] } } : {}),
  });
  const mediaJson = (m: FakeMedia) => {
    const ext = m.contentType.split('/')[1] ?? 'bin';
    const done = m.pollsLeft <= 0;
    return {
      id: m.id,
      type: m.type,
      url: done ? `${url}/system/media_attachments/files/${m.id}/original/file.${ext}` : null,
      preview_url: `${url}/system/media_attachments/files/${m.id}/small/file.png`,
      remote_url: null,
      text_url: `${url}/media/${m.id}`,
      meta: {},
      description: m.description,
      blurhash: null,
    };
  };
  const statusJson = (s: FakeStatus, withSource = false) => {
    const a = accounts.get(s.accountId)!;
    const parent = s.inReplyToId ? statuses.get(s.inReplyToId) : undefined;
    return {
      id: s.id,
      created_at: s.createdAt,
      in_reply_to_id: s.inReplyToId,
      in_reply_to_account_id: parent?.accountId ?? null,
      sensitive: s.sensitive,
      spoiler_text: s.spoilerText,
      visibility: s.visibility,
      language: s.language,
      uri: `${url}/users/${a.username}/statuses/${s.id}`,
      url: `${url}/@${a.username}/${s.id}`,
      replies_count: [...statuses.values()].filter((r) => r.inReplyToId === s.id && !r.deleted).length,
      reblogs_count: s.reblogs,
      favourites_count: s.favourites,
      edited_at: s.editedAt,
      content: s.text ? `<p>${esc(s.text).replace(/\n/g, '<br />')}</p>` : '',
      reblog: null,
      application: { name: 'Pressroom', website: null },
      account: accountJson(a),
      media_attachments: s.mediaIds.map((id) => mediaJson(media.get(id)!)),
      mentions: [],
      tags: [],
      emojis: [],
      card: null,
      poll: null,
      ...(withSource ? { text: s.text } : {}),
    };
  };
  function statusesOf(accountId: string): FakeStatus[] {
    return [...statuses.values()].filter((s) => s.accountId === accountId && !s.deleted);
  }
  function makeStatus(accountId: string, f: Omit<FakeStatus, 'id' | 'accountId' | 'createdAt' | 'editedAt' | 'edits' | 'favourites' | 'reblogs' | 'deleted'>): FakeStatus {
    const s: FakeStatus = { id: nextId(), accountId, createdAt: new Date().toISOString(), editedAt: null, edits: 0, favourites: 0, reblogs: 0, deleted: false, ...f };
    statuses.set(s.id, s);
    return s;
  }

  const alice = createAccount({ username: 'alice', displayName: 'Alice Example', followers: 42 });

  Object.assign(fake, {
    calls,
    accounts,
    apps,
    tokens,
    statuses,
    media,
    signedIn: alice.id,
    consent: 'allow',
    processing: { images: 0, videos: 2 },
    options,
    alice,
    createAccount,
    issueToken(accountId: string, scopes = ['profile', 'read:statuses', 'write:statuses', 'write:media']) {
      const t = secret();
      tokens.set(t, { token: t, appId: null, accountId, scopes, revoked: false });
      return t;
    },
    revokeToken(token: string) {
      const t = tokens.get(token);
      if (t) t.revoked = true;
    },
    postAs(accountId: string, text: string, o: { inReplyToId?: string; visibility?: FakeStatus['visibility'] } = {}) {
      return makeStatus(accountId, { text, spoilerText: '', sensitive: false, visibility: o.visibility ?? 'public', language: 'en', inReplyToId: o.inReplyToId ?? null, mediaIds: [], idempotencyKey: null });
    },
    statusesOf,
    inject(f: FakeFault) {
      faults.push({ times: 1, ...f });
    },
    callsTo(method: string, path: string | RegExp) {
      return calls.filter((c) => c.method === method && (typeof path === 'string' ? c.path === path : path.test(c.path)));
    },
  });

  function takeFault(method: string, path: string): FakeFault | null {
    const i = faults.findIndex(
      (f) => (!f.method || f.method === method) && (!f.path || (typeof f.path === 'string' ? f.path === path : f.path.test(path))),
    );
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

  /** Counts one request of an account in a fixed window; the window's headers. */
  function count(bucket: string, limit: number, windowSeconds: number): { allowed: boolean; headers: Record<string, string> } {
    const now = Date.now();
    let w = windows.get(bucket);
    if (!w || now >= w.start + windowSeconds * 1000) {
      w = { start: now, count: 0 };
      windows.set(bucket, w);
    }
    w.count++;
    const headers = {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(Math.max(0, limit - w.count)),
      'X-RateLimit-Reset': new Date(w.start + windowSeconds * 1000).toISOString(),
    };
    return { allowed: w.count <= limit, headers };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      let body: Record<string, unknown> = {};
      let files: { name: string; filename: string; contentType: string; data: Buffer }[] = [];
      try {
        if (type.startsWith('application/json')) body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
        else if (type.startsWith('application/x-www-form-urlencoded')) {
          for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) addField(body, k, v);
        } else if (type.startsWith('multipart/form-data')) {
          const mp = parseMultipart(raw, type);
          if (mp) {
            body = mp.fields;
            files = mp.files;
          }
        }
      } catch {
        body = { __unparsable: raw.toString('utf8') };
      }
      const method = req.method ?? 'GET';
      const path = u.pathname;
      const query = Object.fromEntries(u.searchParams);
      const call: MastodonCall = { method, path, query, headers: req.headers, body, files: files.map((f) => ({ name: f.name, filename: f.filename, contentType: f.contentType, size: f.data.length })) };
      calls.push(call);
      let extraHeaders: Record<string, string> = {};
      const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
        call.status = status;
        const write = () => {
          if (res.destroyed) return;
          res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...extraHeaders, ...headers });
          res.end(json === undefined ? '' : JSON.stringify(json));
        };
        // The request took effect already; its answer comes after the instance's latency.
        if (options.latencyMs > 0) setTimeout(write, options.latencyMs);
        else write();
      };
      const error = (status: number, message: string) => send(status, { error: message });
      const fault = takeFault(method, path);
      if (fault?.kind === 'hang') {
        hanging.add(res);
        return;
      }
      if (fault?.kind === 'error') return send(fault.status, fault.body ?? { error: 'Internal server error' }, fault.headers);
      if (fault?.kind === 'rate-limit') {
        return send(429, { error: 'Too many requests' }, {
          'X-RateLimit-Limit': String(options.requestLimit),
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': new Date(Date.now() + fault.resetInSeconds * 1000).toISOString(),
        });
      }
      // The request takes effect, and its answer is never sent.
      const commitOnly = fault?.kind === 'hang-after-commit';
      const answer = commitOnly
        ? (status: number, _json: unknown) => {
            call.status = status;
            hanging.add(res);
          }
        : send;
      try {
        route(req, method, path, query, body, files, answer, error, (h) => (extraHeaders = h));
      } catch (e) {
        send(500, { error: `fake: ${(e as Error).message}` });
      }
    });
  });

  type Send = (status: number, json: unknown, headers?: Record<string, string>) => void;

  function route(
    req: http.IncomingMessage,
    method: string,
    path: string,
    query: Record<string, string>,
    body: Record<string, unknown>,
    files: { name: string; filename: string; contentType: string; data: Buffer }[],
    send: Send,
    error: (status: number, message: string) => void,
    setHeaders: (h: Record<string, string>) => void,
  ) {
    // --- OAuth ------------------------------------------------------------
    if (method === 'POST' && path === '/api/v1/apps') {
      const name = typeof body.client_name === 'string' ? body.client_name.trim() : '';
      if (!name) return error(422, "Validation failed: Application name can't be blank");
      const rawUris = Array.isArray(body.redirect_uris) ? body.redirect_uris.map(String) : typeof body.redirect_uris === 'string' ? body.redirect_uris.split(/\s*\n\s*/) : [];
      const uris = rawUris.map((x) => x.trim()).filter(Boolean);
      if (uris.length === 0) return error(422, "Validation failed: Redirect URI can't be blank");
      for (const r of uris) {
        if (r === 'urn:ietf:wg:oauth:2.0:oob') continue;
        try {
          new URL(r);
        } catch {
          return error(422, 'Validation failed: Redirect URI must be an absolute URI.');
        }
      }
      const scopes = (typeof body.scopes === 'string' && body.scopes.trim() ? body.scopes : 'read').split(/[\s+]+/).filter(Boolean);
      const bad = scopes.find((s) => !SCOPES_KNOWN.has(s));
      if (bad) return error(422, 'Validation failed: Scopes must be a valid scope');
      const app: FakeApp = { id: nextId(), name, website: typeof body.website === 'string' ? body.website : null, redirectUris: uris, scopes, clientId: secret(), clientSecret: secret() };
      apps.set(app.clientId, app);
      return send(200, {
        id: app.id,
        name: app.name,
        website: app.website,
        scopes: app.scopes,
        redirect_uri: app.redirectUris.join('\n'),
        redirect_uris: app.redirectUris,
        client_id: app.clientId,
        client_secret: app.clientSecret,
        client_secret_expires_at: 0,
      });
    }
    if (method === 'GET' && path === '/oauth/authorize') {
      const app = apps.get(query.client_id ?? '');
      const oauthError = (status: number, e: string, d: string) => send(status, { error: e, error_description: d });
      if (!app) return oauthError(401, 'invalid_client', 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.');
      const redirect = query.redirect_uri ?? '';
      if (!app.redirectUris.includes(redirect)) return oauthError(400, 'invalid_redirect_uri', 'The requested redirect uri is malformed or doesn\'t match client redirect URI.');
      const back = (params: Record<string, string>) => {
        const to = new URL(redirect);
        for (const [k, v] of Object.entries(params)) to.searchParams.set(k, v);
        if (query.state !== undefined) to.searchParams.set('state', query.state);
        send(302, undefined, { location: to.toString() });
      };
      if (query.response_type !== 'code') return back({ error: 'unsupported_response_type', error_description: 'The authorization server does not support this response type.' });
      const scopes = (query.scope ?? 'read').split(/[\s+]+/).filter(Boolean);
      if (scopes.some((s) => !app.scopes.includes(s))) return back({ error: 'invalid_scope', error_description: 'The requested scope is invalid, unknown, or malformed.' });
      if (query.code_challenge && query.code_challenge_method !== 'S256') return back({ error: 'invalid_request', error_description: 'Code challenge method must be S256.' });
      if (fake.consent === 'deny') return back({ error: 'access_denied', error_description: 'The resource owner or authorization server denied the request.' });
      const code = secret();
      codes.set(code, { appId: app.id, accountId: fake.signedIn, redirectUri: redirect, scopes, challenge: query.code_challenge ?? null, expires: Date.now() + CODE_LIFETIME_MS, used: false });
      return back({ code });
    }
    if (method === 'POST' && path === '/oauth/token') {
      const oauthError = (status: number, e: string, d: string) => send(status, { error: e, error_description: d });
      let clientId = typeof body.client_id === 'string' ? body.client_id : '';
      let clientSecret = typeof body.client_secret === 'string' ? body.client_secret : '';
      const basic = /^Basic\s+(.+)$/i.exec(String(req.headers.authorization ?? ''));
      if (basic) [clientId, clientSecret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      const app = apps.get(clientId);
      if (!app || app.clientSecret !== clientSecret) {
        return oauthError(401, 'invalid_client', 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.');
      }
      const invalidGrant = () => oauthError(400, 'invalid_grant', 'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.');
      if (body.grant_type === 'authorization_code') {
        const c = codes.get(String(body.code ?? ''));
        if (!c || c.used || c.appId !== app.id || c.expires < Date.now() || c.redirectUri !== body.redirect_uri) return invalidGrant();
        if (c.challenge) {
          const verifier = typeof body.code_verifier === 'string' ? body.code_verifier : '';
          if (!verifier || createHash('sha256').update(verifier).digest('base64url') !== c.challenge) return invalidGrant();
        }
        c.used = true;
        const t = secret();
        tokens.set(t, { token: t, appId: app.id, accountId: c.accountId, scopes: c.scopes, revoked: false });
        return send(200, { access_token: t, token_type: 'Bearer', scope: c.scopes.join(' '), created_at: Math.floor(Date.now() / 1000) });
      }
      if (body.grant_type === 'client_credentials') {
        const scopes = (typeof body.scope === 'string' ? body.scope : 'read').split(/[\s+]+/).filter(Boolean);
        const t = secret();
        tokens.set(t, { token: t, appId: app.id, accountId: null, scopes, revoked: false });
        return send(200, { access_token: t, token_type: 'Bearer', scope: scopes.join(' '), created_at: Math.floor(Date.now() / 1000) });
      }
      return oauthError(400, 'unsupported_grant_type', 'The authorization grant type is not supported by the authorization server.');
    }
    if (method === 'POST' && path === '/oauth/revoke') {
      const t = tokens.get(String(body.token ?? ''));
      if (t) t.revoked = true;
      return send(200, {});
    }

    // --- Public -----------------------------------------------------------
    if (method === 'GET' && path === '/api/v2/instance') {
      return send(200, {
        domain: new URL(url).host,
        title: 'Fake Mastodon',
        version: '4.4.0',
        source_url: 'https://github.com/mastodon/mastodon',
        description: 'A local fake of a Mastodon instance.',
        usage: { users: { active_month: accounts.size } },
        languages: ['en'],
        configuration: {
          urls: { streaming: url.replace(/^http/, 'ws') },
          accounts: { max_featured_tags: 10, max_pinned_statuses: 5 },
          statuses: { max_characters: options.maxCharacters, max_media_attachments: options.maxMediaAttachments, characters_reserved_per_url: 23 },
          media_attachments: {
            description_limit: options.descriptionLimit,
            image_matrix_limit: 33177600,
            image_size_limit: options.imageSizeLimit,
            supported_mime_types: ['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'video/mp4', 'video/webm', 'video/quicktime'],
            video_frame_rate_limit: 120,
            video_matrix_limit: 8294400,
            video_size_limit: options.videoSizeLimit,
          },
          polls: { max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2629746 },
          translation: { enabled: false },
        },
        registrations: { enabled: false, approval_required: false, message: null },
        contact: { email: 'admin@fake.example', account: null },
        rules: [],
      });
    }

    // --- Authenticated ----------------------------------------------------
    const auth = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1] ?? null;
    const token = auth ? tokens.get(auth) : undefined;
    const me = token && !token.revoked && token.accountId ? accounts.get(token.accountId) : undefined;
    const needUser = (...scopes: string[]): FakeAccount | null => {
      if (!me) {
        error(401, 'The access token is invalid');
        return null;
      }
      if (!scopes.some((s) => token!.scopes.includes(s))) {
        error(403, 'This action is outside the authorized scopes');
        return null;
      }
      return me;
    };
    if (auth && (!token || token.revoked)) return error(401, 'The access token is invalid');
    if (me && path.startsWith('/api/')) {
      const isUpload = method === 'POST' && (path === '/api/v1/media' || path === '/api/v2/media');
      const general = count(`all:${me.id}`, options.requestLimit, 300);
      const upload = isUpload ? count(`media:${me.id}`, options.mediaLimit, 1800) : null;
      // The headers of the limit closest to being exceeded.
      const closest = upload && Number(upload.headers['X-RateLimit-Remaining']) < Number(general.headers['X-RateLimit-Remaining']) ? upload : general;
      setHeaders(closest.headers);
      if (!general.allowed || (upload && !upload.allowed)) return send(429, { error: 'Too many requests' }, (upload && !upload.allowed ? upload : general).headers);
    }

    if (method === 'GET' && path === '/api/v1/accounts/verify_credentials') {
      const a = needUser('profile', 'read', 'read:accounts');
      if (!a) return;
      return send(200, accountJson(a, true));
    }

    if (method === 'POST' && (path === '/api/v2/media' || path === '/api/v1/media')) {
      const a = needUser('write', 'write:media');
      if (!a) return;
      const file = files.find((f) => f.name === 'file');
      if (!file) return error(422, "Validation failed: File can't be blank");
      const ct = file.contentType.toLowerCase();
      const kind: FakeMedia['type'] = ct.startsWith('image/gif') ? 'gifv' : ct.startsWith('image/') ? 'image' : ct.startsWith('video/') ? 'video' : 'unknown';
      if (kind === 'unknown') return error(422, 'Validation failed: File content type is invalid, File is invalid');
      const limit = kind === 'image' ? options.imageSizeLimit : options.videoSizeLimit;
      if (file.data.length > limit) return error(422, `Validation failed: File file size must be less than ${limit} Bytes`);
      const description = typeof body.description === 'string' ? body.description : null;
      if (description && [...description].length > options.descriptionLimit) return error(422, `Validation failed: Description is too long (maximum is ${options.descriptionLimit} characters)`);
      const polls = kind === 'image' ? fake.processing.images : fake.processing.videos;
      const m: FakeMedia = {
        id: nextId(),
        accountId: a.id,
        type: kind,
        contentType: ct,
        size: file.data.length,
        description,
        statusId: null,
        pollsLeft: path === '/api/v1/media' ? 0 : polls,
        bytesSha256: createHash('sha256').update(file.data).digest('hex'),
      };
      media.set(m.id, m);
      return send(m.pollsLeft > 0 ? 202 : 200, mediaJson(m));
    }
    const mediaPath = /^\/api\/v1\/media\/([^/]+)$/.exec(path);
    if (method === 'GET' && mediaPath) {
      const a = needUser('write', 'write:media');
      if (!a) return;
      const m = media.get(decodeURIComponent(mediaPath[1]));
      if (!m || m.accountId !== a.id) return error(404, 'Record not found');
      if (m.pollsLeft > 0) {
        m.pollsLeft--;
        if (m.pollsLeft > 0) return send(206, mediaJson(m));
      }
      return send(200, mediaJson(m));
    }

    if (method === 'POST' && path === '/api/v1/statuses') {
      const a = needUser('write', 'write:statuses');
      if (!a) return;
      const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
      if (key) {
        const kept = idempotency.get(`${a.id}:${key}`);
        if (kept && kept.expires > Date.now()) {
          const s = statuses.get(kept.statusId);
          if (s) return send(200, statusJson(s));
        }
      }
      let inReplyTo: FakeStatus | undefined;
      if (body.in_reply_to_id !== undefined && body.in_reply_to_id !== null && body.in_reply_to_id !== '') {
        inReplyTo = statuses.get(String(body.in_reply_to_id));
        if (!inReplyTo || inReplyTo.deleted) return error(404, 'The post you are trying to reply to does not appear to exist.');
      }
      const text = typeof body.status === 'string' ? body.status : '';
      const ids = (Array.isArray(body.media_ids) ? body.media_ids : []).map(String);
      if (ids.length > options.maxMediaAttachments) return error(422, `Cannot attach more than ${options.maxMediaAttachments} files`);
      // As PostStatusService: only the account's own unattached files count.
      const attached = ids.map((id) => media.get(id)).filter((m): m is FakeMedia => !!m && m.accountId === a.id && m.statusId === null);
      if (attached.length > 1 && attached.some((m) => m.type === 'video' || m.type === 'gifv')) return error(422, 'Cannot attach a video to a post that already contains images');
      if (attached.some((m) => m.pollsLeft > 0)) return error(422, 'Cannot attach files that have not finished processing. Try again in a moment!');
      if (!text.trim() && attached.length === 0) return error(422, "Validation failed: Text can't be blank");
      const spoiler = typeof body.spoiler_text === 'string' ? body.spoiler_text : '';
      if (countCharacters(text) + countCharacters(spoiler) > options.maxCharacters) return error(422, `Validation failed: Text character limit of ${options.maxCharacters} exceeded`);
      const visibility = body.visibility === undefined || body.visibility === null || body.visibility === '' ? 'public' : String(body.visibility);
      if (!['public', 'unlisted', 'private', 'direct'].includes(visibility)) return error(422, 'Validation failed: Visibility is not included in the list');
      const sensitive = bool(body.sensitive) ?? false;
      const s = makeStatus(a.id, {
        text,
        spoilerText: spoiler,
        sensitive: sensitive || spoiler.length > 0,
        visibility: visibility as FakeStatus['visibility'],
        language: typeof body.language === 'string' && /^[a-z]{2}$/.test(body.language) ? body.language : 'en',
        inReplyToId: inReplyTo?.id ?? null,
        mediaIds: attached.map((m) => m.id),
        idempotencyKey: key,
      });
      for (const m of attached) m.statusId = s.id;
      if (key) idempotency.set(`${a.id}:${key}`, { statusId: s.id, expires: Date.now() + IDEMPOTENCY_SECONDS * 1000 });
      return send(200, statusJson(s));
    }

    const statusPath = /^\/api\/v1\/statuses\/([^/]+)$/.exec(path);
    if (statusPath) {
      const s = statuses.get(decodeURIComponent(statusPath[1]));
      const live = s && !s.deleted ? s : undefined;
      if (method === 'GET') {
        if (auth && me && !['read', 'read:statuses'].some((x) => token!.scopes.includes(x))) return error(403, 'This action is outside the authorized scopes');
        if (!live) return error(404, 'Record not found');
        const mentioned = me ? new RegExp(`(^|\\s)@${acctOf(me)}\\b`).test(live.text) : false;
        if ((live.visibility === 'private' || live.visibility === 'direct') && (!me || (me.id !== live.accountId && !mentioned))) return error(404, 'Record not found');
        return send(200, statusJson(live));
      }
      if (method === 'PUT') {
        const a = needUser('write', 'write:statuses');
        if (!a) return;
        if (!live || live.accountId !== a.id) return error(404, 'Record not found');
        // Mastodon's controller passes every field on, given or not: a missing one is cleared.
        const ids = (Array.isArray(body.media_ids) ? body.media_ids : []).map(String);
        if (ids.length > options.maxMediaAttachments) return error(422, `Cannot attach more than ${options.maxMediaAttachments} files`);
        const next = ids.map((id) => media.get(id)).filter((m): m is FakeMedia => !!m && m.accountId === a.id && (m.statusId === null || m.statusId === live.id));
        const spoiler = typeof body.spoiler_text === 'string' ? body.spoiler_text : '';
        const text = (typeof body.status === 'string' && body.status) || spoiler || '';
        if (!text.trim() && next.length === 0) return error(422, "Validation failed: Text can't be blank");
        if (countCharacters(text) + countCharacters(spoiler) > options.maxCharacters) return error(422, `Validation failed: Text character limit of ${options.maxCharacters} exceeded`);
        const sensitive = (bool(body.sensitive) ?? false) || spoiler.length > 0;
        const language = typeof body.language === 'string' && /^[a-z]{2}$/.test(body.language) ? body.language : live.language;
        const changed =
          text !== live.text || spoiler !== live.spoilerText || sensitive !== live.sensitive || language !== live.language || next.map((m) => m.id).join() !== live.mediaIds.join();
        if (changed) {
          for (const id of live.mediaIds) if (!next.some((m) => m.id === id)) media.get(id)!.statusId = null;
          for (const m of next) m.statusId = live.id;
          Object.assign(live, { text, spoilerText: spoiler, sensitive, language, mediaIds: next.map((m) => m.id), editedAt: new Date().toISOString(), edits: live.edits + 1 });
        }
        return send(200, statusJson(live));
      }
      if (method === 'DELETE') {
        const a = needUser('write', 'write:statuses');
        if (!a) return;
        if (!live || live.accountId !== a.id) return error(404, 'Record not found');
        live.deleted = true;
        return send(200, statusJson(live, true));
      }
    }
    return error(404, 'Record not found');
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
