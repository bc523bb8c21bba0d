
import { createServer } from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { createApp } from './app.ts';
import { loadConfig, type Config } from './config.ts';
import { secretFile, startEmbedded, type EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { openPool } from './db/pool.ts';
import { installQueues } from './jobs/queues.ts';
import { startWorker } from './jobs/worker.ts';
import { createLogger } from './log.ts';

export interface Database {
  ownerUrl: string;
  appUrl: string;
  embedded: EmbeddedDatabase | null;
}

/** Sets the login password of pressroom_app (the role the API pool uses). */
export async function setAppRolePassword(ownerUrl: string, password: string) {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const lit = (await client.query('select quote_literal($1::text) as l', [password])).rows[0].l;
    await client.query(`alter role pressroom_app with login password ${lit}`);
  } finally {
    await client.end();
  }
}

function withCredentials(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return u.toString();
}

/**
 * The database: DATABASE_URL, or the embedded PostgreSQL 18 under DATA_DIR.
 * Migrates it, then works out the URL of the NOINHERIT login role the API
 * pool uses (APP_DATABASE_URL, or pressroom_app with a password kept in
 * DATA_DIR, or, failing both, DATABASE_URL itself).
 */
export async function openDatabase(config: Config, log = createLogger(config.LOG_LEVEL)): Promise<Database> {
  let embedded: EmbeddedDatabase | null = null;
  let ownerUrl = config.DATABASE_URL;
  if (!ownerUrl) {
    log.info('starting embedded PostgreSQL', { dataDir: path.resolve(config.DATA_DIR), port: config.EMBEDDED_PG_PORT });
    embedded = await startEmbedded({ dataDir: config.DATA_DIR, port: config.EMBEDDED_PG_PORT, database: 'pressroom', log: (m) => log.debug(m, { component: 'postgres' }) });
    ownerUrl = embedded.ownerUrl();
  }
  await migrate(ownerUrl, { quiet: config.LOG_LEVEL === 'silent' });
  await installQueues(ownerUrl);
  let appUrl = config.APP_DATABASE_URL;
  if (!appUrl && embedded) {
    const password = secretFile(path.join(path.resolve(config.DATA_DIR), 'app-db-password'));
    await setAppRolePassword(ownerUrl, password);
    appUrl = withCredentials(ownerUrl, 'pressroom_app', password);
  }
  if (!appUrl) {
    log.warn('APP_DATABASE_URL is not set: the API pool uses DATABASE_URL; set APP_DATABASE_URL to the pressroom_app role in production');
    appUrl = ownerUrl;
  }
  return { ownerUrl, appUrl, embedded };
}

export async function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, { service: 'pressroom' });
  const db = await openDatabase(config, log);
  const pool = await openPool(db.appUrl, config.DB_POOL_SIZE);
  const worker = config.RUN_WORKER ? await startWorker({ ownerUrl: db.ownerUrl, pool, log }) : null;
  let server: ReturnType<typeof createServer> | null = null;
  if (config.RUN_API) {
    const app = createApp({ pool, config, log, isMigrated: () => true });
    server = createServer(app);
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.PORT, config.HOST, resolve);
    });
    const addr = server.address();
    log.info('listening', { url: `http://${config.HOST}:${typeof addr === 'object' && addr ? addr.port : config.PORT}`, worker: Boolean(worker) });
  } else {
    log.info('worker running', { api: false });
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down: draining requests and jobs', { signal });
    const force = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5000);
    force.unref();
    try {
      if (server) {
        const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
        server.closeIdleConnections();
        await closed;
      }
      if (worker) await worker.stop(config.SHUTDOWN_TIMEOUT_MS);
      await pool.end();
      if (db.embedded) await db.embedded.stop();
      log.info('stopped');
      process.exit(0);
    } catch (e) {
      log.error('shutdown failed', { err: String(e) });
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

if (import.meta.main) {
  main().catch((e) => {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'failed to start', err: String(e?.stack ?? e) })}\n`);
    process.exit(1);
  });
}
