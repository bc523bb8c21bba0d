// What the Citus tests (tests/citus/*.test.ts) share: the test cluster of
// scripts/citus/cluster.sh (docs/citus.md, "Cluster") and the real distribute step.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { applyCurrentMigrations, migrate } from '../../server/db/migrate.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLUSTER = path.join(ROOT, 'scripts/citus/cluster.sh');
const run = promisify(execFile);

/** scripts/citus/cluster.sh with these arguments; its output. */
export function cluster(...args: string[]): string {
  return execFileSync(CLUSTER, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * The coordinator's URL (CITUS_URL, or the test cluster's, which is started when it is not
 * running) and, with `db` (not null), a new database of that name on every node, with its URL.
 */
export function clusterDatabase(db: string | null): { base: string; url: string } {
  if (!process.env.CITUS_URL && spawnSync(CLUSTER, ['status'], { stdio: 'ignore' }).status !== 0) cluster('start');
  const base = process.env.CITUS_URL ?? cluster('url');
  if (db === null) return { base, url: base };
  cluster('createdb', db);
  const u = new URL(base);
  u.pathname = `/${db}`;
  return { base, url: u.toString() };
}

/** `pressroom distribute` as an operator runs it: the CLI, DATABASE_URL the coordinator; its JSON answer. */
export async function distributeCli<T>(ownerUrl: string): Promise<T> {
  try {
    const r = await run(process.execPath, [path.join(ROOT, 'server/cli/pressroom.ts'), 'distribute'], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: ownerUrl, LOG_LEVEL: 'error' }, maxBuffer: 16 << 20,
    });
    return JSON.parse(r.stdout) as T;
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    throw new Error(`pressroom distribute exited ${err.code}: ${err.stdout} ${err.stderr?.slice(-2000)}`);
  }
}

/**
 * A new database `db` on the cluster, as an operator makes one: migrated on the coordinator (and
 * db/migrations/current applied, as the tests on one node have it),
 * distributed by `pressroom distribute`, and the internal roles given their worker logins
 * (Citus gives the workers the roles without LOGIN after the migrations; docs/citus.md). Its
 * owner URL.
 */
export async function distributedDatabase(db: string): Promise<string> {
  const url = clusterDatabase(db).url;
  await migrate(url, { quiet: true, waitMs: 0 });
  // Work in progress too, as the tests on one node see it (tests/support/db.ts).
  await applyCurrentMigrations(url);
  await distributeCli(url);
  cluster('roles', db);
  return url;
}
