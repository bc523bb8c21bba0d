// Inbox jobs, run as pressroom_worker:
//
//   inbox.fold    data {integrationId}: app.inbox_fold folds the integration's
//                 new events into threads and messages, batch after batch.
//                 api.inbox_receive queues it (policy stately, singleton key
//                 the integration: one queued per integration, so a burst of
//                 deliveries makes one fold, not one per delivery).
//   inbox.action  data {messageId, action: reply | moderate}: a reply or a
//                 moderation through the integration's connector. An
//                 integration of a platform connector (mastodon, bluesky, x,
//                 linkedin) acts as its connected account: the credentials
//                 publishing uses (server/platforms/credentials.ts), refreshed
//                 once when the platform refuses the token; one to reconnect
//                 fails at once with the reason. An integration of sandbox or
//                 webhook with a platform token set by hand (PUT
//                 .../inbox-platform-token; facebook, instagram, x) answers
//                 through the platform's API with that token
//                 (server/platforms/inbox-platforms.ts); a connected account
//                 never uses that token (docs/inbox.md, "Replying through
//                 the platforms' APIs").
//                 app.inbox_action_claim hands out the work only while this
//                 job is the message's job and the action still pending;
//                 app.inbox_action_record stores the outcome. A reply that
//                 fails is left failed with the reason (the user retries it:
//                 POST .../retry); pg-boss's own retry covers a worker that
//                 died before recording, and re-sends with the same token.
//   inbox.purge-deliveries  hourly: app.inbox_purge_deliveries deletes raw
//                 deliveries older than setting inbox_delivery_retention_days
//                 (default 30) whose events are all folded, batch after batch.
//                 The events stay (de-duplication and folding read them), so
//                 a late redelivery still changes nothing.
import type { Job, PgBoss } from 'pg-boss';
import { sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { AppDeps } from '../deps.ts';
import { decryptHookSecret, PLATFORM_TOKEN_BINDING } from '../inbox/secrets.ts';
import { createPlatformInboxClient, INBOX_PLATFORMS, type InboxPlatform } from '../platforms/inbox-platforms.ts';
import { callAsAccount, connectsAccount, createCredentialService, vaultOf } from '../platforms/credentials.ts';
import { ConnectorError, integrationRef, type Connector, type ConnectorName, type InboxActionResult, type IntegrationRef } from '../platforms/types.ts';
import { QUEUES } from './queues.ts';

export interface InboxFoldJobData {
  integrationId: string;
}

export interface InboxActionJobData {
  messageId: string;
  workspaceId: string;
  action: 'reply' | 'moderate';
}

type Deps = Pick<AppDeps, 'pool' | 'log' | 'connectors' | 'config' | 'storage'>;

/** Folds everything new of one integration; returns how many events. */
export async function foldInbox(deps: Pick<AppDeps, 'pool'>, integrationId: string): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await asWorker<{ folded: number; more: boolean }>(deps.pool, sql.fragment`app.inbox_fold(${integrationId}::uuid)`);
    total += r.folded;
    if (!r.more) return total;
  }
}

interface ActionClaim {
  action: 'send' | 'skip';
  kind: 'reply' | 'moderate';
  integration: Omit<IntegrationRef, 'settings' | 'connector'> & {
    connector: ConnectorName;
    settings: Record<string, unknown> | null;
    active: boolean;
    /** base64 AES-GCM ciphertext of the platform access token (app.inbox_platform_tokens), when one is set. */
    platformTokenCiphertext: string | null;
  };
  thread: { kind: 'comment' | 'message'; platformThreadId: string };
  message: { id: string; text: string | null; platformMessageId: string | null; inReplyTo: string | null; moderation: 'hide' | 'unhide' | 'delete' | null; attempt: number };
}

type Channel = Pick<Connector, 'reply' | 'moderate'>;

/**
 * Where an integration's replies and moderation go. A connected account (a platform
 * connector): its connector with the account's credentials, refreshed once on a refused
 * token; the hand-set platform token is never used for it. Otherwise (sandbox, webhook): the
 * platform's API when a platform token is set (facebook, instagram, x), else its connector.
 */
async function inboxChannel(deps: Deps, integ: ActionClaim['integration']): Promise<Channel> {
  if (connectsAccount(integ.connector)) return accountChannel(deps, integ.id, deps.connectors.get(integ.connector));
  if (!integ.platformTokenCiphertext || !(INBOX_PLATFORMS as readonly string[]).includes(integ.platform)) return deps.connectors.get(integ.connector);
  const platform = integ.platform as InboxPlatform;
  const token = await decryptHookSecret(deps.storage.secrets, integ.id, PLATFORM_TOKEN_BINDING, Buffer.from(integ.platformTokenCiphertext, 'base64'));
  const unreadable: InboxActionResult = { state: 'failed', permanent: true, error: 'The platform token of this integration cannot be read by this server (was SIGNED_URL_SECRET changed?); set it again.' };
  if (token === null) return { reply: async () => unreadable, moderate: async () => unreadable };
  const client = createPlatformInboxClient({ metaBaseUrl: deps.config.META_GRAPH_BASE_URL, xBaseUrl: deps.config.X_API_BASE_URL, timeoutMs: deps.config.PUBLISH_TIMEOUT_MS });
  return { reply: (_i, r) => client.reply(platform, token, r), moderate: (_i, m) => client.moderate(platform, token, m) };
}

/** A connected account's replies and moderation: its credentials, one refresh when the platform refuses the token. */
async function accountChannel(deps: Deps, integrationId: string, connector: Connector): Promise<Channel> {
  const service = createCredentialService({ pool: deps.pool, config: deps.config, log: deps.log });
  const account = (await service.forIntegrations([integrationId])).get(integrationId);
  const as = async (ref: IntegrationRef, call: (ref: IntegrationRef) => Promise<InboxActionResult>): Promise<InboxActionResult> => {
    const r = await callAsAccount(service, ref, account, call, (v) => v.state === 'failed' && v.reauth === true);
    if (r.state === 'called') return r.value;
    const a = r.account;
    if (a.state === 'reconnect_required') return { state: 'failed', permanent: true, error: `The account must be reconnected (POST .../integrations/${integrationId}/reconnect): ${a.reason}` };
    return { state: 'failed', permanent: a.state === 'missing', error: a.reason };
  };
  return {
    reply: (ref, reply) => as(ref, (r) => connector.reply(r, reply)),
    moderate: (ref, m) => as(ref, (r) => connector.moderate(r, m)),
  };
}

/** Carries out one reply or moderation; returns what happened (for logs and tests). */
export async function runInboxAction(deps: Deps, job: { id: string; data: InboxActionJobData }): Promise<Record<string, unknown>> {
  const { pool, log } = deps;
  const { messageId, action } = job.data;
  const claim = await asWorker<ActionClaim>(pool, sql.fragment`app.inbox_action_claim(${messageId}::uuid, ${job.id}::uuid, ${action})`);
  if (claim.action !== 'send') return { skipped: true };
  const m = claim.message;
  let result: InboxActionResult;
  if (!claim.integration.active) {
    result = { state: 'failed', permanent: true, error: 'The integration was disconnected or deleted.' };
  } else {
    const integration = integrationRef(claim.integration, vaultOf(deps.config));
    const connector = await inboxChannel(deps, claim.integration);
    try {
      if (action === 'reply') {
        result = await connector.reply(integration, {
          messageId: m.id,
          threadKind: claim.thread.kind,
          platformThreadId: claim.thread.platformThreadId,
          inReplyTo: m.inReplyTo,
          text: m.text ?? '',
          attempt: m.attempt,
          idempotencyToken: `inbox-reply:${m.id}:${m.attempt}`,
        });
      } else {
        result = await connector.moderate(integration, {
          messageId: m.id,
          threadKind: claim.thread.kind,
          platformThreadId: claim.thread.platformThreadId,
          platformMessageId: m.platformMessageId ?? '',
          action: m.moderation ?? 'hide',
          idempotencyToken: `inbox-moderate:${m.id}:${m.moderation}:${job.id}`,
        });
      }
    } catch (err) {
      result =
        err instanceof ConnectorError
          ? { state: 'failed', permanent: true, error: err.message }
          : { state: 'failed', permanent: false, error: `The connector failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
  const ok = result.state === 'done';
  const recorded = await asWorker(
    pool,
    sql.fragment`app.inbox_action_record(${messageId}::uuid, ${job.id}::uuid, ${action}, ${ok},
      ${ok ? null : (result as { error: string }).error}, ${ok ? (result as { platformMessageId: string | null }).platformMessageId : null})`,
  );
  log.info('inbox action', { job: QUEUES.inboxAction, messageId, action, ok, ...recorded });
  return { ok, ...recorded };
}

const PURGE_BATCH = 500;
const PURGE_MAX_BATCHES = 200;

/** Deletes the raw deliveries past their retention; returns how many. */
export async function purgeInboxDeliveries(deps: Pick<AppDeps, 'pool'>): Promise<{ purged: number; retentionDays: number }> {
  let purged = 0;
  let retentionDays = 0;
  for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
    const r = await asWorker<{ purged: number; more: boolean; retentionDays: number }>(deps.pool, sql.fragment`app.inbox_purge_deliveries(${PURGE_BATCH})`);
    purged += r.purged;
    retentionDays = r.retentionDays;
    if (!r.more) break;
  }
  return { purged, retentionDays };
}

export async function registerInboxJobs(boss: PgBoss, deps: Deps, opts: { pollingIntervalSeconds?: number } = {}) {
  const polling = opts.pollingIntervalSeconds ?? 0.5;
  await boss.schedule(QUEUES.inboxPurgeDeliveries, '41 * * * *');
  await boss.work(QUEUES.inboxPurgeDeliveries, { pollingIntervalSeconds: polling }, async () => {
    const r = await purgeInboxDeliveries(deps);
    if (r.purged) deps.log.info('inbox deliveries purged', { job: QUEUES.inboxPurgeDeliveries, ...r });
    return r;
  });
  await boss.work<InboxFoldJobData>(QUEUES.inboxFold, { localConcurrency: 2, pollingIntervalSeconds: polling }, async (jobs: Job<InboxFoldJobData>[]) => {
    for (const job of jobs) {
      const folded = await foldInbox(deps, job.data.integrationId);
      deps.log.debug('inbox folded', { job: QUEUES.inboxFold, integrationId: job.data.integrationId, folded });
    }
  });
  await boss.work<InboxActionJobData>(QUEUES.inboxAction, { localConcurrency: 2, pollingIntervalSeconds: polling }, async (jobs: Job<InboxActionJobData>[]) =>
    Promise.all(jobs.map((job) => runInboxAction(deps, job))),
  );
}
