// The distribute step on the cluster (docs/citus.md, "Distributing"): a fresh
// database migrated on the coordinator, then the real CLI, `pressroom
// distribute`, as an operator runs it. Runs against the test cluster of
// scripts/citus/cluster.sh (started here when it is not running), never with
// `npm run test:api`: `npx vitest run --config tests/citus/vitest.config.ts`.
//
// Environment: CITUS_URL (the coordinator; default `scripts/citus/cluster.sh
// url`); CITUS_KEEP_DB=1 keeps the database afterwards.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_SETTINGS } from '../../server/db/distribute.ts';
import { applyCurrentMigrations, migrate } from '../../server/db/migrate.ts';
import { installQueues } from '../../server/jobs/queues.ts';
import { cluster, clusterDatabase, distributeCli } from './support.ts';

const db = `pressroom_dist_${randomBytes(4).toString('hex')}`;
let ownerUrl = '';
let owner: pg.Client;
let foreignKeysBefore: string[] = [];

interface Distributed {
  citusVersion: string;
  workers: number;
  distributed: { now: string[]; before: string[] };
  reference: { now: string[]; before: string[] };
  foreignKeysRemade: number;
  shardCount: number | null;
  settings: Record<string, string>;
  workersWithoutLogin: { node: string; roles: string[] }[];
  functions: { propagated: string[]; grantsMended: string[] };
  customPlans: string[];
}

/** `pressroom distribute` as an operator runs it (tests/citus/support.ts). */
async function distribute(): Promise<{ code: number; out: Distributed }> {
  return { code: 0, out: await distributeCli<Distributed>(ownerUrl) };
}

const foreignKeys = async () =>
  (await owner.query<{ fk: string }>(
    // (Joined to pg_class, which Citus shows without the shards of reference tables that the
    // coordinator also holds.)
    `select con.conrelid::regclass || ' ' || con.conname || ' ' || pg_get_constraintdef(con.oid) as fk
       from pg_constraint con join pg_class c on c.oid = con.conrelid
      where con.contype = 'f' and con.connamespace = 'app'::regnamespace order by 1`)).rows.map((r) => r.fk);

beforeAll(async () => {
  ownerUrl = clusterDatabase(db).url;
  await migrate(ownerUrl, { quiet: true, waitMs: 0 });
  await applyCurrentMigrations(ownerUrl);
  await installQueues(ownerUrl);
  cluster('roles', db);
  owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  foreignKeysBefore = await foreignKeys();
}, 600_000);

afterAll(async () => {
  await owner?.end();
  if (process.env.CITUS_KEEP_DB !== '1' && ownerUrl) cluster('dropdb', db);
});

describe('pressroom distribute', () => {
  let first: Distributed;

  it('distributes every workspace table by workspace_id and makes the other tables of app reference tables', async () => {
    const { out } = await distribute();
    first = out;
    const tables = await owner.query<{ name: string; workspace: boolean }>(
      `select oid::regclass::text as name, app.is_workspace_table(oid) as workspace from pg_class
        where relnamespace = 'app'::regnamespace and relkind in ('r', 'p') and not relispartition order by 1`);
    const workspaceTables = tables.rows.filter((t) => t.workspace).map((t) => t.name);
    const others = tables.rows.filter((t) => !t.workspace).map((t) => t.name);
    expect(workspaceTables.length).toBeGreaterThan(75);
    expect(out.distributed).toEqual({ now: workspaceTables, before: [] });
    expect(out.reference).toEqual({ now: others, before: [] });
    expect(others).toEqual(expect.arrayContaining(['app.organizations', 'app.users', 'app.api_keys', 'app.workspaces', 'app.platforms', 'app.settings']));
    expect(out.workers).toBe(2);
    expect(out.shardCount).toBeGreaterThan(1);
    expect(out.foreignKeysRemade).toBe(foreignKeysBefore.filter((fk) => !/REFERENCES (audit|pgboss)\./.test(fk)).length);
  }, 600_000);

  it('Citus holds them so: one colocation group by workspace_id, reference tables on every node, pg-boss local', async () => {
    const r = await owner.query<{ kind: string; column: string | null; groups: number; n: number }>(
      `select citus_table_type as kind, distribution_column as column, count(distinct colocation_id)::int as groups, count(*)::int as n
         from citus_tables where table_name::text like 'app.%' group by 1, 2 order by 1`);
    expect(r.rows).toEqual([
      { kind: 'distributed', column: 'workspace_id', groups: 1, n: first.distributed.now.length },
      { kind: 'reference', column: '<none>', groups: 1, n: first.reference.now.length },
    ]);
    const boss = await owner.query(`select logicalrelid from pg_dist_partition where logicalrelid::regclass::text like 'pgboss.%'`);
    expect(boss.rowCount).toBe(0);
  });

  it('sets the database so that every new session of the service runs with DATABASE_SETTINGS', async () => {
    expect(first.settings).toEqual(DATABASE_SETTINGS);
    expect(first.workersWithoutLogin).toEqual([]);
    const r = await owner.query<{ setconfig: string[] }>(
      `select setconfig from pg_db_role_setting where setrole = 0 and setdatabase = (select oid from pg_database where datname = current_database())`);
    expect([...r.rows[0].setconfig].sort()).toEqual(Object.entries(DATABASE_SETTINGS).map(([k, v]) => `${k}=${v}`).sort());
    const session = new pg.Client({ connectionString: ownerUrl });
    await session.connect();
    try {
      for (const [k, v] of Object.entries(DATABASE_SETTINGS)) {
        expect((await session.query<{ v: string }>(`select current_setting($1) as v`, [k])).rows[0].v).toBe(v);
      }
    } finally {
      await session.end();
    }
  });

  it('gives every worker every function of app, api and audit, with the coordinator\'s grants', async () => {
    // Before the step, a function that takes a table's row was on the coordinator only.
    expect(first.functions.propagated).toContain('app.content_edition_json(app.content_items)');
    const acls = `select coalesce(json_object_agg(p.oid::regprocedure::text, coalesce(p.proacl::text, '')), '{}')::text
                    from pg_proc p where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace, 'audit'::regnamespace) and p.prokind = 'f'`;
    const mine = JSON.parse((await owner.query<{ j: string }>(`select (${acls}) as j`)).rows[0].j) as Record<string, string>;
    expect(Object.keys(mine).length).toBeGreaterThan(700);
    const workers = (await owner.query<{ success: boolean; result: string }>(`select success, result from run_command_on_workers($1)`, [acls])).rows;
    expect(workers).toHaveLength(2);
    for (const w of workers) {
      expect(w.success, w.result).toBe(true);
      expect(JSON.parse(w.result)).toEqual(mine);
    }
  });

  it('lets Citus plan the engine\'s batch functions with custom plans, on every node', async () => {
    // One node forces generic plans on them (000020); Citus plans parameters only in custom plans.
    expect(first.customPlans).toEqual(expect.arrayContaining(['app.publish_claim_batch(jsonb,text[])', 'app.publish_record_batch(jsonb)']));
    const forced = `select coalesce(json_agg(p.oid::regprocedure::text order by 1), '[]')::text from pg_proc p
                      where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace, 'audit'::regnamespace)
                        and 'plan_cache_mode=force_generic_plan' = any (p.proconfig)`;
    expect(JSON.parse((await owner.query<{ j: string }>(`select (${forced}) as j`)).rows[0].j)).toEqual([]);
    for (const w of (await owner.query<{ success: boolean; result: string }>(`select success, result from run_command_on_workers($1)`, [forced])).rows) {
      expect(w.success, w.result).toBe(true);
      expect(JSON.parse(w.result)).toEqual([]);
    }
  });

  it('keeps every foreign key, as it was written', async () => {
    expect(await foreignKeys()).toEqual(foreignKeysBefore);
  });

  it('a query of one workspace goes to one shard; the composite keys and the detach trigger hold on the shards', async () => {
    const q = (text: string, params: unknown[] = []) => owner.query(text, params);
    const [org, ws1, ws2, group, label] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await q(`insert into app.organizations (id, name, plan) values ($1, 'Org', 'basic')`, [org]);
    await q(`insert into app.workspaces (id, organization_id, name) values ($1, $3, 'W1'), ($2, $3, 'W2')`, [ws1, ws2, org]);
    await q(`insert into app.media_label_groups (id, organization_id, workspace_id, name) values ($1, $2, $3, 'Season')`, [group, org, ws1]);
    const plan = (await q(`explain select * from app.media_labels where workspace_id = $1`, [ws1])).rows.map((x) => x['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Task Count: 1\b/);
    await q(`insert into app.media_labels (id, organization_id, workspace_id, group_id, name) values ($1, $2, $3, $4, 'Spring')`, [label, org, ws1, group]);
    // The group named from another workspace: the key (group_id, workspace_id) finds no group.
    await expect(q(`insert into app.media_labels (organization_id, workspace_id, group_id, name) values ($1, $2, $3, 'Elsewhere')`, [org, ws2, group]))
      .rejects.toMatchObject({ code: '23503' });
    // The group goes: its trigger (media_label_groups_95_detach_media_labels_group_id, on the shard)
    // empties the label's group_id in the colocated shard, as ON DELETE SET NULL did.
    await q(`delete from app.media_label_groups where workspace_id = $1 and id = $2`, [ws1, group]);
    expect((await q(`select group_id from app.media_labels where workspace_id = $1 and id = $2`, [ws1, label])).rows).toEqual([{ group_id: null }]);
    // The label goes, and with it nothing else (its workspace's other rows stay).
    await q(`delete from app.media_labels where workspace_id = $1 and id = $2`, [ws1, label]);
    expect((await q(`select count(*)::int as n from app.media_labels where workspace_id = $1`, [ws1])).rows[0].n).toBe(0);
  });

  it('run again, distributes nothing and changes nothing', async () => {
    const { out } = await distribute();
    expect(out.distributed.now).toEqual([]);
    expect(out.reference.now).toEqual([]);
    expect(out.distributed.before).toEqual(first.distributed.now);
    expect(out.foreignKeysRemade).toBe(0);
    expect(await foreignKeys()).toEqual(foreignKeysBefore);
  }, 120_000);

  it('after a migration that adds a workspace table (which Citus makes citus-local at once), distributes it on the next run', async () => {
    await owner.query(`create table app.probe_later (
      workspace_id uuid not null references app.workspaces (id) on delete cascade,
      organization_id uuid not null references app.organizations (id) on delete cascade,
      id uuid not null default gen_random_uuid(), primary key (id, workspace_id))`);
    const held = await owner.query<{ autoconverted: boolean }>(
      `select autoconverted from pg_dist_partition where logicalrelid = 'app.probe_later'::regclass and partmethod = 'n'`);
    expect(held.rows).toEqual([{ autoconverted: true }]);
    try {
      const { out } = await distribute();
      expect(out.distributed.now).toEqual(['app.probe_later']);
      const r = await owner.query(`select distribution_column as column from citus_tables where table_name = 'app.probe_later'::regclass`);
      expect(r.rows).toEqual([{ column: 'workspace_id' }]);
    } finally {
      await owner.query(`drop table app.probe_later`);
    }
  }, 180_000);

  it('names the internal roles that cannot log in on a worker (as after a migration), until they can again', async () => {
    // On one worker, over a connection of its own (a role is the whole node's: the change is
    // undone right after, on every worker).
    const node = (await owner.query<{ node: string }>(
      `select nodename || ':' || nodeport as node from pg_dist_node where noderole = 'primary' and groupid <> 0 order by 1 limit 1`)).rows[0].node;
    const workerUrl = new URL(ownerUrl);
    workerUrl.host = node;
    const worker = new pg.Client({ connectionString: workerUrl.toString() });
    await worker.connect();
    try {
      await worker.query(`alter role pressroom_worker nologin`);
    } finally {
      await worker.end();
    }
    try {
      const { out } = await distribute();
      expect(out.workersWithoutLogin).toContainEqual({ node, roles: ['pressroom_worker'] });
    } finally {
      cluster('roles', db);
    }
    expect((await distribute()).out.workersWithoutLogin).toEqual([]);
  }, 180_000);
});
