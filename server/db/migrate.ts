import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate as gmMigrate, status as gmStatus } from 'graphile-migrate';
import { Logger as GmLogger } from '@graphile/logger';
import pg from 'pg';
import { connectorDeclarations } from '../platforms/index.ts';

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db/migrations');

// graphile-migrate's messages, as structured log lines (or nothing).
const logFactory = (quiet: boolean) => () => (level: string, message: string) => {
  if (quiet && level !== 'error') return;
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, component: 'migrate' }) + '\n');
};

function rootUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

function settings(ownerUrl: string, quiet: boolean) {
  return {
    connectionString: ownerUrl,
    // Root access is only needed for shadow databases, which `migrate` never
    // uses; graphile-migrate still wants a distinct value.
    rootConnectionString: rootUrl(ownerUrl),
    migrationsFolder: MIGRATIONS_FOLDER,
    logger: new GmLogger(logFactory(quiet)),
  };
}

/**
 * Applies every committed migration not yet applied. graphile-migrate takes
 * an advisory lock and gives up at once when another process holds it (several
 * API processes, workers or the CLI starting together): wait and try again,
 * for up to `waitMs`.
 */
export async function migrate(ownerUrl: string, opts: { quiet?: boolean; waitMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (opts.waitMs ?? 120_000);
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      await gmMigrate(settings(ownerUrl, opts.quiet ?? false));
      await declareConnectors(ownerUrl);
      return;
    } catch (e) {
      if (!(e instanceof Error && e.message === 'Failed to get exclusive lock') || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** True when every committed migration has been applied. */
export async function isMigrated(ownerUrl: string): Promise<boolean> {
  const s = await gmStatus(settings(ownerUrl, true), { skipDatabase: false });
  return s.remainingMigrations?.length === 0;
}

/**
 * Writes app.connectors from the connector registry (server/platforms/index.ts,
 * the one list of connectors) through app.declare_connectors, as the owner.
 * Run after every migration; a database whose migrations do not have the
 * function yet is left alone (false).
 */
export async function declareConnectors(ownerUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const has = await client.query(`select to_regprocedure('app.declare_connectors(jsonb)') is not null as has`);
    if (!has.rows[0]?.has) return false;
    await client.query('select app.declare_connectors($1::jsonb)', [JSON.stringify(connectorDeclarations())]);
    return true;
  } finally {
    await client.end();
  }
}

/**
 * The uncommitted migration (db/migrations/current/*.sql, in name order),
 * applied after the committed ones in one transaction, for the tests and the
 * tools that want to see work in progress (tests/support/db.ts, the Citus
 * probe and test). The server itself only ever applies committed migrations.
 * Returns the files applied; an error names the file.
 */
export async function applyCurrentMigrations(url: string): Promise<string[]> {
  const dir = path.join(MIGRATIONS_FOLDER, 'current');
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  } catch {
    return [];
  }
  if (files.length === 0) return [];
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const owner = (await client.query('select current_user as u, current_database() as d')).rows[0];
    await client.query('begin');
    for (const f of files) {
      const text = readFileSync(path.join(dir, f), 'utf8').replaceAll(':DATABASE_OWNER', owner.u).replaceAll(':DATABASE_NAME', owner.d);
      try {
        await client.query(text);
      } catch (e) {
        throw new Error(`db/migrations/current/${f}: ${(e as Error).message}`);
      }
    }
    await client.query('commit');
    return files;
  } catch (e) {
    await client.query('rollback').catch(() => {});
    throw e;
  } finally {
    await client.end();
  }
}
