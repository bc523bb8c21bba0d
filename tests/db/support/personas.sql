-- Fixture and persona helpers shared by the pgTAP files: a file includes it
-- with the line `-- @include personas.sql`, which tests/db/run.ts replaces
-- with this text. Each file runs alone in its own clone of the migrated
-- template, as the superuser owner.
-- Ids are deterministic: pg_temp.id('A1') = md5(...)::uuid, so a test can
-- name a row of another organization without being able to read it.

create function pg_temp.id(p_label text) returns uuid
language sql immutable as $$ select md5('pressroom-test:' || p_label)::uuid $$;

-- A bearer secret's stored hash (32 bytes), as the server computes it.
create function pg_temp.token(p_label text) returns bytea
language sql immutable as $$ select sha256(convert_to(p_label, 'UTF8')) $$;

-- Switches to the request role with the context the server would set for
-- this principal (a user label like 'A.editor' or a key label 'key:A1') and
-- workspace label (or null). The workspace role is what api.gate would grant
-- (null when it would refuse: the context is then forged, which RLS must
-- survive too).
create function pg_temp.act_as(p_principal text, p_workspace text default null) returns void
language plpgsql as $$
declare
  v_ws uuid := case when p_workspace is not null then pg_temp.id(p_workspace) end;
  v_user app.users;
  v_key app.api_keys;
  v_role text;
begin
  reset role;
  if p_principal like 'key:%' then
    select * into v_key from app.api_keys where id = pg_temp.id(p_principal);
    if v_key.id is null then raise exception 'act_as: no fixture key %', p_principal; end if;
    select r.role into v_role from app.api_key_workspace_roles(v_key.id) r where r.workspace_id = v_ws;
    perform set_config('pressroom.actor_kind', 'api_key', true);
    perform set_config('pressroom.user_id', '', true);
    perform set_config('pressroom.session_id', '', true);
    perform set_config('pressroom.api_key_id', v_key.id::text, true);
    perform set_config('pressroom.organization_id', v_key.organization_id::text, true);
  else
    select * into v_user from app.users where id = pg_temp.id(p_principal);
    if v_user.id is null then raise exception 'act_as: no fixture user %', p_principal; end if;
    select r.role into v_role from app.user_workspace_roles(v_user.id) r where r.workspace_id = v_ws;
    perform set_config('pressroom.actor_kind', 'user', true);
    perform set_config('pressroom.user_id', v_user.id::text, true);
    perform set_config('pressroom.session_id', pg_temp.id('session:' || p_principal)::text, true);
    perform set_config('pressroom.api_key_id', '', true);
    perform set_config('pressroom.organization_id', v_user.organization_id::text, true);
  end if;
  perform set_config('pressroom.workspace_id', coalesce(v_ws::text, ''), true);
  perform set_config('pressroom.workspace_role', coalesce(v_role, ''), true);
  set local role pressroom_api;
end
$$;

-- Back to the owner (superuser), context cleared.
create function pg_temp.act_as_owner() returns void
language plpgsql as $$
begin
  reset role;
  perform set_config('pressroom.' || g, '', true)
  from unnest(array['actor_kind', 'user_id', 'session_id', 'api_key_id', 'organization_id',
                    'workspace_id', 'workspace_role']) g;
end
$$;

-- Runs a statement as pressroom_worker, as the jobs do (server/jobs/*.ts), and returns its
-- jsonb answer; back to the owner afterwards.
create function pg_temp.as_worker(p_sql text) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  execute p_sql into v;
  reset role;
  return v;
end
$$;

-- 'SQLSTATE DETAIL' of the error a statement raises (DETAIL carries the
-- machine code of PTxyz errors), or 'ok'. Runs as the current role. A probe:
-- its effects are rolled back even when it succeeds.
create function pg_temp.sqlerr(p_sql text) returns text
language plpgsql as $$
declare
  v_state text;
  v_detail text;
begin
  execute p_sql;
  raise exception using errcode = 'ZZ000', message = 'probe succeeded';
exception when others then
  if sqlstate = 'ZZ000' then
    return 'ok';
  end if;
  get stacked diagnostics v_state = returned_sqlstate, v_detail = pg_exception_detail;
  return v_state || coalesce(' ' || nullif(v_detail, ''), '');
end
$$;

-- Outcome of a probing write: 'rows=N' when it ran, else its SQLSTATE.
-- Either way its effects are rolled back, so a probe that wrongly succeeds
-- does not disturb the tests after it.
create function pg_temp.write_outcome(p_sql text) returns text
language plpgsql as $$
declare
  v_rows bigint;
begin
  execute p_sql;
  get diagnostics v_rows = row_count;
  raise exception using errcode = 'ZZ000', message = v_rows::text;
exception when others then
  if sqlstate = 'ZZ000' then
    return 'rows=' || sqlerrm;
  end if;
  return sqlstate;
end
$$;

-- Two organizations. A (basic): owner, a manager, an editor and a viewer of
-- A1, and a stranger (member of A, editor of A2, nothing in A1). B (basic):
-- owner and an editor of B1.
insert into app.organizations (id, name, plan, trial_ends_at) values
  (pg_temp.id('A'), 'Org A', 'basic', null),
  (pg_temp.id('B'), 'Org B', 'basic', null);
insert into app.users (id, organization_id, email, password_hash, org_role)
select pg_temp.id(label), pg_temp.id(org), lower(replace(label, '.', '-')) || '@example.test', 'not-a-real-hash', org_role
from (values ('A.owner', 'A', 'owner'), ('A.manager', 'A', 'member'), ('A.editor', 'A', 'member'),
             ('A.viewer', 'A', 'member'), ('A.stranger', 'A', 'member'),
             ('B.owner', 'B', 'owner'), ('B.editor', 'B', 'member')) u (label, org, org_role);
insert into app.workspaces (id, organization_id, name) values
  (pg_temp.id('A1'), pg_temp.id('A'), 'A1'),
  (pg_temp.id('A2'), pg_temp.id('A'), 'A2'),
  (pg_temp.id('B1'), pg_temp.id('B'), 'B1');
insert into app.workspace_members (workspace_id, user_id, organization_id, role)
select pg_temp.id(ws), pg_temp.id(label), pg_temp.id(left(ws, 1)), role
from (values ('A1', 'A.manager', 'manager'), ('A1', 'A.editor', 'editor'), ('A1', 'A.viewer', 'viewer'),
             ('A2', 'A.owner', 'manager'), ('A2', 'A.stranger', 'editor'),
             ('B1', 'B.owner', 'manager'), ('B1', 'B.editor', 'editor')) m (ws, label, role);
-- One open session per user: token 'session:<label>'.
insert into app.sessions (id, user_id, organization_id, token_hash, expires_at)
select pg_temp.id('session:' || u.label), pg_temp.id(u.label), pg_temp.id(left(u.label, 1)),
       pg_temp.token('session:' || u.label), now() + interval '1 day'
from unnest(array['A.owner', 'A.manager', 'A.editor', 'A.viewer', 'A.stranger', 'B.owner', 'B.editor']) u (label);
-- API keys (secret 'key:<label>'): key:A1 (editor, A1), key:A12 (editor, A1
-- and A2), key:A1.revoked, key:A1.expired, key:B1; all created by the owner.
insert into app.api_keys (id, organization_id, created_by, name, key_prefix, key_hash, role, expires_at, revoked_at, revoked_by)
select pg_temp.id(k.label), pg_temp.id(k.org), pg_temp.id(k.org || '.owner'), k.label, 'pr_' || md5(k.label),
       pg_temp.token(k.label), 'editor', k.expires_at, k.revoked_at,
       case when k.revoked_at is not null then pg_temp.id(k.org || '.owner') end
from (values ('key:A1', 'A', null::timestamptz, null::timestamptz),
             ('key:A12', 'A', null, null),
             ('key:A1.revoked', 'A', null, now() - interval '1 hour'),
             ('key:A1.expired', 'A', now() - interval '1 hour', null),
             ('key:B1', 'B', null, null)) k (label, org, expires_at, revoked_at);
insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
select pg_temp.id(k), pg_temp.id(ws), pg_temp.id(left(ws, 1))
from (values ('key:A1', 'A1'), ('key:A12', 'A1'), ('key:A12', 'A2'), ('key:A1.revoked', 'A1'),
             ('key:A1.expired', 'A1'), ('key:B1', 'B1')) g (k, ws);
-- Rate limits are out of the way unless a test sets them (app.settings).
update app.settings set value = '100000' where key like 'rate\_limit\_%';
-- One idempotency record in each organization.
insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash) values
  (pg_temp.id('A1'), pg_temp.id('A.editor'), 'POST', '/v1/fixture', 'fixture-a', pg_temp.token('body-a')),
  (pg_temp.id('B1'), pg_temp.id('B.editor'), 'POST', '/v1/fixture', 'fixture-b', pg_temp.token('body-b'));
