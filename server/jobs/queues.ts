import { PgBoss } from 'pg-boss';
import pg from 'pg';

export const PGBOSS_SCHEMA = 'pgboss';

/** Every queue the service uses; created at start-up, before any request can enqueue. */
export const QUEUES = {
  purge: 'maintenance.purge-expired',
  auditPartitions: 'maintenance.audit-partitions',
  publish: 'content.publish',
  recurringMaterialize: 'content.recurring-materialize',
  mediaPurge: 'media.purge-bin',
  uploadSessionExpiry: 'media.expire-upload-sessions',
  // Analytics (server/jobs/analytics.ts)
  analyticsSync: 'analytics.sync',
  analyticsReport: 'analytics.report',
  // Reviews: active reviews past their due time expire (server/jobs/reviews.ts).
  reviewExpiry: 'reviews.expire-due',
  // Inbox (server/jobs/inbox.ts): folding inbound events, replies and moderation.
  inboxFold: 'inbox.fold',
  inboxAction: 'inbox.action',
  inboxPurgeDeliveries: 'inbox.purge-deliveries',
  // Lifecycle webhooks (server/jobs/lifecycle.ts): one queued per subscription.
  webhooksDeliver: 'webhooks.deliver',
  // ... and the hourly purge of what is past webhook_retention_days.
  webhooksPurge: 'webhooks.purge',
  // Connected accounts (server/jobs/credentials.ts): tokens refreshed ahead of expiry, every minute.
  credentialsRefresh: 'integrations.refresh-credentials',
} as const;

/** Queues that need options of their own: one queued fold per integration at a time (singleton key). */
const QUEUE_OPTIONS: Partial<Record<string, { policy: 'stately' }>> = {
  [QUEUES.inboxFold]: { policy: 'stately' },
  [QUEUES.webhooksDeliver]: { policy: 'stately' },
};

/**
 * Installs (or migrates) pg-boss's schema and our queues, and lets the
 * definer role that SQL functions run as insert and cancel jobs, so a state
 * change and its job commit in one transaction. Idempotent; runs at every
 * start, before the API serves.
 */
export async function installQueues(ownerUrl: string): Promise<void> {
  const boss = new PgBoss({ connectionString: ownerUrl, schema: PGBOSS_SCHEMA, supervise: false, schedule: false, max: 2 });
  boss.on('error', () => {});
  await boss.start();
  try {
    for (const name of Object.values(QUEUES)) {
      if (!(await boss.getQueue(name))) await boss.createQueue(name, QUEUE_OPTIONS[name]);
    }
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    await client.query(`grant usage on schema ${PGBOSS_SCHEMA} to pressroom_definer`);
    await client.query(`grant select, insert, update on all tables in schema ${PGBOSS_SCHEMA} to pressroom_definer`);
  } finally {
    await client.end();
  }
}
