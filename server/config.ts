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
});

export type Config = z.infer<typeof ConfigSchema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return { ...parsed.data, ...overrides };
}
