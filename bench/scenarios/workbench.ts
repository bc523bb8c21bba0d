// Scenario "workbench": the /v2 Workbench's heavy calls, each through the
// whole HTTP pipeline and, beside it, the same SQL directly through the
// driver (bench/lib/direct.ts: gate; transaction { setContext; the route's
// own handler }; audit row):
//
//   POST /v2/.../workbench/schedule/validate   dry run of 1,000 rows x 2 channels
//   POST /v2/.../workbench/schedule            1,000 rows x 2 channels scheduled in one call
//   GET  /v2/.../workbench/pages/{id}?limit=2000   a page of 2,000 rows, under load (p99)
//   POST /v2/.../workbench/pages/{id}/import/validate   5,000-line CSV, dry run
//   POST /v2/.../workbench/pages/{id}/import            5,000-line CSV, commit
//
// Every row is made through the API (bulk-create, 1,000 a call), so each has
// a content root and one draft edition per channel made by api.create_content
// with all its triggers. The one-shot calls (schedule, import) run
// BENCH_WORKBENCH_REPEATS times per side on fresh rows or pages; the page
// read runs as a closed loop like the other scenarios.
import http from 'node:http';
import { appendFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../server/config.ts';
import { openPool } from '../../server/db/pool.ts';
import { loadOpenApi } from '../../server/http/openapi.ts';
import type { AnyHandlerContext, RouteDefinition } from '../../server/http/pipeline.ts';
import { routes } from '../../server/routes/index.ts';
import { parseCsv } from '../../server/workbench/csv.ts';
import { directOp, operation, type DirectRoute } from '../lib/direct.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { addDeltas, cpuDelta, cpuReport, snapshot, type CpuDelta, type Watch } from '../lib/cpu.ts';
import { latencyStats, measureSides, type LoadOptions, type LoadResult, type Side } from '../lib/load.ts';
import { ratiosFor, type Row, type ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

const SCHEDULE_ROWS = 1000;
const PAGE_ROWS = 2000;
const CSV_LINES = 5000;
const REPEATS = Math.max(1, Number(process.env.BENCH_WORKBENCH_REPEATS ?? 3));
/** Which groups run (BENCH_WORKBENCH_PARTS, comma-separated: schedule, page, import; default all three). */
const PARTS = new Set((process.env.BENCH_WORKBENCH_PARTS || 'schedule,page,import').split(',').map((p) => p.trim()));
/**
 * BENCH_WORKBENCH_PROFILE=1: the clone runs with track_functions = 'all' and, when the cluster
 * preloads pg_stat_statements, its nested statements are counted too; after each one-shot call the
 * functions and statements that took the most time during it go to bench/results/workbench-profile-*.txt.
 */
const PROFILE = ['1', 'true', 'yes'].includes((process.env.BENCH_WORKBENCH_PROFILE ?? '').toLowerCase());
for (const p of PARTS) if (!['schedule', 'page', 'import'].includes(p)) throw new Error(`BENCH_WORKBENCH_PARTS: unknown part ${p} (schedule, page, import)`);

/** A one-shot request over HTTP (a fresh connection, as a client sending one big call), in ms; throws unless `expect`. */
async function timedHttp(baseUrl: string, method: string, path: string, token: string, body: unknown, expect: number): Promise<{ ms: number; data: any }> {
  const payload = Buffer.from(JSON.stringify(body));
  const u = new URL(baseUrl);
  const started = performance.now();
  const text = await new Promise<string>((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: Number(u.port), path, method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(payload.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const t = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === expect) resolve(t);
          else reject(new Error(`${method} ${path} -> ${res.statusCode}: ${t.slice(0, 500)}`));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
  const ms = performance.now() - started;
  return { ms, data: JSON.parse(text).data };
}

/** One timed one-shot call: its wall time and the CPU the processes spent meanwhile. */
interface Shot {
  ms: number;
  cpu: CpuDelta;
}

/** Times `f` (one call) with a CPU snapshot of the server and the PostgreSQL cluster either side. */
async function shot<T>(watch: Watch, f: () => Promise<T>, label?: string, profiler?: Profiler | null): Promise<{ shot: Shot; value: T }> {
  if (profiler && label) await profiler.before();
  const a = snapshot(watch);
  const started = performance.now();
  const value = await f();
  const ms = performance.now() - started;
  const took = { ms, cpu: cpuDelta(a, snapshot(watch)) };
  if (profiler && label) await profiler.after(label, took);
  return { shot: took, value };
}

interface Profiler {
  before(): Promise<void>;
  after(label: string, took: Shot): Promise<void>;
  end(): Promise<void>;
}

/** BENCH_WORKBENCH_PROFILE: per-function and per-statement time of each one-shot call, to a text file. */
async function openProfiler(ownerUrl: string, database: string, dir: string, log: (m: string) => void): Promise<Profiler> {
  const c = new pg.Client({ connectionString: ownerUrl });
  c.on('error', () => {}); // the clone is dropped at the end, its connection with it
  await c.connect();
  await c.query(`alter database "${database}" set track_functions = 'all'`);
  const statements = (await c.query(`select 1 from pg_settings where name = 'shared_preload_libraries' and setting like '%pg_stat_statements%'`)).rowCount === 1;
  if (statements) await c.query('create extension if not exists pg_stat_statements');
  const file = path.join(dir, `workbench-profile-${new Date().toISOString().replace(/[:.]/g, '-')}.txt`);
  mkdirSync(dir, { recursive: true });
  log(`workbench: profiling to ${file}${statements ? '' : ' (functions only: the cluster does not preload pg_stat_statements)'}`);
  const funcs = async () => new Map((await c.query(`select schemaname || '.' || funcname as f, calls::float8 as calls, total_time, self_time from pg_stat_user_functions`)).rows.map((r) => [r.f, r]));
  let start = new Map<string, any>();
  // Backends flush their counters at most once a second, and when idle.
  const settle = () => new Promise((r) => setTimeout(r, 1500));
  return {
    async before() {
      await settle();
      start = await funcs();
      if (statements) await c.query('select pg_stat_statements_reset()');
    },
    async after(label, took) {
      await settle();
      const now = await funcs();
      const rows = [...now.values()]
        .map((r) => { const b = start.get(r.f); return { f: r.f, calls: r.calls - (b?.calls ?? 0), total: r.total_time - (b?.total_time ?? 0), self: r.self_time - (b?.self_time ?? 0) }; })
        .filter((r) => r.calls > 0)
        .sort((a, b) => b.self - a.self)
        .slice(0, 40);
      const out = [`== ${label}: ${(took.ms / 1000).toFixed(2)} s wall, PostgreSQL CPU ${took.cpu.postgres?.toFixed(2)} s, server CPU ${took.cpu.server?.toFixed(2)} s`, 'functions by self time (ms): self, total, calls'];
      for (const r of rows) out.push(`  ${r.self.toFixed(0).padStart(8)} ${r.total.toFixed(0).padStart(8)} ${String(r.calls).padStart(7)}  ${r.f}`);
      if (statements) {
        out.push('statements by total time (ms): total, calls, rows, shared blocks hit');
        const st = await c.query(`select total_exec_time, calls, rows, shared_blks_hit, left(regexp_replace(query, '\\s+', ' ', 'g'), 220) q
                                  from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1 order by total_exec_time desc limit 40`, [database]);
        for (const r of st.rows) out.push(`  ${Number(r.total_exec_time).toFixed(0).padStart(8)} ${String(r.calls).padStart(7)} ${String(r.rows).padStart(8)} ${String(r.shared_blks_hit).padStart(10)}  ${r.q}`);
      }
      appendFileSync(file, out.join('\n') + '\n\n');
    },
    end: () => c.end(),
  };
}

/** One-shot samples as a report row (CPU per call: per request in the table). */
function oneShotResult(shots: Shot[], units: number): LoadResult {
  const samplesMs = shots.map((x) => x.ms);
  const seconds = samplesMs.reduce((a, b) => a + b, 0) / 1000;
  return {
    concurrency: 1,
    seconds,
    slices: samplesMs.length,
    requests: samplesMs.length,
    errors: 0,
    rps: (units * samplesMs.length) / seconds,
    latency: latencyStats(Float64Array.from(samplesMs)),
    cpu: cpuReport(addDeltas(shots.map((x) => x.cpu)), shots.length, os.availableParallelism()),
  };
}

function csvOf(lines: number, channel: string, tag: number): string {
  const out = ['section,title,caption,channels,scheduled_at,notes'];
  const start = Date.UTC(2031, 0, 1, 8);
  for (let i = 0; i < lines; i++) {
    const at = new Date(start + i * 3_600_000 + tag * 86_400_000).toISOString().slice(0, 16).replace('T', ' ');
    out.push(`Week ${1 + (i % 4)},Post ${tag}-${i},"Caption ${tag}-${i}: what we shipped, and ""why"" it matters",${channel},${at},imported by the bench`);
  }
  return out.join('\r\n') + '\r\n';
}

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const config = loadConfig({ LOG_LEVEL: 'silent', DB_POOL_SIZE: String(knobs.poolSize) } as NodeJS.ProcessEnv);
  log('workbench: cloning the template');
  const db = await cloneForBench(ctx.cluster, cleanup, 'workbench');
  const profiler = PROFILE ? await openProfiler(db.ownerUrl, db.name, knobs.resultsDir, log) : null;
  const endProfiler = cleanup.add('end the profiler', async () => profiler?.end());
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize }, cleanup);
  const base = server.baseUrl;
  const signup = await jsonRequest(base, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@wb.bench.example.com', password: 'bench password 0123456789', organizationName: 'Bench Org', workspaceName: 'Bench workbench' },
  });
  const ws: string = signup.data.workspace.id;
  const key = await jsonRequest(base, 'POST', `/v1/workspaces/${ws}/api-keys`, {
    token: signup.data.session.token,
    expect: 201,
    body: { name: 'bench workbench key', workspaceIds: [ws], role: 'editor' },
  });
  const token: string = key.data.key;
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const org = (await owner.query('select organization_id from app.workspaces where id = $1', [ws])).rows[0].organization_id;
  const channels: string[] = [];
  for (const [platform, name] of [['x', 'Bench X'], ['linkedin', 'Bench LinkedIn']]) {
    channels.push((await owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $4) returning id`, [org, ws, platform, name])).rows[0].id);
  }
  await owner.end();
  const wb = `/v2/workspaces/${ws}/workbench`;
  const { operations } = loadOpenApi();
  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());

  const newPage = async (name: string) => (await jsonRequest(base, 'POST', `${wb}/pages`, { token, expect: 201, body: { name, sections: [1, 2, 3, 4].map((n) => ({ name: `Week ${n}` })) } })).data;
  /** n rows with caption, both channels and a time, through bulk-create (1,000 a call); their ids and the bulk calls' ms. */
  const makeRows = async (sections: string[], n: number, tag: string) => {
    const ids: string[] = [];
    const ms: Shot[] = [];
    for (let done = 0; done < n; done += 1000) {
      const rows = Array.from({ length: Math.min(1000, n - done) }, (_, i) => ({
        sectionId: sections[(done + i) % sections.length],
        title: `${tag} ${done + i}`,
        caption: `Bench post ${tag} ${done + i}: something new this week. #bench`,
        channels,
        scheduledAt: new Date(Date.now() + 86_400_000 * (2 + ((done + i) % 60)) + (done + i) * 1000).toISOString(),
      }));
      const { shot: took, value: r } = await shot(watch, () => timedHttp(base, 'POST', `${wb}/rows/bulk-create`, token, { rows }, 200));
      if (r.data.failed !== 0) throw new Error(`bulk-create: ${r.data.failed} rows failed: ${JSON.stringify(r.data.results.find((x: any) => !x.ok))}`);
      ids.push(...r.data.results.map((x: any) => x.row.id));
      ms.push(took);
    }
    return { ids, ms };
  };
  const direct = (group: string, id: string, params: Record<string, string>, body: unknown, check: DirectRoute['check'], handler?: RouteDefinition) =>
    directOp(pool, { group, operation: operation(operations, id), handler: handler ?? routes[id], params, body, token, check }, config);

  const rows: Row[] = [];
  const notes: string[] = [];
  const watch: Watch = { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid };

  // 1. Bulk schedule, 1,000 rows x 2 channels: dry run, then commit, per side.
  const samples: Record<string, Shot[]> = { 'http dry': [], 'direct dry': [], 'http commit': [], 'direct commit': [], 'bulk-create': [] };
  for (let rep = 0; rep < (PARTS.has('schedule') ? REPEATS : 0); rep++) {
    for (const side of ['http', 'direct'] as const) {
      const page = await newPage(`Schedule ${side} ${rep}`);
      const made = await makeRows(page.sections.map((s: any) => s.id), SCHEDULE_ROWS, `s${side}${rep}`);
      samples['bulk-create'].push(...made.ms);
      const body = { rowIds: made.ids };
      const expectAll = (dry: boolean) => (status: number, data: any) => {
        if (status !== 200 || data.rowsOk !== SCHEDULE_ROWS || data.channelsOk !== SCHEDULE_ROWS * 2 || data.dryRun !== dry) {
          throw new Error(`schedule ${dry ? 'dry run' : 'commit'}: ${JSON.stringify({ ...data, results: data?.results?.find((r: any) => r.outcome === 'failed') })}`);
        }
      };
      log(`workbench: schedule ${SCHEDULE_ROWS} rows (${side}, run ${rep + 1}/${REPEATS})`);
      if (side === 'http') {
        const d = await shot(watch, () => timedHttp(base, 'POST', `${wb}/schedule/validate`, token, body, 200), `http dry run ${rep}`, profiler);
        expectAll(true)(200, d.value.data);
        samples['http dry'].push(d.shot);
        const c = await shot(watch, () => timedHttp(base, 'POST', `${wb}/schedule`, token, body, 200), `http commit ${rep}`, profiler);
        expectAll(false)(200, c.value.data);
        samples['http commit'].push(c.shot);
      } else {
        samples['direct dry'].push((await shot(watch, direct('schedule dry', 'validateWorkbenchSchedule_v2', { workspaceId: ws }, body, expectAll(true)), `direct dry run ${rep}`, profiler)).shot);
        samples['direct commit'].push((await shot(watch, direct('schedule', 'scheduleWorkbenchRows_v2', { workspaceId: ws }, body, expectAll(false)), `direct commit ${rep}`, profiler)).shot);
      }
    }
  }
  for (const [group, sides] of !PARTS.has('schedule') ? [] : [
    [`schedule ${SCHEDULE_ROWS} rows x 2 channels, dry run`, ['http dry', 'direct dry']],
    [`schedule ${SCHEDULE_ROWS} rows x 2 channels, commit`, ['http commit', 'direct commit']],
  ] as const) {
    for (const s of sides) {
      rows.push({ group, side: s.split(' ')[0], what: `${REPEATS} calls of ${SCHEDULE_ROWS} rows; req/s = rows per second`, result: oneShotResult(samples[s], SCHEDULE_ROWS) });
    }
  }
  if (PARTS.has('schedule')) rows.push({ group: `bulk-create 1,000 rows with content (2 channels each)`, side: 'http', what: 'POST rows/bulk-create of 1,000 rows, each through api.create_content; req/s = rows per second', result: oneShotResult(samples['bulk-create'], 1000) });

  // 2. Page read: 2,000 rows in one answer, under load.
  if (PARTS.has('page')) {
    const big = await newPage('Two thousand rows');
    await makeRows(big.sections.map((s: any) => s.id), PAGE_ROWS, 'page');
    const pagePath = `${wb}/pages/${big.id}?limit=${PAGE_ROWS}`;
    const pageCheck = (status: number, data: any, meta: any) => {
      if (status !== 200 || data?.rows?.length !== PAGE_ROWS || meta?.total !== PAGE_ROWS) throw new Error(`page read: ${status}, ${data?.rows?.length} rows`);
    };
    const pageRoute: DirectRoute = { group: 'page read', operation: operation(operations, 'getWorkbenchPage_v2'), handler: routes.getWorkbenchPage_v2, params: { workspaceId: ws, pageId: big.id }, query: { limit: String(PAGE_ROWS) }, token, check: pageCheck };
    const first = await jsonRequest(base, 'GET', pagePath, { token, expect: 200 });
    pageCheck(200, first.data, first.meta);
    const concurrency = Math.min(knobs.concurrency, 4);
    const loadOpts: LoadOptions = {
      concurrency,
      warmupMs: knobs.warmupSeconds * 1000,
      durationMs: knobs.seconds * 1000,
      sliceMs: knobs.sliceSeconds * 1000,
      requestTimeoutMs: Math.max(knobs.requestTimeoutMs, 30_000),
      watch: { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid },
    };
    const client = new HttpClient(base, concurrency, loadOpts.requestTimeoutMs);
    log(`workbench: page read of ${PAGE_ROWS} rows, ${knobs.seconds} s per side, ${concurrency} loops`);
    try {
      const sides: Side[] = [
        { name: 'http', makeOp: () => client.getOp(pagePath, { authorization: `Bearer ${token}` }) },
        { name: 'direct', makeOp: () => directOp(pool, pageRoute, config) },
      ];
      const results = await measureSides(sides, loadOpts);
      const group = `GET page with ${PAGE_ROWS} rows`;
      rows.push({ group, side: 'http', what: `GET ${wb}/pages/{id}?limit=${PAGE_ROWS}, keep-alive node:http`, result: results.get('http')! });
      rows.push({ group, side: 'direct', what: 'gate; transaction { setContext; handler }; audit.record', result: results.get('direct')! });
    } finally {
      client.close();
    }
  }

  // 3. CSV import of 5,000 lines: dry run and commit, per side, into fresh pages.
  const imp: Record<string, Shot[]> = { 'http dry': [], 'direct dry': [], 'http commit': [], 'direct commit': [] };
  const importHandler = (id: 'validateWorkbenchCsvImport_v2' | 'importWorkbenchCsv_v2'): RouteDefinition => ({
    // What the pipeline does: prepare (parse the file), then the handler in the transaction.
    handle: async (c: AnyHandlerContext) => routes[id].handle!({ ...c, prepared: parseCsv((c.body as { csv: string }).csv) }),
  });
  for (let rep = 0; rep < (PARTS.has('import') ? REPEATS : 0); rep++) {
    for (const side of ['http', 'direct'] as const) {
      const page = await newPage(`Import ${side} ${rep}`);
      const csv = csvOf(CSV_LINES, 'Bench X', rep * 2 + (side === 'http' ? 0 : 1));
      const check = (dry: boolean) => (status: number, data: any) => {
        if (data?.valid !== CSV_LINES || data?.imported !== (dry ? 0 : CSV_LINES)) throw new Error(`import ${dry ? 'dry run' : 'commit'}: ${status} ${JSON.stringify({ ...data, results: undefined })}`);
      };
      log(`workbench: import ${CSV_LINES} lines (${side}, run ${rep + 1}/${REPEATS})`);
      if (side === 'http') {
        const d = await shot(watch, () => timedHttp(base, 'POST', `${wb}/pages/${page.id}/import/validate`, token, { csv }, 200), `http import dry run ${rep}`, profiler);
        check(true)(200, d.value.data);
        imp['http dry'].push(d.shot);
        const c = await shot(watch, () => timedHttp(base, 'POST', `${wb}/pages/${page.id}/import`, token, { csv }, 201), `http import ${rep}`, profiler);
        check(false)(201, c.value.data);
        imp['http commit'].push(c.shot);
      } else {
        const params = { workspaceId: ws, pageId: page.id };
        imp['direct dry'].push((await shot(watch, direct('import dry', 'validateWorkbenchCsvImport_v2', params, { csv }, check(true), importHandler('validateWorkbenchCsvImport_v2')), `direct import dry run ${rep}`, profiler)).shot);
        imp['direct commit'].push((await shot(watch, direct('import', 'importWorkbenchCsv_v2', params, { csv }, check(false), importHandler('importWorkbenchCsv_v2')), `direct import ${rep}`, profiler)).shot);
      }
    }
  }
  for (const [group, sides] of !PARTS.has('import') ? [] : [
    [`import CSV of ${CSV_LINES} lines, dry run`, ['http dry', 'direct dry']],
    [`import CSV of ${CSV_LINES} lines, commit`, ['http commit', 'direct commit']],
  ] as const) {
    for (const s of sides) rows.push({ group, side: s.split(' ')[0], what: `${REPEATS} calls; req/s = lines per second`, result: oneShotResult(imp[s], CSV_LINES) });
  }
  const p50 = (xs: Shot[]) => (xs.length ? latencyStats(Float64Array.from(xs.map((x) => x.ms))).p50 / 1000 : NaN);
  notes.push(
    `schedule ${SCHEDULE_ROWS} rows x 2 channels over HTTP: dry run median ${p50(samples['http dry']).toFixed(2)} s, commit median ${p50(samples['http commit']).toFixed(2)} s (target: within 5 s).`,
    `import ${CSV_LINES} lines over HTTP: dry run median ${p50(imp['http dry']).toFixed(2)} s, commit median ${p50(imp['http commit']).toFixed(2)} s.`,
    'one-shot rows (schedule, import, bulk-create): concurrency 1, a fresh connection per call; latency columns are per call, req/s counts rows or lines per second.',
    'direct: the same SQL through slonik in this process (the import side parses the CSV in this process, as the server does before its transaction).',
  );

  await endPool();
  await endProfiler();
  await server.release();
  await db.release();
  return {
    scenario: 'workbench',
    description: workbench.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: { database: db.name, serverPid: server.pid, repeats: REPEATS, scheduleRows: SCHEDULE_ROWS, pageRows: PAGE_ROWS, csvLines: CSV_LINES, channels: ['x', 'linkedin'] },
    rows,
    ratios: ratiosFor(rows, 'http', 'direct'),
    notes,
  };
}

export const workbench: Scenario = {
  name: 'workbench',
  description: `Workbench: bulk schedule of ${SCHEDULE_ROWS} rows (dry run, commit), a page of ${PAGE_ROWS} rows under load, a ${CSV_LINES}-line CSV import (dry run, commit): HTTP vs direct`,
  run,
};
