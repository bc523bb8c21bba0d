// The service on a distributed database (docs/citus.md, "Where the schema stands"): a fresh
// database on the test cluster's coordinator, migrated, distributed by the real CLI
// (`pressroom distribute`), the internal roles given their worker logins, then the real server
// (server/main.ts) on it, called over HTTP as the README's first calls do. What answers here
// answers on Citus; what does not yet is listed in docs/citus.md.
//
// Environment: CITUS_URL (the coordinator; default `scripts/citus/cluster.sh url`);
// CITUS_KEEP_DB=1 keeps the database afterwards.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../server/db/migrate.ts';
import { client } from '../support/http.ts';
import { cluster, clusterDatabase, distributeCli, ROOT } from './support.ts';

const db = `pressroom_calls_${randomBytes(4).toString('hex')}`;
let ownerUrl = '';
let server: ChildProcess | null = null;
let serverLog = '';
/** Requests to the server, each answer checked against openapi.yaml (tests/support/http.ts). */
const running = { baseUrl: '' };
const api = client(running);

beforeAll(async () => {
  ownerUrl = clusterDatabase(db).url;
  await migrate(ownerUrl, { quiet: true, waitMs: 0 });
  await distributeCli(ownerUrl);
  // After the migrations and the distribute step: Citus gives the workers the roles as the
  // coordinator has them, without LOGIN (docs/citus.md, "Request context and roles").
  cluster('roles', db);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of ['APP_DATABASE_URL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'METRICS_PORT']) delete env[v];
  server = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], {
    cwd: ROOT,
    env: { ...env, DATABASE_URL: ownerUrl, PORT: '0', HOST: '127.0.0.1', ALLOW_SIGNUP: 'true', RUN_WORKER: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stderr!.on('data', (c) => (serverLog += c));
  running.baseUrl = await new Promise<string>((resolve, reject) => {
    server!.stdout!.on('data', (c: Buffer) => {
      serverLog += c;
      // Whole lines only: a chunk may end inside one.
      for (const line of serverLog.split('\n').slice(0, -1)) {
        if (!line.startsWith('{')) continue;
        const l = JSON.parse(line) as { msg?: string; url?: string };
        if (l.msg === 'listening' && l.url) resolve(l.url);
      }
    });
    server!.once('exit', (code) => reject(new Error(`server/main.ts exited (${code}):\n${serverLog.slice(-4000)}`)));
  });
}, 900_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (process.env.CITUS_KEEP_DB !== '1' && ownerUrl) cluster('dropdb', db);
}, 120_000);

describe('the service on a distributed database', () => {
  const password = 'correct horse battery staple';
  let session = '';
  let ws = '';

  it('signs up an organization and lists its workspace with the session', async () => {
    const signup = await api.post('/v1/auth/signup', { email: 'ada@example.com', password, organizationName: 'Acme', workspaceName: 'Marketing' });
    expect(signup.status, JSON.stringify(signup.body)).toBe(201);
    session = signup.body.data.session.token;
    ws = signup.body.data.workspace.id;
    const list = await api.get('/v1/workspaces', { token: session });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id: ws, name: 'Marketing', role: 'manager' })]);
  });

  it('another organization sees only its own workspace', async () => {
    const other = await api.post('/v1/auth/signup', { email: 'grace@example.com', password, organizationName: 'Other', workspaceName: 'Sales' });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const list = await api.get('/v1/workspaces', { token: other.body.data.session.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: { name: string }) => w.name)).toEqual(['Sales']);
    const foreign = await api.get(`/v1/workspaces/${ws}/api-keys`, { token: other.body.data.session.token });
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(403);
  });

  it('creates an API key, which then reads the workspace, its channels and content, is listed, and stops at its revocation', async () => {
    const created = await api.post(`/v1/workspaces/${ws}/api-keys`, { name: 'Getting started', workspaceIds: [ws], role: 'manager' }, { token: session });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key: string = created.body.data.key;
    expect(key).toMatch(/^prk_/);
    const withKey = await api.get('/v1/workspaces', { token: key });
    expect(withKey.status, JSON.stringify(withKey.body)).toBe(200);
    expect(withKey.body.data).toEqual([expect.objectContaining({ id: ws, role: 'manager' })]);
    const listed = await api.get(`/v1/workspaces/${ws}/api-keys`, { token: session });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([created.body.data.id]);
    // The lists a key reads first: channels and content (empty on a new workspace).
    const channels = await api.get(`/v1/workspaces/${ws}/integrations`, { token: key });
    expect(channels.status, JSON.stringify(channels.body)).toBe(200);
    expect(channels.body.data).toEqual([]);
    const content = await api.get(`/v1/workspaces/${ws}/content?status=scheduled`, { token: key });
    expect(content.status, JSON.stringify(content.body)).toBe(200);
    expect(content.body).toMatchObject({ data: [], meta: { total: 0, hasMore: false } });
    const revoked = await api.delete(`/v1/workspaces/${ws}/api-keys/${created.body.data.id}`, { token: session });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect((await api.get('/v1/workspaces', { token: key })).status).toBe(401);
  });
});
