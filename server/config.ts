import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

// Every setting comes from the environment; README.md documents each one.
export const ConfigSchema = z.object({
  PORT: int(3000, 0),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  APP_DATABASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().default('.data'),
  EMBEDDED_PG_PORT: int(54329, 1),
  DEFAULT_PLAN: z.enum(['trial', 'basic', 'standard', 'premium']).default('trial'),
  TRIAL_DAYS: int(3, 0),
  ALLOW_SIGNUP: bool.default(false),
  SESSION_TTL_SECONDS: int(7 * 24 * 3600, 60),
  RATE_LIMIT_READ: int(120, 1),
  RATE_LIMIT_WRITE: int(30, 1),
  RATE_LIMIT_EXPENSIVE: int(15, 1),
  BODY_LIMIT_BYTES: int(1_100_000, 1024),
  DB_POOL_SIZE: int(10, 1),
  RUN_WORKER: bool.default(true),
  RUN_API: bool.default(true),
  SHUTDOWN_TIMEOUT_MS: int(25_000, 0),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  TRUST_PROXY: bool.default(false),
  // Failed credentials (no, malformed or unknown bearer) per client address
  // and minute before it is answered 429 AUTH_THROTTLED, and how many of them
  // are audited one by one (the rest: one summary row per address and minute).
  AUTH_FAILURE_LIMIT: int(30, 1),
  AUTH_FAILURE_AUDIT: int(10, 0),
  // Browser clients: origins allowed to call the API (comma-separated, or *);
  // unset or empty: no CORS headers, and preflights are not answered.
  CORS_ORIGINS: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean))
    .refine((list) => list.every((o) => o === '*' || /^https?:\/\/[^/\s]+$/i.test(o)), 'each origin is * or scheme://host[:port]'),
  // Connectors: webhook URLs that resolve to loopback or private networks are
  // refused (server-side request forgery) unless this is true.
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  // Lifecycle webhooks: days delivered events, their deliveries and delivery
  // log are kept (job webhooks.purge; app.settings webhook_retention_days).
  WEBHOOK_RETENTION_DAYS: int(30, 1),
  PUBLISH_TIMEOUT_MS: int(15_000, 100),
  // Transient publish failures: retried with exponential backoff.
  PUBLISH_MAX_ATTEMPTS: int(5, 1),
  PUBLISH_RETRY_BASE_MS: int(1000, 1),
  // Jobs held by a worker that died come back after this long.
  JOB_HEARTBEAT_SECONDS: int(30, 10),
  // Connector calls in flight at once per worker process.
  PUBLISH_CONCURRENCY: int(32, 1),
  // Publish jobs fetched, claimed and recorded per statement.
  PUBLISH_BATCH_SIZE: int(100, 1),
  // Publish batches in progress at once per worker process (pg-boss fetch
  // loops): while one batch is claimed, the others' platform calls run and up to
  // PUBLISH_FETCH_LOOPS - 1 groups of outcomes are recorded side by side.
  PUBLISH_FETCH_LOOPS: int(2, 1),
  // Media storage: "disk" (files under DATA_DIR/media, HMAC-signed URLs served
  // by the API) or "s3" (any S3-compatible store, presigned URLs).
  STORAGE_DRIVER: z.enum(['disk', 's3']).default('disk'),
  PUBLIC_BASE_URL: z.string().url().optional(),
  SIGNED_URL_SECRET: z.string().min(16).optional(),
  SIGNED_URL_TTL_SECONDS: int(900, 1),
  UPLOAD_SESSION_TTL_SECONDS: int(3600, 1),
  MEDIA_BIN_RETENTION_SECONDS: int(30 * 24 * 3600, 0),
  S3_ENDPOINT: z.string().url().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_BUCKET: z.string().optional(),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_FORCE_PATH_STYLE: bool.default(true),
  // Prometheus metrics (server/metrics.ts): GET /metrics on the API port with
  // `Authorization: Bearer $METRICS_TOKEN` (off while unset); with METRICS_PORT,
  // served instead on a port of its own without a token (a private network's scraper).
  METRICS_TOKEN: z.string().min(16).optional(),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // Workbench: the statement timeout of its bulk calls (bulk schedule, CSV
  // import, bulk create/update), which do up to 1,000 rows or 10,000 lines
  // in one statement; every other statement keeps the pool's 30 s.
  WORKBENCH_BULK_TIMEOUT_MS: int(300_000, 1000),
  // Inbox: the platforms' APIs the inbox replies and moderates through
  // (server/platforms/inbox-platforms.ts); tests point them at local fakes.
  META_GRAPH_BASE_URL: z.string().url().default('https://graph.facebook.com/v21.0'),
  X_API_BASE_URL: z.string().url().default('https://api.x.com'),
  // Connected accounts (docs/connectors.md). The credential vault's keys:
  // `<version>:<32 bytes as base64 or hex>`, comma-separated, the highest
  // encrypts (server/platforms/vault.ts); unset: DATA_DIR/credentials.key.
  CREDENTIALS_KEYS: z.string().optional(),
  // The operators' platform apps (or `npx pressroom platform-app set`); the
  // variable names are each module's appEnv (server/platforms/<name>.ts).
  X_CLIENT_ID: z.string().optional(),
  X_CLIENT_SECRET: z.string().optional(),
  LINKEDIN_CLIENT_ID: z.string().optional(),
  LINKEDIN_CLIENT_SECRET: z.string().optional(),
  // API bases of the connectors (CONNECTOR_BASE_URL_ENV in server/platforms/index.ts;
  // X_API_BASE_URL above): unset, each module's default.
  LINKEDIN_API_BASE_URL: z.string().url().optional(),
  BLUESKY_SERVICE_URL: z.string().url().optional(),
  // Bluesky through AT Protocol OAuth (server/platforms/bluesky-oauth.ts): the client's ES256
  // private key as a JWK (JSON; unset: generated once into DATA_DIR/bluesky-oauth-key.json),
  // and the PLC directory that resolves did:plc identities (default https://plc.directory).
  BLUESKY_OAUTH_PRIVATE_KEY: z.string().optional(),
  BLUESKY_PLC_URL: z.string().url().optional(),
});

export type Config = z.infer<typeof ConfigSchema>;

/**
 * The environment with every empty variable left out: `DATABASE_URL=` (what
 * Compose's `${VAR:-}`, `docker run -e VAR=` and many `.env` files give) or a
 * value of blanks only means unset, so the setting's default applies, as the
 * README's "Configuration" says. Without this an empty string is a value:
 * an invalid URL, port 0 (a random port), or an enum no one chose.
 */
export function setVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v.trim() !== '') set[k] = v;
  return set;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = ConfigSchema.safeParse(setVariables(env));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return { ...parsed.data, ...overrides };
}
