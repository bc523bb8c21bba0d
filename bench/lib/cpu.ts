// CPU accounting over a measurement window, from /proc (Linux; null elsewhere):
// this process, the server child, the PostgreSQL cluster (the postmaster and
// its children, when the cluster runs on this machine), and the whole machine.
// Whatever the machine spent beyond those is other processes: noise.
import { readdirSync, readFileSync, realpathSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ; 100 on every Linux build that matters

/** Fields after "pid (comm) ", from field 3 (state) on; null if the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

// Field n of /proc/<pid>/stat is fields[n - 3].
const ppidOf = (f: string[]) => Number(f[1]);
const ownSeconds = (f: string[]) => (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND; // utime + stime
const reapedSeconds = (f: string[]) => (Number(f[13]) + Number(f[14])) / TICKS_PER_SECOND; // cutime + cstime

export function procSeconds(pid: number): number | null {
  const f = statFields(pid);
  return f ? ownSeconds(f) : null;
}

/**
 * The postmaster of a backend (pg_backend_pid() and the data_directory
 * setting), if that backend runs on this machine: a PostgreSQL process
 * works in its data directory, which tells it apart from a process that
 * merely has the same pid in another pid namespace (a container).
 */
export function postmasterOf(backendPid: number, dataDirectory: string | null): number | null {
  if (!dataDirectory) return null;
  try {
    if (realpathSync(`/proc/${backendPid}/cwd`) !== realpathSync(dataDirectory)) return null;
    const f = statFields(backendPid);
    if (!f) return null;
    const parent = ppidOf(f);
    return realpathSync(`/proc/${parent}/cwd`) === realpathSync(dataDirectory) ? parent : null;
  } catch {
    return null;
  }
}

interface TreeSnapshot {
  /** Postmaster's own time plus what it reaped from exited children. */
  root: number;
  children: Map<number, number>;
}

function treeSeconds(root: number): TreeSnapshot | null {
  const rf = statFields(root);
  if (!rf) return null;
  const children = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === root) continue;
    const f = statFields(pid);
    if (f && ppidOf(f) === root) children.set(pid, ownSeconds(f));
  }
  return { root: ownSeconds(rf) + reapedSeconds(rf), children };
}

/** CPU seconds the tree spent between two snapshots, exited and new backends included. */
function treeDelta(a: TreeSnapshot, b: TreeSnapshot): number {
  let s = b.root - a.root; // includes the whole life of children reaped in between
  for (const [pid, t] of b.children) s += t - (a.children.get(pid) ?? 0);
  for (const [pid, t] of a.children) if (!b.children.has(pid)) s -= t; // counted whole in root; keep only the part after a
  return Math.max(0, s);
}

function machineSeconds(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system + irq + softirq + (steal || 0)) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

export interface Watch {
  serverPid: number | null;
  postgresPid: number | null;
}

export interface CpuSnapshot {
  wallMs: number;
  self: NodeJS.CpuUsage;
  server: number | null;
  postgres: TreeSnapshot | null;
  machine: number | null;
}

export function snapshot(w: Watch): CpuSnapshot {
  return {
    wallMs: performance.now(),
    self: process.cpuUsage(),
    server: w.serverPid === null ? null : procSeconds(w.serverPid),
    postgres: w.postgresPid === null ? null : treeSeconds(w.postgresPid),
    machine: machineSeconds(),
  };
}

/** Seconds of CPU (and wall) between two snapshots; additive across windows. */
export interface CpuDelta {
  wall: number;
  bench: number;
  server: number | null;
  postgres: number | null;
  machine: number | null;
}

export function cpuDelta(a: CpuSnapshot, b: CpuSnapshot): CpuDelta {
  return {
    wall: (b.wallMs - a.wallMs) / 1000,
    bench: (b.self.user - a.self.user + b.self.system - a.self.system) / 1e6,
    server: a.server !== null && b.server !== null ? b.server - a.server : null,
    postgres: a.postgres && b.postgres ? treeDelta(a.postgres, b.postgres) : null,
    machine: a.machine !== null && b.machine !== null ? b.machine - a.machine : null,
  };
}

export function addDeltas(ds: CpuDelta[]): CpuDelta {
  const sum = (pick: (d: CpuDelta) => number | null) => (ds.some((d) => pick(d) === null) ? null : ds.reduce((t, d) => t + pick(d)!, 0));
  return {
    wall: ds.reduce((t, d) => t + d.wall, 0),
    bench: ds.reduce((t, d) => t + d.bench, 0),
    server: sum((d) => d.server),
    postgres: sum((d) => d.postgres),
    machine: sum((d) => d.machine),
  };
}

export interface CpuReport {
  cores: number;
  /** Cores busy on average over the measured windows, whole machine. */
  machineBusyCores: number | null;
  /** Cores busy on average with processes that are not part of the bench: noise. */
  otherCores: number | null;
  /** CPU milliseconds per request. */
  perRequestMs: {
    /** The bench process: load generator (HTTP side) or driver (direct side). */
    bench: number;
    /** The API server child process. */
    server: number | null;
    /** The PostgreSQL cluster (postmaster and all its children). */
    postgres: number | null;
  };
}

/** requests: those completed during the windows whose CPU `d` adds up. */
export function cpuReport(d: CpuDelta, requests: number, cores: number): CpuReport {
  const n = Math.max(requests, 1);
  const ms = (s: number | null) => (s === null ? null : (s * 1000) / n);
  const known = d.bench + (d.server ?? 0) + (d.postgres ?? 0);
  return {
    cores,
    machineBusyCores: d.machine === null || d.wall <= 0 ? null : d.machine / d.wall,
    otherCores: d.machine === null || d.wall <= 0 ? null : Math.max(0, d.machine - known) / d.wall,
    perRequestMs: { bench: ms(d.bench)!, server: ms(d.server), postgres: ms(d.postgres) },
  };
}
