// Lifecycle webhook delivery (docs/webhooks.md), run as pressroom_worker:
//
//   webhooks.deliver  data {subscriptionId}: sends the subscription's pending
//                     deliveries (app.webhook_deliveries) in outbox order, one
//                     at a time, each a Standard Webhooks signed POST (the
//                     `standardwebhooks` library: webhook-id is the event id,
//                     so a retry or redelivery keeps it). A 2xx answer
//                     delivers; anything else (5xx, 4xx, a timeout, a refused
//                     connection) is a failed attempt: app.webhook_record_attempt
//                     logs it and sets the retry time with backoff, and the
//                     job stops there and queues itself for that time, so no
//                     later event passes a failed one (events of one content
//                     item arrive in order). After webhook_pause_after_failures
//                     failures in a row SQL pauses the subscription.
//                     Queued by the outbox triggers (app.webhook_emit) in the
//                     transaction of the change; policy stately with the
//                     subscription as singleton key: at most one queued and one
//                     running per subscription.
//
// The network call is made outside any transaction: claim (one short
// statement), POST, record (another).
import http from 'node:http';
import https from 'node:https';
import type { Job, PgBoss } from 'pg-boss';
import { Webhook } from 'standardwebhooks';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { guardedLookup, classifyAddress, parseWebhookUrl, urlHost } from '../net/ssrf.ts';
import { isIP } from 'node:net';
import { decryptSubscriptionSecret } from '../webhooks/secret.ts';
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
  opts: { timeoutMs: number; allowPrivateNetworks: boolean },
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
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const done = (r: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = mod.request(target, { method: 'POST', headers, lookup: guardedLookup(opts.allowPrivateNetworks), agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MAX_READ_BYTES) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS);
        if (status >= 200 && status < 300) {
          done({ ok: true, status, excerpt, error: null, durationMs: Math.round(performance.now() - started), request });
        } else {
          done(fail(`The receiver answered HTTP ${status}.`, status, excerpt));
        }
      });
      res.on('error', (e) => done(fail(`The answer broke off: ${e.message}`)));
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    req.on('error', (e) => done(fail(`The receiver could not be reached: ${e.message}`)));
    req.end(body);
  });
}

/** Sends what is due for one subscription, in order; returns what happened (for logs and tests). */
export async function deliverSubscription(
  deps: Deps,
  subscriptionId: string,
  reschedule: (at: Date) => Promise<unknown>,
  budgetMs = JOB_BUDGET_MS,
): Promise<{ delivered: number; failed: number; next: 'stop' | 'wait' | 'continue' }> {
  let delivered = 0;
  let failed = 0;
  const started = performance.now();
  let claim = await asWorker<Claim>(deps.pool, sql.fragment`app.webhook_claim(${subscriptionId}::uuid)`);
  for (;;) {
    if (claim.action === 'stop') return { delivered, failed, next: 'stop' };
    if (performance.now() - started > budgetMs) {
      // A long backlog goes on in the next job (queued now), so no job runs near its expiry.
      await reschedule(new Date());
      return { delivered, failed, next: 'continue' };
    }
    if (claim.action === 'wait') {
      await reschedule(new Date(claim.until));
      return { delivered, failed, next: 'wait' };
    }
    const secret = await decryptSubscriptionSecret(deps.storage.secrets, claim.subscription.id, Buffer.from(claim.subscription.secretCiphertext, 'base64'));
    const payload = {
      type: claim.event.type,
      timestamp: claim.event.occurredAt,
      workspaceId: claim.event.workspaceId,
      data: claim.event.data,
    };
    const result: AttemptResult =
      secret === null
        ? { ok: false, status: null, excerpt: null, durationMs: 0, error: 'The signing secret cannot be read by this server (was SIGNED_URL_SECRET changed?); rotate it.', request: { url: claim.subscription.url, headers: {}, body: payload } }
        : await postSigned(claim.subscription.url, secret, claim.event.id, payload, {
            timeoutMs: claim.timeoutMs,
            allowPrivateNetworks: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
          });
    const recorded = await asWorker<{ recorded: boolean; delivered?: boolean; paused?: boolean; next?: Claim }>(
      deps.pool,
      sql.fragment`app.webhook_record_attempt(${claim.deliveryId}::uuid, ${result.ok}, ${sql.jsonb(result.request as never)},
        ${result.status}, ${result.excerpt}, ${result.error}, ${result.durationMs})`,
    );
    if (result.ok) delivered++;
    else {
      failed++;
      deps.log.info('webhook attempt failed', { job: QUEUES.webhooksDeliver, subscriptionId, deliveryId: claim.deliveryId, attempt: claim.attempt, error: result.error, paused: recorded.paused });
    }
    // app.webhook_record_attempt hands the next claim back in the same transaction.
    claim = recorded.next ?? (await asWorker<Claim>(deps.pool, sql.fragment`app.webhook_claim(${subscriptionId}::uuid)`));
  }
}

export async function registerLifecycleJobs(boss: PgBoss, deps: Deps, opts: { pollingIntervalSeconds?: number; localConcurrency?: number } = {}) {
  const polling = opts.pollingIntervalSeconds ?? 0.5;
  await boss.work<WebhookDeliverJobData>(
    QUEUES.webhooksDeliver,
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
}
