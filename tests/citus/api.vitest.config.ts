// The part of the HTTP suite (tests/api) that runs on the Citus test cluster
// (scripts/citus/cluster.sh, docs/citus.md, "Where the schema stands"), each file on a database of
// its own made as an operator makes one (tests/support/db.ts, TEST_CITUS). A file joins this list
// once every test in it passes there. Run: npm run test:citus:api
import { defineConfig } from 'vitest/config';

process.env.TEST_CITUS = '1';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['tests/api/content.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    testTimeout: 60_000,
    // Migrating and distributing a database takes one to two minutes on this machine.
    hookTimeout: 600_000,
    pool: 'forks',
    // One cluster on two cores: one file at a time.
    fileParallelism: false,
  },
});
