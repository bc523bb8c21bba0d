// The real process: `node server/main.ts` on a test database, with the
// pg-boss worker, health, docs, JSON logs and a draining SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadOpenApi } from '../../server/http/openapi.ts';
import { QUEUES } from '../../server/jobs/worker.ts';
import { cloneDatabase, type TestDatabase } from '../support/db.ts';
import { injectedCluster } from '../support/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
let db: TestDatabase;
let proc: ChildProcess;
let baseUrl: string;
const logs: any[] = [];
let exited: Promise<number | null>;

beforeAll(async () => {
  db = await cloneDatabase(injectedCluster(), inject('template'), 'lifecycle');
  proc = spawn(process.execPath, [path.join(root, 'server/main.ts')], {
    env: { ...process.env, DATABASE_URL: db.ownerUrl, APP_DATABASE_URL: db.appUrl, PORT: '0', ALLOW_SIGNUP: 'true', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '10000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  let buffer = '';
  baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${buffer}`)), 60_000);
    proc.stdout!.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const entry = JSON.parse(line);
          logs.push(entry);
          if (entry.msg === 'listening') {
            clearTimeout(timer);
            resolve(entry.url);
          }
        } catch {
          logs.push({ unparsed: line });
        }
      }
    });
    proc.stderr!.on('data', (c) => (buffer += c));
    proc.on('exit', (code) => reject(new Error(`server exited ${code}: ${buffer}`)));
  });
});

afterAll(async () => {
  if (proc && proc.exitCode === null) proc.kill('SIGKILL');
  await db?.drop();
});

describe('process', () => {
  it('answers /healthz and /readyz', async () => {
    const h = await fetch(`${baseUrl}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ data: { status: 'ok' }, meta: null });
    const r = await fetch(`${baseUrl}/readyz`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).data).toMatchObject({ status: 'ready', database: 'ok', migrated: true });
  });

  it('serves the contract as JSON and a Redoc page from its own files', async () => {
    const j = await fetch(`${baseUrl}/docs/openapi.json`);
    expect(j.headers.get('content-type')).toMatch(/application\/json/);
    expect(await j.json()).toEqual(loadOpenApi().doc);
    const page = await (await fetch(`${baseUrl}/docs`)).text();
    expect(page).toContain('<script src="/docs/redoc-init.js"></script>');
    expect((await (await fetch(`${baseUrl}/docs/redoc-init.js`)).text())).toContain("Redoc.init('/docs/openapi.json'");
    expect(page).not.toMatch(/https?:\/\//);
    const js = await fetch(`${baseUrl}/docs/redoc.standalone.js`);
    expect(js.status).toBe(200);
    expect((await js.text()).length).toBeGreaterThan(100_000);
  });

  it('logs one JSON line per request, carrying the request id', async () => {
    await fetch(`${baseUrl}/v1/workspaces`, { headers: { 'x-request-id': 'log-check-1' } });
    await new Promise((r) => setTimeout(r, 200));
    const line = logs.find((l) => l.requestId === 'log-check-1');
    expect(line).toMatchObject({ level: 'info', msg: 'request', method: 'GET', route: '/v1/workspaces', status: 401 });
  });

  it('runs maintenance jobs through pg-boss', async () => {
    const owner = new pg.Client({ connectionString: db.ownerUrl });
    await owner.connect();
    const boss = new PgBoss({ connectionString: db.ownerUrl, schema: 'pgboss' });
    try {
      const schedules = await owner.query('select name from pgboss.schedule order by name');
      const scheduled = schedules.rows.map((r) => r.name);
      expect(scheduled).toEqual(expect.arrayContaining([QUEUES.auditPartitions, QUEUES.purge, QUEUES.recurringMaterialize]));
      for (const name of scheduled) expect(Object.values(QUEUES)).toContain(name);
      const signup = await fetch(`${baseUrl}/v1/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'jobs@example.com', password: 'correct horse battery staple', organizationName: 'Jobs', workspaceName: 'W' }) });
      const { data } = (await signup.json()) as any;
      await owner.query(`update app.sessions set expires_at = now() - interval '2 days' where user_id = $1`, [data.user.id]);
      await boss.start();
      const jobId = await boss.send(QUEUES.purge, {});
      let state = '';
      for (let i = 0; i < 100 && state !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 200));
        const job = await boss.getJobById(QUEUES.purge, jobId!);
        state = job?.state ?? '';
        if (state === 'failed') throw new Error(`job failed: ${JSON.stringify(job?.output)}`);
      }
      expect(state).toBe('completed');
      const left = await owner.query('select count(*)::int as n from app.sessions where user_id = $1', [data.user.id]);
      expect(left.rows[0].n).toBe(0);
      const parts = await owner.query(`select count(*)::int as n from pg_inherits where inhparent = 'audit.api_calls'::regclass`);
      expect(parts.rows[0].n).toBeGreaterThanOrEqual(5); // default + this month + 3 ahead
    } finally {
      await boss.stop({ graceful: false, close: true });
      await owner.end();
    }
  });

  it('on SIGTERM finishes the request in flight, then exits 0', async () => {
    const signup = await fetch(`${baseUrl}/v1/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'drain@example.com', password: 'correct horse battery staple', organizationName: 'Drain', workspaceName: 'W' }) });
    const { data } = (await signup.json()) as any;
    const blocker = new pg.Client({ connectionString: db.ownerUrl });
    await blocker.connect();
    await blocker.query('begin');
    await blocker.query('lock table app.workspace_members in exclusive mode');
    const inflight = fetch(`${baseUrl}/v1/workspaces/${data.workspace.id}/members`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${data.session.token}` },
      body: JSON.stringify({ email: 'late@example.com', role: 'viewer' }),
    });
    await new Promise((r) => setTimeout(r, 300));
    proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    expect(proc.exitCode).toBeNull(); // still draining
    await blocker.query('rollback');
    await blocker.end();
    const res = await inflight;
    expect(res.status).toBe(201);
    expect(await exited).toBe(0);
    expect(logs.some((l) => l.msg === 'stopped')).toBe(true);
  });
});
