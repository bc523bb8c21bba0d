// The one HTTP client of the platform connectors (server/platforms/<platform>.ts):
// a call to a platform's API never throws for the platform's answer or for
// the network, it says which of three things happened, because the publish
// engine's exactly-once promise depends on telling them apart:
//
//   answer    the platform answered (any status), with its body and headers
//   not-sent  nothing reached the platform (DNS failure, connection refused,
//             a refused address): safe to send again
//   unknown   the request went out and no answer came (timeout, reset): the
//             platform may have acted on it, so a post must be looked for
//             (or sent again with the platform's idempotency key) before it
//             is sent again
//
// User-given hosts (a Mastodon instance, a Bluesky PDS) go through the same
// SSRF guard as webhook URLs (server/net/ssrf.ts), on the very addresses the
// socket connects to; WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts it for tests and
// private deployments. Rate-limit answers are read into `rateLimit` from the
// header forms the platforms use (Retry-After, X's x-rate-limit-*, Mastodon's
// X-RateLimit-* with an ISO reset, Bluesky's RateLimit-* in epoch seconds).
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { classifyAddress, guardedLookup, urlHost } from '../net/ssrf.ts';

export interface PlatformRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string | URL;
  headers?: Record<string, string>;
  /** A JSON body (sets content-type application/json). */
  json?: unknown;
  /** A form body (application/x-www-form-urlencoded). */
  form?: Record<string, string>;
  /** Raw bytes (set content-type in headers). */
  body?: Buffer | string;
  /** A multipart/form-data body: fields and at most a few files. */
  multipart?: { fields?: Record<string, string>; files?: { name: string; filename: string; contentType: string; data: Buffer }[] };
  timeoutMs: number;
  /** Whether the host may be loopback or private (WEBHOOK_ALLOW_PRIVATE_NETWORKS, or a trusted operator-set base URL). */
  allowPrivateNetworks: boolean;
  /** Largest answer body kept (bytes); the rest is dropped. Default 4 MiB. */
  maxResponseBytes?: number;
}

export interface RateLimitInfo {
  /** When the platform says the limit resets (or Retry-After points to). */
  resetAt: Date | null;
  remaining: number | null;
  limit: number | null;
}

export type PlatformResponse =
  | { kind: 'answer'; status: number; headers: http.IncomingHttpHeaders; text: string; json: unknown; rateLimit: RateLimitInfo | null }
  | { kind: 'not-sent'; permanent: boolean; error: string }
  | { kind: 'unknown'; error: string };

const DEFAULT_MAX_RESPONSE = 4 * 1024 * 1024;

function header(h: http.IncomingHttpHeaders, name: string): string | null {
  const v = h[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : String(v);
}

function num(v: string | null): number | null {
  if (v === null || !/^\s*-?\d+(\.\d+)?\s*$/.test(v)) return null;
  return Number(v);
}

/** A reset given as epoch seconds, seconds from now, or an HTTP/ISO date. */
function resetTime(v: string | null, now: number): Date | null {
  if (v === null) return null;
  const n = num(v);
  if (n !== null) {
    // Epoch seconds are > 1e9; smaller numbers are seconds from now.
    return new Date(n > 1e9 ? n * 1000 : now + n * 1000);
  }
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : new Date(t);
}

/** The rate-limit headers of an answer, in any of the platforms' forms; null when none is present. */
export function readRateLimit(h: http.IncomingHttpHeaders, now = Date.now()): RateLimitInfo | null {
  const retryAfter = header(h, 'retry-after');
  const reset = header(h, 'x-rate-limit-reset') ?? header(h, 'x-ratelimit-reset') ?? header(h, 'ratelimit-reset');
  const remaining = num(header(h, 'x-rate-limit-remaining') ?? header(h, 'x-ratelimit-remaining') ?? header(h, 'ratelimit-remaining'));
  const limit = num(header(h, 'x-rate-limit-limit') ?? header(h, 'x-ratelimit-limit') ?? header(h, 'ratelimit-limit'));
  if (retryAfter === null && reset === null && remaining === null && limit === null) return null;
  const fromRetry = resetTime(retryAfter, now);
  // Retry-After is always relative seconds or an HTTP date; a bare number there is never epoch.
  const retryAt = retryAfter !== null && num(retryAfter) !== null ? new Date(now + Number(retryAfter) * 1000) : fromRetry;
  return { resetAt: retryAt ?? resetTime(reset, now), remaining, limit };
}

function multipartBody(m: NonNullable<PlatformRequest['multipart']>): { body: Buffer; contentType: string } {
  const boundary = `----pressroom${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const parts: Buffer[] = [];
  const q = (s: string) => s.replace(/["\r\n]/g, '_');
  for (const [k, v] of Object.entries(m.fields ?? {})) {
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${q(k)}"\r\n\r\n${v}\r\n`, 'utf8'));
  }
  for (const f of m.files ?? []) {
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${q(f.name)}"; filename="${q(f.filename)}"\r\ncontent-type: ${f.contentType}\r\n\r\n`, 'utf8'));
    parts.push(f.data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A platform's answer (any status). */
export type PlatformAnswer = Extract<PlatformResponse, { kind: 'answer' }>;
declare const okBrand: unique symbol;
/** A 2xx answer (branded, so a failed check still leaves non-2xx answers in the type). */
export type OkAnswer = PlatformAnswer & { readonly [okBrand]: true };
/** Whether the platform answered 2xx. */
export const isOk = (o: PlatformResponse): o is OkAnswer => o.kind === 'answer' && o.status >= 200 && o.status < 300;

/** A JSON value as an object (an empty one for anything else), for reading platforms' answers. */
export function jsonObject(v: unknown): Record<string, any> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, any>) : {};
}

/** A message with every secret (token, client secret) of at least 6 characters replaced, at most 2,000 characters: what a platform echoes never reaches a log or an answer. */
export function redactSecrets(message: string, secrets: (string | null | undefined)[]): string {
  let m = message;
  for (const s of secrets) if (s && s.length >= 6) m = m.split(s).join('[redacted]');
  return m.slice(0, 2000);
}

/** The host of a URL for a message, or 'an invalid URL'. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid URL';
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The value when it is an http(s) URL of at most 2,048 characters (a permalink, an avatar, a service endpoint a platform answered), else null. */
export function httpUrl(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 2048) return null;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:' ? v : null;
  } catch {
    return null;
  }
}

/** One call to a platform's API; never throws. */
export async function platformRequest(r: PlatformRequest): Promise<PlatformResponse> {
  let url: URL;
  try {
    url = typeof r.url === 'string' ? new URL(r.url) : r.url;
  } catch {
    return { kind: 'not-sent', permanent: true, error: `Not a URL: ${String(r.url).slice(0, 200)}` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { kind: 'not-sent', permanent: true, error: `Only http(s) URLs are called, not ${url.protocol}` };
  const host = urlHost(url);
  if (isIP(host) && !r.allowPrivateNetworks) {
    const category = classifyAddress(host);
    if (category) return { kind: 'not-sent', permanent: true, error: `The address ${host} is ${category}; platforms are reached on public addresses only.` };
  }
  const headers: Record<string, string> = { 'user-agent': 'Pressroom/1 (+self-hosted social publishing)', accept: 'application/json', ...(r.headers ?? {}) };
  let body: Buffer | null = null;
  if (r.json !== undefined) {
    body = Buffer.from(JSON.stringify(r.json), 'utf8');
    headers['content-type'] ??= 'application/json';
  } else if (r.form) {
    body = Buffer.from(new URLSearchParams(r.form).toString(), 'utf8');
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  } else if (r.multipart) {
    const m = multipartBody(r.multipart);
    body = m.body;
    headers['content-type'] = m.contentType;
  } else if (r.body !== undefined) {
    body = Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
  }
  if (body) headers['content-length'] = String(body.length);
  const max = r.maxResponseBytes ?? DEFAULT_MAX_RESPONSE;
  const mod = url.protocol === 'https:' ? https : http;

  return new Promise<PlatformResponse>((resolve) => {
    let sent = false;
    let settled = false;
    const done = (o: PlatformResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = mod.request(url, { method: r.method, headers, lookup: guardedLookup(r.allowPrivateNetworks) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= max) chunks.push(c);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        if (text) {
          try {
            json = JSON.parse(text);
          } catch {
            json = null;
          }
        }
        done({ kind: 'answer', status: res.statusCode ?? 0, headers: res.headers, text, json, rateLimit: readRateLimit(res.headers) });
      });
      res.on('error', (e) => done({ kind: 'unknown', error: `The answer of ${url.host} broke off: ${e.message}` }));
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)), r.timeoutMs);
    req.on('finish', () => {
      sent = true;
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (sent) return done({ kind: 'unknown', error: `${url.host} did not answer: ${e.message}` });
      done({ kind: 'not-sent', permanent: e.code === 'EUNSAFEADDRESS', error: `${url.host} could not be reached: ${e.message}` });
    });
    req.end(body ?? undefined);
  });
}
