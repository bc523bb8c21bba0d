// Test databases: one PostgreSQL cluster per run (TEST_DATABASE_URL, or an
// embedded PostgreSQL 18 under .data/test), one migrated template per
// migration set, and a fresh clone of it per test file.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbedded } from '../../server/db/embedded.ts';
import { applyCurrentMigrations, declareConnectors, MIGRATIONS_FOLDER, migrate } from '../../server/db/migrate.ts';
import { installQueues } from '../../server/jobs/queues.ts';

export const APP_ROLE_PASSWORD = 'pressroom-test-app';

export interface Cluster {
  /** Owner (superuser) URL of a database on the cluster. */
  url(database: string): string;
  stop(): Promise<void>;
}

/**
 * TEST_CITUS=1: the HTTP tests run on the Citus test cluster (scripts/citus/cluster.sh,
 * docs/citus.md), each file on a database of its own made as an operator makes one (migrated on
 * the coordinator, `pressroom distribute`, the internal roles' worker logins): a Citus database
 * cannot be cloned from a template. `npm run test:citus:api` runs the files that pass there.
 */
export const ON_CITUS = process.env.TEST_CITUS === '1';
const CITUS_TEMPLATE = 'citus:distributed-per-file';

export async function startCluster(): Promise<Cluster> {
  if (ON_CITUS) {
    const { clusterDatabase } = await import('../citus/support.ts');
    const base = clusterDatabase(null).base;
    return {
      url: (database) => {
        const u = new URL(base);
        u.pathname = `/${database}`;
        return u.toString();
      },
      stop: async () => {},
    };
  }
  if (process.env.TEST_USE_TESTCONTAINERS === '1') {
    // With a Docker engine: a postgres:18 container (tests/support/testcontainers.ts).
    const { startContainerCluster } = await import('./testcontainers.ts');
    return startContainerCluster();
  }
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    return {
      url: (database) => {
        const u = new URL(external);
        u.pathname = `/${database}`;
        return u.toString();
      },
      stop: async () => {},
    };
  }
  const embedded = await startEmbedded({
    dataDir: path.resolve(process.env.TEST_DATA_DIR ?? '.data/test'),
    port: Number(process.env.TEST_PG_PORT ?? 54331),
    database: 'postgres',
  });
  return { url: (database) => embedded.ownerUrl(database), stop: () => embedded.stop() };
}

export function appUrl(ownerUrl: string): string {
  const u = new URL(ownerUrl);
  u.username = 'pressroom_app';
  u.password = APP_ROLE_PASSWORD;
  return u.toString();
}

async function admin<T>(cluster: Cluster, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: cluster.url('postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function migrationsDigest(): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.sql')) h.update(entry.name).update(readFileSync(p));
    }
  };
  walk(MIGRATIONS_FOLDER);
  // The template has the pg-boss queues too (installQueues): a new queue makes a new template.
  h.update(readFileSync(fileURLToPath(new URL('../../server/jobs/queues.ts', import.meta.url))));
  // ... and app.connectors from the registry: a connector added makes a new template.
  h.update(readFileSync(fileURLToPath(new URL('../../server/platforms/index.ts', import.meta.url))));
  return h.digest('hex').slice(0, 12);
}

/** Creates (once per migration set) and returns the name of the migrated template database. */
export async function ensureTemplate(cluster: Cluster): Promise<string> {
  if (ON_CITUS) return CITUS_TEMPLATE;
  const name = `pressroom_tpl_${migrationsDigest()}`;
  const exists = await admin(cluster, async (c) => (await c.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1);
  if (!exists) {
    const building = `${name}_building_${randomBytes(3).toString('hex')}`;
    await admin(cluster, (c) => c.query(`create database ${building}`));
    try {
      await migrate(cluster.url(building), { quiet: true });
      await applyCurrentMigrations(cluster.url(building));
      // app.connectors from the registry, as server/db/migrate.ts does after migrating.
      await declareConnectors(cluster.url(building));
      await installQueues(cluster.url(building));
    } catch (e) {
      // graphile-migrate keeps its pool 200 ms after a migration and ends the process when one of
      // its idle connections is terminated: let the pool close before the forced drop, so this
      // error is reported instead of a silent exit.
      await new Promise((r) => setTimeout(r, 500));
      await admin(cluster, (c) => c.query(`drop database if exists ${building} with (force)`));
      throw e;
    }
    await admin(cluster, async (c) => {
      await c.query(`alter role pressroom_app with login password '${APP_ROLE_PASSWORD}'`);
      // Another run may have won the race; keep theirs.
      const again = await c.query('select 1 from pg_database where datname = $1', [name]);
      if (again.rowCount === 1) await c.query(`drop database ${building}`);
      else await c.query(`alter database ${building} rename to ${name}`);
    });
  }
  await admin(cluster, (c) => c.query(`alter role pressroom_app with login password '${APP_ROLE_PASSWORD}'`));
  return name;
}

export interface TestDatabase {
  name: string;
  ownerUrl: string;
  appUrl: string;
  drop(): Promise<void>;
}

/** The database-level grants the migration gives (a clone or a new Citus database lacks them). */
async function databaseGrants(c: pg.Client, name: string): Promise<void> {
  await c.query(`revoke create, temporary on database ${name} from public`);
  await c.query(`grant connect on database ${name} to pressroom_app, pressroom_bi`);
}

export async function cloneDatabase(cluster: Cluster, template: string, label = 't'): Promise<TestDatabase> {
  const name = `pressroom_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${randomBytes(4).toString('hex')}`;
  if (template === CITUS_TEMPLATE) {
    const { cluster: citus, distributedDatabase } = await import('../citus/support.ts');
    const ownerUrl = await distributedDatabase(name);
    await declareConnectors(ownerUrl);
    await installQueues(ownerUrl);
    await admin(cluster, (c) => c.query(`alter role pressroom_app with login password '${APP_ROLE_PASSWORD}'`));
    await admin(cluster, (c) => databaseGrants(c, name));
    return { name, ownerUrl, appUrl: appUrl(ownerUrl), drop: async () => void citus('dropdb', name) };
  }
  await admin(cluster, async (c) => {
    await c.query(`create database ${name} template ${template}`);
    // Database-level grants are not copied from a template: set them as the migration does.
    await databaseGrants(c, name);
  });
  const ownerUrl = cluster.url(name);
  return {
    name,
    ownerUrl,
    appUrl: appUrl(ownerUrl),
    drop: () => admin(cluster, (c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
