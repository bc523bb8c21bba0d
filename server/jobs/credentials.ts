// Connected accounts: the refresh job (queue integrations.refresh-credentials,
// every minute). Each credential whose next refresh is due (10 minutes before
// its access token expires, or the backoff after a failed refresh:
// app.credentials_due) is refreshed under its row lock and stored in the same
// transaction (server/platforms/credentials.ts). A grant the platform refuses
// makes the integration reconnect_required; an outage only retries later.
// Idempotent: a credential refreshed meanwhile is no longer due.
import type { PgBoss } from 'pg-boss';
import type { AppDeps } from '../deps.ts';
import { createCredentialService } from '../platforms/credentials.ts';
import { QUEUES } from './queues.ts';

/** How many credentials one run refreshes at most (the rest wait for the next minute). */
export const REFRESH_BATCH = 200;

/** Schedules the minute run and registers its handler. */
export async function registerCredentialJobs(boss: PgBoss, deps: Pick<AppDeps, 'pool' | 'config' | 'log'>, cron = '* * * * *') {
  const service = createCredentialService(deps);
  await boss.schedule(QUEUES.credentialsRefresh, cron);
  await boss.work(QUEUES.credentialsRefresh, async () => {
    const counts = await service.refreshDue(REFRESH_BATCH);
    if (Object.keys(counts).length > 0) deps.log.info('credentials refreshed', { job: QUEUES.credentialsRefresh, ...counts });
    return counts;
  });
}
