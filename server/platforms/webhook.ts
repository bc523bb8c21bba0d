// The webhook connector: each call is a signed HTTP POST of JSON to the URL
// the user gave, and the receiver publishes however it likes.
//
// Server-side request forgery: a webhook URL must not reach the server's own
// networks. checkWebhookUrl() (run when the integration is created) resolves
// the host and refuses it when any of its addresses is loopback, private,
// link-local, CGNAT, multicast, unspecified or otherwise reserved, IPv4 and
// IPv6 alike (IPv4-mapped and other IPv4-embedding IPv6 forms are judged by
// their IPv4 address). Because DNS answers can change after that check, every
// delivery checks again, on the very addresses it connects to (a guarded DNS
// lookup), so a host re-pointed at 127.0.0.1 is refused at send time too.
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true lifts both checks (local development).
//
// Signature (Standard Webhooks, https://www.standardwebhooks.com): headers
// `webhook-id` (the message id; the same for every re-send of the same
// message, so receivers drop duplicates with it), `webhook-timestamp` (unix
// seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<raw body>">`. The HMAC key is the
// secret's bytes: for a Standard Webhooks secret `whsec_<base64>` the decoded
// base64, otherwise the secret's UTF-8 bytes. verifyWebhookSignature() is the
// receiver's side. `X-Pressroom-Event` names the event and `Idempotency-Key`
// repeats the message id.
//
// Answers: 2xx published (a JSON `permalink` and `platformPostId`/`id` in the
// answer are recorded), 4xx a permanent failure, any other answer transient,
// no answer after the request was sent (timeout, reset) an unknown outcome.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { lookup as dnsLookupCb, type LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { YOUTUBE_VIDEO_CATEGORIES } from './reference.ts';
import {
  ConnectorError,
  type ArticleDraftInput,
  type ArticleDraftResult,
  type CaptionEditResult,
  type Connector,
  type ConnectorOptions,
  type IntegrationRef,
  type PlatformOption,
  type PublishableEdition,
  type PublishResult,
} from './types.ts';

// ---------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------

export type AddressCategory = 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'unspecified' | 'reserved';

export function parseIPv4(text: string): number[] | null {
  if (isIP(text) !== 4) return null;
  return text.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address (zone id ignored), or null. */
export function parseIPv6(text: string): number[] | null {
  const addr = text.replace(/^\[|\]$/g, '').split('%')[0];
  if (isIP(addr) !== 6) return null;
  let head = addr;
  let tailV4: number[] = [];
  const lastColon = addr.lastIndexOf(':');
  if (addr.slice(lastColon + 1).includes('.')) {
    const v4 = parseIPv4(addr.slice(lastColon + 1));
    if (!v4) return null;
    tailV4 = v4;
    head = addr.slice(0, lastColon + 1);
    // "::1.2.3.4" leaves "::", "a::b:1.2.3.4" leaves "a::b:" (drop the lone trailing colon)
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsWanted = 8 - tailV4.length / 2;
  const [left, right] = head.includes('::') ? head.split('::') : [head, null];
  const l = left ? left.split(':').filter((g) => g !== '') : [];
  const r = right ? right.split(':').filter((g) => g !== '') : [];
  const fill = right === null ? 0 : groupsWanted - l.length - r.length;
  if (fill < 0) return null;
  const groups = [...l, ...Array(fill).fill('0'), ...r];
  if (groups.length !== groupsWanted) return null;
  const bytes: number[] = [];
  for (const g of groups) {
    const v = parseInt(g, 16);
    if (!/^[0-9a-f]{1,4}$/i.test(g) || Number.isNaN(v)) return null;
    bytes.push(v >> 8, v & 0xff);
  }
  return [...bytes, ...tailV4];
}

function classifyV4([a, b, c]: number[]): AddressCategory | null {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8 ("this network"; 0.0.0.0 reaches the local host)
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved'; // 240.0.0.0/4 and the broadcast address
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF assignments, TEST-NET-1
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if (a === 198 && b === 51 && c === 100) return 'reserved'; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return 'reserved'; // TEST-NET-3
  return null;
}

function classifyV6(x: number[]): AddressCategory | null {
  const zeroUpTo = (n: number) => x.slice(0, n).every((v) => v === 0);
  if (zeroUpTo(16)) return 'unspecified';
  if (zeroUpTo(15) && x[15] === 1) return 'loopback';
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: judged as IPv4.
  if (zeroUpTo(10) && x[10] === 0xff && x[11] === 0xff) return classifyV4(x.slice(12));
  if (zeroUpTo(12)) return classifyV4(x.slice(12)) ?? 'reserved';
  // NAT64 well-known prefix 64:ff9b::/96 embeds IPv4; 64:ff9b:1::/48 is local use.
  if (x[0] === 0x00 && x[1] === 0x64 && x[2] === 0xff && x[3] === 0x9b) {
    if (x.slice(4, 12).every((v) => v === 0)) return classifyV4(x.slice(12));
    if (x[4] === 0x00 && x[5] === 0x01) return 'private';
  }
  // 6to4 2002::/16 embeds IPv4 in bytes 2-5.
  if (x[0] === 0x20 && x[1] === 0x02) return classifyV4(x.slice(2, 6));
  if ((x[0] & 0xfe) === 0xfc) return 'private'; // fc00::/7 unique local
  if (x[0] === 0xfe && (x[1] & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (x[0] === 0xfe && (x[1] & 0xc0) === 0xc0) return 'private'; // fec0::/10 site-local (deprecated)
  if (x[0] === 0xff) return 'multicast';
  if (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0x0d && x[3] === 0xb8) return 'reserved'; // documentation
  if (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0x00 && x[3] === 0x00) return 'reserved'; // Teredo
  if (x[0] === 0x01 && x[1] === 0x00 && x.slice(2, 8).every((v) => v === 0)) return 'reserved'; // discard 100::/64
  return null;
}

/** Why an address must not be reached from the server, or null for a public unicast address. */
export function classifyAddress(address: string): AddressCategory | null {
  const v4 = parseIPv4(address);
  if (v4) return classifyV4(v4);
  const v6 = parseIPv6(address);
  if (v6) return classifyV6(v6);
  throw new TypeError(`not an IP address: ${address}`);
}

// ---------------------------------------------------------------------------
// URL check
// ---------------------------------------------------------------------------

export type WebhookUrlErrorCode = 'INVALID_WEBHOOK_URL' | 'WEBHOOK_URL_PRIVATE_NETWORK' | 'WEBHOOK_HOST_UNRESOLVABLE';

export class WebhookUrlError extends Error {
  readonly code: WebhookUrlErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: WebhookUrlErrorCode, message: string, details: Record<string, unknown>) {
    super(message);
    this.name = 'WebhookUrlError';
    this.code = code;
    this.details = details;
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
  category: AddressCategory | null;
}

export type HostLookup = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** Parses a webhook URL: http(s), a host, no credentials, at most 2048 characters. */
export function parseWebhookUrl(raw: string): URL {
  const invalid = (why: string) =>
    new WebhookUrlError('INVALID_WEBHOOK_URL', `The webhook url is not usable: ${why}.`, { field: 'url' });
  if (typeof raw !== 'string' || raw.length === 0) throw invalid('it is empty');
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) throw invalid(`it is longer than ${WEBHOOK_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('it is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('only http and https URLs are allowed');
  if (url.username || url.password) throw invalid('credentials in the URL are not allowed; the secret signs each request');
  if (!url.hostname) throw invalid('it has no host');
  return url;
}

/** The host of a parsed URL without IPv6 brackets. */
export function urlHost(url: URL): string {
  // Brackets of IPv6 literals off; the root label's dot ("example.com.") off.
  return url.hostname.replace(/^\[|\]$/g, '').replace(/(?<=[^.])\.$/, '');
}

function family(address: string): 4 | 6 {
  return isIP(address) === 6 ? 6 : 4;
}

/**
 * Checks a webhook URL before it is stored: the shape, then every address
 * its host resolves to (an IP literal is its own address). Throws
 * WebhookUrlError; returns the parsed URL and the addresses seen.
 */
export async function checkWebhookUrl(
  raw: string,
  options: { allowPrivateNetworks: boolean; lookup?: HostLookup; timeoutMs?: number },
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const url = parseWebhookUrl(raw);
  const host = urlHost(url);
  if (options.allowPrivateNetworks) return { url, addresses: [] };
  let found: { address: string; family: number }[];
  if (isIP(host)) {
    found = [{ address: host, family: family(host) }];
  } else {
    const lookup = options.lookup ?? systemLookup;
    const timeoutMs = options.timeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    try {
      found = await Promise.race([
        lookup(host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`lookup timed out after ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (e) {
      throw new WebhookUrlError('WEBHOOK_HOST_UNRESOLVABLE', `The webhook host ${host} could not be resolved.`, {
        field: 'url',
        host,
        reason: e instanceof Error ? e.message : String(e),
      });
    } finally {
      clearTimeout(timer);
    }
    if (found.length === 0) {
      throw new WebhookUrlError('WEBHOOK_HOST_UNRESOLVABLE', `The webhook host ${host} has no address.`, { field: 'url', host });
    }
  }
  const addresses: ResolvedAddress[] = found.map((a) => ({ address: a.address, family: family(a.address), category: classifyAddress(a.address) }));
  const refused = addresses.filter((a) => a.category !== null);
  if (refused.length > 0) {
    throw new WebhookUrlError(
      'WEBHOOK_URL_PRIVATE_NETWORK',
      `The webhook host ${host} resolves to a ${refused[0].category} address (${refused[0].address}); webhooks may only reach public addresses.`,
      { field: 'url', host, addresses: refused.map((a) => ({ address: a.address, category: a.category })) },
    );
  }
  return { url, addresses };
}

/**
 * A DNS lookup for outgoing webhook connections that refuses hosts resolving
 * to a non-public address, so the address connected to is the address checked.
 */
export function guardedLookup(allowPrivateNetworks: boolean): LookupFunction {
  return ((hostname: string, options: any, callback: any) => {
    const cb = typeof options === 'function' ? options : callback;
    const opts = typeof options === 'function' ? {} : (options ?? {});
    dnsLookupCb(hostname, { ...opts, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return cb(err);
      if (!allowPrivateNetworks) {
        const bad = addresses.find((a) => classifyAddress(a.address) !== null);
        if (bad) {
          const e = Object.assign(new Error(`${hostname} resolves to a ${classifyAddress(bad.address)} address (${bad.address})`), { code: 'EUNSAFEADDRESS' });
          return cb(e);
        }
      }
      if (opts.all) return cb(null, addresses);
      const first = addresses[0];
      return first ? cb(null, first.address, first.family) : cb(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
    });
  }) as LookupFunction;
}

// ---------------------------------------------------------------------------
// Signing and delivery
// ---------------------------------------------------------------------------

/** The HMAC key of a secret: `whsec_<base64>` decoded, otherwise its UTF-8 bytes. */
export function webhookSecretKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) {
    const b = Buffer.from(secret.slice(6), 'base64');
    if (b.length > 0) return b;
  }
  return Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` */
export function signWebhookBody(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', webhookSecretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * For receivers (and tests): whether the Standard Webhooks headers are valid
 * for the body and fresh enough. `webhook-signature` may hold several
 * space-separated signatures; one valid v1 signature suffices.
 */
export function verifyWebhookSignature(
  secret: string,
  headers: { id?: string; timestamp?: string; signature?: string },
  body: string,
  toleranceSeconds = 300,
  now = Date.now(),
): boolean {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature || !/^\d+$/.test(timestamp)) return false;
  const t = Number(timestamp);
  if (Math.abs(now / 1000 - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhookBody(secret, id, t, body).slice(3), 'base64');
  return signature.split(' ').some((part) => {
    const [version, mac] = part.split(',', 2);
    if (version !== 'v1' || !mac) return false;
    const given = Buffer.from(mac, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export type DeliveryOutcome =
  | { kind: 'response'; status: number; body: unknown }
  /** Nothing reached the receiver (refused address, DNS failure, connection refused). */
  | { kind: 'not-sent'; permanent: boolean; error: string }
  /** The request went out but no answer came (timeout, connection reset): it may have been acted on. */
  | { kind: 'unknown'; error: string };

const MAX_RESPONSE_BYTES = 64 * 1024;

/** One signed POST; never throws. */
export async function deliverWebhook(
  target: { url: string; secret: string },
  event: string,
  payload: unknown,
  options: { timeoutMs: number; allowPrivateNetworks: boolean; idempotencyKey?: string; messageId?: string },
): Promise<DeliveryOutcome> {
  let url: URL;
  try {
    url = parseWebhookUrl(target.url);
  } catch (e) {
    return { kind: 'not-sent', permanent: true, error: (e as Error).message };
  }
  const host = urlHost(url);
  if (isIP(host) && !options.allowPrivateNetworks) {
    const category = classifyAddress(host);
    if (category) return { kind: 'not-sent', permanent: true, error: `The webhook address ${host} is ${category}; webhooks may only reach public addresses.` };
  }
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const messageId = options.messageId ?? options.idempotencyKey ?? `msg_${randomUUID()}`;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'Pressroom-Webhook/1',
    'x-pressroom-event': event,
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhookBody(target.secret, messageId, timestamp, body),
  };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  const mod = url.protocol === 'https:' ? https : http;

  return new Promise<DeliveryOutcome>((resolve) => {
    let sent = false;
    let settled = false;
    const done = (o: DeliveryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = mod.request(url, { method: 'POST', headers, lookup: guardedLookup(options.allowPrivateNetworks) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_RESPONSE_BYTES) chunks.push(c);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = null;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = text;
        }
        done({ kind: 'response', status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', (e) => done({ kind: 'unknown', error: `The webhook answer broke off: ${e.message}` }));
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    req.on('finish', () => {
      sent = true;
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (sent) return done({ kind: 'unknown', error: `The webhook did not answer: ${e.message}` });
      const permanent = e.code === 'EUNSAFEADDRESS';
      done({ kind: 'not-sent', permanent, error: `The webhook could not be reached: ${e.message}` });
    });
    req.end(body);
  });
}

function describeStatus(status: number, body: unknown): string {
  const detail = body && typeof body === 'object' && typeof (body as any).error === 'string' ? `: ${(body as any).error}` : '';
  return `The webhook answered HTTP ${status}${detail}.`;
}

/** 4xx: the receiver refused the post for good; any other non-2xx answer may pass later. */
function transientStatus(status: number): boolean {
  return !(status >= 400 && status < 500);
}

function asHttpUrl(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 2048) return null;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? v : null;
  } catch {
    return null;
  }
}

function integrationPayload(i: IntegrationRef) {
  return { id: i.id, platform: i.platform, name: i.name, username: i.username };
}

export function createWebhookConnector(options: ConnectorOptions): Connector {
  const target = (i: IntegrationRef) => {
    if (!i.webhookUrl) throw new ConnectorError('UNSAFE_URL', 'This integration has no webhook url.', { integrationId: i.id });
    if (!i.webhookSecret) throw new ConnectorError('MISSING_SECRET', 'The webhook secret was not provided to the connector (only the worker reads it).', { integrationId: i.id });
    return { url: i.webhookUrl, secret: i.webhookSecret };
  };
  const send = (i: IntegrationRef, event: string, payload: unknown, idempotencyKey: string) =>
    deliverWebhook(target(i), event, payload, { timeoutMs: options.timeoutMs, allowPrivateNetworks: options.allowPrivateNetworks, idempotencyKey, messageId: idempotencyKey });

  return {
    name: 'webhook',

    // A webhook receiver is not known to drop duplicates: an interrupted
    // delivery is never re-sent automatically.
    acceptsIdempotencyToken: false,

    async publish(integration: IntegrationRef, edition: PublishableEdition): Promise<PublishResult> {
      const token = edition.idempotencyToken ?? `publish:${edition.id}`;
      const payload = {
        event: 'content.publish',
        idempotencyToken: token,
        contentId: edition.id,
        rootId: edition.rootId,
        platform: integration.platform,
        caption: edition.caption,
        title: edition.title ?? null,
        thread: edition.thread.map((t) => ({ caption: t.caption, mediaUrls: t.media.map((m) => m.url) })),
        mediaUrls: edition.media.map((m) => m.url),
        media: edition.media,
        settings: edition.settings,
        scheduledAt: edition.scheduledAt,
        attempt: edition.attempt,
        integration: integrationPayload(integration),
      };
      const o = await send(integration, 'content.publish', payload, token);
      if (o.kind === 'not-sent') return { state: 'failed', permanent: o.permanent, error: o.error };
      if (o.kind === 'unknown') return { state: 'unknown', error: o.error };
      if (o.status >= 200 && o.status < 300) {
        const b = (o.body && typeof o.body === 'object' ? o.body : {}) as Record<string, unknown>;
        const id = typeof b.platformPostId === 'string' && b.platformPostId ? b.platformPostId : typeof b.id === 'string' && b.id ? b.id : `webhook-${edition.id}`;
        return { state: 'published', platformPostId: id.slice(0, 500), permalink: asHttpUrl(b.permalink) };
      }
      return { state: 'failed', permanent: !transientStatus(o.status), error: describeStatus(o.status, o.body) };
    },

    async editPublishedCaption(integration: IntegrationRef, post: { platformPostId: string; caption: string; attempt: number }): Promise<CaptionEditResult> {
      if (integration.capabilities && !integration.capabilities.editPublishedCaption) {
        throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} does not support editing a published caption.`);
      }
      const o = await send(integration, 'content.caption.edit', { event: 'content.caption.edit', integration: integrationPayload(integration), post }, `caption:${post.platformPostId}:${post.attempt}`);
      if (o.kind === 'not-sent') return { state: 'failed', permanent: o.permanent, error: o.error };
      if (o.kind === 'unknown') return { state: 'unknown', error: o.error };
      if (o.status >= 200 && o.status < 300) return { state: 'updated' };
      return { state: 'failed', permanent: !transientStatus(o.status), error: describeStatus(o.status, o.body) };
    },

    async createDraft(integration: IntegrationRef, article: ArticleDraftInput): Promise<ArticleDraftResult> {
      if (integration.capabilities && !integration.capabilities.canPublishArticles) {
        throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} does not support articles.`);
      }
      const o = await send(integration, 'article.draft.create', { event: 'article.draft.create', integration: integrationPayload(integration), article }, `draft:${article.contentId}`);
      if (o.kind !== 'response') throw new ConnectorError('UPSTREAM_ERROR', o.error);
      const b = (o.body && typeof o.body === 'object' ? o.body : {}) as Record<string, unknown>;
      if (o.status < 200 || o.status >= 300) throw new ConnectorError('UPSTREAM_ERROR', describeStatus(o.status, o.body), { status: o.status });
      if (typeof b.articleId !== 'string' || !b.articleId) {
        throw new ConnectorError('UPSTREAM_ERROR', 'The webhook accepted the draft but named no articleId.', { status: o.status });
      }
      return { articleId: b.articleId.slice(0, 500), draftUrl: asHttpUrl(b.draftUrl) };
    },

    async fetchMetrics() {
      // A webhook receiver reports nothing back; metrics need a platform connector.
      return null;
    },

    async listBoards(integration: IntegrationRef): Promise<PlatformOption[]> {
      if (integration.capabilities && !integration.capabilities.boards) throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no boards.`);
      // The receiver names its boards when the integration is created (settings.boards).
      const boards = Array.isArray(integration.settings?.boards) ? (integration.settings.boards as unknown[]) : [];
      return boards
        .filter((b): b is { id: string; name: string } => !!b && typeof (b as any).id === 'string' && typeof (b as any).name === 'string')
        .map((b) => ({ id: b.id, name: b.name }));
    },

    async listVideoCategories(integration: IntegrationRef): Promise<PlatformOption[]> {
      if (integration.capabilities && !integration.capabilities.videoCategories) {
        throw new ConnectorError('NOT_SUPPORTED', `${integration.platform} has no video categories.`);
      }
      return YOUTUBE_VIDEO_CATEGORIES.map((c) => ({ ...c }));
    },
  };
}
