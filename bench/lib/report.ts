// Scenario reports: the shape every scenario returns, the table on stdout,
// and the JSON file under bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { postmasterOf } from './cpu.ts';
import type { Knobs } from './knobs.ts';
import type { LoadResult } from './load.ts';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  postgresSettings: Record<string, string>;
  database: string;
  /** The cluster's postmaster, when it runs on this machine: its CPU is accounted to PostgreSQL. */
  postmasterPid: number | null;
  loadAverageAtStart: number[];
}

/** One measured line: a group (e.g. a route) and a side (http, direct, ...). */
export interface Row {
  group: string;
  side: string;
  /** What exactly was measured, for the JSON and the README. */
  what: string;
  result: LoadResult;
}

/** numerator / denominator within a group, e.g. http / direct. */
export interface Ratio {
  group: string;
  numerator: string;
  denominator: string;
  rps: number;
  p50: number;
  p99: number;
}

export interface ScenarioReport {
  scenario: string;
  description: string;
  startedAt: string;
  finishedAt: string;
  knobs: Knobs;
  machine: Machine;
  setup: Record<string, unknown>;
  rows: Row[];
  ratios: Ratio[];
  notes: string[];
}

export function ratiosFor(rows: Row[], numerator: string, denominator: string): Ratio[] {
  const out: Ratio[] = [];
  for (const group of [...new Set(rows.map((r) => r.group))]) {
    const a = rows.find((r) => r.group === group && r.side === numerator);
    const b = rows.find((r) => r.group === group && r.side === denominator);
    if (!a || !b) continue;
    out.push({
      group,
      numerator,
      denominator,
      rps: a.result.rps / b.result.rps,
      p50: a.result.latency.p50 / b.result.latency.p50,
      p99: a.result.latency.p99 / b.result.latency.p99,
    });
  }
  return out;
}

export async function machineFacts(ownerUrl: string, where: string): Promise<Machine> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { v: version, pid } = (await client.query('select version() as v, pg_backend_pid() as pid')).rows[0];
    let dataDirectory: string | null = null;
    try {
      dataDirectory = (await client.query(`select current_setting('data_directory') as d`)).rows[0].d;
    } catch {
      // not a superuser: the cluster's CPU is not accounted separately
    }
    const names = ['server_version', 'max_connections', 'shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'jit'];
    const settings = await client.query('select name, current_setting(name) as setting from pg_settings where name = any($1) order by name', [names]);
    const postgresSettings: Record<string, string> = {};
    for (const r of settings.rows) postgresSettings[r.name] = r.setting;
    const cpus = os.cpus();
    return {
      cpus: os.availableParallelism(),
      cpuModel: cpus[0]?.model ?? 'unknown',
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
      postgres: version,
      postgresSettings,
      database: where,
      postmasterPid: postmasterOf(pid, dataDirectory),
      loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    };
  } finally {
    await client.end();
  }
}

const f = (n: number | null | undefined, digits = 2) => (n === null || n === undefined || Number.isNaN(n) ? '-' : n.toFixed(digits));

function table(header: string[], lines: string[][], rightAlign: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    cells.map((c, i) => (rightAlign[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}

export function formatReport(r: ScenarioReport): string {
  const out: string[] = [];
  out.push(`== ${r.scenario}: ${r.description}`);
  out.push(
    `   ${r.machine.cpus} CPUs (${r.machine.cpuModel}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgresSettings.server_version ?? '?'} (${r.machine.database})`,
  );
  out.push(
    `   concurrency ${r.knobs.concurrency}, pool ${r.knobs.poolSize}, ${r.knobs.seconds} s measured per side after ${r.knobs.warmupSeconds} s warm-up` +
      (r.rows[0] && r.rows[0].result.slices > 1 ? `, sides interleaved in ${r.rows[0].result.slices} slices` : '') +
      ', every response checked',
  );
  out.push('');
  const header = ['route', 'side', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'requests', 'busy cores', 'other', 'cpu ms/req: bench', 'server', 'postgres'];
  const right = [false, false, true, true, true, true, true, true, true, true, true, true, true];
  const lines: string[][] = [];
  let last = '';
  for (const row of r.rows) {
    const x = row.result;
    lines.push([
      row.group === last ? '' : row.group,
      row.side,
      f(x.rps, 0),
      f(x.latency.p50),
      f(x.latency.p90),
      f(x.latency.p99),
      f(x.latency.max),
      String(x.requests),
      x.cpu.machineBusyCores === null ? '-' : `${f(x.cpu.machineBusyCores, 2)}/${x.cpu.cores}`,
      f(x.cpu.otherCores, 2),
      f(x.cpu.perRequestMs.bench, 3),
      f(x.cpu.perRequestMs.server, 3),
      f(x.cpu.perRequestMs.postgres, 3),
    ]);
    last = row.group;
  }
  out.push(table(header, lines, right));
  if (r.ratios.length) {
    out.push('');
    out.push(
      table(
        ['route', 'ratio', 'req/s', 'p50', 'p99'],
        r.ratios.map((q) => [q.group, `${q.numerator}/${q.denominator}`, f(q.rps), f(q.p50), f(q.p99)]),
        [false, false, true, true, true],
      ),
    );
  }
  for (const n of r.notes) out.push(`   note: ${n}`);
  return out.join('\n');
}

/** Adds a note when processes outside the bench took CPU during a measurement. */
export function noteNoise(r: ScenarioReport, thresholdCores = 0.15) {
  const worst = Math.max(0, ...r.rows.map((row) => row.result.cpu.otherCores ?? 0));
  if (worst > thresholdCores) {
    r.notes.push(
      `WARNING: other processes kept up to ${worst.toFixed(2)} cores busy during a measurement (column "other"); ` +
        'those figures are disturbed, rerun on a quiet machine.',
    );
  }
}

export function writeReport(r: ScenarioReport, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const stamp = r.startedAt.replace(/[:.]/g, '-');
  const file = path.join(dir, `${r.scenario}-${stamp}.json`);
  writeFileSync(file, JSON.stringify(r, null, 2) + '\n');
  return file;
}
