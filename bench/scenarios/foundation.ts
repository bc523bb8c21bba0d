// Scenario "foundation": two authenticated reads through the whole HTTP
// pipeline, each beside the same SQL work done directly through the driver
// (the database's limit for that work), at the same concurrency and pool size.
//
//   GET /v1/workspaces                     API key
//   GET /v1/workspaces/{ws}/api-keys       session token (session auth, manager role)
//
// Direct side, per request, exactly what server/http/pipeline.ts sends for a
// GET without idempotency key: `select api.gate(...)` on the pool; a
// transaction with setContext() (imported, so the very same statement) and
// the route's own handler (imported from server/routes, so the very same
// `select api.<fn>() as result`); `select audit.record(...)` on the pool.
// What is left out is everything that is not SQL: HTTP parsing, Express
// routing, OpenAPI validation, the envelope's JSON, the response.
import { createPool, createTypeParserPreset, type DatabasePool } from 'slonik';
import { loadConfig } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { loadOpenApi } from '../../server/http/openapi.ts';
import { routes } from '../../server/routes/index.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';
import { directOp, operation, type DirectRoute } from '../lib/direct.ts';

const WORKSPACES = 5; // the signup's workspace and 4 more
const EXTRA_KEYS = 4; // besides the main key, each granted one workspace

/** The server's limits, high enough never to refuse; the server writes them to app.settings, which api.gate reads on both sides. */
const SERVER_ENV = {
  RATE_LIMIT_READ: '1000000000',
  RATE_LIMIT_WRITE: '1000000000',
  RATE_LIMIT_EXPENSIVE: '1000000000',
};

interface Fixture {
  sessionToken: string;
  apiKey: string;
  workspaceIds: string[];
  apiKeyIds: string[];
}

/** Everything through the real API: sign-up, more workspaces, API keys. */
async function createFixture(baseUrl: string): Promise<Fixture> {
  const signup = await jsonRequest(baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: {
      email: 'owner@bench.example.com',
      password: 'bench password 0123456789',
      organizationName: 'Bench Org',
      workspaceName: 'Bench workspace 1',
    },
  });
  const sessionToken: string = signup.data.session.token;
  const workspaceIds: string[] = [signup.data.workspace.id];
  for (let i = 2; i <= WORKSPACES; i++) {
    const ws = await jsonRequest(baseUrl, 'POST', '/v1/workspaces', {
      token: sessionToken,
      expect: 201,
      body: { name: `Bench workspace ${i}`, timezone: 'Europe/Berlin' },
    });
    workspaceIds.push(ws.data.id);
  }
  const ws1 = workspaceIds[0];
  const main = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${ws1}/api-keys`, {
    token: sessionToken,
    expect: 201,
    body: { name: 'bench main key', workspaceIds, role: 'editor' },
  });
  const apiKeyIds: string[] = [main.data.id];
  for (let i = 1; i <= EXTRA_KEYS; i++) {
    const k = await jsonRequest(baseUrl, 'POST', `/v1/workspaces/${ws1}/api-keys`, {
      token: sessionToken,
      expect: 201,
      body: { name: `bench key ${i}`, workspaceIds: [workspaceIds[i % workspaceIds.length]], role: i % 2 ? 'viewer' : 'editor' },
    });
    apiKeyIds.push(k.data.id);
  }
  return { sessionToken, apiKey: main.data.key, workspaceIds, apiKeyIds };
}

interface BenchRoute extends DirectRoute {
  /** Concrete path. */
  path: string;
  /** Items the list must hold. */
  expectItems: number;
}

/** A list answer holds exactly the items the fixture made. */
function expectList(group: string, expectItems: number) {
  return (status: number, data: unknown) => {
    if (status !== 200 || !Array.isArray(data) || data.length !== expectItems) {
      throw new Error(`direct ${group}: status ${status}, ${Array.isArray(data) ? data.length : typeof data} items (expected ${expectItems})`);
    }
  };
}


/** One direct request: pipeline.ts's SQL for this route, in the same order, on the given pool. */

/**
 * Diagnostic only (BENCH_VARIANTS=1): openPool()'s settings, except that a
 * released connection is not reset. slonik's default reset is DISCARD ALL,
 * one more round trip per release (three per API request), and it throws
 * away every cached plan, the plpgsql functions' included. Keep in step
 * with server/db/pool.ts.
 */
function openPoolWithoutReset(url: string, maximumPoolSize: number): Promise<DatabasePool> {
  return createPool(url, {
    maximumPoolSize,
    typeParsers: createTypeParserPreset().filter((p) => !['timestamp', 'timestamptz', 'date'].includes(p.name)),
    transactionRetryLimit: 3,
    queryRetryLimit: 0,
    statementTimeout: 30_000,
    idleTimeout: 10_000,
    connectionTimeout: 10_000,
    resetConnection: async () => {},
  });
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const config = loadConfig({ ...SERVER_ENV, LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize) } as NodeJS.ProcessEnv);

  log('foundation: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'foundation');
  log(`foundation: starting the API server (DB_POOL_SIZE=${knobs.poolSize})`);
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env: SERVER_ENV }, cleanup);
  log(`foundation: server pid ${server.pid} on ${server.baseUrl}; creating the fixture through the API`);
  const fixture = await createFixture(server.baseUrl);

  const { operations } = loadOpenApi();
  const ws1 = fixture.workspaceIds[0];
  const benchRoutes: BenchRoute[] = [
    {
      group: 'GET /v1/workspaces (API key)',
      operation: operation(operations, 'listWorkspaces_v1'),
      handler: routes.listWorkspaces_v1,
      path: '/v1/workspaces',
      params: {},
      token: fixture.apiKey,
      expectItems: fixture.workspaceIds.length,
      check: expectList('GET /v1/workspaces (API key)', fixture.workspaceIds.length),
    },
    {
      group: 'GET /v1/workspaces/{ws}/api-keys (session)',
      operation: operation(operations, 'listApiKeys_v1'),
      handler: routes.listApiKeys_v1,
      path: `/v1/workspaces/${ws1}/api-keys`,
      params: { workspaceId: ws1 },
      token: fixture.sessionToken,
      expectItems: fixture.apiKeyIds.length,
      check: expectList('GET /v1/workspaces/{ws}/api-keys (session)', fixture.apiKeyIds.length),
    },
  ];

  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());
  let noReset: DatabasePool | null = null;
  let endNoReset: (() => Promise<void>) | null = null;
  if (knobs.variants) {
    const p = await openPoolWithoutReset(db.appUrl, knobs.poolSize);
    noReset = p;
    endNoReset = cleanup.add('end the no-reset pool', () => p.end());
  }

  // Every route answers 200 with the whole list, over HTTP and directly, before anything is timed.
  for (const route of benchRoutes) {
    const body = await jsonRequest(server.baseUrl, 'GET', route.path, { token: route.token });
    if (!Array.isArray(body?.data) || body.data.length !== route.expectItems) {
      throw new Error(`${route.group}: expected ${route.expectItems} items over HTTP, got ${JSON.stringify(body).slice(0, 300)}`);
    }
    await directOp(pool, route, config)();
  }

  const loadOpts = loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid });
  const rows: Row[] = [];
  for (const route of benchRoutes) {
    const how = `${knobs.concurrency} loops, ${knobs.warmupSeconds} s warm-up`;
    log(
      `foundation: ${route.group}: ${knobs.seconds} s per side` +
        (knobs.sliceSeconds > 0 && knobs.sliceSeconds < knobs.seconds ? `, sides interleaved in ${knobs.sliceSeconds} s slices` : ''),
    );
    const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
    try {
      const headers = { authorization: `Bearer ${route.token}` };
      const sides: Side[] = [
        { name: 'http', makeOp: () => client.getOp(route.path, headers), onStart: () => log(`foundation:   http (${how})`) },
        { name: 'direct', makeOp: () => directOp(pool, route, config), onStart: () => log(`foundation:   direct (${how})`) },
      ];
      if (noReset) {
        const p = noReset;
        sides.push({ name: 'direct-noreset', makeOp: () => directOp(p, route, config), onStart: () => log(`foundation:   direct-noreset (${how})`) });
      }
      const results = await measureSides(sides, loadOpts);
      const what: Record<string, string> = {
        http: `GET ${route.path} to the server child, keep-alive node:http`,
        direct: 'gate; transaction { setContext; handler }; audit.record, slonik openPool()',
        'direct-noreset': 'as direct, pool with resetConnection a no-op (no DISCARD ALL)',
      };
      for (const s of sides) rows.push({ group: route.group, side: s.name, what: what[s.name], result: results.get(s.name)! });
    } finally {
      client.close();
    }
  }

  await endPool();
  if (endNoReset) await endNoReset();
  await server.release();
  await db.release();

  const notes = [
    'http: full request through the API server child (Express, gate, validation, transaction, audit, JSON envelope).',
    'direct: the same SQL statements through slonik openPool() in this process, no HTTP; the database-side limit for that work.',
    'ratio http/direct req/s = share of the database-side limit the HTTP stack delivers (1.00 = no overhead).',
    'cpu ms/req: CPU time per measured request of this process (load generator or driver), the server child, the PostgreSQL cluster; busy cores: whole machine; other: cores used by anything else.',
  ];
  if (knobs.variants) notes.push('direct-noreset: diagnostic; what the direct side does when slonik skips DISCARD ALL on release.');
  return {
    scenario: 'foundation',
    description: foundation.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: {
      database: db.name,
      serverPid: server.pid,
      serverEnv: { ...SERVER_ENV, DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false', LOG_LEVEL: 'silent' },
      fixture: { workspaces: fixture.workspaceIds.length, apiKeys: fixture.apiKeyIds.length },
      httpClient: 'node:http Agent keepAlive, one socket per loop',
    },
    rows,
    ratios: ratiosFor(rows, 'http', 'direct'),
    notes,
  };
}

export const foundation: Scenario = {
  name: 'foundation',
  description: 'authenticated list reads: HTTP API vs the same SQL through the driver',
  run,
};
