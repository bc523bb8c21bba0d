import type { DatabasePool } from 'slonik';
import { setVariables, type Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { jsonResult, sql } from './pool.ts';

/**
 * The configuration the rules in SQL read (app.settings, db/README.md
 * "Settings"): each setting's key and the environment variable it comes from.
 */
export const SETTING_VARIABLES = {
  allow_signup: 'ALLOW_SIGNUP',
  default_plan: 'DEFAULT_PLAN',
  trial_days: 'TRIAL_DAYS',
  session_ttl_seconds: 'SESSION_TTL_SECONDS',
  rate_limit_read: 'RATE_LIMIT_READ',
  rate_limit_write: 'RATE_LIMIT_WRITE',
  rate_limit_expensive: 'RATE_LIMIT_EXPENSIVE',
  publish_max_attempts: 'PUBLISH_MAX_ATTEMPTS',
  publish_retry_base_ms: 'PUBLISH_RETRY_BASE_MS',
  auth_failure_limit: 'AUTH_FAILURE_LIMIT',
  auth_failure_audit: 'AUTH_FAILURE_AUDIT',
  media_bin_retention_seconds: 'MEDIA_BIN_RETENTION_SECONDS',
  upload_session_ttl_seconds: 'UPLOAD_SESSION_TTL_SECONDS',
  webhook_retention_days: 'WEBHOOK_RETENTION_DAYS',
} as const satisfies Record<string, keyof Config>;

export type SettingKey = keyof typeof SETTING_VARIABLES;
type SettingValue = string | number | boolean;

const KEYS = Object.keys(SETTING_VARIABLES) as SettingKey[];

/** The settings a process's configuration would write (defaults included). */
export function settingsOf(config: Config): Record<SettingKey, SettingValue> {
  return Object.fromEntries(KEYS.map((k) => [k, config[SETTING_VARIABLES[k]]])) as Record<SettingKey, SettingValue>;
}

/** Writes the settings of `config` (api.apply_settings); returns every setting in force. */
export async function applySettings(pool: DatabasePool, config: Config): Promise<Record<string, unknown>> {
  return (await pool.oneFirst(
    sql.type(jsonResult)`select api.apply_settings(${sql.jsonb(settingsOf(config))}) as result`,
  )) as Record<string, unknown>;
}

/** Every setting in force, read without writing (api.settings_in_force). */
export async function settingsInForce(pool: DatabasePool): Promise<Record<string, unknown>> {
  return (await pool.oneFirst(sql.type(jsonResult)`select api.settings_in_force() as result`)) as Record<string, unknown>;
}

export interface SettingDifference {
  key: SettingKey;
  variable: (typeof SETTING_VARIABLES)[SettingKey];
  /** What this process's environment sets. */
  env: SettingValue;
  /** What is in force (app.settings), for every process. */
  database: unknown;
}

/**
 * The settings this process's environment sets explicitly (the variable is
 * set and not empty: server/config.ts setVariables) to a value other than the
 * one in force. A variable left unset is no disagreement: its default is not
 * a choice.
 */
export function settingDifferences(config: Config, inForce: Record<string, unknown>, env: NodeJS.ProcessEnv): SettingDifference[] {
  const set = setVariables(env);
  const mine = settingsOf(config);
  return KEYS.filter((k) => SETTING_VARIABLES[k] in set && k in inForce && inForce[k] !== mine[k]).map((k) => ({
    key: k,
    variable: SETTING_VARIABLES[k],
    env: mine[k],
    database: inForce[k],
  }));
}

/**
 * The settings at a process's start. One process kind owns them: the API
 * process (RUN_API=true: `npm start`, Compose's `api`) writes them from its
 * environment, as it always did, and logs each value it changed. Any other
 * process (a worker-only one, `npm run worker`, RUN_API=false) writes
 * nothing: it reads the settings in force and logs one error line per setting
 * its environment sets to another value. It keeps running, on the database's
 * values: `config` is given the values in force either way, so what the
 * process decides in TypeScript (e.g. the publish engine's last attempt,
 * PUBLISH_MAX_ATTEMPTS) agrees with what SQL decides.
 *
 * Returns the differences found (none for the owner).
 */
export async function settingsAtStart(
  pool: DatabasePool,
  config: Config,
  log: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SettingDifference[]> {
  let inForce: Record<string, unknown>;
  let differences: SettingDifference[] = [];
  if (config.RUN_API) {
    const before = await settingsInForce(pool);
    inForce = await applySettings(pool, config);
    const changed = KEYS.filter((k) => k in before && before[k] !== inForce[k]).map((k) => ({
      variable: SETTING_VARIABLES[k],
      from: before[k],
      to: inForce[k],
    }));
    if (changed.length) log.warn('settings changed for every process: this API process wrote its environment\'s values', { changed });
  } else {
    inForce = await settingsInForce(pool);
    differences = settingDifferences(config, inForce, env);
    for (const d of differences) {
      log.error(
        `settings differ: ${d.variable}=${JSON.stringify(d.env)} in this process's environment, ${JSON.stringify(d.database)} in the database; ` +
          "the database's values are in force; set them on the API process (RUN_API=true), which writes them at start",
        { setting: d.key, variable: d.variable, env: d.env, database: d.database },
      );
    }
  }
  const target = config as Record<string, unknown>;
  for (const k of KEYS) if (k in inForce) target[SETTING_VARIABLES[k]] = inForce[k];
  return differences;
}
