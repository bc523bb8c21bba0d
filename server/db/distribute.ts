// Distributes Pressroom's schema on a Citus cluster (docs/citus.md,
// "Distributing"): `npx pressroom distribute`, run on the coordinator after
// the migrations, and again after any later migration that adds a table.
//
// Every table of schema app with a workspace_id column (app.is_workspace_table)
// is distributed by workspace_id, all in one colocation group, so one
// workspace's rows of every table live on one shard; every other table of app
// (organizations, users, api_keys, platforms, settings, app.workspaces, ...)
// becomes a reference table, copied to every node. pg-boss's tables stay
// local to the coordinator.
//
// Citus distributes a table that foreign keys tie to tables not yet
// distributed only in an order that does not exist for a graph like this one
// (a parent is refused while its children are local, a child while its parent
// is). So, in one transaction: the foreign keys between tables of app are
// recorded and dropped, the tables are made reference or distributed, and the
// keys are made again, each checked by Citus as it is added (a key Citus
// cannot keep fails the whole step, and nothing changes). The keys are those
// of db/migrations/committed/000043-keys-carry-the-workspace.sql:
// tests/db/10-distributable.test.sql keeps them distributable.
//
// Idempotent: tables already distributed as wanted are left as they are; a
// table Citus holds otherwise (a citus-local table someone made so, or distributed by another
// column) is refused with its name, as is a database without Citus.
import type pg from 'pg';

export class DistributeError extends Error {
  readonly code: 'CITUS_NOT_INSTALLED' | 'TABLE_HELD_OTHERWISE';
  readonly details: unknown;
  constructor(code: 'CITUS_NOT_INSTALLED' | 'TABLE_HELD_OTHERWISE', message: string, details: unknown = null) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

export interface DistributeResult {
  citusVersion: string;
  /** Tables distributed by this run, and those that already were. */
  distributed: { now: string[]; before: string[] };
  reference: { now: string[]; before: string[] };
  /** Foreign keys between tables of app, dropped and made again (0 when nothing was to do). */
  foreignKeysRemade: number;
  shardCount: number | null;
  workers: number;
  /** The settings this database gives every new session (DATABASE_SETTINGS), as set. */
  settings: Record<string, string>;
  /**
   * Per worker, the internal roles that cannot log in there (INTERNAL_ROLES), which Citus needs
   * for every query they run: empty when all can. Citus gives the workers the roles as the
   * coordinator has them (without LOGIN) whenever a migration creates a function they own, so
   * this is checked on every run (docs/citus.md, "Distributing").
   */
  workersWithoutLogin: WorkerLogins[];
  /**
   * The functions of app, api and audit that Citus did not have on the workers and were given to
   * them now (`propagated`), and those whose grants on some worker differed from the
   * coordinator's and were made the same (`grantsMended`). See propagateFunctions.
   */
  functions: { propagated: string[]; grantsMended: string[] };
  /** The functions whose forced generic plans were reset, so Citus can plan them (allowCustomPlans). */
  customPlans: string[];
}

/** A worker where internal roles cannot log in: those roles, or why the check could not run there. */
export interface WorkerLogins {
  node: string;
  roles: string[];
  error?: string;
}

/** The roles the service's queries run as, which must log in on the workers (and only there). */
export const INTERNAL_ROLES = ['pressroom_api', 'pressroom_definer', 'pressroom_request', 'pressroom_worker'];

async function workersWithoutLogin(client: pg.ClientBase): Promise<WorkerLogins[]> {
  const check = `select coalesce(string_agg(rolname, ',' order by rolname), '') from pg_roles where not rolcanlogin and rolname in (${INTERNAL_ROLES.map((r) => `'${r}'`).join(', ')})`;
  const r = await client.query<{ node: string; success: boolean; result: string }>(
    `select nodename || ':' || nodeport as node, success, result from run_command_on_workers($1) order by 1`, [check]);
  return r.rows.flatMap((w): WorkerLogins[] => {
    if (!w.success) return [{ node: w.node, roles: [], error: w.result }];
    return w.result ? [{ node: w.node, roles: w.result.split(',') }] : [];
  });
}

/** The schemas whose functions the service runs, on the coordinator and (in queries and triggers on shards) on the workers. */
const FUNCTION_SCHEMAS = ['app', 'api', 'audit'];
/** FUNCTION_SCHEMAS as a SQL list of regnamespace literals. */
const FUNCTION_SCHEMA_LIST = FUNCTION_SCHEMAS.map((n) => `'${n}'::regnamespace`).join(', ');

/**
 * Gives the workers every function of FUNCTION_SCHEMAS, with the coordinator's grants.
 *
 * Citus creates a function on the workers when it is created on the coordinator, unless it depends
 * on a table Citus does not hold yet: a function created by the migrations before this step that
 * takes or returns a table's row (`app.content_edition_json(app.content_items)`, 106 of them when
 * measured) stays on the coordinator only, and a query on a shard that calls it fails there
 * (`function app.content_edition_json(app.content_items) does not exist`). Each such function is
 * given to the workers with create_distributed_function (no distribution argument: created on
 * every node, no call delegation), in passes, since a worker checks a SQL function's body against
 * the functions it already has.
 *
 * A function Citus creates on a worker gets the grants it knew of, and PUBLIC's default EXECUTE:
 * the migrations' `revoke all ... from public` ran before, or (for a function a later migration
 * replaces) only on the coordinator. So each function's grants are compared across the nodes, and
 * where a worker's differ the coordinator's are given again (REVOKE from PUBLIC, then each GRANT),
 * which Citus carries to every worker.
 */
async function propagateFunctions(client: pg.ClientBase): Promise<{ propagated: string[]; grantsMended: string[] }> {
  const schemas = FUNCTION_SCHEMA_LIST;
  const missing = (await client.query<{ fn: string }>(
    `select p.oid::regprocedure::text as fn from pg_proc p
      where p.pronamespace in (${schemas}) and p.prokind = 'f'
        and not exists (select 1 from pg_dist_object o where o.classid = 'pg_proc'::regclass and o.objid = p.oid)
      order by 1`)).rows.map((r) => r.fn);
  // A SQL function's body is checked as it is created on a worker, so one that calls another not
  // there yet fails: passes until nothing is left, or a pass gives nothing (then the first error).
  let left = missing;
  while (left.length > 0) {
    const failed: { fn: string; error: unknown }[] = [];
    for (const fn of left) {
      await client.query(`select create_distributed_function($1)`, [fn]).catch((error: unknown) => failed.push({ fn, error }));
    }
    if (failed.length === left.length) throw failed[0].error;
    left = failed.map((f) => f.fn);
  }

  const acls = `select coalesce(json_object_agg(p.oid::regprocedure::text, coalesce(p.proacl::text, '')), '{}')
                  from pg_proc p where p.pronamespace in (${schemas}) and p.prokind = 'f'`;
  const mine = JSON.parse((await client.query<{ j: string }>(`select (${acls})::text as j`)).rows[0].j) as Record<string, string>;
  const theirs = (await client.query<{ success: boolean; result: string }>(`select success, result from run_command_on_workers($1)`, [acls])).rows;
  const differing = new Set<string>();
  for (const w of theirs) {
    if (!w.success) throw new Error(`reading the functions' grants on a worker failed: ${w.result}`);
    const acl = JSON.parse(w.result) as Record<string, string>;
    for (const [fn, a] of Object.entries(mine)) if (acl[fn] !== undefined && acl[fn] !== a) differing.add(fn);
  }
  const grantsMended = [...differing].sort();
  for (const fn of grantsMended) {
    const grants = (await client.query<{ sql: string }>(
      `select format('grant %s on function %s to %s', a.privilege_type, $1, quote_ident(r.rolname)) as sql
         from aclexplode((select proacl from pg_proc where oid = $1::regprocedure)) a
         join pg_roles r on r.oid = a.grantee
        where a.grantee <> (select proowner from pg_proc where oid = $1::regprocedure)`, [fn])).rows;
    await client.query(`revoke all on function ${fn} from public`);
    for (const g of grants) await client.query(g.sql);
  }
  return { propagated: missing, grantsMended };
}

/**
 * Lets Citus plan the engine's batch functions with their parameters' values.
 *
 * On one PostgreSQL the publish engine's batch functions (app.publish_claim_batch,
 * app.publish_record_batch, app.sandbox_receive_posts) plan with `plan_cache_mode =
 * force_generic_plan` (db/migrations/committed/000020-publish-throughput-set-based-claim-and-record.sql:
 * a custom plan per call cost about 2 ms). Citus plans a statement that has parameters only in a
 * custom plan, where the parameters are values: with a generic plan it answers `could not create
 * distributed plan` (its distributed_planner.c leaves the error for PostgreSQL to replan with a
 * custom plan, which the forced mode forbids). So on a distributed database every function of
 * FUNCTION_SCHEMAS that forces generic plans has the setting reset (ALTER FUNCTION, which Citus
 * carries to the workers); a migration that sets it again is reset by the next run of this step.
 */
async function allowCustomPlans(client: pg.ClientBase): Promise<string[]> {
  const schemas = FUNCTION_SCHEMA_LIST;
  const fns = (await client.query<{ fn: string }>(
    `select p.oid::regprocedure::text as fn from pg_proc p
      where p.pronamespace in (${schemas}) and 'plan_cache_mode=force_generic_plan' = any (p.proconfig)
      order by 1`)).rows.map((r) => r.fn);
  for (const fn of fns) await client.query(`alter function ${fn} reset plan_cache_mode`);
  return fns;
}

/**
 * What every session of the service on the coordinator runs with (set on the database, so the
 * API, the workers and the CLI get them alike; docs/citus.md, "Distributing"):
 * - multi_shard_modify_mode sequential: a request may read several workspaces' shards (the
 *   workspaces a key may use) and then write a reference table (an API key); Citus refuses that
 *   write after a parallel read ("cannot modify table ... because there was a parallel operation
 *   on a distributed table") and itself hints at this mode, one connection per worker;
 * - allow_modifications_from_workers_to_replicated_tables off: the service writes through the
 *   coordinator only, so Citus need not lock a reference table's shards on the first worker
 *   before each write (lock_shard_resources, which demands table-wide UPDATE, DELETE or
 *   TRUNCATE on every table a key points at, where the internal roles hold column grants).
 */
export const DATABASE_SETTINGS: Record<string, string> = {
  'citus.multi_shard_modify_mode': 'sequential',
  'citus.allow_modifications_from_workers_to_replicated_tables': 'off',
};

interface AppTable {
  name: string;
  workspace: boolean;
  /** What Citus holds it as: distributed (by column), reference, citus-local, or null (local). */
  state: string | null;
  column: string | null;
  /**
   * A citus-local table Citus made so by itself: a table a later migration creates with a foreign
   * key to a reference table (app.workspaces, app.organizations) becomes one at once. This step
   * distributes it (or makes it a reference table) as it does a local table.
   */
  autoConverted: boolean;
}

/**
 * What Citus holds a table as, from its pg_dist_partition row `p` (left-joined): distributed,
 * reference, citus-local (added to the metadata by Citus itself), or null (a local table).
 */
export const CITUS_TABLE_STATE = `case when p.partmethod = 'h' then 'distributed'
                 when p.partmethod = 'n' and p.repmodel = 't' then 'reference'
                 when p.partmethod = 'n' then 'citus-local' end`;

async function appTables(client: pg.ClientBase): Promise<AppTable[]> {
  const r = await client.query<AppTable>(
    `select c.oid::regclass::text as name, app.is_workspace_table(c.oid) as workspace,
            ${CITUS_TABLE_STATE} as state, coalesce(p.autoconverted, false) as "autoConverted",
            case when p.partmethod = 'h' then column_to_column_name(p.logicalrelid, p.partkey) end as column
       from pg_class c
       left join pg_dist_partition p on p.logicalrelid = c.oid
      where c.relnamespace = 'app'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      order by 1`,
  );
  return r.rows;
}

/** Distributes the schema (see above). The client is the owner's, on the coordinator, outside a transaction. */
export async function distributeSchema(client: pg.ClientBase): Promise<DistributeResult> {
  const ext = await client.query<{ extversion: string }>(`select extversion from pg_extension where extname = 'citus'`);
  if (ext.rowCount === 0) {
    throw new DistributeError('CITUS_NOT_INSTALLED', 'This database has no citus extension: distribute runs on the coordinator of a Citus cluster (docs/citus.md).');
  }
  const citusVersion = (await client.query<{ v: string }>(`select citus_version() as v`)).rows[0].v;
  const workers = Number((await client.query<{ n: string }>(`select count(*) as n from pg_dist_node where noderole = 'primary' and groupid <> 0`)).rows[0].n);

  const before = await appTables(client);
  const held = before.filter((t) =>
    (t.state === 'citus-local' && !t.autoConverted) ||
    (t.workspace && t.state === 'reference') ||
    (t.workspace && t.state === 'distributed' && t.column !== 'workspace_id') ||
    (!t.workspace && t.state === 'distributed'));
  if (held.length > 0) {
    throw new DistributeError('TABLE_HELD_OTHERWISE',
      `Citus already holds ${held.map((t) => `${t.name} as ${t.state}${t.column ? ` by ${t.column}` : ''}`).join(', ')}; undistribute them (undistribute_table) and run distribute again.`,
      { tables: held.map((t) => ({ table: t.name, state: t.state, column: t.column })) });
  }
  const mine = (t: AppTable) => t.state === null || (t.state === 'citus-local' && t.autoConverted);
  const toDistribute = before.filter((t) => t.workspace && mine(t)).map((t) => t.name);
  const toReference = before.filter((t) => !t.workspace && mine(t)).map((t) => t.name);
  const database = (await client.query<{ d: string }>(`select current_database() as d`)).rows[0].d;
  for (const [name, value] of Object.entries(DATABASE_SETTINGS)) {
    await client.query(`alter database ${quoteIdent(database)} set ${name} = ${quoteLiteral(value)}`);
  }
  const logins = await workersWithoutLogin(client);
  let functions = { propagated: [] as string[], grantsMended: [] as string[] };
  let customPlans: string[] = [];
  const result = (foreignKeysRemade: number, shardCount: number | null): DistributeResult => ({
    citusVersion, workers, foreignKeysRemade, shardCount, settings: { ...DATABASE_SETTINGS }, workersWithoutLogin: logins, functions, customPlans,
    distributed: { now: toDistribute, before: before.filter((t) => t.state === 'distributed').map((t) => t.name) },
    reference: { now: toReference, before: before.filter((t) => t.state === 'reference').map((t) => t.name) },
  });
  const shards = async () => {
    const r = await client.query<{ n: number | null }>(
      `select max(shard_count)::int as n from citus_tables where table_name::text like 'app.%' and citus_table_type = 'distributed'`);
    return r.rows[0].n;
  };
  if (toDistribute.length === 0 && toReference.length === 0) {
    functions = await propagateFunctions(client);
    customPlans = await allowCustomPlans(client);
    return result(0, await shards());
  }

  await client.query('begin');
  try {
    // Triggers on distributed tables run on the shards (docs/citus.md, "Triggers"); one
    // connection per node, so the tables made in this transaction can be used in it.
    await client.query(`set local citus.enable_unsafe_triggers = on`);
    await client.query(`set local citus.multi_shard_modify_mode = 'sequential'`);
    await client.query(`set local client_min_messages = warning`);
    const fks = (await client.query<{ tbl: string; name: string; def: string }>(
      `select con.conrelid::regclass::text as tbl, con.conname as name, pg_get_constraintdef(con.oid) as def
         from pg_constraint con
         join pg_class ref on ref.oid = con.confrelid
        where con.contype = 'f' and con.connamespace = 'app'::regnamespace and ref.relnamespace = 'app'::regnamespace
        order by 1, 2`)).rows;
    for (const fk of fks) await client.query(`alter table ${fk.tbl} drop constraint ${quoteIdent(fk.name)}`);
    for (const t of toReference) await client.query(`select create_reference_table($1)`, [t]);
    const leader = before.find((t) => t.state === 'distributed')?.name ?? null;
    let colocate = leader ?? 'default';
    for (const t of toDistribute) {
      await client.query(`select create_distributed_table($1, 'workspace_id', colocate_with => $2)`, [t, colocate]);
      colocate = colocate === 'default' ? t : colocate;
    }
    for (const fk of fks) await client.query(`alter table ${fk.tbl} add constraint ${quoteIdent(fk.name)} ${fk.def}`);
    await client.query('commit');
    // After the tables: a function that takes a table's row can be created on the workers only once
    // the table is Citus's.
    functions = await propagateFunctions(client);
    customPlans = await allowCustomPlans(client);
    return result(fks.length, await shards());
  } catch (e) {
    await client.query('rollback').catch(() => {});
    throw e;
  }
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
