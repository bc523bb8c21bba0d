-- Idempotency keys: claim, in flight, replay, body mismatch, scope by
-- workspace, principal, method and route, expiry, release and purge.
begin;
select plan(35);

-- ---------------------------------------------------------------------------
-- Fixture and persona helpers (identical in every file; each file runs alone
-- in its own clone of the migrated template, as the superuser owner).
-- Ids are deterministic: pg_temp.id('A1') = md5(...)::uuid, so a test can
-- name a row of another organization without being able to read it.
-- ---------------------------------------------------------------------------
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
  set local role pressroom_request;
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
-- One idempotency record in each organization.
insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash) values
  (pg_temp.id('A1'), pg_temp.id('A.editor'), 'POST', '/v1/fixture', 'fixture-a', pg_temp.token('body-a')),
  (pg_temp.id('B1'), pg_temp.id('B.editor'), 'POST', '/v1/fixture', 'fixture-b', pg_temp.token('body-b'));
-- ---------------------------------------------------------------------------

create function pg_temp.begin_(p_key text, p_body text, p_method text default 'POST', p_route text default '/v1/workspaces/{workspaceId}/content')
returns jsonb language sql as $$
  select api.idempotency_begin(p_method, p_route, p_key, pg_temp.token(p_body))
$$;
create function pg_temp.finish_(p_key text, p_status int, p_body jsonb) returns void
language sql as $$
  select api.idempotency_finish('POST', '/v1/workspaces/{workspaceId}/content', p_key, p_status, p_body)
$$;
create function pg_temp.begin_err(p_key text, p_body text) returns text
language sql as $$
  select pg_temp.sqlerr(format('select pg_temp.begin_(%L, %L)', p_key, p_body))
$$;

------------------------------------------------------------------------------
-- One principal, one workspace: claim, in flight, replay, mismatch.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'editor: the first begin claims the key');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'a second begin while in flight -> PT409');
select is(pg_temp.begin_err('k1', 'body-2'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'a different body while in flight -> PT422');
select lives_ok($$select pg_temp.finish_('k1', 201, '{"data": {"id": 1}, "meta": {}}')$$, 'finish records the outcome');
select is(pg_temp.begin_('k1', 'body-1'),
  '{"state": "replay", "status": 201, "body": {"data": {"id": 1}, "meta": {}}}'::jsonb,
  'the same key and body replays the stored status and body');
select is(pg_temp.begin_('k1', 'body-1'),
  '{"state": "replay", "status": 201, "body": {"data": {"id": 1}, "meta": {}}}'::jsonb,
  'and replays it again');
select is(pg_temp.begin_err('k1', 'body-2'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'the same key with a different body -> PT422');
select lives_ok($$select pg_temp.finish_('k1', 500, '{"changed": true}')$$, 'a late second finish runs');
select is(pg_temp.begin_('k1', 'body-1') -> 'status', '201'::jsonb, 'but cannot overwrite the recorded outcome');
select is(pg_temp.begin_('k1', 'body-2', 'PATCH'), '{"state": "claimed"}'::jsonb, 'the same key on another method claims anew');
select is(pg_temp.begin_('k1', 'body-2', 'POST', '/v1/workspaces/{workspaceId}/articles'), '{"state": "claimed"}'::jsonb,
  'the same key on another route claims anew');

-- release forgets an in-flight claim (after a 5xx), never a finished one.
select is(pg_temp.begin_('k2', 'body-1'), '{"state": "claimed"}'::jsonb, 'k2 claimed');
select lives_ok($$select api.idempotency_release('POST', '/v1/workspaces/{workspaceId}/content', 'k2')$$, 'release k2');
select is(pg_temp.begin_('k2', 'body-9'), '{"state": "claimed"}'::jsonb, 'a released key can be claimed again, with any body');
select lives_ok($$select api.idempotency_release('POST', '/v1/workspaces/{workspaceId}/content', 'k1')$$, 'release of a finished key runs');
select is(pg_temp.begin_('k1', 'body-1') ->> 'state', 'replay', 'but leaves the finished record in place');

------------------------------------------------------------------------------
-- Scope: workspace, principal, method, route.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'another user in the same workspace claims k1 independently');
select is(
  (select count(*)::int from app.idempotency_keys),
  1, 'and sees only its own records');
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.begin_('k1', 'body-3'), '{"state": "claimed"}'::jsonb, 'the owner in A1 claims k1 independently');
select pg_temp.act_as('A.owner', 'A2');
select is(pg_temp.begin_('k1', 'body-3'), '{"state": "claimed"}'::jsonb, 'the same owner in another workspace claims k1 independently');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'an API key in A1 claims k1 independently of its creator');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'and is then in flight for that key');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'a user of org B claims k1 independently');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-1') ->> 'state', 'replay', 'the editor''s own k1 is untouched by all the others');
select is(
  (select count(*)::int from app.idempotency_keys where key = 'k1'),
  3, 'the editor sees only its own three k1 records (POST, PATCH, other route)');

------------------------------------------------------------------------------
-- Expiry: an expired record, or a claim whose request died, starts afresh.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.idempotency_keys set expires_at = now() - interval '1 second'
where principal_id = pg_temp.id('A.editor') and key = 'k1' and method = 'POST' and route = '/v1/workspaces/{workspaceId}/content';
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-new'), '{"state": "claimed"}'::jsonb, 'an expired record is claimed afresh, even with another body');
select is(pg_temp.begin_err('k1', 'body-new'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'the fresh claim is in flight');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'and bound to the new body');
select pg_temp.act_as_owner();
update app.idempotency_keys set locked_until = now() - interval '1 second'
where principal_id = pg_temp.id('A.editor') and key = 'k2';
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k2', 'body-5'), '{"state": "claimed"}'::jsonb, 'a claim whose lock ran out (the request died) is claimed afresh');

------------------------------------------------------------------------------
-- Purge (a worker job).
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.idempotency_keys set expires_at = now() - interval '1 minute'
where principal_id in (pg_temp.id('A.manager'), pg_temp.id('B.editor'));
select set_config('pgtap.expired', (select count(*)::text from app.idempotency_keys where expires_at <= now()), true);
select set_config('pgtap.kept', (select count(*)::text from app.idempotency_keys where expires_at > now()), true);
select cmp_ok(current_setting('pgtap.expired')::int, '>=', 3, 'at least three expired records exist before the purge');
select pg_temp.act_as('A.editor', 'A1');
select throws_ok('select app.purge_expired()', '42501', null, 'the request role cannot run app.purge_expired');
select pg_temp.act_as_owner();
set local role pressroom_worker;
select is((app.purge_expired() ->> 'idempotencyKeys')::int, current_setting('pgtap.expired')::int,
  'pressroom_worker runs app.purge_expired, which removes every expired record');
reset role;
select is((select count(*)::int from app.idempotency_keys where expires_at <= now()), 0, 'no expired record remains');
select is((select count(*)::int from app.idempotency_keys), current_setting('pgtap.kept')::int, 'every live record remains');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.begin_('k1', 'body-7'), '{"state": "claimed"}'::jsonb, 'a purged key can be claimed again');

select pg_temp.act_as_owner();
select * from finish();
rollback;
