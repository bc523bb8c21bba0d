// The Citus tests (tests/citus/*.test.ts): run against the test cluster of
// scripts/citus/cluster.sh (docs/citus.md), never by `npm run test:api`,
// whose config (vitest.config.ts) includes tests/api only. Run:
//   npx vitest run --config tests/citus/vitest.config.ts
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['tests/citus/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // One cluster on two cores: one file at a time.
    fileParallelism: false,
  },
});
