// `npm start` as a user runs it, on an embedded PostgreSQL under a temporary
// DATA_DIR: a signal to npm, or Ctrl-C to the whole process group, drains the
// server, which then stops its database (in a process group of its own) and
// leaves no process behind; after a SIGKILL the next start recovers by itself
// (server/db/embedded.ts, README.md "Set up"). Linux: processes are read
// from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
let dir: string;
let pgPort: number;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
  args: string;
}

function proc(pid: number): Proc | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' || state === 'X') return null;
    return { pid, ppid: Number(ppid), pgrp: Number(pgrp), args: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() };
  } catch {
    return null;
  }
}

/** Every live process of this test's DATA_DIR: on its command line (postgres -D) or in its environment (the server). */
function processesOfDataDir(): Proc[] {
  const found: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const p = proc(Number(name));
    if (!p) continue;
    let environ = '';
    try {
      environ = readFileSync(`/proc/${name}/environ`, 'utf8');
    } catch {
      // another user's process: its command line decides
    }
    if (p.args.includes(dir) || environ.split('\0').includes(`DATA_DIR=${dir}`)) found.push(p);
  }
  return found;
}

async function until<T>(what: string, fn: () => T | null | undefined | false, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Run {
  child: ChildProcess;
  url: string;
  /** JSON log lines of the server. */
  logs: any[];
  /** Everything printed, stdout and stderr. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The `node server/main.ts` process (npm execs it in place of its shell). */
  server(): Proc;
  postgresPid(): number;
}

/**
 * Starts `npm start` (or another command line) in a process group of its own,
 * as a terminal does, and waits until it listens and /readyz answers 200.
 */
async function start(command: string[] = ['npm', 'start']): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, PORT: '0', EMBEDDED_PG_PORT: String(pgPort), LOG_LEVEL: 'debug', ALLOW_SIGNUP: 'false', SHUTDOWN_TIMEOUT_MS: '10000' };
  delete env.DATABASE_URL;
  delete env.APP_DATABASE_URL;
  const child = spawn(command[0], command.slice(1), { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: any[] = [];
  let raw = '';
  let buffer = '';
  child.stdout!.on('data', (chunk) => {
    raw += chunk;
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        logs.push(JSON.parse(line));
      } catch {
        // npm's banner
      }
    }
  });
  child.stderr!.on('data', (chunk) => (raw += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));
  const listening = await until('the server to listen', () => {
    if (done) throw new Error(`${command.join(' ')} exited before listening:\n${raw}`);
    return logs.find((l) => l.msg === 'listening');
  }, 90_000);
  const url = listening.url as string;
  expect((await fetch(`${url}/readyz`)).status).toBe(200);
  return {
    child,
    url,
    logs,
    output: () => raw,
    exited,
    server: () => {
      const server = processesOfDataDir().find((p) => p.args.includes('server/main.ts'));
      if (!server) throw new Error('no server process');
      return server;
    },
    postgresPid: () => Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]),
  };
}

/** A clean stop: exit 0 after "stopped", no process left, nothing logged at warn or error, no connection error anywhere. */
async function expectCleanStop(run: Run, signal: string) {
  const { code } = await run.exited;
  expect(code).toBe(0);
  expect(processesOfDataDir()).toEqual([]);
  const from = run.logs.findIndex((l) => l.msg === 'shutting down: draining requests and jobs');
  expect(run.logs[from]).toMatchObject({ signal });
  const shutdown = run.logs.slice(from);
  expect(shutdown.filter((l) => l.msg === 'stopped')).toHaveLength(1);
  expect(shutdown.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  // PostgreSQL's own lines are logged at debug: its shutdown ends no session.
  const output = run.output();
  expect(output.slice(output.indexOf('shutting down: draining'))).not.toMatch(/ECONNREFUSED|ECONNRESET|Connection terminated|terminating connection|57P01|FATAL|PANIC/i);
  expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(false);
}

const json = { 'content-type': 'application/json' };
let session: string;
let workspaceId: string;

async function workspacesWith(url: string, token: string) {
  const res = await fetch(`${url}/v1/workspaces`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, ids: res.ok ? ((await res.json()) as any).data.map((w: any) => w.id) : [] };
}

beforeAll(async () => {
  expect(existsSync('/proc/self/stat'), 'this test reads processes from /proc (Linux)').toBe(true);
  dir = mkdtempSync(path.join(tmpdir(), 'pressroom-signals-'));
  chmodSync(dir, 0o755); // the cluster runs as the postgres user when we are root
  pgPort = await freePort();
});

afterAll(() => {
  if (!dir) return;
  for (const p of processesOfDataDir()) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('npm start and signals', () => {
  it('SIGTERM to the npm process reaches the server, which drains, then stops its database', { timeout: 150_000 }, async () => {
    const run = await start();
    const signup = await fetch(`${run.url}/v1/auth/signup`, {
      method: 'POST', headers: json,
      body: JSON.stringify({ email: 'signals@example.com', password: 'correct horse battery staple', organizationName: 'Signals', workspaceName: 'W' }),
    });
    expect(signup.status).toBe(201);
    ({ data: { session: { token: session }, workspace: { id: workspaceId } } } = (await signup.json()) as any);

    // The server is npm's own child (npm's shell exec'd it) in npm's process
    // group; the postmaster is in a group of its own.
    const server = run.server();
    expect(server.ppid).toBe(run.child.pid);
    expect(server.pgrp).toBe(run.child.pid);
    const postgres = proc(run.postgresPid())!;
    expect(postgres.ppid).toBe(server.pid);
    expect(postgres.pgrp).toBe(postgres.pid);

    process.kill(run.child.pid!, 'SIGTERM');
    await expectCleanStop(run, 'SIGTERM');
  });

  it('Ctrl-C (SIGINT to the whole process group) drains the server; the database stops after it, cleanly', { timeout: 90_000 }, async () => {
    const run = await start();
    expect(await workspacesWith(run.url, session)).toEqual({ status: 200, ids: [workspaceId] });
    process.kill(-run.child.pid!, 'SIGINT');
    await expectCleanStop(run, 'SIGINT');
  });
});

describe('crash recovery', () => {
  it('after SIGKILL of the server and its database, the next start removes the stale postmaster.pid; data intact', { timeout: 90_000 }, async () => {
    const run = await start();
    const server = run.server();
    const postgresPid = run.postgresPid();
    process.kill(server.pid, 'SIGKILL');
    process.kill(postgresPid, 'SIGKILL');
    await run.exited;
    // The backends notice their postmaster's death and exit.
    await until('every process of the data directory to be gone', () => processesOfDataDir().length === 0);
    expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(true);

    const again = await start();
    expect(again.logs.find((l) => l.msg.startsWith('removed a stale postmaster.pid'))).toMatchObject({ level: 'warn', postgresPid });
    expect(await workspacesWith(again.url, session)).toEqual({ status: 200, ids: [workspaceId] });
    process.kill(again.child.pid!, 'SIGTERM');
    await again.exited;
  });

  it('after SIGKILL of the server alone, the next start stops the orphaned PostgreSQL and starts its own; data intact', { timeout: 90_000 }, async () => {
    const run = await start();
    // A row written just before the crash: an API key.
    const created = await fetch(`${run.url}/v1/workspaces/${workspaceId}/api-keys`, {
      method: 'POST', headers: { ...json, authorization: `Bearer ${session}` },
      body: JSON.stringify({ name: 'before the crash', workspaceIds: [workspaceId], role: 'viewer' }),
    });
    expect(created.status).toBe(201);
    const { key } = ((await created.json()) as any).data;
    const server = run.server();
    const postgresPid = run.postgresPid();
    process.kill(server.pid, 'SIGKILL');
    await run.exited;
    // The postmaster outlives its server (another process group), orphaned.
    const orphan = await until('the server to be gone', () => processesOfDataDir().every((p) => p.pid !== server.pid) && proc(postgresPid));
    expect(orphan.ppid).not.toBe(server.pid);

    const again = await start();
    expect(again.logs.find((l) => l.msg.startsWith('a PostgreSQL left running'))).toMatchObject({ level: 'warn', postgresPid });
    expect(again.logs.find((l) => l.msg.startsWith('stopped the PostgreSQL left running'))).toMatchObject({ level: 'info', postgresPid });
    expect(proc(postgresPid)).toBeNull();
    expect(again.postgresPid()).not.toBe(postgresPid);
    expect(await workspacesWith(again.url, key)).toEqual({ status: 200, ids: [workspaceId] });

    // While it runs, a second server on the same DATA_DIR is refused, and the first keeps its database.
    const second = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, ['server/main.ts'], { cwd: root, env: { ...process.env, DATA_DIR: dir, PORT: '0', EMBEDDED_PG_PORT: String(pgPort), LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (c) => (out += c));
      p.stderr.on('data', (c) => (out += c));
      p.on('exit', (code) => resolve({ code, out }));
    });
    expect(second.code).toBe(1);
    expect(second.out).toContain(`is in use by a running process (pid ${again.server().pid}`);
    expect((await fetch(`${again.url}/readyz`)).status).toBe(200);

    process.kill(again.child.pid!, 'SIGTERM');
    await expectCleanStop(again, 'SIGTERM');
  });

  it('a postmaster.pid naming a live program that is not its PostgreSQL is removed as stale', { timeout: 90_000 }, async () => {
    // As after a reboot or in a new container, where the old process id now belongs to someone else (here: this test).
    const lockFile = path.join(dir, 'pg', 'postmaster.pid');
    writeFileSync(lockFile, `${process.pid}\n${path.join(dir, 'pg')}\n1700000000\n${pgPort}\n/tmp\n127.0.0.1\n  1234567     65536\nready   \n`);
    const run = await start();
    expect(run.logs.find((l) => l.msg.startsWith('removed a stale postmaster.pid'))).toMatchObject({ level: 'warn', postgresPid: process.pid });
    expect(await workspacesWith(run.url, session)).toEqual({ status: 200, ids: [workspaceId] });
    process.kill(run.child.pid!, 'SIGTERM');
    await run.exited;
    expect(processesOfDataDir()).toEqual([]);
  });
});
