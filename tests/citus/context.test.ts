// The request context reaches the Citus workers (docs/citus.md, "Request
// context and roles"). Runs against the test cluster of
// scripts/citus/cluster.sh (started here when it is not running), never with
// `npm run test:api`: `npx vitest run --config tests/citus/vitest.config.ts`.
//
// A fresh database on every node (cluster.sh createdb), the project's
// migrations on the coordinator (server/db/migrate.ts, then
// db/migrations/current/*.sql as the tests apply them), LOGIN for the internal
// roles on the workers only (cluster.sh roles). The organizations, users,
// workspaces and memberships stay local tables on the coordinator (the schema
// does not distribute yet; docs/citus.md). A table distributed by workspace_id
// gets the tenant scope as its policy, and an api function (security definer,
// owned by pressroom_api, as every api function) counts its rows with a router
// query (one shard, its workspace_id given) and a multi-shard count. The
// context is set by the server's own setContext (server/http/pipeline.ts) over
// a pressroom_app connection.
//
// Environment: CITUS_URL (the coordinator, e.g. postgres://postgres@127.0.0.1:9700/postgres;
// default `scripts/citus/cluster.sh url`); CITUS_DIR and CITUS_PORT_BASE as for
// cluster.sh; CITUS_KEEP_DB=1 keeps the database afterwards.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import type { DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCurrentMigrations, migrate } from '../../server/db/migrate.ts';
import { openPool, sql } from '../../server/db/pool.ts';
import { setContext, type Principal } from '../../server/http/pipeline.ts';
import { cluster, clusterDatabase } from './support.ts';

const CITUS_DIR = process.env.CITUS_DIR ?? '/var/tmp/pressroom-citus';

function urlOf(base: string, opts: { database?: string; user?: string; port?: number; host?: string }): string {
  const u = new URL(base);
  if (opts.database) u.pathname = `/${opts.database}`;
  if (opts.user) u.username = opts.user;
  if (opts.port) u.port = String(opts.port);
  if (opts.host) u.hostname = opts.host;
  return u.toString();
}

async function connectError(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await c.connect();
    await c.query('select 1');
    return 'connected';
  } catch (e) {
    return (e as Error).message;
  } finally {
    await c.end().catch(() => {});
  }
}

const db = `pressroom_ctx_${randomBytes(4).toString('hex')}`;
let base = '';
let ownerUrl = '';
let owner: pg.Client;
let app: DatabasePool;
let workerPorts: number[] = [];

// Fixture ids.
const ORG_A = randomUUID();
const ORG_B = randomUUID();
const A_OWNER = randomUUID();
const A_EDITOR = randomUUID();
const B_OWNER = randomUUID();
const A1 = randomUUID();
const A2 = randomUUID();
const B1 = randomUUID();

const user = (userId: string, organizationId: string): Principal => ({
  actorKind: 'user',
  userId,
  sessionId: randomUUID(),
  organizationId,
  plan: 'basic',
});

interface Counts {
  router: number;
  all: number;
  /** request id @ port as role, evaluated beside the rows of the router query (on a worker). */
  seen: string | null;
}

/** One request transaction: setContext as the pipeline runs it, then the api function. */
async function asRequest(p: Principal | null, workspace: string | null, role: string | null, requestId: string, target: string): Promise<Counts> {
  return app.transaction(async (tx) => {
    await setContext(tx, p, workspace, role, requestId);
    return (await tx.oneFirst(sql.unsafe`select api.ctx_probe_counts(${target}::uuid) as result`)) as unknown as Counts;
  });
}

beforeAll(async () => {
  base = clusterDatabase(db).base;
  ownerUrl = urlOf(base, { database: db });
  await migrate(ownerUrl, { quiet: true, waitMs: 0 });
  await applyCurrentMigrations(ownerUrl);
  cluster('roles', db);

  owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  workerPorts = (await owner.query<{ nodeport: number }>(`select nodeport from pg_dist_node where groupid <> 0 and noderole = 'primary' order by 1`)).rows.map((r) => r.nodeport);
  const q = (text: string, params: unknown[] = []) => owner.query(text, params);
  // Local tables on the coordinator: the principal and its grants.
  await q(`insert into app.organizations (id, name, plan) values ($1, 'Org A', 'basic'), ($2, 'Org B', 'basic')`, [ORG_A, ORG_B]);
  await q(
    `insert into app.users (id, organization_id, email, password_hash, org_role)
     select u.id, u.org, u.id::text || '@example.test', 'not-a-real-hash', u.org_role
     from unnest($1::uuid[], $2::uuid[], $3::text[]) u (id, org, org_role)`,
    [[A_OWNER, A_EDITOR, B_OWNER], [ORG_A, ORG_A, ORG_B], ['owner', 'member', 'owner']],
  );
  await q(`insert into app.workspaces (id, organization_id, name) values ($1, $4, 'A1'), ($2, $4, 'A2'), ($3, $5, 'B1')`, [A1, A2, B1, ORG_A, ORG_B]);
  await q(`insert into app.workspace_members (workspace_id, user_id, organization_id, role) values ($1, $2, $3, 'editor')`, [A1, A_EDITOR, ORG_A]);
  // A table distributed by workspace, with the tenant scope as its policy: 2 rows in A1, 1 in A2, 3 in B1.
  await q(`create table app.ctx_probe (workspace_id uuid not null, n int not null)`);
  await q(`select create_distributed_table('app.ctx_probe', 'workspace_id')`);
  await q(`insert into app.ctx_probe select $1::uuid, n from generate_series(1, 2) n
           union all select $2::uuid, 1 union all select $3::uuid, n from generate_series(1, 3) n`, [A1, A2, B1]);
  await q(`alter table app.ctx_probe enable row level security`);
  await q(`alter table app.ctx_probe force row level security`);
  await q(`create policy ctx_probe_api on app.ctx_probe for select to pressroom_api using (workspace_id = app.current_accessible_workspace_id())`);
  await q(`grant select on app.ctx_probe to pressroom_api`);
  // Like every api function: security definer, owned by pressroom_api, executable by pressroom_request.
  await q(`create function api.ctx_probe_counts(p_ws uuid) returns jsonb
           language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
           declare
             v_router bigint;
             v_all bigint;
             v_seen text;
           begin
             select count(*) into v_router from app.ctx_probe where workspace_id = p_ws;
             select count(*) into v_all from app.ctx_probe;
             select string_agg(distinct format('%s@%s as %s', current_setting('pressroom.request_id', true), inet_server_port(), current_user), ',')
               into v_seen from app.ctx_probe where workspace_id = p_ws;
             return jsonb_build_object('router', v_router, 'all', v_all, 'seen', v_seen);
           end $$`);
  await q(`alter function api.ctx_probe_counts(uuid) owner to pressroom_api`);
  await q(`revoke all on function api.ctx_probe_counts(uuid) from public`);
  await q(`grant execute on function api.ctx_probe_counts(uuid) to pressroom_request`);

  // The server's login; one connection, so a later transaction reuses the session of an earlier one.
  app = await openPool(urlOf(base, { database: db, user: 'pressroom_app' }), 1);
}, 600_000);

afterAll(async () => {
  await app?.end();
  await owner?.end();
  if (process.env.CITUS_KEEP_DB !== '1' && ownerUrl) cluster('dropdb', db);
});

describe('the internal roles on the cluster (scripts/citus/cluster.sh roles)', () => {
  it('log in to the workers over TCP from the coordinator address, not by their socket, and never to the coordinator', async () => {
    expect(workerPorts.length).toBe(2);
    for (const port of workerPorts) {
      expect(await connectError(urlOf(base, { database: db, user: 'pressroom_api', port }))).toBe('connected');
      expect(await connectError(`postgres://pressroom_api@/${db}?host=${encodeURIComponent(path.join(CITUS_DIR, `worker${workerPorts.indexOf(port) + 1}`))}&port=${port}`))
        .toMatch(/pg_hba\.conf rejects connection/);
    }
    expect(await connectError(urlOf(base, { database: db, user: 'pressroom_api' }))).toMatch(/not permitted to log in/);
    const logins = await owner.query(
      `select rolname from pg_roles where rolcanlogin and rolname in ('pressroom_api', 'pressroom_request', 'pressroom_definer', 'pressroom_worker')`,
    );
    expect(logins.rows).toEqual([]);
  });

  it('the context functions exist on every worker', async () => {
    const r = await owner.query<{ result: string }>(
      `select result from run_command_on_workers($$select count(*) from pg_proc where oid in (to_regprocedure('app.current_accessible_workspace_id()'),
         to_regprocedure('app.context_key()'), to_regprocedure('app.current_workspace_accessible()'))$$)`,
    );
    expect(r.rows.map((x) => x.result)).toEqual(['3', '3']);
  });
});

describe('the request context on the workers', () => {
  const requestId = `ctx 'quoted' \\back\\slash ${randomUUID()}`;

  it('a member sees its workspace\'s rows, read on a worker as pressroom_api with the request id it was given', async () => {
    const c = await asRequest(user(A_EDITOR, ORG_A), A1, 'editor', requestId, A1);
    expect({ router: c.router, all: c.all }).toEqual({ router: 2, all: 2 });
    const m = /^(.*)@(\d+) as (\w+)$/s.exec(c.seen ?? '');
    expect(m?.[1]).toBe(requestId);
    expect(workerPorts).toContain(Number(m?.[2]));
    expect(m?.[3]).toBe('pressroom_api');
  });

  it('the owner acts in a workspace without membership; the rows of other workspaces stay out of sight', async () => {
    expect(await asRequest(user(A_OWNER, ORG_A), A2, 'manager', 'r-owner-a2', A2)).toMatchObject({ router: 1, all: 1 });
    expect(await asRequest(user(A_OWNER, ORG_A), A2, 'manager', 'r-owner-a1', A1)).toMatchObject({ router: 0, all: 1, seen: null });
    expect(await asRequest(user(A_EDITOR, ORG_A), A1, 'editor', 'r-editor-b1', B1)).toMatchObject({ router: 0, all: 2, seen: null });
  });

  it('a forged context sees nothing: another organization\'s workspace, a workspace without membership, an unknown user', async () => {
    const forged: [Principal, string][] = [
      [user(A_EDITOR, ORG_A), B1],
      [user(A_EDITOR, ORG_B), B1],
      [user(A_EDITOR, ORG_A), A2],
      [user(B_OWNER, ORG_A), A1],
      [user(randomUUID(), ORG_A), A1],
    ];
    for (const [p, ws] of forged) {
      for (const target of [ws, A1, B1]) {
        expect(await asRequest(p, ws, 'manager', 'r-forged', target)).toEqual({ router: 0, all: 0, seen: null });
      }
    }
    expect(await asRequest(null, null, null, 'r-anonymous', A1)).toEqual({ router: 0, all: 0, seen: null });
  });

  it('nothing leaks into the next transaction of the same session', async () => {
    await asRequest(user(A_EDITOR, ORG_A), A1, 'editor', 'r-before', A1);
    const next = await app.transaction(async (tx) => {
      await tx.query(sql.unsafe`select set_config('role', 'pressroom_request', true)`);
      return (await tx.oneFirst(sql.unsafe`select api.ctx_probe_counts(${A1}::uuid) as result`)) as unknown as Counts;
    });
    expect(next).toEqual({ router: 0, all: 0, seen: null });
  });

  // What the new function is for, shown on the same data.
  it('the former context, set with set_config(), does not reach the workers: a member sees nothing', async () => {
    const c = await app.transaction(async (tx) => {
      await tx.query(sql.unsafe`
        select set_config('role', 'pressroom_request', true), set_config('pressroom.actor_kind', 'user', true),
               set_config('pressroom.user_id', ${A_EDITOR}, true), set_config('pressroom.organization_id', ${ORG_A}, true),
               set_config('pressroom.workspace_id', ${A1}, true), set_config('pressroom.workspace_role', 'editor', true),
               set_config('pressroom.request_id', 'r-set-config', true)`);
      return (await tx.oneFirst(sql.unsafe`select api.ctx_probe_counts(${A1}::uuid) as result`)) as unknown as Counts;
    });
    expect(c).toEqual({ router: 0, all: 0, seen: null });
  });

  /** Statements in one transaction on a fresh pressroom_app connection; the last one's result. */
  async function rawTransaction(statements: string[]): Promise<unknown> {
    const c = new pg.Client({ connectionString: urlOf(base, { database: db, user: 'pressroom_app' }) });
    await c.connect();
    try {
      await c.query('begin');
      let last: pg.QueryResult | undefined;
      for (const s of statements) last = await c.query(s);
      await c.query('rollback');
      return last?.rows[0];
    } finally {
      await c.end();
    }
  }

  it('without the "may not" memo a worker would look the principal up, and fails: the memo answers instead', async () => {
    // The forged context of A_EDITOR in B1, with SET LOCAL but no memo (ids are UUIDs: safe to inline).
    const attempt = rawTransaction([
      `set local citus.propagate_set_commands = 'local'`,
      `set local pressroom.actor_kind = 'user'`,
      `set local pressroom.user_id = '${A_EDITOR}'`,
      `set local pressroom.organization_id = '${ORG_A}'`,
      `set local pressroom.workspace_id = '${B1}'`,
      `set local pressroom.workspace_role = 'manager'`,
      `select set_config('role', 'pressroom_request', true)`,
      `select api.ctx_probe_counts('${B1}') as result`,
    ]);
    await expect(attempt).rejects.toThrow(/does not exist|distributed query/);
  });

  it('a SET LOCAL ROLE would be replayed on the worker connections of pressroom_api, which may not become pressroom_request', async () => {
    const attempt = rawTransaction([
      `set local citus.propagate_set_commands = 'local'`,
      `set local role pressroom_request`,
      `select api.ctx_probe_counts('${A1}') as result`,
    ]);
    await expect(attempt).rejects.toThrow(/permission denied to set role "pressroom_request"/);
  });
});
