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

/** How many credentials one pass takes; a run takes passes while some are due, for at most REFRESH_RUN_MS. */
export const REFRESH_BATCH = 200;
/** A run stops taking passes after this long, so runs of consecutive minutes seldom overlap (and an overlap refreshes nothing twice: the lock rechecks that a credential is still due). */
export const REFRESH_RUN_MS = 45_000;

/** Schedules the minute run and registers its handler. */
export async function registerCredentialJobs(boss: PgBoss, deps: Pick<AppDeps, 'pool' | 'config' | 'log'>, cron = '* * * * *') {
  const service = createCredentialService(deps);
  await boss.schedule(QUEUES.credentialsRefresh, cron);
  await boss.work(QUEUES.credentialsRefresh, async () => {
    const counts: Record<string, number> = {};
    const started = Date.now();
    for (;;) {
      const pass = await service.refreshDue(REFRESH_BATCH);
      let n = 0;
      for (const [k, v] of Object.entries(pass)) {
        counts[k] = (counts[k] ?? 0) + v;
        n += v;
      }
      // Fewer than a full pass: nothing more is due now (failures come back after their backoff).
      if (n < REFRESH_BATCH || Date.now() - started > REFRESH_RUN_MS) break;
    }
    if (Object.keys(counts).length > 0) deps.log.info('credentials refreshed', { job: QUEUES.credentialsRefresh, ...counts });
    return counts;
  });
}
