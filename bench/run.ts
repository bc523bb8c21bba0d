// npm run bench [-- <scenario> ...]   (no scenario: all of them)
//
// Starts the PostgreSQL cluster and the migrated template once, runs each
// scenario (each clones the template and starts its own API server child),
// prints a table per scenario and writes bench/results/<scenario>-<time>.json.
// Knobs: bench/README.md.
import { BenchAbort } from './lib/load.ts';
import { Cleanup } from './lib/cleanup.ts';
import { analytics } from './scenarios/analytics.ts';
import { content } from './scenarios/content.ts';
import { foundation } from './scenarios/foundation.ts';
import { lists } from './scenarios/lists.ts';
import { inbox } from './scenarios/inbox.ts';
import { media } from './scenarios/media.ts';
import { publishing } from './scenarios/publishing.ts';
import { platforms } from './scenarios/platforms.ts';
import { plpgsql } from './scenarios/plpgsql.ts';
import { policies } from './scenarios/policies.ts';
// Grid planner
import { grid } from './scenarios/grid.ts';
import { reviews } from './scenarios/reviews.ts';
import { workbench } from './scenarios/workbench.ts';
import { webhooks } from './scenarios/webhooks.ts';
import { citus } from './scenarios/citus.ts';
import { readKnobs } from './lib/knobs.ts';
import { formatReport, machineFacts, noteNoise, writeReport } from './lib/report.ts';
import type { Scenario } from './lib/scenario.ts';
import { openCluster } from './lib/stack.ts';

/** The registry: add a scenario here (bench/scenarios/<name>.ts exporting a Scenario). */
const scenarios: Scenario[] = [foundation, content, media, publishing, lists, analytics, grid, reviews, workbench, inbox, webhooks, platforms, policies, plpgsql, citus];

function usage(): string {
  return [
    'usage: npm run bench [-- <scenario> ...]',
    '',
    'scenarios:',
    ...scenarios.map((s) => `  ${s.name.padEnd(14)} ${s.description}`),
    '',
    'knobs (environment): BENCH_CONCURRENCY=16 BENCH_SECONDS=10 BENCH_WARMUP_SECONDS=2 BENCH_SLICE_SECONDS=2 BENCH_POOL_SIZE=10',
    '  BENCH_REQUEST_TIMEOUT_MS=10000 BENCH_VARIANTS=0 BENCH_RESULTS_DIR=bench/results',
    '  BENCH_DATABASE_URL | BENCH_DATA_DIR + BENCH_PG_PORT (else TEST_DATABASE_URL, TEST_DATA_DIR, TEST_PG_PORT)',
  ].join('\n');
}

function log(msg: string) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('-h') || args.includes('--help') || args.includes('--list')) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  const unknown = args.filter((a) => !scenarios.some((s) => s.name === a));
  if (unknown.length) {
    process.stderr.write(`unknown scenario(s): ${unknown.join(', ')}\n\n${usage()}\n`);
    return 2;
  }
  const selected = args.length ? scenarios.filter((s) => args.includes(s.name)) : scenarios;
  const knobs = readKnobs();

  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: cleaning up`);
    void cleanup.run().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    log('starting the PostgreSQL cluster and the migrated template');
    const cluster = await openCluster(cleanup);
    const machine = await machineFacts(cluster.cluster.url('postgres'), cluster.where);
    log(`${cluster.where}; template ${cluster.template}`);
    for (const scenario of selected) {
      const report = await scenario.run({ knobs, cleanup, cluster, machine, log });
      noteNoise(report);
      process.stdout.write(`\n${formatReport(report)}\n`);
      const file = writeReport(report, knobs.resultsDir);
      process.stdout.write(`   results: ${file}\n`);
    }
    return 0;
  } catch (e) {
    if (interrupted) return 130; // the failure is the interruption's doing
    if (e instanceof BenchAbort) process.stderr.write(`\nbench aborted: ${e.message}\n`);
    else process.stderr.write(`\nbench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  } finally {
    log('cleaning up');
    await cleanup.run();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  },
);
