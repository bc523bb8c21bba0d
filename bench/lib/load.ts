// Closed-loop load: N loops, each issuing one request at a time, as fast as
// the system answers. A warm-up (unrecorded), then the measured time; a
// request counts when it completes inside a measured window. Latencies go
// into a preallocated Float64Array. Any failed request stops every loop and
// the measurement throws: a bench must never quietly measure error responses.
//
// Sides compared with each other (HTTP and direct) can be interleaved: the
// measured time is cut into slices run A B A B ..., so a disturbance from
// outside (another process on a small machine) hits both sides alike instead
// of whichever happened to run at the time.
import os from 'node:os';
import { addDeltas, cpuDelta, cpuReport, snapshot, type CpuDelta, type CpuReport, type CpuSnapshot, type Watch } from './cpu.ts';
import type { Knobs } from './knobs.ts';

/** One request; resolves when it succeeded, throws (with a useful message) when it did not. */
export type Op = () => Promise<void>;

export interface LoadOptions {
  concurrency: number;
  warmupMs: number;
  /** Measured milliseconds per side. */
  durationMs: number;
  /** Interleave the sides in slices of about this length; 0: one continuous window per side. */
  sliceMs: number;
  /** A request slower than this fails the run (the op itself should also time out). */
  requestTimeoutMs: number;
  /** Processes to account CPU to: the server child, the PostgreSQL postmaster. */
  watch: Watch;
}

/** The load options of the knobs (loops, warm-up, measured time, slices, timeout), CPU accounted to `watch`. */
export function loadOptions(knobs: Knobs, watch: Watch): LoadOptions {
  return {
    concurrency: knobs.concurrency,
    warmupMs: knobs.warmupSeconds * 1000,
    durationMs: knobs.seconds * 1000,
    sliceMs: knobs.sliceSeconds * 1000,
    requestTimeoutMs: knobs.requestTimeoutMs,
    watch,
  };
}

export interface LatencyStats {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  concurrency: number;
  /** Measured seconds (sum of the slices). */
  seconds: number;
  slices: number;
  requests: number;
  errors: number;
  rps: number;
  /** Milliseconds. */
  latency: LatencyStats;
  cpu: CpuReport;
}

export class BenchAbort extends Error {}

export function latencyStats(samples: Float64Array): LatencyStats {
  const n = samples.length;
  if (n === 0) return { mean: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN };
  const sorted = Float64Array.from(samples).sort();
  // Nearest rank.
  const at = (p: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  return { mean: sum / n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[n - 1] };
}

interface Window {
  samples: Float64Array;
  seconds: number;
  cpu: CpuDelta;
  /** Requests scaled to the CPU window (timers fire a little late). */
  cpuRequests: number;
}

/**
 * Runs every op in its own loop for warmupMs + durationMs, recording the
 * requests that complete in the last durationMs, then waits for the ones in
 * flight. Bounded: loops stop issuing at the end of the window, and the run
 * is abandoned (throws) if it has not wound down requestTimeoutMs later.
 */
async function runWindow(ops: Op[], warmupMs: number, durationMs: number, opts: LoadOptions): Promise<Window> {
  // 200k requests/s is far beyond this stack; grow if ever exceeded.
  let samples = new Float64Array(Math.max(1024, Math.ceil((durationMs / 1000) * 200_000)));
  let recorded = 0;
  let errors = 0;
  let firstError: unknown = null;

  const t0 = performance.now();
  const measureFrom = t0 + warmupMs;
  let stopAt = measureFrom + durationMs;
  const w = opts.watch;
  let startSnap: CpuSnapshot | null = warmupMs === 0 ? snapshot(w) : null;
  let endSnap: CpuSnapshot | null = null;
  const startTimer = warmupMs > 0 ? setTimeout(() => (startSnap = snapshot(w)), warmupMs) : null;
  const endTimer = setTimeout(() => (endSnap = snapshot(w)), warmupMs + durationMs);

  const loop = async (op: Op) => {
    while (performance.now() < stopAt) {
      const started = performance.now();
      try {
        await op();
      } catch (e) {
        errors++;
        firstError ??= e;
        stopAt = 0; // stop every loop
        return;
      }
      const done = performance.now();
      if (done >= measureFrom && done < stopAt) {
        if (recorded === samples.length) {
          const bigger = new Float64Array(samples.length * 2);
          bigger.set(samples);
          samples = bigger;
        }
        samples[recorded++] = done - started;
      }
    }
  };

  let watchdog: NodeJS.Timeout | undefined;
  const limit = warmupMs + durationMs + opts.requestTimeoutMs + 5_000;
  try {
    await Promise.race([
      Promise.all(ops.map(loop)),
      new Promise<never>((_, reject) => {
        watchdog = setTimeout(() => reject(new BenchAbort(`the load did not wind down within ${limit} ms`)), limit);
      }),
    ]);
  } finally {
    clearTimeout(watchdog);
    if (startTimer) clearTimeout(startTimer);
    clearTimeout(endTimer);
  }
  if (errors > 0) {
    const msg = firstError instanceof Error ? firstError.message : String(firstError);
    throw new BenchAbort(`${errors} request(s) failed; the first: ${msg}`);
  }
  // Every loop stops once it sees the window's end, which can come a moment
  // before endTimer fires (its deadline was set after t0): the window is over
  // then, so its snapshot is taken now, as a late timer would have.
  if (startSnap && !endSnap && performance.now() >= measureFrom + durationMs) endSnap = snapshot(w);
  if (!startSnap || !endSnap) throw new BenchAbort('the measurement window did not complete');
  const cpu = cpuDelta(startSnap as CpuSnapshot, endSnap as CpuSnapshot);
  const seconds = durationMs / 1000;
  return { samples: samples.slice(0, recorded), seconds, cpu, cpuRequests: (recorded * cpu.wall) / seconds };
}

function summarize(windows: Window[], concurrency: number): LoadResult {
  const total = windows.reduce((t, w) => t + w.samples.length, 0);
  const all = new Float64Array(total);
  let at = 0;
  for (const w of windows) {
    all.set(w.samples, at);
    at += w.samples.length;
  }
  const seconds = windows.reduce((t, w) => t + w.seconds, 0);
  const cpuRequests = windows.reduce((t, w) => t + w.cpuRequests, 0);
  return {
    concurrency,
    seconds,
    slices: windows.length,
    requests: total,
    errors: 0,
    rps: total / seconds,
    latency: latencyStats(all),
    cpu: cpuReport(addDeltas(windows.map((w) => w.cpu)), Math.round(cpuRequests), os.availableParallelism()),
  };
}

export interface Side {
  name: string;
  /** Builds the op of loop i (called once per loop, reused across slices). */
  makeOp: (loop: number) => Op;
  /** Progress line before the side's warm-up. */
  onStart?: () => void;
  /** Processes to account this side's CPU to, when not the options' (a side with its own server). */
  watch?: Watch;
}

/**
 * Measures each side at opts.concurrency: a warm-up per side, then either one
 * continuous window per side (sliceMs 0) or the sides interleaved in slices.
 */
export async function measureSides(sides: Side[], opts: LoadOptions): Promise<Map<string, LoadResult>> {
  const ops = new Map(sides.map((s) => [s.name, Array.from({ length: opts.concurrency }, (_, i) => s.makeOp(i))]));
  const optsOf = (s: Side): LoadOptions => (s.watch ? { ...opts, watch: s.watch } : opts);
  const windows = new Map<string, Window[]>(sides.map((s) => [s.name, []]));
  const slices = opts.sliceMs > 0 ? Math.max(1, Math.round(opts.durationMs / opts.sliceMs)) : 1;
  if (slices === 1) {
    for (const s of sides) {
      s.onStart?.();
      windows.get(s.name)!.push(await runWindow(ops.get(s.name)!, opts.warmupMs, opts.durationMs, optsOf(s)));
    }
  } else {
    for (const s of sides) {
      s.onStart?.();
      if (opts.warmupMs > 0) await runWindow(ops.get(s.name)!, 0, opts.warmupMs, optsOf(s));
    }
    const sliceMs = opts.durationMs / slices;
    for (let i = 0; i < slices; i++) {
      for (const s of sides) windows.get(s.name)!.push(await runWindow(ops.get(s.name)!, 0, sliceMs, optsOf(s)));
    }
  }
  return new Map(sides.map((s) => [s.name, summarize(windows.get(s.name)!, opts.concurrency)]));
}
