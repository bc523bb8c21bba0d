// The bench's knobs, all from the environment (bench/README.md lists them).

export interface Knobs {
  /** Concurrent closed loops, on the HTTP side and on the direct side alike. */
  concurrency: number;
  /** Measured seconds per measurement (after the warm-up). */
  seconds: number;
  /** Unrecorded seconds before each measurement. */
  warmupSeconds: number;
  /** Compared sides run interleaved in slices of this many seconds; 0: one after the other. */
  sliceSeconds: number;
  /** DB_POOL_SIZE of the server and size of the direct side's slonik pool. */
  poolSize: number;
  /** A request (HTTP or direct) taking longer than this is an error. */
  requestTimeoutMs: number;
  /** Also measure diagnostic variants of the direct side. */
  variants: boolean;
  /** Where the JSON results go. */
  resultsDir: string;
}

function intEnv(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name}=${raw}: expected an integer from ${min} to ${max}`);
  return n;
}

export function readKnobs(env: NodeJS.ProcessEnv = process.env): Knobs {
  return {
    concurrency: intEnv(env, 'BENCH_CONCURRENCY', 16, 1, 1024),
    seconds: intEnv(env, 'BENCH_SECONDS', 10, 1, 600),
    warmupSeconds: intEnv(env, 'BENCH_WARMUP_SECONDS', 2, 0, 60),
    sliceSeconds: intEnv(env, 'BENCH_SLICE_SECONDS', 2, 0, 600),
    poolSize: intEnv(env, 'BENCH_POOL_SIZE', 10, 1, 100),
    requestTimeoutMs: intEnv(env, 'BENCH_REQUEST_TIMEOUT_MS', 10_000, 100, 120_000),
    variants: ['1', 'true', 'yes'].includes((env.BENCH_VARIANTS ?? '').toLowerCase()),
    resultsDir: env.BENCH_RESULTS_DIR || 'bench/results',
  };
}
