// The publish worker: runs the scheduled editions' pg-boss jobs (queue
// content.publish, written by the content trigger) through the integrations'
// connectors, exactly once, a batch at a time:
//
//   1. app.publish_claim_batch (one statement, own transaction, committed)
//      claims every job of a fetched batch: each edition's attempt is written
//      BEFORE its platform is called; editions no longer scheduled, whose job
//      is not this one or that await a confirmation are skipped; editions over
//      their integration's or connector's publish limits are put back with a
//      later start (the rest of the batch goes on). It also returns where the
//      media to send are stored, for signed URLs.
//   2. the connector calls run concurrently (at most PUBLISH_CONCURRENCY per
//      process), with no transaction open, each with the edition's idempotency
//      token. The sandbox platform's own writes are grouped too (one statement
//      per group, app.sandbox_receive_posts).
//   3. app.publish_record_batch stores the outcomes, grouped as they come in
//      (one statement per group): sent, failed, a retry of the same job after
//      PUBLISH_RETRY_BASE_MS * 2^(n-1) (transient, at most PUBLISH_MAX_ATTEMPTS
//      attempts per run), or awaiting_confirmation (unknown: never retried).
//      A platform's rate limit (failed with retryAt) goes back until its
//      reset without spending an attempt (app.publish_record_rate_limited).
//      For a connector with no idempotency but findPublished (X, LinkedIn),
//      an unknown outcome is retried instead, and every resend first asks the
//      platform whether the post exists since the version's first attempt:
//      found is recorded published, not found is sent, a failed look-up is
//      retried later (never a blind resend).
//
// Connectors that upload the file themselves (every one but sandbox and
// webhook) get each MediaRef's size and pixel size from its media row and
// read() the bytes from media storage, at most its recorded size, on demand.
//
// A worker killed between 1 and 3 leaves open attempts (some of a batch may be
// recorded, the rest not); their jobs come back through pg-boss's heartbeat
// monitor (heartbeatSeconds on the queue) and the next claim either re-sends
// (connectors that accept the token, with the same token; connectors with
// findPublished, after looking for the post) or marks the outcome unknown.
// Everything runs as pressroom_worker.
import type { Job, PgBoss } from 'pg-boss';
import type { Config } from '../config.ts';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { publishBatchSize, publishDeferrals, publishLateness, publishOutcomes } from '../metrics.ts';
import { createCredentialService, vaultOf, type AccountCredentials } from '../platforms/credentials.ts';
import { CONNECTOR_MODULES, isConnectorName } from '../platforms/index.ts';
import {
  ConnectorError,
  integrationRef,
  type Connector,
  type ConnectorName,
  type IntegrationRef,
  type MediaRef,
  type PublishableEdition,
  type PublishLimits,
  type PublishResult,
  type SandboxStore,
} from '../platforms/types.ts';
import { QUEUES } from './queues.ts';

export interface PublishJobData {
  contentId: string;
  workspaceId: string;
  version: number;
}

type PublishConfig = Pick<
  Config,
  | 'PUBLISH_TIMEOUT_MS'
  | 'PUBLISH_MAX_ATTEMPTS'
  | 'PUBLISH_RETRY_BASE_MS'
  | 'JOB_HEARTBEAT_SECONDS'
  | 'PUBLISH_CONCURRENCY'
  | 'PUBLISH_BATCH_SIZE'
  | 'PUBLISH_FETCH_LOOPS'
  | 'SIGNED_URL_TTL_SECONDS'
  // Connected accounts (server/platforms/credentials.ts): the vault and the accounts' endpoints.
  | 'DATA_DIR'
  | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'
> &
  Partial<Config>;

/** What the publish worker uses: the pool (as pressroom_worker), the connectors, the storage that signs media URLs. */
export interface PublishDeps extends Pick<AppDeps, 'pool' | 'log' | 'connectors' | 'storage'> {
  config: PublishConfig;
}

interface MediaLocation {
  id: string;
  key: string;
  filename: string;
  contentType: string;
}

interface Edition {
  id: string;
  rootId: string;
  workspaceId: string;
  caption: string;
  title: string | null;
  settings: Record<string, unknown>;
  scheduledAt: string | null;
  media: { id: string; type: 'image' | 'video' | 'gif'; contentType: string | null; altText: string | null }[];
  thread: { caption: string; mediaIds: string[] }[];
  integration: {
    id: string;
    connector: ConnectorName;
    platform: string;
    name: string;
    username: string | null;
    settings: Record<string, unknown>;
    webhookUrl: string | null;
    webhookSecret: string | null;
    status: string;
    deleted: boolean;
  };
}

type Claim = { jobId: string; contentId: string } & (
  | { action: 'send'; attemptId: string; attempt: number; runAttempt: number; token: string; resend: boolean; edition: Edition }
  | { action: 'skip'; reason: string }
  | { action: 'deferred'; reason: string; until: string }
);

interface ClaimBatch {
  batch: string;
  claims: Claim[];
  media: MediaLocation[];
}

/** What the media row says of a file, for connectors that upload it themselves. */
interface MediaFacts {
  id: string;
  size: number;
  width: number | null;
  height: number | null;
  altText: string | null;
  type: 'image' | 'video' | 'gif';
  contentType: string;
}

interface Outcome {
  attemptId: string;
  /** The edition's workspace: the record reads and writes that workspace's rows only. */
  workspaceId: string;
  outcome: 'published' | 'failed' | 'transient' | 'unknown';
  error: string | null;
  platformPostId: string | null;
  permalink: string | null;
}

/**
 * Group commit: items added while `parallel` flushes are in flight wait for
 * the next one, so under load each statement carries many items, and alone an
 * item waits for nothing but its own statement. Each item gets its own answer.
 */
export class GroupCommit<I, O> {
  private queue: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private running = 0;
  private readonly flushFn: (items: I[]) => Promise<O[]>;
  private readonly max: number;
  private readonly parallel: number;
  constructor(flushFn: (items: I[]) => Promise<O[]>, max = 500, parallel = 1) {
    this.flushFn = flushFn;
    this.max = max;
    this.parallel = parallel;
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.running < this.parallel) {
        this.running++;
        // Items added in the same turn of the event loop go in the first statement.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain() {
    while (this.queue.length > 0) {
      const take = this.queue.splice(0, this.max);
      try {
        const out = await this.flushFn(take.map((t) => t.item));
        take.forEach((t, i) => t.resolve(out[i]));
      } catch (e) {
        take.forEach((t) => t.reject(e));
      }
    }
    this.running--;
  }
}

/** At most `n` tasks at once, first come first served. */
class Semaphore {
  private free: number;
  private waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** The sandbox platform's memory for the worker, its writes grouped (app.sandbox_receive_posts). */
export function groupedSandboxStore(deps: Pick<PublishDeps, 'pool'>, parallel = 1): SandboxStore {
  type Post = Parameters<SandboxStore['receive']>[0];
  // Not durable: a post the sandbox loses in a crash of PostgreSQL is lost with the engine's
  // record that follows it (the WAL is flushed in order), and the post is sent again.
  const receive = new GroupCommit<Post, { platformPostId: string; permalink: string | null }>(
    (posts) => asWorker(deps.pool, sql.fragment`app.sandbox_receive_posts(${sql.jsonb(posts)})`, { durable: false }),
    500,
    parallel,
  );
  return {
    receive: (p) => receive.add(p),
    editCaption: async (p) =>
      (await asWorker(deps.pool, sql.fragment`to_jsonb(app.sandbox_edit_caption(${p.integrationId}::uuid, ${p.platformPostId}, ${p.caption}))`)) === true,
  };
}

/** Signed, expiring download URLs (valid for at least an hour: a platform may fetch after queueing). */
async function signedMediaUrls(deps: PublishDeps, media: MediaLocation[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const expiresAt = new Date(Date.now() + Math.max(deps.config.SIGNED_URL_TTL_SECONDS, 3600) * 1000);
  const driver = deps.storage.driver;
  await Promise.all(
    media.map(async (m) => {
      try {
        out.set(m.id, await driver.objectUrl({ mediaId: m.id, key: m.key, contentType: m.contentType, filename: m.filename, disposition: 'inline', expiresAt }));
      } catch {
        // Left to the caller's fallback.
      }
    }),
  );
  return out;
}

/** What one publish worker process shares across its batches. */
export interface PublishEngine {
  /** Publishes one fetched batch of jobs; one result per job (for logs and tests). */
  publishBatch(jobs: { id: string; data: PublishJobData }[]): Promise<Record<string, unknown>[]>;
}

/** Record statements in flight per worker process: one fetch loop claims while the others record. */
export function recordParallelism(config: Pick<Config, 'PUBLISH_FETCH_LOOPS'>): number {
  return Math.max(1, config.PUBLISH_FETCH_LOOPS - 1);
}

export function createPublishEngine(
  deps: PublishDeps,
  sandboxStore: SandboxStore = groupedSandboxStore(deps, recordParallelism(deps.config)),
): PublishEngine {
  const { pool, config, log } = deps;
  const registry = deps.connectors;
  // Re-sent after a worker died mid-call: with the same token, or after looking for the post.
  const resendable = registry.names().filter((n) => registry.get(n).acceptsIdempotencyToken || verifiesBeforeResend(registry.get(n)));
  const calls = new Semaphore(config.PUBLISH_CONCURRENCY);
  // Connected accounts: each call gets the account's decrypted credentials and endpoint.
  const credentials = createCredentialService({ pool, config, log });
  const needsAccount = (connector: string) => isConnectorName(connector) && CONNECTOR_MODULES[connector].connect !== 'none';
  // Records are not durable at commit (synchronous_commit off for them only): one lost in a
  // crash of PostgreSQL leaves its attempt open, as a worker killed before recording does, and
  // the next claim settles it (re-sent with its token, or marked unknown). Claims stay durable:
  // an attempt is on disk before its platform call.
  const recorder = new GroupCommit<Outcome, Record<string, unknown>>(
    (outcomes) => asWorker(pool, sql.fragment`app.publish_record_batch(${sql.jsonb(outcomes as never)})`, { durable: false }),
    500,
    recordParallelism(config),
  );

  async function send(
    claim: Extract<Claim, { action: 'send' }>,
    urls: Map<string, string>,
    accounts: Map<string, AccountCredentials>,
    files: Map<string, { facts: MediaFacts; key: string }>,
  ): Promise<Record<string, unknown>> {
    const e = claim.edition;
    const g = e.integration;
    const connector = registry.get(g.connector);
    const uploads = needsAccount(g.connector);
    // Every id resolves (the claim checked the media); the URN is a last resort for bytes that cannot be signed.
    const mediaUrl = (id: string) => urls.get(id) ?? `urn:pressroom:media:${id}`;
    const types = new Map(e.media.map((m) => [m.id, m.type]));
    const ref = (id: string, fallback: { type: MediaRef['type']; contentType?: string | null; altText: string | null }): MediaRef => {
      const f = files.get(id);
      const out: MediaRef = {
        id,
        type: f?.facts.type ?? fallback.type,
        url: mediaUrl(id),
        contentType: (fallback.contentType ?? f?.facts.contentType) || undefined,
        altText: fallback.altText ?? f?.facts.altText ?? null,
      };
      if (uploads && f) {
        // The bytes are read only when the connector asks, bounded by the size the media row records.
        out.size = f.facts.size;
        out.width = f.facts.width;
        out.height = f.facts.height;
        out.read = async () => {
          const bytes = await deps.storage.driver.read(f.key, f.facts.size);
          if (!bytes) throw new ConnectorError('UPSTREAM_ERROR', `The file of media ${id} is missing from media storage.`);
          return bytes;
        };
      }
      return out;
    };
    const edition: PublishableEdition = {
      id: e.id,
      rootId: e.rootId,
      attempt: claim.runAttempt,
      caption: e.caption,
      title: e.title,
      settings: e.settings ?? {},
      media: e.media.map((m) => ref(m.id, { type: m.type, contentType: m.contentType, altText: m.altText })),
      thread: e.thread.map((t) => ({
        caption: t.caption,
        media: t.mediaIds.map((id) => ref(id, { type: types.get(id) ?? 'image', altText: null })),
      })),
      scheduledAt: e.scheduledAt,
      idempotencyToken: claim.token,
    };
    // A connector with no idempotency looks for the post before any resend (attempt after the
    // first of this version, or an attempt re-sent after a worker died).
    const verify = verifiesBeforeResend(connector) && (claim.resend || claim.attempt > 1);
    let since: Date | null = null;
    if (verify) since = await firstAttemptStart(e.workspaceId, e.id, claim.token);
    // Set when the look-up failed: for good (the account cannot be read: NOT_SUPPORTED), or for now.
    let lookupFailed: 'never' | 'now' | null = null;
    const publishAs = (r: IntegrationRef): Promise<PublishResult> =>
      calls.run(async () => {
        if (verify && since) {
          let found: Awaited<ReturnType<NonNullable<Connector['findPublished']>>>;
          try {
            found = await connector.findPublished!(r, edition, since);
          } catch (err) {
            const why = err instanceof Error ? err.message : String(err);
            if (err instanceof ConnectorError && err.code === 'NOT_SUPPORTED') {
              lookupFailed = 'never';
              return { state: 'unknown', error: `An earlier attempt may have published this post, and the platform cannot be asked: check it and resolve the outcome (${why})` };
            }
            lookupFailed = 'now';
            return { state: 'failed', permanent: false, error: `Could not check whether an earlier attempt was published; retried later: ${why}` };
          }
          if (found) return { state: 'published', platformPostId: found.platformPostId, permalink: found.permalink };
        }
        return connector.publish(r, edition, { sandboxStore });
      });
    let result: PublishResult;
    try {
      if (!needsAccount(g.connector)) result = await publishAs(integrationRef(g, vaultOf(deps.config)));
      else result = await publishConnected(g.id, integrationRef(g, vaultOf(deps.config)), accounts.get(g.id), publishAs);
    } catch (err) {
      // A connector that cannot do the call at all (missing secret, unsupported): permanent.
      result =
        err instanceof ConnectorError
          ? { state: 'failed', permanent: true, error: err.message }
          : { state: 'failed', permanent: false, error: `The connector failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    let outcome: Outcome['outcome'] = result.state === 'published' ? 'published' : result.state === 'unknown' ? 'unknown' : result.permanent ? 'failed' : 'transient';
    // Unknown, but the platform can be asked: retried (the retry looks first), except on the
    // run's last attempt, which awaits a confirmation rather than failing a post that may exist.
    const lastAttempt = claim.runAttempt >= config.PUBLISH_MAX_ATTEMPTS;
    if (outcome === 'unknown' && verifiesBeforeResend(connector) && !lastAttempt && lookupFailed !== 'never') outcome = 'transient';
    // A look-up that failed on the run's last attempt: the earlier post may exist, so not failed.
    if (outcome === 'transient' && lookupFailed === 'now' && lastAttempt) outcome = 'unknown';
    if (outcome === 'published' && e.scheduledAt) publishLateness.observe({ connector: g.connector }, Math.max(0, Date.now() - Date.parse(e.scheduledAt)) / 1000);
    const error = result.state === 'published' ? null : result.error;
    const recorded =
      result.state === 'failed' && !result.permanent && result.retryAt
        ? // The platform's rate limit: back at its reset, no attempt spent.
          await asWorker<Record<string, unknown>>(
            pool,
            sql.fragment`app.publish_record_rate_limited(${e.workspaceId}::uuid, ${claim.attemptId}::uuid, ${error}, ${result.retryAt}::timestamptz)`,
          )
        : await recorder.add({
            attemptId: claim.attemptId,
            workspaceId: e.workspaceId,
            outcome,
            error,
            platformPostId: result.state === 'published' ? result.platformPostId : null,
            permalink: result.state === 'published' ? result.permalink : null,
          });
    publishOutcomes.inc({ connector: g.connector, outcome });
    log.info('publish attempt', { job: QUEUES.publish, contentId: e.id, attempt: claim.attempt, resend: claim.resend, verified: verify, outcome, ...recorded });
    return { outcome, ...recorded };
  }

  /** When this edition's version was first tried (its token's first attempt), less a minute for the clocks' skew. */
  async function firstAttemptStart(workspaceId: string, contentId: string, token: string): Promise<Date> {
    const at = await asWorker<string | null>(
      pool,
      sql.fragment`(select to_jsonb(min(a.started_at)) from app.publish_attempts a
        where a.workspace_id = ${workspaceId}::uuid and a.content_item_id = ${contentId}::uuid and a.idempotency_token = ${token})`,
    );
    return new Date((at ? Date.parse(at) : Date.now()) - 60_000);
  }

  /** Sizes, pixel sizes and alt texts of the media a batch sends to connectors that upload files. */
  async function mediaFacts(claims: Claim[], media: MediaLocation[]): Promise<Map<string, { facts: MediaFacts; key: string }>> {
    const ids = new Set<string>();
    const workspaces = new Set<string>();
    for (const c of claims) {
      if (c.action !== 'send' || !needsAccount(c.edition.integration.connector)) continue;
      workspaces.add(c.edition.workspaceId);
      for (const m of c.edition.media) ids.add(m.id);
      for (const t of c.edition.thread) for (const id of t.mediaIds) ids.add(id);
    }
    const out = new Map<string, { facts: MediaFacts; key: string }>();
    if (ids.size === 0) return out;
    const rows = await asWorker<MediaFacts[]>(
      pool,
      sql.fragment`(select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'size', m.file_size, 'width', m.width, 'height', m.height,
        'altText', m.alt_text, 'type', m.type, 'contentType', m.content_type)), '[]') from app.media_items m
        where m.workspace_id = any (${sql.array([...workspaces], 'uuid')}) and m.id = any (${sql.array([...ids], 'uuid')}))`,
    );
    const keys = new Map(media.map((m) => [m.id, m.key]));
    for (const f of rows) {
      const key = keys.get(f.id);
      if (key) out.set(f.id, { facts: f, key });
    }
    return out;
  }

  /**
   * A platform account's publish: with its credentials; an integration to reconnect fails at
   * once with the reason (permanent: retried by hand after the reconnect); a token the platform
   * refuses (reauth) is refreshed once under its lock and the call made again.
   */
  async function publishConnected(
    id: string,
    ref: IntegrationRef,
    account: AccountCredentials | undefined,
    publishAs: (ref: IntegrationRef) => Promise<PublishResult>,
  ): Promise<PublishResult> {
    const unusable = (a: AccountCredentials | undefined): PublishResult | null => {
      if (!a) return { state: 'failed', permanent: true, error: 'No credentials were found for this integration.' };
      if (a.state === 'reconnect_required') return { state: 'failed', permanent: true, error: `The account must be reconnected (POST .../integrations/${id}/reconnect): ${a.reason}` };
      if (a.state === 'missing') return { state: 'failed', permanent: true, error: a.reason };
      if (a.state === 'retry') return { state: 'failed', permanent: false, error: a.reason, ...(a.retryAt ? { retryAt: a.retryAt.toISOString() } : {}) };
      return null;
    };
    const refused = unusable(account);
    if (refused || account?.state !== 'ok') return refused!;
    const first = await publishAs({ ...ref, credentials: account.credentials, endpoint: account.endpoint });
    if (first.state !== 'failed' || !first.reauth) return first;
    const again = await credentials.refresh(id, { force: true, seen: account.ciphertext });
    if (again.state !== 'ok') return unusable(again) ?? first;
    return publishAs({ ...ref, credentials: again.credentials, endpoint: again.endpoint });
  }

  return {
    async publishBatch(jobs) {
      if (jobs.length === 0) return [];
      publishBatchSize.observe(jobs.length);
      const claimed = await asWorker<ClaimBatch>(
        pool,
        sql.fragment`app.publish_claim_batch(${sql.jsonb(jobs.map((j) => ({ jobId: j.id, contentId: j.data.contentId, workspaceId: j.data.workspaceId })))}, ${sql.array(resendable, 'text')})`,
      );
      const urls = await signedMediaUrls(deps, claimed.media);
      let files = new Map<string, { facts: MediaFacts; key: string }>();
      try {
        files = await mediaFacts(claimed.claims, claimed.media);
      } catch (e) {
        // Without them a connector that uploads fails the attempt (transient: the bytes were not given).
        log.error('reading the media of a batch failed', { job: QUEUES.publish, err: e instanceof Error ? e.message : String(e) });
      }
      const connected = claimed.claims.flatMap((c) => (c.action === 'send' && needsAccount(c.edition.integration.connector) ? [c.edition.integration.id] : []));
      let accounts = new Map<string, AccountCredentials>();
      if (connected.length) {
        try {
          accounts = await credentials.forIntegrations(connected);
        } catch (e) {
          // The claims are made: their editions are retried (transient), not left open.
          log.error('reading the credentials of a batch failed', { job: QUEUES.publish, err: e instanceof Error ? e.message : String(e) });
          for (const id of connected) accounts.set(id, { state: 'retry', reason: 'The credentials could not be read; retried later.', retryAt: null });
        }
      }
      const byJob = new Map(claimed.claims.map((c) => [c.jobId, c]));
      return Promise.all(
        jobs.map(async (job) => {
          const claim = byJob.get(job.id);
          if (!claim) return { skipped: 'not claimed' };
          if (claim.action === 'deferred') {
            publishDeferrals.inc();
            return { deferred: claim.reason, until: claim.until };
          }
          if (claim.action !== 'send') {
            publishOutcomes.inc({ connector: 'none', outcome: 'skipped' });
            return { skipped: claim.reason };
          }
          return send(claim, urls, accounts, files);
        }),
      );
    },
  };
}

/** A connector with no idempotency whose platform can be asked whether a post exists (X, LinkedIn). */
function verifiesBeforeResend(c: Connector): boolean {
  return !c.acceptsIdempotencyToken && typeof c.findPublished === 'function';
}

/** The limits every registered connector declares, as app.declare_connector_limits takes them. */
function declaredLimits(deps: PublishDeps): Record<string, PublishLimits> {
  const out: Record<string, PublishLimits> = {};
  for (const name of deps.connectors.names()) out[name] = deps.connectors.get(name).publishLimits ?? {};
  return out;
}

/**
 * Registers the publish worker on `boss` (pg-boss on the owner URL). Records
 * the connectors' publish limits, sets the queue's heartbeat
 * (JOB_HEARTBEAT_SECONDS) so a dead worker's jobs return to the queue once its
 * heartbeat is older than that (the supervisor must run at least every ~15 s:
 * superviseIntervalSeconds on the PgBoss instance), and a retry limit that
 * covers such returns. A batch whose claim or record fails (the database
 * refused a statement) is retried after 1 s, doubling up to 5 minutes: with no
 * delay, one failing statement spent the 1,000 retries in about a minute and
 * left its editions scheduled with a failed job.
 */
export async function registerPublishJobs(boss: PgBoss, deps: PublishDeps, opts: { pollingIntervalSeconds?: number } = {}) {
  const { config } = deps;
  await asWorker(deps.pool, sql.fragment`app.declare_connector_limits(${sql.jsonb(declaredLimits(deps) as never)})`);
  await boss.updateQueue(QUEUES.publish, {
    heartbeatSeconds: config.JOB_HEARTBEAT_SECONDS,
    retryLimit: 1000,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 300,
  });
  const engine = createPublishEngine(deps);
  // PUBLISH_FETCH_LOOPS fetch loops of PUBLISH_BATCH_SIZE jobs: one claims or
  // records while the others' platform calls run. A full batch fetches the
  // next one at once (burstWhenBatchFull); otherwise pg-boss polls.
  let workerId: string | undefined;
  workerId = await boss.work<PublishJobData>(
    QUEUES.publish,
    {
      localConcurrency: config.PUBLISH_FETCH_LOOPS,
      batchSize: config.PUBLISH_BATCH_SIZE,
      burstWhenBatchFull: config.PUBLISH_BATCH_SIZE > 1,
      pollingIntervalSeconds: opts.pollingIntervalSeconds ?? 0.5,
    },
    async (jobs: Job<PublishJobData>[]) => {
      const results = await engine.publishBatch(jobs);
      // A batch that sent editions of a limited channel and put others back has freed slots the
      // paced ones are coming back for: fetch again now, not after the poll interval (a batch
      // that sent nothing waits for the poll, so a channel at its limit is not fetched in a loop).
      if (workerId && results.some((r) => 'deferred' in r) && results.some((r) => 'outcome' in r)) boss.notifyWorker(workerId);
      return results;
    },
  );
  return workerId;
}
