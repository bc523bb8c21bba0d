// Lifecycle webhook delivery (docs/webhooks.md), run as pressroom_worker:
//
//   webhooks.deliver  data {subscriptionId}: sends the subscription's pending
//                     deliveries (app.webhook_deliveries) in outbox order, one
//                     at a time (in batches of BATCH claimed and recorded in one
//                     transaction each), each a Standard Webhooks signed POST (the
//                     `standardwebhooks` library: webhook-id is the event id,
//                     so a retry or redelivery keeps it). A 2xx answer
//                     delivers; anything else (5xx, 4xx, a timeout, a refused
//                     connection) is a failed attempt: app.webhook_record_attempts
//                     logs it and sets the retry time with backoff, and the
//                     job stops there and queues itself for that time, so no
//                     later event passes a failed one (events of one content
//                     item arrive in order). After webhook_pause_after_failures
//                     failures in a row, or at once on 410 Gone, SQL pauses the
//                     subscription.
//                     Queued by the outbox triggers (app.webhook_emit) in the
//                     transaction of the change; policy stately with the
//                     subscription as singleton key: at most one queued and one
//                     running per subscription.
//
// The network calls are made outside any transaction: claim a batch (one
// short statement), POST each in order over one kept-alive connection, record
// the batch (another statement, which hands back the next batch).
//
//   webhooks.purge    hourly: app.webhook_purge deletes events, deliveries and
//                     log entries older than setting webhook_retention_days
//                     (WEBHOOK_RETENTION_DAYS) once delivered; never a pending one.
//
// With `listenUrl`, a LISTEN on channel pressroom_webhooks (notified at the
// commit of new deliveries by trigger webhook_deliveries_95_wake) wakes the
// delivery worker at once instead of at its next poll.
import http from 'node:http';
import https from 'node:https';
import pg from 'pg';
import type { Job, PgBoss } from 'pg-boss';
import { Webhook } from 'standardwebhooks';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { guardedLookup, classifyAddress, parseWebhookUrl, urlHost } from '../net/ssrf.ts';
import { isIP } from 'node:net';
import { decryptSubscriptionSecret } from '../webhooks/secret.ts';
import { cutText } from '../text.ts';
import { QUEUES } from './queues.ts';

export interface WebhookDeliverJobData {
  subscriptionId: string;
}

type Deps = Pick<AppDeps, 'pool' | 'log' | 'config' | 'storage'>;

type Claim =
  | { action: 'stop' }
  | { action: 'wait'; until: string }
  | {
      action: 'send';
      deliveryId: string;
      attempt: number;
      timeoutMs: number;
      subscription: { id: string; url: string; secretCiphertext: string };
      event: { id: string; type: string; workspaceId: string; subjectId: string | null; occurredAt: string; data: unknown };
    };

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
  request: { url: string; headers: Record<string, string>; body: unknown };
}

const EXCERPT_CHARS = 2048;
/** A job hands a longer backlog to the next job after this long (far below pg-boss's expiry). */
const JOB_BUDGET_MS = 20_000;
const MAX_READ_BYTES = 16 * 1024;

/** One signed POST; never throws. */
export async function postSigned(
  url: string,
  secret: string,
  messageId: string,
  payload: unknown,
  opts: { timeoutMs: number; allowPrivateNetworks: boolean; agents?: { 'http:': http.Agent; 'https:': https.Agent } },
): Promise<AttemptResult> {
  const body = JSON.stringify(payload);
  const now = new Date();
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Pressroom-Webhooks/1',
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
  };
  const request = { url, headers: { ...headers }, body: payload };
  const started = performance.now();
  const fail = (error: string, status: number | null = null, excerpt: string | null = null): AttemptResult => ({
    ok: false, status, excerpt, error, durationMs: Math.round(performance.now() - started), request,
  });
  let target: URL;
  try {
    target = parseWebhookUrl(url);
  } catch (e) {
    return fail((e as Error).message);
  }
  const host = urlHost(target);
  if (isIP(host) && !opts.allowPrivateNetworks && classifyAddress(host)) {
    return fail(`The webhook address ${host} is ${classifyAddress(host)}; webhooks may only reach public addresses.`);
  }
  headers['webhook-signature'] = new Webhook(secret).sign(messageId, now, body);
  headers['content-length'] = String(Buffer.byteLength(body));
  const mod = target.protocol === 'https:' ? https : http;
  const agent = opts.agents?.[target.protocol as 'http:' | 'https:'];
  const once = (useAgent: boolean) => new Promise<AttemptResult & { staleSocket?: boolean }>((resolve) => {
    let settled = false;
    const done = (r: AttemptResult & { staleSocket?: boolean }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = mod.request(target, { method: 'POST', headers, lookup: guardedLookup(opts.allowPrivateNetworks), agent: useAgent && agent ? agent : false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MAX_READ_BYTES) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const excerpt = cutText(Buffer.concat(chunks).toString('utf8'), EXCERPT_CHARS);
        if (status >= 200 && status < 300) {
          done({ ok: true, status, excerpt, error: null, durationMs: Math.round(performance.now() - started), request });
        } else {
          done(fail(`The receiver answered HTTP ${status}.`, status, excerpt));
        }
      });
      res.on('error', (e) => done(fail(`The answer broke off: ${e.message}`)));
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => {
      // A kept-alive connection the receiver closed meanwhile: not the receiver's failure.
      const staleSocket = req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
      done({ ...fail(`The receiver could not be reached: ${e.message}`), staleSocket });
    });
    req.end(body);
  });
  const first = await once(true);
  if (!first.staleSocket) return { ok: first.ok, status: first.status, excerpt: first.excerpt, error: first.error, durationMs: first.durationMs, request };
  // retried once on a new connection (the request never reached the receiver's handler, or it may
  // have: the same webhook-id lets it de-duplicate)
  const second = await once(false);
  return { ok: second.ok, status: second.status, excerpt: second.excerpt, error: second.error, durationMs: second.durationMs, request };
}

/** Deliveries claimed per transaction; each batch is recorded in one transaction too. */
const BATCH = 50;

type BatchClaim =
  | { action: 'stop' }
  | { action: 'wait'; until: string }
  | {
      action: 'send';
      timeoutMs: number;
      subscription: { id: string; url: string; secretCiphertext: string };
      deliveries: { deliveryId: string; attempt: number; event: Extract<Claim, { action: 'send' }>['event'] }[];
    };

/**
 * Sends what is due for one subscription, in order; returns what happened (for logs and tests).
 * Batches: app.webhook_claim_batch hands up to BATCH due deliveries in outbox order; they are
 * POSTed one after the other over one kept-alive connection, stopping at the first failure
 * (nothing passes a failed delivery), and app.webhook_record_attempts records them in one
 * transaction that hands back the next batch. A crash between a POST and its record sends that
 * event again later with the same webhook-id (at least once; receivers de-duplicate on it).
 */
export async function deliverSubscription(
  deps: Deps,
  subscriptionId: string,
  reschedule: (at: Date) => Promise<unknown>,
  budgetMs = JOB_BUDGET_MS,
): Promise<{ delivered: number; failed: number; next: 'stop' | 'wait' | 'continue' }> {
  let delivered = 0;
  let failed = 0;
  const started = performance.now();
  const overBudget = () => performance.now() - started > budgetMs;
  // One connection per run, kept alive between the POSTs of a backlog.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 1 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 1 }),
  };
  const secrets = new Map<string, string | null>();
  try {
    let claim = await asWorker<BatchClaim>(deps.pool, sql.fragment`app.webhook_claim_batch(${subscriptionId}::uuid, ${BATCH})`);
    for (;;) {
      if (claim.action === 'stop') return { delivered, failed, next: 'stop' };
      if (overBudget()) {
        // A long backlog goes on in the next job (queued now), so no job runs near its expiry.
        await reschedule(new Date());
        return { delivered, failed, next: 'continue' };
      }
      if (claim.action === 'wait') {
        await reschedule(new Date(claim.until));
        return { delivered, failed, next: 'wait' };
      }
      const sub = claim.subscription;
      if (!secrets.has(sub.secretCiphertext)) {
        secrets.set(sub.secretCiphertext, await decryptSubscriptionSecret(deps.storage.secrets, sub.id, Buffer.from(sub.secretCiphertext, 'base64')));
      }
      const secret = secrets.get(sub.secretCiphertext) ?? null;
      const attempts: Record<string, unknown>[] = [];
      for (const d of claim.deliveries) {
        const payload = { type: d.event.type, timestamp: d.event.occurredAt, workspaceId: d.event.workspaceId, data: d.event.data };
        const result: AttemptResult =
          secret === null
            ? { ok: false, status: null, excerpt: null, durationMs: 0, error: 'The signing secret cannot be read by this server (was SIGNED_URL_SECRET changed?); rotate it.', request: { url: sub.url, headers: {}, body: payload } }
            : await postSigned(sub.url, secret, d.event.id, payload, {
                timeoutMs: claim.timeoutMs,
                allowPrivateNetworks: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
                agents,
              });
        attempts.push({ deliveryId: d.deliveryId, ok: result.ok, request: result.request, status: result.status, excerpt: result.excerpt, error: result.error, durationMs: result.durationMs });
        if (!result.ok) {
          deps.log.info('webhook attempt failed', { job: QUEUES.webhooksDeliver, subscriptionId, deliveryId: d.deliveryId, attempt: d.attempt, error: result.error });
          break;
        }
        if (overBudget()) break;
      }
      const recorded = await asWorker<{ delivered: number; failed: number; paused: boolean; next: BatchClaim }>(
        deps.pool,
        sql.fragment`app.webhook_record_attempts(${subscriptionId}::uuid, ${sql.jsonb(attempts as never)}, ${BATCH})`,
      );
      delivered += recorded.delivered;
      failed += recorded.failed;
      if (recorded.paused) deps.log.info('webhook subscription paused', { job: QUEUES.webhooksDeliver, subscriptionId });
      claim = recorded.next;
    }
  } finally {
    agents['http:'].destroy();
    agents['https:'].destroy();
  }
}

const PURGE_BATCH = 500;
const PURGE_MAX_BATCHES = 200;

/** Deletes lifecycle webhook events, deliveries and log entries past their retention, in batches; returns how many. */
export async function purgeWebhookHistory(deps: Pick<AppDeps, 'pool'>): Promise<{ events: number; logEntries: number; retentionDays: number }> {
  let events = 0;
  let logEntries = 0;
  let retentionDays = 0;
  for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
    const r = await asWorker<{ events: number; logEntries: number; more: boolean; retentionDays: number }>(deps.pool, sql.fragment`app.webhook_purge(${PURGE_BATCH})`);
    events += r.events;
    logEntries += r.logEntries;
    retentionDays = r.retentionDays;
    if (!r.more) break;
  }
  return { events, logEntries, retentionDays };
}

/** Channel trigger webhook_deliveries_95_wake notifies when deliveries are written. */
export const WAKE_CHANNEL = 'pressroom_webhooks';

/**
 * LISTENs on WAKE_CHANNEL and calls `wake` for each notification, so an idle worker fetches
 * the delivery job at the commit rather than at its next poll. A latency hint only: polling
 * stays the floor, and a lost connection is retried every few seconds.
 */
function listenForWakeUps(url: string, wake: () => void, log: Deps['log']): () => Promise<void> {
  let stopped = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | null = null;
  const connect = async () => {
    if (stopped) return;
    const c = new pg.Client({ connectionString: url });
    const retry = (e?: Error) => {
      if (client !== c) return;
      client = null;
      c.end().catch(() => {});
      if (stopped) return;
      log.warn('webhooks wake-up listener lost; polling until it is back', { err: e?.message });
      timer = setTimeout(() => void connect(), 5000);
    };
    c.on('error', retry);
    c.on('end', () => retry());
    c.on('notification', () => wake());
    client = c;
    try {
      await c.connect();
      await c.query(`listen ${WAKE_CHANNEL}`);
    } catch (e) {
      retry(e as Error);
    }
  };
  void connect();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    const c = client;
    client = null;
    await c?.end().catch(() => {});
  };
}

export async function registerLifecycleJobs(
  boss: PgBoss,
  deps: Deps,
  opts: { pollingIntervalSeconds?: number; localConcurrency?: number; listenUrl?: string } = {},
): Promise<{ stop: () => Promise<void> }> {
  const polling = opts.pollingIntervalSeconds ?? 0.5;
  const workerId = await boss.work<WebhookDeliverJobData>(
    QUEUES.webhooksDeliver,
    // several subscriptions at once; one subscription's deliveries stay in one job (policy stately)
    { localConcurrency: opts.localConcurrency ?? 4, pollingIntervalSeconds: polling },
    async (jobs: Job<WebhookDeliverJobData>[]) => {
      for (const job of jobs) {
        const id = job.data.subscriptionId;
        const r = await deliverSubscription(deps, id, (at) =>
          asWorker(deps.pool, sql.fragment`to_jsonb(app.webhook_enqueue(${id}::uuid, ${at.toISOString()}::timestamptz))`),
        );
        deps.log.debug('webhooks delivered', { job: QUEUES.webhooksDeliver, subscriptionId: id, ...r });
      }
    },
  );
  await boss.schedule(QUEUES.webhooksPurge, '23 * * * *');
  await boss.work(QUEUES.webhooksPurge, { pollingIntervalSeconds: Math.max(polling, 2) }, async () => {
    const r = await purgeWebhookHistory(deps);
    if (r.events || r.logEntries) deps.log.info('webhook history purged', { job: QUEUES.webhooksPurge, ...r });
    return r;
  });
  const stopListening = opts.listenUrl ? listenForWakeUps(opts.listenUrl, () => boss.notifyWorker(workerId), deps.log) : async () => {};
  return { stop: stopListening };
}
