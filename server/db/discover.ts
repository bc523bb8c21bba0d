// Finding the embedded cluster a running server (or another process) has
// already started under DATA_DIR, so a second process (the admin CLI,
// server/cli/pressroom.ts) joins it instead of starting a second postmaster
// on the same data directory. server/db/embedded.ts starts clusters;
// server/db/open.ts opens the server's database.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { EMBEDDED_DATABASE } from './embedded.ts';

/** A live embedded cluster that cannot be used (unreadable password file, no answer on its port). */
export class EmbeddedClusterUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddedClusterUnavailable';
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The owner URL of the embedded cluster under DATA_DIR when a PostgreSQL
 * (normally the server's) is already running it: postmaster.pid names a live
 * process and the port answers. Null when it is not running; throws
 * EmbeddedClusterUnavailable when it runs but cannot be used.
 */
export async function runningEmbeddedUrl(config: Config, log: Logger, waitMs = 15_000): Promise<string | null> {
  const dataDir = path.resolve(config.DATA_DIR);
  const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  let lines: string[];
  try {
    lines = readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]) || config.EMBEDDED_PG_PORT;
  if (!processAlive(pid)) return null;

  const passwordFile = path.join(dataDir, 'pg-password');
  let secret: string;
  try {
    secret = readFileSync(passwordFile, 'utf8').trim();
  } catch (e) {
    throw new EmbeddedClusterUnavailable(`The embedded PostgreSQL under ${dataDir} is running, but its password file cannot be read: ${(e as Error).message}`);
  }
  const url = (database: string) => `postgres://postgres:${encodeURIComponent(secret)}@127.0.0.1:${port}/${database}`;
  log.debug('embedded PostgreSQL is already running; joining it', { pid, port });

  const deadline = Date.now() + waitMs;
  let lastError: unknown;
  for (;;) {
    const client = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      const exists = await client.query('select 1 from pg_database where datname = $1', [EMBEDDED_DATABASE]);
      if (exists.rowCount === 0) await client.query(`create database ${EMBEDDED_DATABASE}`);
      return url(EMBEDDED_DATABASE);
    } catch (e) {
      lastError = e;
      const code = (e as { code?: string }).code;
      // Refused or still starting: wait for it; anything else is final.
      if (code !== 'ECONNREFUSED' && code !== '57P03' && code !== 'ECONNRESET') break;
      if (Date.now() > deadline) break;
      await sleep(250);
    } finally {
      await client.end().catch(() => {});
    }
  }
  throw new EmbeddedClusterUnavailable(
    `The embedded PostgreSQL under ${dataDir} has a live postmaster (pid ${pid}) but does not answer on 127.0.0.1:${port}: ${(lastError as Error)?.message ?? lastError}`,
  );
}
