import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.ts';
import { installQueues } from '../jobs/queues.ts';
import { createLogger } from '../log.ts';
import { EMBEDDED_DATABASE, secretFile, startEmbedded, type EmbeddedDatabase } from './embedded.ts';
import { migrate } from './migrate.ts';

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
    embedded = await startEmbedded({
      dataDir: config.DATA_DIR,
      port: config.EMBEDDED_PG_PORT,
      database: EMBEDDED_DATABASE,
      // PostgreSQL's own lines at debug; what was done to recover the data
      // directory after a killed run (server/db/embedded.ts) at info and warn.
      log: (m) => log.debug(m, { component: 'postgres' }),
      notice: (level, msg, fields) => log[level](msg, { component: 'postgres', ...fields }),
    });
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

