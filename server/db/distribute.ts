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
// table Citus holds otherwise (a citus-local table, or distributed by another
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
}

/**
 * What Citus holds a table as, from its pg_dist_partition row `p` (left-joined): distributed,
 * reference, citus-local (added to the metadata by Citus itself), or null (a local table).
 */
export const CITUS_TABLE_STATE = `case when p.partmethod = 'h' then 'distributed'
                 when p.partmethod = 'n' and p.repmodel = 't' then 'reference'
                 when p.partmethod = 'n' then 'citus-local' end`;

async function appTables(client: pg.ClientBase): Promise<AppTable[]> {
  const r = await client.query<{ name: string; workspace: boolean; state: string | null; column: string | null }>(
    `select c.oid::regclass::text as name, app.is_workspace_table(c.oid) as workspace,
            ${CITUS_TABLE_STATE} as state,
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
    t.state === 'citus-local' ||
    (t.workspace && t.state === 'reference') ||
    (t.workspace && t.state === 'distributed' && t.column !== 'workspace_id') ||
    (!t.workspace && t.state === 'distributed'));
  if (held.length > 0) {
    throw new DistributeError('TABLE_HELD_OTHERWISE',
      `Citus already holds ${held.map((t) => `${t.name} as ${t.state}${t.column ? ` by ${t.column}` : ''}`).join(', ')}; undistribute them (undistribute_table) and run distribute again.`,
      { tables: held.map((t) => ({ table: t.name, state: t.state, column: t.column })) });
  }
  const toDistribute = before.filter((t) => t.workspace && t.state === null).map((t) => t.name);
  const toReference = before.filter((t) => !t.workspace && t.state === null).map((t) => t.name);
  const database = (await client.query<{ d: string }>(`select current_database() as d`)).rows[0].d;
  for (const [name, value] of Object.entries(DATABASE_SETTINGS)) {
    await client.query(`alter database ${quoteIdent(database)} set ${name} = ${quoteLiteral(value)}`);
  }
  const logins = await workersWithoutLogin(client);
  const result = (foreignKeysRemade: number, shardCount: number | null): DistributeResult => ({
    citusVersion, workers, foreignKeysRemade, shardCount, settings: { ...DATABASE_SETTINGS }, workersWithoutLogin: logins,
    distributed: { now: toDistribute, before: before.filter((t) => t.state === 'distributed').map((t) => t.name) },
    reference: { now: toReference, before: before.filter((t) => t.state === 'reference').map((t) => t.name) },
  });
  const shards = async () => {
    const r = await client.query<{ n: number | null }>(
      `select max(shard_count)::int as n from citus_tables where table_name::text like 'app.%' and citus_table_type = 'distributed'`);
    return r.rows[0].n;
  };
  if (toDistribute.length === 0 && toReference.length === 0) return result(0, await shards());

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
