// What of Pressroom's schema distributes on Citus: a diagnostic for the
// rewrite that makes the schema distributable (docs/citus.md).
//
//   node scripts/citus/probe.ts [--url URL] [--db NAME] [--json FILE] [--schemas app,pgboss]
//                               [--workspaces distributed|reference] [--safe-triggers] [--table-by-table] [--drop]
//
// Against the coordinator of a running cluster (scripts/citus/cluster.sh start;
// --url defaults to its `postgres` database), it (1) creates the database NAME
// (default pressroom_probe; dropped first if it exists) on the coordinator and
// every worker listed in the coordinator's pg_dist_node, with citus in it and
// the nodes registered; (2) migrates it as the test harness does
// (tests/support/db.ts: server/db/migrate.ts `migrate`, the uncommitted
// db/migrations/current/*.sql, then pg-boss's schema and queues through
// server/jobs/queues.ts `installQueues`); (3) distributes the schema with the
// real step (server/db/distribute.ts, `npx pressroom distribute`), and when
// that fails (or with --table-by-table, --safe-triggers or --workspaces
// distributed), tries to distribute every table
// of the schemas, one transaction each, referenced tables first: reference
// tables (no workspace_id column; app.workspaces is one of them, unless
// --workspaces distributed makes it the colocation group's first table,
// distributed by id), then every table with workspace_id
// (create_distributed_table on workspace_id, colocated with the first table
// that distributed); (4) prints a table (table, wanted, result, final
// state, error) and the counts, and writes them as JSON to --json.
//
// Citus refuses to distribute a table that has triggers unless
// citus.enable_unsafe_triggers is on; the probe turns it on so that the other
// reasons show, and counts the tables with triggers separately.
// --safe-triggers leaves it off.
//
// Also counted: policies whose expression holds a subquery (pg_policies.qual or
// with_check containing `SELECT`, as PostgreSQL deparses a sublink); policies
// calling a function that most likely reads a table (a text match: its body
// has a FROM, or calls such a function, to any depth), which a policy
// evaluated on a shard cannot do (docs/citus.md); restrictive policies before
// and after distributing, per node (Citus recreates them as permissive);
// unique keys of workspace tables without the distribution column; foreign
// keys between workspace tables that do not pair their distribution columns;
// tables with triggers.
//
// Exit status: 0 when the probe ran (whatever it found), 1 when it could not
// (no cluster, migration failed), 2 on bad arguments.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { applyCurrentMigrations, migrate } from '../../server/db/migrate.ts';
import { installQueues } from '../../server/jobs/queues.ts';
import { CITUS_TABLE_STATE, distributeSchema } from '../../server/db/distribute.ts';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    db: { type: 'string', default: 'pressroom_probe' },
    json: { type: 'string' },
    schemas: { type: 'string', default: 'app,pgboss' },
    workspaces: { type: 'string', default: 'reference' },
    'safe-triggers': { type: 'boolean', default: false },
    drop: { type: 'boolean', default: false },
    'table-by-table': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (opts.help) {
  const text = readFileSync(new URL(import.meta.url), 'utf8').split('\n');
  process.stdout.write(text.slice(0, text.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const dbName = opts.db;
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(dbName) || dbName === 'postgres') {
  console.error(`probe: --db must match [a-z_][a-z0-9_]* and not be postgres: ${dbName}`);
  process.exit(2);
}
if (opts.workspaces !== 'distributed' && opts.workspaces !== 'reference') {
  console.error('probe: --workspaces is distributed or reference');
  process.exit(2);
}
const schemas = opts.schemas.split(',').map((s) => s.trim()).filter(Boolean);
const adminUrl = opts.url ?? `postgres://postgres@127.0.0.1:${process.env.CITUS_PORT_BASE ?? '9700'}/postgres`;

function urlFor(base: string, host: string, port: number, database: string): string {
  const u = new URL(base);
  u.hostname = host;
  u.port = String(port);
  u.pathname = `/${database}`;
  return u.toString();
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('notice', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const ident = (name: string) => '"' + name.replaceAll('"', '""') + '"';
const lit = (text: string) => "'" + text.replaceAll("'", "''") + "'";

// ---------------------------------------------------------------------------
// 1. A fresh database on every node
// ---------------------------------------------------------------------------

interface Node {
  host: string;
  port: number;
  coordinator: boolean;
}

async function freshDatabase(): Promise<string> {
  const coord = new URL(adminUrl);
  const nodes: Node[] = await withClient(adminUrl, async (c) => {
    const has = await c.query(`select 1 from pg_extension where extname = 'citus'`);
    if (has.rowCount !== 1) throw new Error(`citus is not installed in ${coord.pathname.slice(1)} at ${coord.host} (scripts/citus/cluster.sh start)`);
    const r = await c.query(`select nodename, nodeport, groupid = 0 as coordinator from pg_dist_node where noderole = 'primary' order by groupid`);
    return r.rows.map((x) => ({ host: x.nodename, port: x.nodeport, coordinator: x.coordinator }));
  });
  const workers = nodes.filter((n) => !n.coordinator);
  if (workers.length === 0) throw new Error('the coordinator lists no workers in pg_dist_node (scripts/citus/cluster.sh start)');
  const coordinator: Node = { host: coord.hostname, port: Number(coord.port || 5432), coordinator: true };
  // Workers first when dropping (the coordinator's metadata refers to them), coordinator first when creating.
  for (const n of [...workers, coordinator]) {
    await withClient(urlFor(adminUrl, n.host, n.port, 'postgres'), (c) => c.query(`drop database if exists ${ident(dbName)} with (force)`));
  }
  for (const n of [coordinator, ...workers]) {
    await withClient(urlFor(adminUrl, n.host, n.port, 'postgres'), (c) => c.query(`create database ${ident(dbName)}`));
    await withClient(urlFor(adminUrl, n.host, n.port, dbName), (c) => c.query('create extension citus'));
  }
  const url = urlFor(adminUrl, coordinator.host, coordinator.port, dbName);
  await withClient(url, async (c) => {
    const self = nodes.find((n) => n.coordinator);
    await c.query('select citus_set_coordinator_host($1, $2)', [self?.host ?? coordinator.host, self?.port ?? coordinator.port]);
    for (const w of workers) await c.query('select citus_add_node($1, $2)', [w.host, w.port]);
  });
  return url;
}

// ---------------------------------------------------------------------------
// 2. Migrations, as tests/support/db.ts prepares a template
// ---------------------------------------------------------------------------


// ---------------------------------------------------------------------------
// 3. Distribution, one table at a time
// ---------------------------------------------------------------------------

type Wanted = 'reference' | 'distributed';

interface TableRow {
  table: string;
  wanted: Wanted;
  column: string | null;
  result: 'ok' | 'error';
  /** What pg_dist_partition says after every attempt: distributed, reference, citus-local (added to the metadata by Citus itself), or local. */
  final: string;
  error: string | null;
  detail: string | null;
}

interface TableInfo {
  oid: number;
  name: string;
  hasWorkspaceId: boolean;
  hasTriggers: boolean;
}

async function listTables(c: pg.Client): Promise<TableInfo[]> {
  const r = await c.query(
    `select c.oid::int as oid, format('%I.%I', n.nspname, c.relname) as name,
            app.is_workspace_table(c.oid) as has_workspace_id,
            exists (select 1 from pg_trigger t where t.tgrelid = c.oid and not t.tgisinternal) as has_triggers
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any($1) and c.relkind in ('r', 'p') and not c.relispartition
      order by 2`,
    [schemas],
  );
  return r.rows.map((x) => ({ oid: x.oid, name: x.name, hasWorkspaceId: x.has_workspace_id, hasTriggers: x.has_triggers }));
}

/** Referenced tables before the tables that reference them; among the ready ones, reference tables, then app.workspaces, then the rest. */
async function distributionOrder(c: pg.Client, tables: TableInfo[], rank: (t: TableInfo) => number): Promise<TableInfo[]> {
  const edges = await c.query(
    `select distinct conrelid::int as child, confrelid::int as parent from pg_constraint
      where contype = 'f' and conrelid <> confrelid and conrelid = any($1) and confrelid = any($1)`,
    [tables.map((t) => t.oid)],
  );
  const waiting = new Map<number, Set<number>>(tables.map((t) => [t.oid, new Set<number>()]));
  for (const e of edges.rows) waiting.get(e.child)?.add(e.parent);
  const order: TableInfo[] = [];
  const done = new Set<number>();
  const key = (t: TableInfo) => `${rank(t)}:${t.name}`;
  while (order.length < tables.length) {
    const left = tables.filter((t) => !done.has(t.oid));
    const ready = left.filter((t) => [...(waiting.get(t.oid) ?? [])].every((p) => done.has(p)));
    // A cycle of foreign keys: take the first by rank and name anyway.
    const pool = ready.length > 0 ? ready : left;
    pool.sort((a, b) => key(a).localeCompare(key(b)));
    const next = pool[0];
    order.push(next);
    done.add(next.oid);
  }
  return order;
}

async function finalStates(c: pg.Client): Promise<Map<string, string>> {
  const r = await c.query(
    `select format('%I.%I', n.nspname, c.relname) as name,
            coalesce(${CITUS_TABLE_STATE}, p.partmethod::text) as state
       from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace`,
  );
  return new Map(r.rows.map((x) => [x.name, x.state]));
}

/**
 * The real step first (server/db/distribute.ts, `npx pressroom distribute`): on success every
 * table's row says so. When it fails, its error is printed and the tables are tried one by one,
 * referenced tables first, to show each one's reason.
 */
async function distribute(url: string): Promise<{ rows: TableRow[]; tables: TableInfo[]; leader: string | null; step: string }> {
  if (!opts['table-by-table'] && !opts['safe-triggers'] && opts.workspaces === 'reference') {
    try {
      const { r, tables, states } = await withClient(url, async (c) => {
        const r = await distributeSchema(c);
        return { r, tables: await listTables(c), states: await finalStates(c) };
      });
      // pg-boss's tables stay local to the coordinator (docs/citus.md): only app's are listed.
      const rows: TableRow[] = tables.filter((t) => t.name.startsWith('app.')).map((t) => ({
        table: t.name, wanted: t.hasWorkspaceId ? 'distributed' : 'reference', column: t.hasWorkspaceId ? 'workspace_id' : null,
        result: 'ok', final: states.get(t.name) ?? 'local', error: null, detail: null,
      }));
      return { rows, tables, leader: r.distributed.now[0] ?? null, step: `distribute: ${r.distributed.now.length} distributed, ${r.reference.now.length} reference, ${r.foreignKeysRemade} foreign keys made again` };
    } catch (e) {
      console.log(`probe: distribute (server/db/distribute.ts) failed: ${(e as Error).message}; trying table by table`);
    }
  }
  return { ...(await distributeTableByTable(url)), step: 'table by table' };
}

async function distributeTableByTable(url: string): Promise<{ rows: TableRow[]; tables: TableInfo[]; leader: string | null }> {
  return withClient(url, async (c) => {
    await c.query(`set client_min_messages = warning`);
    await c.query(`set citus.enable_unsafe_triggers = ${opts['safe-triggers'] ? 'off' : 'on'}`);
    const tables = await listTables(c);
    const isWorkspaces = (t: TableInfo) => t.name === 'app.workspaces';
    const wantedOf = (t: TableInfo): { wanted: Wanted; column: string | null } => {
      if (isWorkspaces(t)) return opts.workspaces === 'distributed' ? { wanted: 'distributed', column: 'id' } : { wanted: 'reference', column: null };
      return t.hasWorkspaceId ? { wanted: 'distributed', column: 'workspace_id' } : { wanted: 'reference', column: null };
    };
    const rank = (t: TableInfo) => (isWorkspaces(t) ? 1 : wantedOf(t).wanted === 'reference' ? 0 : 2);
    const order = await distributionOrder(c, tables, rank);
    const rows: TableRow[] = [];
    let leader: string | null = null;
    for (const t of order) {
      const { wanted, column } = wantedOf(t);
      let sql: string;
      if (wanted === 'reference') sql = `select create_reference_table(${lit(t.name)})`;
      else sql = `select create_distributed_table(${lit(t.name)}, ${lit(column ?? 'workspace_id')}, colocate_with => ${lit(leader ?? 'default')})`;
      try {
        await c.query(sql);
        if (wanted === 'distributed' && leader === null) leader = t.name;
        rows.push({ table: t.name, wanted, column, result: 'ok', final: '', error: null, detail: null });
      } catch (e) {
        const err = e as pg.DatabaseError;
        rows.push({ table: t.name, wanted, column, result: 'error', final: '', error: err.message, detail: err.detail ?? null });
      }
    }
    const states = await finalStates(c);
    for (const r of rows) r.final = states.get(r.table) ?? 'local';
    return { rows, tables, leader };
  });
}

// ---------------------------------------------------------------------------
// 4. What the rewrite has to change, counted
// ---------------------------------------------------------------------------

async function diagnostics(url: string) {
  return withClient(url, async (c) => {
    const policies = await c.query(
      `select format('%I.%I', schemaname, tablename) as table, policyname as policy
         from pg_policies
        where schemaname = any($1) and (position('SELECT' in coalesce(qual, '')) > 0 or position('SELECT' in coalesce(with_check, '')) > 0)
        order by 1, 2`,
      [schemas],
    );
    // Functions that (most likely) read tables: a FROM in the body, or a call of
    // such a function (schema-qualified name followed by "(", in the body), to any depth.
    const fns = await c.query(
      `select p.oid::regprocedure::text as sig, format('%s.%s', n.nspname, p.proname) as qname, p.prosrc ~* '\\mfrom\\M' as has_from, p.prosrc as src
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_language l on l.oid = p.prolang
        where n.nspname not in ('pg_catalog', 'information_schema', 'citus', 'citus_internal', 'columnar', 'columnar_internal')
          and l.lanname in ('sql', 'plpgsql')`,
    );
    const readers = new Set<string>(fns.rows.filter((f) => f.has_from).map((f) => f.sig));
    for (let grown = true; grown; ) {
      grown = false;
      const names = new Set(fns.rows.filter((f) => readers.has(f.sig)).map((f) => f.qname as string));
      for (const f of fns.rows) {
        if (readers.has(f.sig)) continue;
        if ([...names].some((n) => (f.src as string).includes(n + '('))) {
          readers.add(f.sig);
          grown = true;
        }
      }
    }
    const policyFunctionRows = await c.query(
      `select distinct format('%I.%I', pn.nspname, pc.relname) as table, pol.polname as policy, d.refobjid::regprocedure::text as function
         from pg_policy pol
         join pg_class pc on pc.oid = pol.polrelid join pg_namespace pn on pn.oid = pc.relnamespace
         join pg_depend d on d.classid = 'pg_policy'::regclass and d.objid = pol.oid and d.refclassid = 'pg_proc'::regclass
         join pg_proc p on p.oid = d.refobjid join pg_namespace fn on fn.oid = p.pronamespace
        where pn.nspname = any($1) and fn.nspname <> 'pg_catalog'
        order by 1, 2, 3`,
      [schemas],
    );
    const policyFunctions = policyFunctionRows.rows.map((r) => ({ ...r, reads_tables: readers.has(r.function) }));
    const allPolicies = await c.query(`select count(*)::int as n from pg_policies where schemaname = any($1)`, [schemas]);
    // Workspace tables: those with workspace_id (distribution column workspace_id) and app.workspaces (id).
    const wsTables = `
      select c.oid, format('%I.%I', n.nspname, c.relname) as name,
             case when n.nspname = 'app' and c.relname = 'workspaces' then 'id' else 'workspace_id' end as dist_col
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = any($1) and c.relkind in ('r', 'p') and not c.relispartition
         and ((n.nspname = 'app' and c.relname = 'workspaces')
              or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'workspace_id' and not a.attisdropped))`;
    const keys = await c.query(
      `with ws as (${wsTables})
       select ws.name as table, i.indexrelid::regclass::text as key,
              case when con.contype = 'p' then 'primary key' when con.contype = 'u' then 'unique constraint' else 'unique index' end as kind,
              pg_get_indexdef(i.indexrelid) as definition
         from ws join pg_index i on i.indrelid = ws.oid and i.indisunique
         left join pg_constraint con on con.conindid = i.indexrelid and con.contype in ('p', 'u')
        where not exists (select 1 from unnest(i.indkey) k join pg_attribute a on a.attrelid = ws.oid and a.attnum = k where a.attname = ws.dist_col)
        order by 1, 2`,
      [schemas],
    );
    const fks = await c.query(
      `with ws as (${wsTables})
       select ch.name as table, con.conname as constraint, pa.name as references, pg_get_constraintdef(con.oid) as definition,
              cardinality(con.conkey) as columns
         from pg_constraint con join ws ch on ch.oid = con.conrelid join ws pa on pa.oid = con.confrelid
        where con.contype = 'f'
          -- the foreign key does not pair the two tables' distribution columns
          and not exists (
            select 1 from unnest(con.conkey, con.confkey) as k(ck, pk)
              join pg_attribute ca on ca.attrelid = con.conrelid and ca.attnum = k.ck
              join pg_attribute pa2 on pa2.attrelid = con.confrelid and pa2.attnum = k.pk
             where ca.attname = ch.dist_col and pa2.attname = pa.dist_col)
        order by 1, 2`,
      [schemas],
    );
    const refToWs = await c.query(
      `with ws as (${wsTables})
       select format('%I.%I', n.nspname, c.relname) as table, con.conname as constraint, pa.name as references
         from pg_constraint con join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
         join ws pa on pa.oid = con.confrelid
        where con.contype = 'f' and n.nspname = any($1) and not exists (select 1 from ws where ws.oid = con.conrelid)
        order by 1, 2`,
      [schemas],
    );
    const triggers = await c.query(
      `select format('%I.%I', n.nspname, c.relname) as table, count(*)::int as triggers
         from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
        where not t.tgisinternal and n.nspname = any($1)
        group by 1 order by 1`,
      [schemas],
    );
    return {
      policies: allPolicies.rows[0].n as number,
      policiesWithSubqueries: policies.rows as { table: string; policy: string }[],
      policyFunctions: policyFunctions as { table: string; policy: string; function: string; reads_tables: boolean }[],
      keysWithoutDistributionColumn: keys.rows as { table: string; key: string; kind: string; definition: string }[],
      foreignKeysWithoutWorkspaceId: fks.rows as { table: string; constraint: string; references: string; definition: string; columns: number }[],
      foreignKeysFromReferenceToWorkspaceTables: refToWs.rows as { table: string; constraint: string; references: string }[],
      tablesWithTriggers: triggers.rows as { table: string; triggers: number }[],
    };
  });
}

// ---------------------------------------------------------------------------

function printTable(rows: TableRow[]) {
  const head = ['table', 'wanted', 'result', 'final', 'error'];
  const cells = rows.map((r) => [r.table, r.wanted === 'distributed' ? `distributed(${r.column})` : 'reference', r.result, r.final, r.error ?? '']);
  const widths = head.map((h, i) => Math.min(48, Math.max(h.length, ...cells.map((c) => c[i].length))));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ');
  console.log(line(head));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const c of cells) console.log(line(c));
}

async function main() {
  const started = Date.now();
  console.log(`probe: database ${dbName} on the cluster of ${new URL(adminUrl).host}`);
  const url = await freshDatabase();
  const citusVersion = await withClient(url, async (c) => (await c.query('select citus_version() as v')).rows[0].v as string);
  console.log('probe: migrating (server/db/migrate.ts)');
  await migrate(url, { quiet: true });
  const current = await applyCurrentMigrations(url);
  console.log(`probe: applied db/migrations/current: ${current.length ? current.join(', ') : 'none'}`);
  await installQueues(url);
  console.log('probe: pg-boss schema and queues installed (server/jobs/queues.ts)');
  // The roles the migrations create, on every node (Citus propagates CREATE ROLE from the coordinator).
  const roles = await withClient(url, async (c) => {
    const r = await c.query(
      `select nodename || ':' || nodeport as node, success, result
         from run_command_on_all_nodes($$select string_agg(rolname || case when rolcanlogin then '(login)' else '' end, ',' order by rolname) from pg_roles where rolname like 'pressroom\\_%'$$)
         join pg_dist_node using (nodeid)`,
    );
    return r.rows as { node: string; success: boolean; result: string }[];
  });
  // Citus recreates policies without AS RESTRICTIVE (docs/citus.md): counted before and after, on every node.
  const restrictiveSql = `select count(*) from pg_policy p join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace
     where not p.polpermissive and n.nspname in (${schemas.map(lit).join(', ')}) and not c.relname ~ '_[0-9]+$'`;
  const restrictiveBefore = await withClient(url, async (c) => Number((await c.query(restrictiveSql)).rows[0].count));
  console.log('probe: distributing');
  const { rows, tables, leader, step } = await distribute(url);
  console.log(`probe: ${step}`);
  const restrictiveAfter = await withClient(url, async (c) => {
    const r = await c.query(`select nodename || ':' || nodeport as node, result from run_command_on_all_nodes($1) join pg_dist_node using (nodeid) order by nodeid`, [restrictiveSql]);
    return r.rows.map((x) => `${x.node}=${x.result}`).join(' ');
  });
  const diag = await diagnostics(url);

  const count = (f: (r: TableRow) => boolean) => rows.filter(f).length;
  // Errors by message and detail, names of relations elided.
  const errors = new Map<string, number>();
  for (const r of rows) {
    if (!r.error) continue;
    const k = r.error.replace(/"[^"]*"/g, '"…"') + (r.detail ? ` (${r.detail})` : '');
    errors.set(k, (errors.get(k) ?? 0) + 1);
  }
  const counts = {
    tables: rows.length,
    wantedReference: count((r) => r.wanted === 'reference'),
    wantedDistributed: count((r) => r.wanted === 'distributed'),
    referenceOk: count((r) => r.wanted === 'reference' && r.result === 'ok'),
    referenceFailed: count((r) => r.wanted === 'reference' && r.result === 'error'),
    distributedOk: count((r) => r.wanted === 'distributed' && r.result === 'ok'),
    distributedFailed: count((r) => r.wanted === 'distributed' && r.result === 'error'),
    finalDistributed: count((r) => r.final === 'distributed'),
    finalReference: count((r) => r.final === 'reference'),
    finalCitusLocal: count((r) => r.final === 'citus-local'),
    finalLocal: count((r) => r.final === 'local'),
    policies: diag.policies,
    policiesWithSubqueries: diag.policiesWithSubqueries.length,
    policiesCallingTableReadingFunctions: new Set(diag.policyFunctions.filter((f) => f.reads_tables).map((f) => `${f.table} ${f.policy}`)).size,
    tableReadingFunctionsInPolicies: new Set(diag.policyFunctions.filter((f) => f.reads_tables).map((f) => f.function)).size,
    keysWithoutDistributionColumn: diag.keysWithoutDistributionColumn.length,
    foreignKeysWithoutWorkspaceId: diag.foreignKeysWithoutWorkspaceId.length,
    singleColumnForeignKeysWithoutWorkspaceId: diag.foreignKeysWithoutWorkspaceId.filter((f) => f.columns === 1).length,
    foreignKeysFromReferenceToWorkspaceTables: diag.foreignKeysFromReferenceToWorkspaceTables.length,
    restrictivePoliciesBeforeDistributing: restrictiveBefore,
    tablesWithTriggers: diag.tablesWithTriggers.length,
    workspaceTablesWithTriggers: diag.tablesWithTriggers.filter((t) => tables.find((x) => x.name === t.table)?.hasWorkspaceId || t.table === 'app.workspaces').length,
  };

  printTable(rows);
  console.log('');
  console.log('errors, by message and detail (quoted names elided):');
  for (const [m, n] of [...errors].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(3)}  ${m}`);
  console.log('');
  console.log(`roles per node: ${roles.map((r) => `${r.node} ${r.success ? r.result : 'ERROR ' + r.result}`).join('; ')}`);
  console.log(`app.workspaces wanted as: ${opts.workspaces}; colocation group led by: ${leader ?? 'none'}; citus.enable_unsafe_triggers: ${opts['safe-triggers'] ? 'off' : 'on'}`);
  const readers = [...new Set(diag.policyFunctions.filter((f) => f.reads_tables).map((f) => f.function))];
  if (readers.length) console.log(`table-reading functions called by policies: ${readers.join(', ')}`);
  console.log(`restrictive policies (shell tables, not shards): before distributing ${restrictiveBefore}; after, per node: ${restrictiveAfter}`);
  console.log('counts:');
  for (const [k, v] of Object.entries(counts)) console.log(`  ${k.padEnd(44)} ${v}`);

  if (opts.json) {
    writeFileSync(
      opts.json,
      JSON.stringify(
        {
          at: new Date().toISOString(),
          citusVersion,
          database: dbName,
          schemas,
          workspaces: opts.workspaces,
          unsafeTriggers: !opts['safe-triggers'],
          colocationLeader: leader,
          migrationsCurrent: current,
          roles,
          restrictivePoliciesAfterDistributing: restrictiveAfter,
          counts,
          errors: Object.fromEntries(errors),
          tables: rows,
          ...diag,
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`probe: wrote ${opts.json}`);
  }
  if (opts.drop) {
    await freshDropAll();
    console.log(`probe: dropped ${dbName}`);
  }
  console.log(`probe: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

async function freshDropAll() {
  const nodes = await withClient(adminUrl, async (c) => (await c.query(`select nodename, nodeport from pg_dist_node where groupid <> 0 and noderole = 'primary'`)).rows);
  for (const n of nodes) await withClient(urlFor(adminUrl, n.nodename, n.nodeport, 'postgres'), (c) => c.query(`drop database if exists ${ident(dbName)} with (force)`));
  await withClient(adminUrl, (c) => c.query(`drop database if exists ${ident(dbName)} with (force)`));
}

main().catch((e) => {
  console.error(`probe: ${(e as Error).message}`);
  process.exit(1);
});
