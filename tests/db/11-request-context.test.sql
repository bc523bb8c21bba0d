-- The request context: app.set_request_context, called by the server's login
-- (pressroom_app) as the first statement of every request transaction
-- (server/http/pipeline.ts, setContext), sets the context with SET LOCAL so
-- that Citus workers get it too (db/migrations/committed/000040-request-context-with-set-local.sql,
-- docs/citus.md). Here, on one node: what it sets, the memo the tenant
-- policies answer from, the role, quoting, and that nothing outlives the
-- transaction (the file commits once, near the end).
begin;
select plan(41);
-- @include personas.sql

-- One channel per workspace: the tenant rows the policies filter.
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, status)
select pg_temp.id('ig:' || ws), pg_temp.id(left(ws, 1)), pg_temp.id(ws), 'sandbox', 'x', ws || ' channel', 'active'
from unnest(array['A1', 'A2', 'B1']) ws;
-- An admin of A (no membership anywhere) and a disabled member of A1.
insert into app.users (id, organization_id, email, password_hash, org_role, status) values
  (pg_temp.id('A.admin'), pg_temp.id('A'), 'a-admin@example.test', 'not-a-real-hash', 'admin', 'active'),
  (pg_temp.id('A.disabled'), pg_temp.id('A'), 'a-disabled@example.test', 'not-a-real-hash', 'member', 'disabled');
insert into app.workspace_members (workspace_id, user_id, organization_id, role)
values (pg_temp.id('A1'), pg_temp.id('A.disabled'), pg_temp.id('A'), 'editor');

-- The context as the policies read it, and what they let through (run as pressroom_api).
create function pg_temp.context() returns text[]
language sql as $$
  select array[app.current_actor_kind(), app.current_user_id()::text, current_setting('pressroom.session_id', true),
               app.current_api_key_id()::text, app.current_review_link_id()::text, app.current_organization_id()::text,
               app.current_workspace_id()::text, app.current_workspace_role(), current_setting('pressroom.request_id', true)]
$$;
create function pg_temp.channels() returns text[]
language sql as $$ select array(select name from app.integrations order by name) $$;
grant execute on function pg_temp.context(), pg_temp.channels() to pressroom_api;

------------------------------------------------------------------------------
-- Who may call it.
------------------------------------------------------------------------------
select ok(has_function_privilege('pressroom_app', 'app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text)', 'execute')
          and not has_function_privilege('pressroom_request', 'app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text)', 'execute')
          and not has_function_privilege('pressroom_api', 'app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text)', 'execute'),
  'pressroom_app, and neither pressroom_request nor pressroom_api, may call app.set_request_context');
select ok((select not prosecdef from pg_proc where oid = 'app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text)'::regprocedure),
  'app.set_request_context runs as its caller (security invoker)');
select is(array(select p.provolatile::text from pg_proc p
                where p.oid in ('app.current_accessible_workspace_id()'::regprocedure, 'app.current_workspace_accessible()'::regprocedure,
                                'app.context_key()'::regprocedure) order by p.proname),
  array['s', 's', 's'], 'the policy helpers stay stable (usable as an index key, evaluated once per scan)');

------------------------------------------------------------------------------
-- A user in a workspace they may act in.
------------------------------------------------------------------------------
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.editor'), pg_temp.id('session:A.editor'), null, null,
                               pg_temp.id('A'), pg_temp.id('A1'), 'editor', 'req-editor');
select is(current_user::text, 'pressroom_request', 'afterwards the transaction runs as pressroom_request');
select is(current_setting('citus.propagate_set_commands', true), 'local',
  'citus.propagate_set_commands is local for the transaction (a placeholder without Citus, no error, set by pressroom_app)');
reset role;
set local role pressroom_api;
select is(pg_temp.context(),
  array['user', pg_temp.id('A.editor')::text, pg_temp.id('session:A.editor')::text, null, null, pg_temp.id('A')::text,
        pg_temp.id('A1')::text, 'editor', 'req-editor'],
  'every value reads back through app.current_*() (session and request id through current_setting)');
select is(array[current_setting('pressroom.api_key_id'), current_setting('pressroom.review_link_id')], array['', ''],
  'an absent value is stored as the empty string, which app.current_*() read as null');
select is(current_setting('pressroom.accessible_workspace'), app.context_key(),
  'the memo holds the key of this context: the editor may act in A1');
select is(app.current_accessible_workspace_id(), pg_temp.id('A1'), 'app.current_accessible_workspace_id() is A1');
-- 000059: the request's time, recorded for every node (a Citus worker's now() starts later).
select is(current_setting('pressroom.now')::timestamptz, now(), 'the context records the request''s time (pressroom.now), to the microsecond');
select is(app.now(), now(), 'app.now() reads it: on one PostgreSQL the same as now()');
select set_config('pressroom.now', '2026-01-02T03:04:05.678901Z', true);
select is(app.now(), '2026-01-02T03:04:05.678901Z'::timestamptz, '... and where it differs (a worker of a cluster), the request''s');
select set_config('pressroom.now', now()::text, true);
select is(pg_temp.channels(), array['A1 channel'], 'the tenant rows of A1, and only those, are visible');
-- The context changed within the transaction (another workspace): checked again, not taken from the memo.
select set_config('pressroom.workspace_id', pg_temp.id('A2')::text, true);
select is(app.current_accessible_workspace_id(), null, 'with the workspace changed to A2 (not the editor''s) the memo does not answer');
select is(pg_temp.channels(), '{}'::text[], '... and no row is visible');

------------------------------------------------------------------------------
-- A forged context: a workspace of another organization, and one of the
-- principal's organization that it is no member of.
------------------------------------------------------------------------------
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.editor'), pg_temp.id('session:A.editor'), null, null,
                               pg_temp.id('A'), pg_temp.id('B1'), 'manager', 'req-forged');
reset role;
set local role pressroom_api;
select is(app.current_accessible_workspace_id(), null, 'A.editor with workspace B1 (organization B): no accessible workspace');
select is(current_setting('pressroom.accessible_workspace'), '!' || app.context_key(),
  'the memo says "may not" for this context (so a Citus worker answers without a lookup), never the key itself');
select is(pg_temp.channels(), '{}'::text[], 'no tenant row is visible, neither B1''s nor A1''s');
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('B.owner'), null, null, null, pg_temp.id('A'), pg_temp.id('A1'), 'manager', 'req-forged-org');
reset role;
set local role pressroom_api;
select is(array[app.current_accessible_workspace_id()::text, array_to_string(pg_temp.channels(), ',')], array[null, ''],
  'the owner of B claiming organization A and workspace A1: nothing');
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.stranger'), null, null, null, pg_temp.id('A'), pg_temp.id('A1'), 'editor', 'req-stranger');
reset role;
set local role pressroom_api;
select is(array[app.current_accessible_workspace_id()::text, array_to_string(pg_temp.channels(), ',')], array[null, ''],
  'a member of A who is not a member of A1: nothing in A1');
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.admin'), null, null, null, pg_temp.id('A'), pg_temp.id('A2'), 'manager', 'req-admin');
reset role;
set local role pressroom_api;
select is(pg_temp.channels(), array['A2 channel'], 'an admin of A acts in A2 without being a member of it');

------------------------------------------------------------------------------
-- API keys and anonymous calls.
------------------------------------------------------------------------------
reset role;
set local role pressroom_app;
select app.set_request_context('api_key', null, null, pg_temp.id('key:A1'), null, pg_temp.id('A'), pg_temp.id('A1'), 'editor', 'req-key');
reset role;
set local role pressroom_api;
select is(array[app.current_user_id()::text, app.current_api_key_id()::text, array_to_string(pg_temp.channels(), ',')],
  array[null, pg_temp.id('key:A1')::text, 'A1 channel'], 'a key granted A1 acts in A1');
reset role;
set local role pressroom_app;
select app.set_request_context('api_key', null, null, pg_temp.id('key:A1.revoked'), null, pg_temp.id('A'), pg_temp.id('A1'), 'editor', 'req-revoked');
reset role;
set local role pressroom_api;
select is(array_to_string(pg_temp.channels(), ','), '', 'a revoked key sees nothing');
reset role;
set local role pressroom_app;
select app.set_request_context('anonymous', null, null, null, null, null, null, null, 'req-anon');
select is(current_user::text, 'pressroom_request', 'an anonymous call runs as pressroom_request too');
reset role;
set local role pressroom_api;
select is(pg_temp.context(), array['anonymous', null, '', null, null, null, null, null, 'req-anon'],
  'an anonymous call: actor kind anonymous, every other value unset');
select is(current_setting('pressroom.accessible_workspace'), '', 'no workspace, no memo');

------------------------------------------------------------------------------
-- Quoting: the values are literals, whatever they hold.
------------------------------------------------------------------------------
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.editor'), null, null, null, pg_temp.id('A'), pg_temp.id('A1'),
                               'editor', E'it''s a \\back\\slash\'\'');
select is(current_setting('pressroom.request_id'), E'it''s a \\back\\slash''''',
  'a request id with quotes and backslashes round-trips exactly');
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.editor'), null, null, null, pg_temp.id('A'), pg_temp.id('A1'),
                               $$editor'; set local pressroom.workspace_id = 'x$$,
                               $$x'; reset role; set local pressroom.organization_id = '$$);
select is(current_user::text, 'pressroom_request', 'an injection attempt in a value does not change the role');
reset role;
set local role pressroom_api;
select is(array[app.current_workspace_role(), current_setting('pressroom.request_id'), app.current_workspace_id()::text,
                app.current_organization_id()::text],
  array[$$editor'; set local pressroom.workspace_id = 'x$$, $$x'; reset role; set local pressroom.organization_id = '$$,
        pg_temp.id('A1')::text, pg_temp.id('A')::text],
  '... and is stored as the value itself; the workspace and organization are the ones given');

------------------------------------------------------------------------------
-- The memo computed in a policy (a context set with set_config, as the pgTAP
-- personas and psql users do) is set too, with SET LOCAL, by pressroom_api.
------------------------------------------------------------------------------
reset role;
select set_config('pressroom.accessible_workspace', '', true);
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.channels(), array['A1 channel'], 'a context set with set_config: the viewer of A1 sees A1');
select is(current_setting('pressroom.accessible_workspace'), app.context_key(), '... and the policy kept the answer in the memo');

------------------------------------------------------------------------------
-- app.current_workspace_accessible() (plain lookups now) means what it meant:
-- the former text, as a query, for every persona and workspace.
------------------------------------------------------------------------------
reset role;
create function pg_temp.accessible_before() returns boolean
language sql stable as $$
  with ctx as (select app.current_workspace_id() as ws, app.current_actor_kind() as kind,
                      app.current_user_id() as uid, app.current_api_key_id() as kid),
  person as (
    select u.id, u.organization_id, u.org_role
    from ctx cross join app.users u
    left join app.api_keys k on k.id = ctx.kid
    where u.status = 'active'
      and u.id = case ctx.kind when 'user' then ctx.uid when 'api_key' then k.created_by end
      and (ctx.kind = 'user'
           or (k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
               and exists (select 1 from app.api_key_workspaces g where g.api_key_id = k.id and g.workspace_id = ctx.ws))))
  select coalesce((
    select true from ctx cross join person p
    join app.workspaces w on w.organization_id = p.organization_id
    where w.id = ctx.ws
      and (p.org_role in ('owner', 'admin')
           or exists (select 1 from app.workspace_members m where m.workspace_id = ctx.ws and m.user_id = p.id))
    limit 1), false)
$$;
create temp table accessible_cases (principal text, ws text, kind text, before boolean, now boolean);
create function pg_temp.accessible_case(p_principal text, p_ws text, p_kind text) returns void
language plpgsql as $$
begin
  perform set_config('pressroom.actor_kind', p_kind, true);
  perform set_config('pressroom.user_id', case when p_kind = 'user' then pg_temp.id(p_principal)::text else '' end, true);
  perform set_config('pressroom.api_key_id', case when p_kind = 'api_key' then pg_temp.id(p_principal)::text else '' end, true);
  perform set_config('pressroom.workspace_id', coalesce(pg_temp.id(p_ws)::text, ''), true);
  insert into accessible_cases values (p_principal, p_ws, p_kind, pg_temp.accessible_before(), app.current_workspace_accessible());
end
$$;
select pg_temp.accessible_case(p, w, k)
from unnest(array['A.owner', 'A.admin', 'A.manager', 'A.editor', 'A.viewer', 'A.stranger', 'A.disabled', 'B.owner', 'B.editor',
                  'key:A1', 'key:A12', 'key:A1.revoked', 'key:A1.expired', 'key:B1']) p
cross join unnest(array['A1', 'A2', 'B1', 'nowhere', null]) w
cross join unnest(array['user', 'api_key', 'review_link']) k;
select is((select count(*)::int from accessible_cases where now), (select count(*)::int from accessible_cases where before),
  'as many principal/workspace cases are accessible as before');
select cmp_ok((select count(*)::int from accessible_cases where now), '>=', 10, '... (at least ten of them: the comparison sees real grants)');
select is(array(select format('%s %s %s: %s -> %s', kind, principal, ws, before, now) from accessible_cases
                where now is distinct from before order by 1),
  '{}'::text[], 'and every case answers as before (users, keys live, revoked and expired, disabled, admins, other organizations)');

------------------------------------------------------------------------------
-- The lists the organization-level policies read, remembered per context
-- (db/migrations/committed/000050-policy-lists-remembered-per-context.sql).
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(app.managed_workspace_ids(), array(select workspace_id from app.principal_workspace_roles() where role = 'manager'),
  'app.managed_workspace_ids answers the principal''s managed workspaces ...');
select is(current_setting('pressroom.managed_workspaces', true),
  app.context_key() || '=' || array(select workspace_id from app.principal_workspace_roles() where role = 'manager')::text,
  '... and remembers them for this context, with SET LOCAL');
-- A memo of another context (a forged or stale one) is not read: the list is computed again.
select set_config('pressroom.accessible_workspaces', 'someone else|=' || array[pg_temp.id('B1')]::text, true);
select is(app.accessible_workspace_ids(), array(select workspace_id from app.principal_workspace_roles()),
  'a list remembered for another context is not read');
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.owner'), null, null, null, pg_temp.id('A'), pg_temp.id('A1'), 'manager', 'req-lists');
select is(array[current_setting('pressroom.managed_workspaces', true), current_setting('pressroom.accessible_workspaces', true),
                current_setting('pressroom.administrable_api_keys', true)], array['', '', ''],
  'app.set_request_context starts a context with no list remembered');

------------------------------------------------------------------------------
-- Nothing outlives the transaction.
------------------------------------------------------------------------------
reset role;
set local role pressroom_app;
select app.set_request_context('user', pg_temp.id('A.editor'), pg_temp.id('session:A.editor'), null, null,
                               pg_temp.id('A'), pg_temp.id('A1'), 'editor', 'req-last');
commit;
begin;
select is(current_user::text, session_user::text, 'after commit the role is the session''s again');
select is(array[coalesce(current_setting('pressroom.actor_kind', true), ''), coalesce(current_setting('pressroom.user_id', true), ''),
                coalesce(current_setting('pressroom.workspace_id', true), ''), coalesce(current_setting('pressroom.request_id', true), ''),
                coalesce(current_setting('pressroom.accessible_workspace', true), '')],
  array['', '', '', '', ''], 'after commit no context value and no memo is left');
select is(coalesce(current_setting('citus.propagate_set_commands', true), ''), '', '... nor citus.propagate_set_commands');

select * from finish();
rollback;
