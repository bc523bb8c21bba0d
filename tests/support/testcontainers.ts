// A throwaway PostgreSQL 18 in Docker (Testcontainers) as the test cluster,
// for machines and CI runners where a real server image is preferred to the
// embedded one (TEST_USE_TESTCONTAINERS=1). Needs a Docker engine.
import { randomBytes } from 'node:crypto';
import { PostgreSqlContainer } from '@testcontainers/postgresql';
import type { Cluster } from './db.ts';

/** The image; TEST_POSTGRES_IMAGE picks another (any 15-18 should pass). */
export const POSTGRES_IMAGE = process.env.TEST_POSTGRES_IMAGE || 'postgres:18';

export async function startContainerCluster(): Promise<Cluster> {
  const container = await new PostgreSqlContainer(POSTGRES_IMAGE)
    // The image's POSTGRES_USER is a superuser: the owner the harness expects.
    .withUsername('postgres')
    .withPassword(randomBytes(18).toString('hex'))
    .withDatabase('postgres')
    // Test data need not survive the run: keep it in memory and skip
    // durability work. (postgres:18 keeps its data under /var/lib/postgresql.)
    .withTmpFs({ '/var/lib/postgresql': 'rw' })
    .withCommand(['postgres', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'])
    .start();
  const base = container.getConnectionUri();
  return {
    url: (database) => {
      const u = new URL(base);
      u.pathname = `/${database}`;
      return u.toString();
    },
    stop: async () => {
      await container.stop();
    },
  };
}
