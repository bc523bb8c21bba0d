// Scenario "citus": the same requests on one PostgreSQL and on a Citus cluster, side by side
// (docs/citus.md, "Measured on the cluster"): what the coordinator hop costs the calls that run
// on a distributed database today.
//
//   GET  /v1/workspaces                  API key
//   GET  /v1/workspaces/{ws}/content     default page (20 of the workspace's drafts)
//   POST /v1/workspaces/{ws}/content     a draft for one sandbox channel (its triggers run on
//                                        the workspace's shard, on a worker)
//
// one-node: the bench's cluster (a clone of the migrated template). citus: a new database on the
// test cluster of scripts/citus/cluster.sh (a coordinator and two workers, PostgreSQL 15, on this
// machine; started here when it is not running), migrated, distributed by `pressroom distribute`,
// the internal roles given their worker logins. Each side has its own API server child with the
// same settings, and the same fixture made through the API. For the fairest comparison run the
// one-node side on PostgreSQL 15 too: BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres.
//
// The cluster's CPU column counts the coordinator only (the workers are other postmasters on the
// same machine, so their work shows in "busy cores" and "other").
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { setAppRolePassword } from '../../server/db/open.ts';
import { cluster, distributedDatabase } from '../../tests/citus/support.ts';
import { postmasterOf } from '../lib/cpu.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer, type ServerProcess } from '../lib/stack.ts';

const DRAFTS = 300;
const CITUS_SO = '/usr/lib/postgresql/15/lib/citus.so';

interface Fixture {
  apiKey: string;
  workspaceId: string;
  channelId: string;
}

/** Sign-up, an API key, a sandbox channel and DRAFTS drafts, through the API. */
async function createFixture(baseUrl: string, label: string): Promise<Fixture> {
  const signup = await jsonRequest(baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: `owner-${label}@bench.example.com`, password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Bench' },
  });
  const session: string = signup.data.session.token;
  const workspaceId: string = signup.data.workspace.id;
  const key = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${workspaceId}/api-keys`, {
    token: session, expect: 201, body: { name: 'bench key', workspaceIds: [workspaceId], role: 'editor' },
  });
  const channel = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${workspaceId}/integrations`, {
    token: session, expect: 201, body: { connector: 'sandbox', platform: 'x', name: 'Bench X (sandbox)' },
  });
  for (let i = 0; i < DRAFTS; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, k) =>
      jsonRequest(baseUrl, 'POST', `/v1/workspaces/${workspaceId}/content`, {
        token: key.data.key, expect: 201,
        body: { intent: 'draft', caption: `Bench draft ${i + k}`, channels: [{ integrationId: channel.data.id }] },
      })));
  }
  return { apiKey: key.data.key, workspaceId, channelId: channel.data.id };
}

/** The postmaster of the database behind `url`, when it runs on this machine. */
async function postmasterPid(url: string): Promise<number | null> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = (await c.query<{ pid: number; dir: string }>(`select pg_backend_pid() as pid, current_setting('data_directory') as dir`)).rows[0];
    return postmasterOf(r.pid, r.dir);
  } finally {
    await c.end();
  }
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const base = {
    scenario: 'citus',
    description: citus.description,
    startedAt,
    knobs,
    machine: ctx.machine,
  };
  if (!process.env.CITUS_URL && !existsSync(CITUS_SO)) {
    return {
      ...base, finishedAt: new Date().toISOString(), setup: {}, rows: [], ratios: [],
      notes: [`skipped: Citus is not built on this machine (${CITUS_SO}); run scripts/citus/build.sh once, or set CITUS_URL (docs/citus.md)`],
    };
  }
  const env = { RATE_LIMIT_READ: '1000000000', RATE_LIMIT_WRITE: '1000000000', RATE_LIMIT_EXPENSIVE: '1000000000' };

  log('citus: one node: cloning the template and starting its API server');
  const one = await cloneForBench(ctx.cluster, cleanup, 'citus_one');
  const oneServer = await startServer({ ownerUrl: one.ownerUrl, appUrl: one.appUrl, poolSize: knobs.poolSize, env }, cleanup);

  const dbName = `bench_citus_${randomBytes(4).toString('hex')}`;
  log(`citus: cluster: database ${dbName}: migrating and distributing (about a minute)`);
  cleanup.add(`drop the cluster's database ${dbName}`, async () => void cluster('dropdb', dbName));
  const citusOwnerUrl = await distributedDatabase(dbName);
  const password = randomBytes(16).toString('hex');
  await setAppRolePassword(citusOwnerUrl, password);
  const appUrl = new URL(citusOwnerUrl);
  appUrl.username = 'pressroom_app';
  appUrl.password = password;
  const citusServer = await startServer({ ownerUrl: citusOwnerUrl, appUrl: appUrl.toString(), poolSize: knobs.poolSize, env }, cleanup);
  const coordinatorPid = await postmasterPid(citusOwnerUrl);

  log(`citus: the fixture through the API on both (${DRAFTS} drafts each)`);
  const fixtures = new Map<string, Fixture>([
    ['one-node', await createFixture(oneServer.baseUrl, 'one')],
    ['citus', await createFixture(citusServer.baseUrl, 'citus')],
  ]);
  const servers = new Map<string, ServerProcess>([['one-node', oneServer], ['citus', citusServer]]);
  const watches = new Map([
    ['one-node', { serverPid: oneServer.pid, postgresPid: ctx.machine.postmasterPid }],
    ['citus', { serverPid: citusServer.pid, postgresPid: coordinatorPid }],
  ]);

  const routes = [
    { group: 'GET /v1/workspaces (API key)', op: (c: HttpClient, f: Fixture) => c.getOp('/v1/workspaces', { authorization: `Bearer ${f.apiKey}` }) },
    { group: `GET /v1/workspaces/{ws}/content (first page of ${DRAFTS})`, op: (c: HttpClient, f: Fixture) => c.getOp(`/v1/workspaces/${f.workspaceId}/content`, { authorization: `Bearer ${f.apiKey}` }) },
    {
      group: 'POST /v1/workspaces/{ws}/content (a draft, one channel)',
      op: (c: HttpClient, f: Fixture) => c.jsonOp('POST', `/v1/workspaces/${f.workspaceId}/content`, f.apiKey,
        { intent: 'draft', caption: 'Bench draft', channels: [{ integrationId: f.channelId }] }, 201),
    },
  ];

  const loadOpts = loadOptions(knobs, { serverPid: oneServer.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  for (const route of routes) {
    log(`citus: ${route.group}: ${knobs.seconds} s per side, ${knobs.concurrency} loops`);
    const clients = new Map([...servers].map(([side, s]) => [side, new HttpClient(s.baseUrl, knobs.concurrency, knobs.requestTimeoutMs)]));
    try {
      const sides: Side[] = [...clients].map(([side, client]) => ({
        name: side,
        makeOp: () => route.op(client, fixtures.get(side)!),
        watch: watches.get(side)!,
        onStart: () => log(`citus:   ${side}`),
      }));
      const results = await measureSides(sides, loadOpts);
      for (const side of clients.keys()) {
        rows.push({
          group: route.group, side,
          what: side === 'one-node' ? `API server on ${ctx.cluster.where}` : 'API server on the Citus coordinator (2 workers, PostgreSQL 15, this machine)',
          result: results.get(side)!,
        });
      }
    } finally {
      for (const c of clients.values()) c.close();
    }
  }

  await citusServer.release();
  await oneServer.release();
  await one.release();
  return {
    ...base,
    finishedAt: new Date().toISOString(),
    setup: {
      oneNode: { where: ctx.cluster.where, database: one.name },
      citus: { database: dbName, coordinatorPostmasterPid: coordinatorPid, workers: 2, shards: 32 },
      fixture: { drafts: DRAFTS, channels: 1 },
      serverEnv: { ...env, DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false', LOG_LEVEL: 'silent' },
    },
    rows,
    ratios: ratiosFor(rows, 'citus', 'one-node'),
    notes: [
      'one-node: the API server on the bench\'s PostgreSQL; citus: the same server on a Citus coordinator with two workers, all on this machine.',
      'ratio citus/one-node: what the coordinator hop costs (req/s below 1, latency above 1); the workers share the cores.',
      'cpu ms/req, postgres: one-node, the whole cluster; citus, the coordinator only (the workers show in busy cores and other).',
    ],
  };
}

export const citus: Scenario = {
  name: 'citus',
  description: 'the calls that run on a distributed database, on one PostgreSQL and on a Citus cluster side by side',
  run,
};
