// The publish worker: runs each scheduled edition's pg-boss job
// (queue content.publish, written by the content trigger) through the
// integration's connector, exactly once:
//
//   1. app.publish_claim (own transaction, committed) records the attempt
//      BEFORE the platform is called; it refuses editions that are no longer
//      scheduled, whose job is not this one, or that await a confirmation.
//   2. the connector is called with the edition's idempotency token.
//   3. app.publish_record stores the outcome: sent, failed, a retry of the
//      same job after PUBLISH_RETRY_BASE_MS * 2^(n-1) (transient, at most
//      PUBLISH_MAX_ATTEMPTS attempts per run), or awaiting_confirmation
//      (unknown: never retried automatically).
//
// A worker killed between 1 and 3 leaves an open attempt; its job comes back
// through pg-boss's heartbeat monitor (heartbeatSeconds on the queue) and the
// next claim either re-sends with the same token (connectors that accept
// one) or marks the outcome unknown. Everything runs as pressroom_worker.
import type { Job, PgBoss } from 'pg-boss';
import type { Config } from '../config.ts';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { workerSandboxStore } from '../platforms/stores.ts';
import { ConnectorError, integrationRef, type IntegrationRef, type PublishResult, type SandboxStore } from '../platforms/types.ts';
import { QUEUES } from './queues.ts';

export interface PublishJobData {
  contentId: string;
  workspaceId: string;
  version: number;
}

type PublishConfig = Pick<
  Config,
  'PUBLISH_TIMEOUT_MS' | 'PUBLISH_MAX_ATTEMPTS' | 'PUBLISH_RETRY_BASE_MS' | 'JOB_HEARTBEAT_SECONDS' | 'PUBLISH_CONCURRENCY' | 'SIGNED_URL_TTL_SECONDS'
>;

/** What the publish worker uses: the pool (as pressroom_worker), the connectors, the storage that signs media URLs. */
export interface PublishDeps extends Pick<AppDeps, 'pool' | 'log' | 'connectors' | 'storage'> {
  config: PublishConfig;
}

/**
 * Signed, expiring download URLs of the edition's media, for the platform to
 * fetch (valid for at least an hour: a platform may fetch after queueing).
 */
async function signedMediaUrls(deps: PublishDeps, ids: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const rows = await asWorker<{ id: string; key: string; filename: string; contentType: string }[]>(
    deps.pool,
    sql.fragment`(select coalesce(jsonb_agg(jsonb_build_object('id', id, 'key', storage_key, 'filename', filename, 'contentType', content_type)), '[]')
                  from app.media_items where id = any (${sql.array([...new Set(ids)], 'uuid')}))`,
  );
  const expiresAt = new Date(Date.now() + Math.max(deps.config.SIGNED_URL_TTL_SECONDS, 3600) * 1000);
  const driver = deps.storage.driver;
  await Promise.all(
    rows.map(async (m) => {
      try {
        out.set(m.id, await driver.objectUrl({ mediaId: m.id, key: m.key, contentType: m.contentType, filename: m.filename, disposition: 'inline', expiresAt }));
      } catch {
        // Left to the caller's fallback.
      }
    }),
  );
  return out;
}

interface Claim {
  action: 'send' | 'skip';
  reason?: string;
  attemptId: string;
  attempt: number;
  runAttempt: number;
  token: string;
  resend: boolean;
  edition: {
    id: string;
    rootId: string;
    caption: string;
    title: string | null;
    settings: Record<string, unknown>;
    scheduledAt: string | null;
    media: { id: string; type: 'image' | 'video' | 'gif'; contentType: string | null; altText: string | null }[];
    thread: { caption: string; mediaIds: string[] }[];
    integration: {
      id: string;
      connector: 'sandbox' | 'webhook';
      platform: string;
      name: string;
      username: string | null;
      settings: Record<string, unknown>;
      webhookUrl: string | null;
      webhookSecret: string | null;
      status: string;
      deleted: boolean;
    };
  };
}

/** Publishes one job's edition; returns what happened (for logs and tests). */
export async function publishOne(
  deps: PublishDeps,
  sandboxStore: SandboxStore,
  job: { id: string; data: PublishJobData },
): Promise<Record<string, unknown>> {
  const { pool, config, log } = deps;
  const registry = deps.connectors;
  const resendable = registry.names().filter((n) => registry.get(n).acceptsIdempotencyToken);
  const claim = await asWorker<Claim>(
    pool,
    sql.fragment`app.publish_claim(${job.data.contentId}::uuid, ${job.id}::uuid, ${sql.array(resendable, 'text')})`,
  );
  if (claim.action !== 'send') return { skipped: claim.reason };
  const e = claim.edition;
  const g = e.integration;
  let result: PublishResult;
  // A channel that is disconnected or deleted was failed by app.publish_claim.
  const integration = integrationRef(g);

  const urls = await signedMediaUrls(deps, [...e.media.map((m) => m.id), ...e.thread.flatMap((t) => t.mediaIds)]);
  // Every id resolves (the claim checked the media); the URN is a last resort for bytes that cannot be signed.
  const mediaUrl = (id: string) => urls.get(id) ?? `urn:pressroom:media:${id}`;
  const types = new Map(e.media.map((m) => [m.id, m.type]));
  try {
    result = await registry.get(g.connector).publish(
      integration,
      {
        id: e.id,
        rootId: e.rootId,
        attempt: claim.runAttempt,
        caption: e.caption,
        title: e.title,
        settings: e.settings ?? {},
        media: e.media.map((m) => ({ id: m.id, type: m.type, url: mediaUrl(m.id), contentType: m.contentType ?? undefined, altText: m.altText })),
        thread: e.thread.map((t) => ({
          caption: t.caption,
          media: t.mediaIds.map((id) => ({ id, type: types.get(id) ?? 'image', url: mediaUrl(id), altText: null })),
        })),
        scheduledAt: e.scheduledAt,
        idempotencyToken: claim.token,
      },
      { sandboxStore },
    );
  } catch (err) {
    // A connector that cannot do the call at all (missing secret, unsupported): permanent.
    result =
      err instanceof ConnectorError
        ? { state: 'failed', permanent: true, error: err.message }
        : { state: 'failed', permanent: false, error: `The connector failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  const outcome = result.state === 'published' ? 'published' : result.state === 'unknown' ? 'unknown' : result.permanent ? 'failed' : 'transient';
  const recorded = await asWorker(
    pool,
    sql.fragment`app.publish_record(${claim.attemptId}::uuid, ${outcome}, ${result.state === 'published' ? null : result.error},
      ${result.state === 'published' ? result.platformPostId : null}, ${result.state === 'published' ? result.permalink : null})`,
  );
  log.info('publish attempt', { job: QUEUES.publish, contentId: e.id, attempt: claim.attempt, resend: claim.resend, outcome, ...recorded });
  return { outcome, ...recorded };
}

/**
 * Registers the publish worker on `boss` (pg-boss on the owner URL). Sets the
 * queue's heartbeat (JOB_HEARTBEAT_SECONDS) so a dead worker's jobs return
 * to the queue once its heartbeat is older than that (the supervisor must run
 * at least every ~15 s: superviseIntervalSeconds on the PgBoss instance), and
 * a retry limit that covers such returns.
 */
export async function registerPublishJobs(boss: PgBoss, deps: PublishDeps, opts: { pollingIntervalSeconds?: number } = {}) {
  const { config } = deps;
  await boss.updateQueue(QUEUES.publish, {
    heartbeatSeconds: config.JOB_HEARTBEAT_SECONDS,
    retryLimit: 1000,
    retryDelay: 0,
    retryBackoff: false,
  });
  const sandboxStore = workerSandboxStore(deps.pool);
  // PUBLISH_CONCURRENCY editions at a time: a few fetch loops, each taking a
  // batch and publishing its editions side by side. A full batch fetches the
  // next one at once (burstWhenBatchFull); otherwise pg-boss polls.
  const loops = Math.min(config.PUBLISH_CONCURRENCY, 2);
  const batchSize = Math.max(1, Math.ceil(config.PUBLISH_CONCURRENCY / loops));
  return boss.work<PublishJobData>(
    QUEUES.publish,
    {
      localConcurrency: loops,
      batchSize,
      burstWhenBatchFull: batchSize > 1,
      pollingIntervalSeconds: opts.pollingIntervalSeconds ?? 0.5,
    },
    async (jobs: Job<PublishJobData>[]) => Promise.all(jobs.map((job) => publishOne(deps, sandboxStore, job))),
  );
}
