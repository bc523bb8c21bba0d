// @pressroom/client: the typed client of the Pressroom API.
//
// openapi-fetch over the types generated from openapi.yaml (./schema.ts), so
// every path, parameter, body and answer of every operation is typed, plus:
// - the error envelope typed (`ApiError`) and thrown as `PressroomError` by
//   `unwrap()`, with the HTTP status, code, details and request id;
// - `Idempotency-Key`: every POST without one gets a fresh key (option
//   `idempotency: 'auto'`, the default), reused by the retries below, so a
//   retried write is applied once; pass your own key in `headers` to make a
//   retry of your own (another process, after a crash) safe as well;
// - retries: a 429 waits for `Retry-After` (seconds or an HTTP date) and
//   tries again, at most `retry.maxRetries` times and never longer than
//   `retry.maxDelayMs` per wait; network failures and 502/503/504 are retried
//   with exponential backoff when the request is safe to repeat (GET/HEAD, or
//   it carries an Idempotency-Key);
// - pagination: `paginateCursor()` (meta.nextCursor) and `paginateOffset()`
//   (meta.limit/offset/hasMore) turn a page call into an async iterator;
// - `isEdition()` / `isTombstone()`: the items of `GET {ws}/content` are
//   typed edition-or-tombstone (tombstones come with `since` only), and these
//   narrow one item to either.
//
// The public API is what this file exports; keep it stable.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './schema.ts';

export type { components, operations, paths };

/** The body of every error answer. */
export type ErrorEnvelope = components['schemas']['ErrorEnvelope'];
/** `error` of the envelope: code, message, requestId, details. */
export type ApiError = ErrorEnvelope['error'];
/** A schema of the contract by name, e.g. `Schema<'Workspace'>`. */
export type Schema<N extends keyof components['schemas']> = components['schemas'][N];

export type PressroomClient = Client<paths, 'application/json'>;

/** An edition as `GET {ws}/content` lists it. */
export type ContentListItem = Schema<'ContentListItem'>;
/** An edition deleted after `since`: `{id, rootId, deleted: true, deletedAt}`, listed only by `GET {ws}/content?since=...`. */
export type ContentTombstone = Schema<'ContentTombstone'>;
/** An item of `GET {ws}/content`: an edition, or (with `since`) a tombstone. */
export type ContentListEntry = ContentListItem | ContentTombstone;

/** True for a tombstone of `GET {ws}/content?since=...`; narrows the item to `ContentTombstone`. */
export function isTombstone(item: ContentListEntry): item is ContentTombstone {
  return 'deleted' in item && item.deleted === true;
}

/**
 * True for an edition; narrows an item of `GET {ws}/content` to `ContentListItem`
 * (`if (isEdition(c)) console.log(c.status)`). Without `since` every item is one.
 */
export function isEdition(item: ContentListEntry): item is ContentListItem {
  return !isTombstone(item);
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  maxRetries?: number;
  /** A longer Retry-After is not waited for: the 429 is answered (default 60 000). */
  maxDelayMs?: number;
  /** First backoff of network failures and 502/503/504, doubled each time (default 250). */
  baseDelayMs?: number;
}

export interface RetryInfo {
  attempt: number;
  delayMs: number;
  method: string;
  url: string;
  /** HTTP status that caused the retry, or null for a network failure. */
  status: number | null;
}

export interface PressroomClientOptions {
  /** Where the API is, e.g. http://localhost:3000 (no /v1). */
  baseUrl: string;
  /** An API key (prk_...) or a session token (prs_...), sent as a bearer credential. */
  apiKey?: string;
  /** `auto` (default): a random Idempotency-Key on every POST that has none. */
  idempotency?: 'auto' | 'off';
  retry?: RetryOptions | false;
  /** Called before each retry (logging, progress). */
  onRetry?: (info: RetryInfo) => void;
  /** Headers added to every request (e.g. User-Agent). */
  headers?: Record<string, string>;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Sleeps between retries; for tests that do not want to wait. */
  sleep?: (ms: number) => Promise<void>;
}

/** An error answer of the API (or a failure to reach it, status 0). */
export class PressroomError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  readonly details: unknown;
  readonly retryAfterSeconds: number | null;
  constructor(status: number, error: Partial<ApiError> & { code: string; message: string }, requestId: string | null, retryAfterSeconds: number | null = null) {
    super(error.message);
    this.name = 'PressroomError';
    this.status = status;
    this.code = error.code;
    this.requestId = error.requestId ?? requestId;
    this.details = error.details ?? null;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A new Idempotency-Key (a random UUID). */
export function idempotencyKey(): string {
  return crypto.randomUUID();
}

/** Retry-After in milliseconds (delta-seconds or HTTP date), or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function retryingFetch(options: PressroomClientOptions): typeof globalThis.fetch {
  const base = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? defaultSleep;
  const retry = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
  const maxRetries = retry.maxRetries ?? 3;
  const maxDelayMs = retry.maxDelayMs ?? 60_000;
  const baseDelayMs = retry.baseDelayMs ?? 250;
  return async (input, init) => {
    const request = new Request(input, init);
    const repeatable = request.method === 'GET' || request.method === 'HEAD' || request.headers.has('idempotency-key');
    for (let attempt = 1; ; attempt++) {
      const last = attempt > maxRetries;
      let response: Response;
      try {
        response = await base(request.clone());
      } catch (e) {
        if (last || !repeatable) throw e;
        const delayMs = baseDelayMs * 2 ** (attempt - 1);
        options.onRetry?.({ attempt, delayMs, method: request.method, url: request.url, status: null });
        await sleep(delayMs);
        continue;
      }
      if (last) return response;
      let delayMs: number | null = null;
      if (response.status === 429) {
        delayMs = retryAfterMs(response.headers.get('retry-after')) ?? baseDelayMs * 2 ** (attempt - 1);
        if (delayMs > maxDelayMs) return response;
      } else if (repeatable && (response.status === 502 || response.status === 503 || response.status === 504)) {
        delayMs = Math.min(maxDelayMs, retryAfterMs(response.headers.get('retry-after')) ?? baseDelayMs * 2 ** (attempt - 1));
      }
      if (delayMs === null) return response;
      await response.body?.cancel().catch(() => {});
      options.onRetry?.({ attempt, delayMs, method: request.method, url: request.url, status: response.status });
      await sleep(delayMs);
    }
  };
}

/** A typed client: `client.GET('/v1/workspaces')`, `client.POST(path, { params, body })`, ... */
export function createPressroomClient(options: PressroomClientOptions): PressroomClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const client = createClient<paths, 'application/json'>({
    baseUrl,
    fetch: retryingFetch(options),
    headers: {
      ...options.headers,
      ...(options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {}),
    },
  });
  if ((options.idempotency ?? 'auto') === 'auto') {
    const auto: Middleware = {
      onRequest({ request }) {
        if (request.method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('Idempotency-Key', idempotencyKey());
        return request;
      },
    };
    client.use(auto);
  }
  return client;
}

/** What every openapi-fetch call answers. */
export interface CallResult<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

function toPressroomError(error: unknown, response: Response): PressroomError {
  const envelope = (error as Partial<ErrorEnvelope> | undefined)?.error;
  const requestId = response.headers.get('x-request-id');
  const retryAfter = retryAfterMs(response.headers.get('retry-after'));
  if (envelope && typeof envelope.code === 'string' && typeof envelope.message === 'string') {
    return new PressroomError(response.status, envelope, requestId, retryAfter === null ? null : retryAfter / 1000);
  }
  const text = typeof error === 'string' ? error.slice(0, 200) : '';
  return new PressroomError(response.status, { code: `HTTP_${response.status}`, message: `${response.status} ${response.statusText}${text ? `: ${text}` : ''}` }, requestId);
}

/**
 * The body of a successful answer, or throws `PressroomError`:
 * `const { data } = await unwrap(client.GET('/v1/workspaces'))`.
 */
export async function unwrap<D>(call: Promise<CallResult<D>> | CallResult<D>): Promise<D> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw toPressroomError(error, response);
  return data as D;
}

type CursorMeta = { nextCursor: string | null; hasMore?: boolean };
type OffsetMeta = { limit: number; offset: number; hasMore: boolean; total?: number };

/**
 * Every item of a cursor-paginated list (`meta.nextCursor`), page after page:
 *
 *   for await (const m of paginateCursor((cursor) =>
 *     client.GET('/v1/workspaces/{workspaceId}/media', { params: { path: { workspaceId }, query: { cursor } } }))) ...
 */
export async function* paginateCursor<T>(
  page: (cursor: string | undefined) => Promise<CallResult<{ data: readonly T[]; meta: CursorMeta | null }>>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const body = await unwrap(page(cursor));
    yield* body.data;
    const next = body.meta?.nextCursor;
    if (!next || body.meta?.hasMore === false) return;
    cursor = next;
  }
}

/**
 * Every item of an offset-paginated list (`meta.limit`, `meta.offset`, `meta.hasMore`):
 *
 *   for await (const c of paginateOffset((offset) =>
 *     client.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId }, query: { offset, limit: 100 } } }))) ...
 */
export async function* paginateOffset<T>(
  page: (offset: number) => Promise<CallResult<{ data: readonly T[]; meta: OffsetMeta }>>,
  start = 0,
): AsyncGenerator<T, void, undefined> {
  let offset = start;
  for (;;) {
    const body = await unwrap(page(offset));
    yield* body.data;
    if (!body.meta.hasMore || body.data.length === 0) return;
    offset = body.meta.offset + body.data.length;
  }
}
