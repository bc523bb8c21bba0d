import type { DatabasePool } from 'slonik';
import type { Config } from '../config.ts';
import { jsonResult, sql } from './pool.ts';

/**
 * The configuration the rules in SQL read (app.settings, db/README.md
 * "Settings"), from the environment this process was started with. Every
 * process writes the same values; the table shows what is in force.
 */
export function settingsOf(config: Config) {
  return {
    allow_signup: config.ALLOW_SIGNUP,
    default_plan: config.DEFAULT_PLAN,
    trial_days: config.TRIAL_DAYS,
    session_ttl_seconds: config.SESSION_TTL_SECONDS,
    rate_limit_read: config.RATE_LIMIT_READ,
    rate_limit_write: config.RATE_LIMIT_WRITE,
    rate_limit_expensive: config.RATE_LIMIT_EXPENSIVE,
    publish_max_attempts: config.PUBLISH_MAX_ATTEMPTS,
    publish_retry_base_ms: config.PUBLISH_RETRY_BASE_MS,
    auth_failure_limit: config.AUTH_FAILURE_LIMIT,
    auth_failure_audit: config.AUTH_FAILURE_AUDIT,
    media_bin_retention_seconds: config.MEDIA_BIN_RETENTION_SECONDS,
    upload_session_ttl_seconds: config.UPLOAD_SESSION_TTL_SECONDS,
    webhook_retention_days: config.WEBHOOK_RETENTION_DAYS,
  };
}

export async function applySettings(pool: DatabasePool, config: Config): Promise<Record<string, unknown>> {
  return (await pool.oneFirst(
    sql.type(jsonResult)`select api.apply_settings(${sql.jsonb(settingsOf(config))}) as result`,
  )) as Record<string, unknown>;
}
