// A real Pressroom HTTP server on an ephemeral port over a fresh clone of
// the migrated template, for one test file.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { DatabasePool } from 'slonik';
import { inject } from 'vitest';
import { createApp } from '../../server/app.ts';
import { loadConfig, type Config } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { applySettings } from '../../server/db/settings.ts';
import { createAppDeps, type AppDeps } from '../../server/deps.ts';
import { loadOpenApi } from '../../server/http/openapi.ts';
import { createHttpServer } from '../../server/http/server.ts';
import { createLogger } from '../../server/log.ts';
import { cloneDatabase, type Cluster, type TestDatabase } from './db.ts';

export const openapi = loadOpenApi();

export function injectedCluster(): Cluster {
  const base = inject('clusterUrl');
  return {
    url: (database) => {
      const u = new URL(base);
      u.pathname = `/${database}`;
      return u.toString();
    },
    stop: async () => {},
  };
}

export interface TestServer {
  baseUrl: string;
  db: TestDatabase;
  pool: DatabasePool;
  /** Superuser client on the test database, for looking behind the API. */
  owner: pg.Client;
  config: Config;
  /** What the app was built from (pool, config, log, storage, connectors), for jobs a test runs itself. */
  deps: AppDeps;
  close(): Promise<void>;
}

export async function startTestServer(label: string, overrides: Partial<Config> = {}): Promise<TestServer> {
  const db = await cloneDatabase(injectedCluster(), inject('template'), label);
  // Limits are out of the way unless a test sets them.
  const config = loadConfig(
    { LOG_LEVEL: 'silent', ALLOW_SIGNUP: 'true', RATE_LIMIT_READ: '100000', RATE_LIMIT_WRITE: '100000', RATE_LIMIT_EXPENSIVE: '100000', AUTH_FAILURE_LIMIT: '100000', AUTH_FAILURE_AUDIT: '100000' } as NodeJS.ProcessEnv,
    overrides,
  );
  // The request pool: 5 connections unless a test sets DB_POOL_SIZE.
  const pool = await openPool(db.appUrl, overrides.DB_POOL_SIZE ?? 5);
  await applySettings(pool, config);
  const deps = createAppDeps({ pool, config, log: createLogger('silent') });
  const app = createApp(deps, { openapi });
  const server: Server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    db,
    pool,
    owner,
    config,
    deps,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.end();
      await owner.end();
      await db.drop();
    },
  };
}
