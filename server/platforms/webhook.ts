// The webhook connector: each call is a signed HTTP POST of JSON to the URL
// the user gave, and the receiver publishes however it likes.
//
// Server-side request forgery (the guard lives in server/net/ssrf.ts): a
// webhook URL must not reach the server's own networks. checkWebhookUrl() (run when the integration is created) resolves
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
// base64, otherwise the secret's UTF-8 bytes. New integrations always get a
// `whsec_` secret (issueWebhookSecret(), or one of that form given by the
// caller: db/migrations/committed/000005-members-readable-webhook-secrets-no-email-enumeration.sql, split 20-webhook-secrets.sql), which receivers pass
// as is to a Standard Webhooks library; integrations created before hold a
// secret without the prefix, documented then as raw, and are still signed
// with its UTF-8 bytes (their receivers use the library's `{format: 'raw'}`).
// verifyWebhookSignature() is the receiver's side. `X-Pressroom-Event` names the event and `Idempotency-Key`
// repeats the message id.
//
// Answers: 2xx published (a JSON `permalink` and `platformPostId`/`id` in the
// answer are recorded), 4xx a permanent failure, any other answer transient,
// no answer after the request was sent (timeout, reset) an unknown outcome.
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { classifyAddress, guardedLookup, parseWebhookUrl, urlHost } from '../net/ssrf.ts';
import { httpUrl } from './http.ts';
import { cutText } from '../text.ts';
import { YOUTUBE_VIDEO_CATEGORIES } from './reference.ts';
import {
  ConnectorError,
  type ArticleDraftInput,
  type ArticleDraftResult,
  type CaptionEditResult,
  type Connector,
  type ConnectorOptions,
  type InboxActionResult,
  type InboxModeration,
  type InboxReply,
  type IntegrationRef,
  type PlatformOption,
  type PublishableEdition,
  type PublishResult,
} from './types.ts';

export {
  checkWebhookUrl,
  classifyAddress,
  guardedLookup,
  parseIPv4,
  parseIPv6,
  parseWebhookUrl,
  systemLookup,
  urlHost,
  WEBHOOK_URL_MAX_LENGTH,
  WebhookUrlError,
  type AddressCategory,
  type HostLookup,
  type ResolvedAddress,
  type WebhookUrlErrorCode,
} from '../net/ssrf.ts';

// ---------------------------------------------------------------------------
// Signing and delivery
// ---------------------------------------------------------------------------

/** Bytes of key material of an issued secret (the convention asks for 24 to 64). */
export const WEBHOOK_SECRET_BYTES = 32;

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function issueWebhookSecret(): string {
  return `whsec_${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`;
}

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
    // A receiver is one customer's server: at most 8 deliveries at a time to one endpoint.
    publishLimits: { perIntegration: { maxInFlight: 8 } },

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
        return { state: 'published', platformPostId: cutText(id, 500), permalink: httpUrl(b.permalink) };
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
      return { articleId: cutText(b.articleId, 500), draftUrl: httpUrl(b.draftUrl) };
    },

    async fetchMetrics() {
      // A webhook receiver reports nothing back when asked: it pushes metrics
      // to POST /v1/workspaces/{workspaceId}/integrations/{id}/metrics instead.
      return null;
    },

    async fetchAccountMetrics() {
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

    // Inbox: signed POSTs like publishing; a 2xx is done (its JSON may name
    // platformMessageId), a 4xx a permanent refusal, anything else or no
    // answer a temporary failure (the user may retry the reply).
    async reply(integration: IntegrationRef, reply: InboxReply): Promise<InboxActionResult> {
      const o = await send(integration, 'inbox.reply', { event: 'inbox.reply', integration: integrationPayload(integration), reply }, reply.idempotencyToken);
      return inboxOutcome(o);
    },

    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      const o = await send(integration, 'inbox.moderate', { event: 'inbox.moderate', integration: integrationPayload(integration), moderation: m }, m.idempotencyToken);
      return inboxOutcome(o);
    },
  };
}

function inboxOutcome(o: DeliveryOutcome): InboxActionResult {
  if (o.kind === 'not-sent') return { state: 'failed', permanent: o.permanent, error: o.error };
  if (o.kind === 'unknown') return { state: 'failed', permanent: false, error: o.error };
  if (o.status >= 200 && o.status < 300) {
    const b = (o.body && typeof o.body === 'object' ? o.body : {}) as Record<string, unknown>;
    const id = typeof b.platformMessageId === 'string' && b.platformMessageId ? cutText(b.platformMessageId, 300) : null;
    return { state: 'done', platformMessageId: id };
  }
  return { state: 'failed', permanent: !transientStatus(o.status), error: describeStatus(o.status, o.body) };
}
