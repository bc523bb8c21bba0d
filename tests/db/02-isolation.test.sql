-- Tenant isolation, persona by persona: a principal of organization A sees
-- nothing of organization B and cannot change it, through every tenant table
-- and through the API functions; api.gate refuses B's workspaces, workspaces
-- not granted to a key, and revoked or expired keys.
begin;
select plan(281);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- Reads: nothing of organization B through any tenant table.
create function pg_temp.sees_nothing_of_b(p_who text) returns setof text
language plpgsql as $$
declare
  t record;
  n bigint;
begin
  for t in select * from (values
      ('app.organizations', format('id = %L', pg_temp.id('B'))),
      ('app.users', format('organization_id = %L', pg_temp.id('B'))),
      ('app.workspaces', format('organization_id = %L', pg_temp.id('B'))),
      ('app.workspace_members', format('organization_id = %L', pg_temp.id('B'))),
      ('app.api_keys', format('organization_id = %L', pg_temp.id('B'))),
      ('app.api_key_workspaces', format('organization_id = %L', pg_temp.id('B'))),
      -- sessions expose no organization_id column to the request role
      ('app.sessions', format('user_id in (%L, %L)', pg_temp.id('B.owner'), pg_temp.id('B.editor'))),
      ('app.idempotency_keys', format('workspace_id = %L', pg_temp.id('B1')))) v (tbl, cond)
  loop
    execute format('select count(*) from %s where %s', t.tbl, t.cond) into n;
    return next is(n, 0::bigint, format('%s: sees no row of org B in %s', p_who, t.tbl));
  end loop;
  return next is(
    (select count(*) from jsonb_array_elements(api.list_workspaces()) e
     where (e ->> 'organizationId')::uuid = pg_temp.id('B')),
    0::bigint, format('%s: api.list_workspaces() lists no workspace of org B', p_who));
  return next is((select count(*) from app.organizations), 1::bigint,
    format('%s: sees exactly one organization (its own)', p_who));
end
$$;

-- Writes to organization B's rows: refused (42501) where the request role
-- has no privilege or the row fails a policy's check, and zero rows touched
-- where a policy's USING hides the rows.
create function pg_temp.cannot_touch_b(p_who text) returns setof text
language plpgsql as $$
declare
  t record;
  b text := quote_literal(pg_temp.id('B'));
  b1 text := quote_literal(pg_temp.id('B1'));
  b_users text := format('(%L, %L)', pg_temp.id('B.owner'), pg_temp.id('B.editor'));
begin
  for t in select * from (values
      ('update app.organizations set name = ''taken'' where id = ' || b, '42501'),
      ('delete from app.organizations where id = ' || b, '42501'),
      ('insert into app.users (organization_id, email, org_role, status) values (' || b || ', ''intruder@example.test'', ''member'', ''invited'')', '42501'),
      ('update app.users set org_role = ''owner'' where organization_id = ' || b, '42501'),
      ('delete from app.users where organization_id = ' || b, '42501'),
      ('insert into app.workspaces (organization_id, name) values (' || b || ', ''intruder'')', '42501'),
      ('update app.workspaces set name = ''taken'' where organization_id = ' || b, '42501'),
      ('delete from app.workspaces where organization_id = ' || b, '42501'),
      (format('insert into app.workspace_members (workspace_id, user_id, organization_id, role) values (%s, %L, %s, ''manager'')',
              b1, pg_temp.id('A.editor'), b), '42501'),
      ('update app.workspace_members set role = ''viewer'' where organization_id = ' || b, 'rows=0'),
      ('delete from app.workspace_members where organization_id = ' || b, 'rows=0'),
      (format('insert into app.api_keys (organization_id, created_by, name, key_prefix, key_hash, role) values (%s, %L, ''intruder'', ''pr_intruder'', sha256(''intruder''::bytea), ''manager'')',
              b, pg_temp.id('B.owner')), '42501'),
      ('update app.api_keys set revoked_at = now() where organization_id = ' || b, 'rows=0'),
      ('delete from app.api_keys where organization_id = ' || b, '42501'),
      (format('insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id) values (%L, %s, %s)',
              pg_temp.id('key:B1'), b1, b), '42501'),
      ('delete from app.api_key_workspaces where organization_id = ' || b, '42501'),
      ('update app.sessions set revoked_at = now() where user_id in ' || b_users, 'rows=0'),
      ('delete from app.sessions where user_id in ' || b_users, '42501'),
      (format('insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash) values (%s, %L, ''POST'', ''/v1/x'', ''intruder'', sha256(''x''::bytea))',
              b1, pg_temp.id('B.editor')), '42501'),
      ('update app.idempotency_keys set response_status = 200 where workspace_id = ' || b1, 'rows=0'),
      ('delete from app.idempotency_keys where workspace_id = ' || b1, 'rows=0')) v (stmt, expected)
  loop
    return next is(pg_temp.write_outcome(t.stmt), t.expected,
      format('%s: %s -> %s', p_who, split_part(t.stmt, ' where ', 1), t.expected));
  end loop;
end
$$;

-- Workspaces a persona lists, by name.
create function pg_temp.listed_workspaces() returns text[]
language sql as $$
  select coalesce(array_agg(e ->> 'name' order by e ->> 'name'), '{}')
  from jsonb_array_elements(api.list_workspaces()) e
$$;

-- Organization B's rows, fingerprinted as the owner before and after.
create function pg_temp.b_fingerprint() returns table (t text, f text)
language sql as $$
select 'organizations' t, md5(string_agg(o::text, ',' order by o.id)) f from app.organizations o where id = pg_temp.id('B')
union all select 'users', md5(string_agg(u::text, ',' order by u.id)) from app.users u where organization_id = pg_temp.id('B')
union all select 'workspaces', md5(string_agg(w::text, ',' order by w.id)) from app.workspaces w where organization_id = pg_temp.id('B')
union all select 'workspace_members', md5(string_agg(m::text, ',' order by m.user_id)) from app.workspace_members m where organization_id = pg_temp.id('B')
union all select 'api_keys', md5(string_agg(k::text, ',' order by k.id)) from app.api_keys k where organization_id = pg_temp.id('B')
union all select 'api_key_workspaces', md5(string_agg(g::text, ',' order by g.api_key_id)) from app.api_key_workspaces g where organization_id = pg_temp.id('B')
union all select 'sessions', md5(string_agg(s::text, ',' order by s.id)) from app.sessions s where organization_id = pg_temp.id('B')
union all select 'idempotency_keys', md5(string_agg(i::text, ',' order by i.key)) from app.idempotency_keys i where workspace_id = pg_temp.id('B1')
$$;
create temp table b_before as select * from pg_temp.b_fingerprint();

-- Each persona: 10 read checks, the workspaces it lists, 21 write attempts.
select pg_temp.act_as('A.owner', 'A1');
select * from pg_temp.sees_nothing_of_b('owner of A');
select is(pg_temp.listed_workspaces(), '{A1,A2}'::text[], 'owner of A: api.list_workspaces() lists exactly {A1,A2}');
select * from pg_temp.cannot_touch_b('owner of A');

select pg_temp.act_as('A.manager', 'A1');
select * from pg_temp.sees_nothing_of_b('manager of A1');
select is(pg_temp.listed_workspaces(), '{A1}'::text[], 'manager of A1: api.list_workspaces() lists exactly {A1}');
select * from pg_temp.cannot_touch_b('manager of A1');

select pg_temp.act_as('A.editor', 'A1');
select * from pg_temp.sees_nothing_of_b('editor of A1');
select is(pg_temp.listed_workspaces(), '{A1}'::text[], 'editor of A1: api.list_workspaces() lists exactly {A1}');
select * from pg_temp.cannot_touch_b('editor of A1');

select pg_temp.act_as('A.viewer', 'A1');
select * from pg_temp.sees_nothing_of_b('viewer of A1');
select is(pg_temp.listed_workspaces(), '{A1}'::text[], 'viewer of A1: api.list_workspaces() lists exactly {A1}');
select * from pg_temp.cannot_touch_b('viewer of A1');

select pg_temp.act_as('A.stranger', 'A1');
select * from pg_temp.sees_nothing_of_b('stranger to A1 (forged A1 context)');
select is(pg_temp.listed_workspaces(), '{A2}'::text[], 'stranger to A1 (forged A1 context): api.list_workspaces() lists exactly {A2}');
select * from pg_temp.cannot_touch_b('stranger to A1 (forged A1 context)');

select pg_temp.act_as('key:A1', 'A1');
select * from pg_temp.sees_nothing_of_b('API key granted A1');
select is(pg_temp.listed_workspaces(), '{A1}'::text[], 'API key granted A1: api.list_workspaces() lists exactly {A1}');
select * from pg_temp.cannot_touch_b('API key granted A1');

select pg_temp.act_as('key:A1.revoked', 'A1');
select * from pg_temp.sees_nothing_of_b('revoked API key');
select is(pg_temp.listed_workspaces(), '{}'::text[], 'revoked API key: api.list_workspaces() lists exactly {}');
select * from pg_temp.cannot_touch_b('revoked API key');

select pg_temp.act_as('key:A1.expired', 'A1');
select * from pg_temp.sees_nothing_of_b('expired API key');
select is(pg_temp.listed_workspaces(), '{}'::text[], 'expired API key: api.list_workspaces() lists exactly {}');
select * from pg_temp.cannot_touch_b('expired API key');

-- A forged context (the gate would refuse it) still reaches nothing of B:
-- the owner of A claiming workspace B1 with the manager role.
select pg_temp.act_as('A.owner', null);
select set_config('pressroom.workspace_id', pg_temp.id('B1')::text, true),
       set_config('pressroom.workspace_role', 'manager', true);
select is(api.list_members(), '[]'::jsonb,
  'forged context (A owner in B1 as manager): api.list_members() returns no member of B1');
select is(pg_temp.sqlerr($$select api.add_member('newcomer@example.test', 'manager')$$), '42501',
  'forged context (A owner in B1 as manager): api.add_member into B1 is refused by RLS (42501)');

-- Cross-organization links: a manager of A1 may write A1's member and grant
-- rows, but never with a user or an API key of organization B. (These writes
-- keep their effect when they wrongly succeed, so the gate check below
-- shows the consequence.)
select pg_temp.act_as_owner();
create function pg_temp.attempt(p_sql text) returns text
language plpgsql as $$
begin
  execute p_sql;
  return 'ok';
exception when others then
  return sqlstate;
end
$$;
select pg_temp.act_as('A.manager', 'A1');
select matches(
  pg_temp.attempt(format(
    'insert into app.workspace_members (workspace_id, user_id, organization_id, role) values (%L, %L, %L, %L)',
    pg_temp.id('A1'), pg_temp.id('B.editor'), pg_temp.id('A'), 'manager')), '^(42501|23503)',
  'a manager of A1 cannot make a user of org B a member of A1, even with a direct INSERT');
select matches(
  pg_temp.attempt(format(
    'insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id) values (%L, %L, %L)',
    pg_temp.id('key:B1'), pg_temp.id('A1'), pg_temp.id('A'))), '^(42501|23503)',
  'a manager of A1 cannot grant A1 to an API key of org B, even with a direct INSERT');

reset role;
-- Organization B's rows are exactly as they were.
select set_eq('select * from pg_temp.b_fingerprint()', 'select * from b_before',
  'every row of organization B is unchanged after all the attempts above (before any gate call, which stamps last_used_at)');

-- api.gate, called by the server's login role.
select pg_temp.act_as_owner();
create function pg_temp.gate(p_secret text, p_workspace text) returns jsonb
language sql as $$
  select api.gate(pg_temp.token(p_secret), pg_temp.id(p_workspace), 'read', 'basic', null)
$$;
create function pg_temp.gate_code(p_secret text, p_workspace text) returns text
language sql as $$ select coalesce(pg_temp.gate(p_secret, p_workspace) -> 'error' ->> 'code', 'none') $$;
set local role pressroom_app;
select is(pg_temp.gate_code('session:B.editor', 'A1'), 'WORKSPACE_FORBIDDEN',
  'gate: a user of org B is refused workspace A1 (whatever rows a manager of A1 wrote)');
select is(pg_temp.gate_code('session:A.owner', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: owner of A is refused B1');
select is(pg_temp.gate_code('session:A.manager', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: manager of A1 is refused B1');
select is(pg_temp.gate_code('session:A.editor', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: editor of A1 is refused B1');
select is(pg_temp.gate_code('session:A.viewer', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: viewer of A1 is refused B1');
select is(pg_temp.gate_code('session:A.stranger', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: stranger is refused B1');
select is(pg_temp.gate_code('session:A.stranger', 'A1'), 'WORKSPACE_FORBIDDEN', 'gate: stranger (member of A, not of A1) is refused A1');
select is(pg_temp.gate_code('session:A.editor', 'A2'), 'WORKSPACE_FORBIDDEN', 'gate: editor of A1 is refused A2');
select is(pg_temp.gate_code('key:A1', 'B1'), 'WORKSPACE_FORBIDDEN', 'gate: key of A granted A1 is refused B1');
select is(pg_temp.gate_code('key:A1', 'A2'), 'WORKSPACE_FORBIDDEN', 'gate: key of A granted A1 only is refused A2');
select is(pg_temp.gate_code('key:B1', 'A1'), 'WORKSPACE_FORBIDDEN', 'gate: key of B is refused A1');
select is(pg_temp.gate_code('key:A1.revoked', 'A1'), 'KEY_REVOKED', 'gate: revoked key -> KEY_REVOKED');
select is(pg_temp.gate_code('key:A1.revoked', 'B1'), 'KEY_REVOKED', 'gate: revoked key -> KEY_REVOKED before any workspace check');
select is(pg_temp.gate_code('key:A1.expired', 'A1'), 'KEY_EXPIRED', 'gate: expired key -> KEY_EXPIRED');
select is((pg_temp.gate('key:A1.revoked', 'A1') -> 'error' ->> 'status')::int, 401, 'gate: a revoked key is a 401');
-- Controls: the same calls succeed where access exists.
select is(pg_temp.gate('session:A.owner', 'A2') ->> 'workspaceRole', 'manager', 'gate: owner of A is manager in A2');
select is(pg_temp.gate('session:A.stranger', 'A2') ->> 'workspaceRole', 'editor', 'gate: stranger is editor in A2');
select is(pg_temp.gate('key:A1', 'A1') ->> 'workspaceRole', 'editor', 'gate: key granted A1 is editor in A1');
select is(pg_temp.gate('key:A12', 'A2') ->> 'workspaceRole', 'editor', 'gate: key granted A1 and A2 is editor in A2');
select is(pg_temp.gate('session:B.editor', 'B1') ->> 'workspaceRole', 'editor', 'gate: editor of B1 is editor in B1');
reset role;

select pg_temp.act_as_owner();
select * from finish();
rollback;
