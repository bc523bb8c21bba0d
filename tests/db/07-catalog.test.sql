-- The rulebook's catalog: who may reach what, checked from the system
-- catalogs so that a table, function or trigger added later without its
-- rules fails here. See db/README.md ("Roles", "Tenant policies").
begin;
select plan(23);
-- @include personas.sql

------------------------------------------------------------------------------
-- The request role reaches api functions and nothing else.
------------------------------------------------------------------------------
select ok(not has_schema_privilege('pressroom_request', 'app', 'usage'),
  'pressroom_request has no usage on schema app');
select is(
  array(select c.oid::regclass::text from pg_class c
        where c.relnamespace = 'app'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S')
          and (has_table_privilege('pressroom_request', c.oid, 'select, insert, update, delete, truncate, references, trigger')
               or has_any_column_privilege('pressroom_request', c.oid, 'select, insert, update, references'))
        order by 1),
  '{}'::text[],
  'pressroom_request holds no privilege on any table or column of app');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'app'::regnamespace
          and (has_function_privilege('pressroom_request', p.oid, 'execute')
               or has_function_privilege('public', p.oid, 'execute'))
        order by 1),
  '{}'::text[],
  'no function of app is executable by pressroom_request or PUBLIC');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'api'::regnamespace and p.prokind = 'f'
          and (not p.prosecdef
               or pg_get_userbyid(p.proowner) not in ('pressroom_api', 'pressroom_definer')
               or not exists (select 1 from unnest(p.proconfig) c where c like 'search_path=%')
               or has_function_privilege('public', p.oid, 'execute')
               or has_function_privilege('pressroom_bi', p.oid, 'execute'))
        order by 1),
  '{}'::text[],
  'every api function is security definer, owned by pressroom_api or pressroom_definer, with search_path pinned, not PUBLIC''s (app.harden_api_functions ran)');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'api'::regnamespace and p.prokind = 'f'
          and pg_get_userbyid(p.proowner) = 'pressroom_api'
          and not has_function_privilege('pressroom_request', p.oid, 'execute')
        order by 1),
  '{}'::text[],
  'pressroom_request may execute every api function that runs as pressroom_api');
select ok(not pg_has_role('pressroom_request', 'pressroom_api', 'usage')
          and not pg_has_role('pressroom_app', 'pressroom_api', 'member')
          and (select not rolcanlogin and not rolbypassrls and not rolsuper from pg_roles where rolname = 'pressroom_api'),
  'pressroom_api cannot log in, bypasses nothing, and no server role can become it');

------------------------------------------------------------------------------
-- Tenant policies: every table with a workspace_id has exactly the policies
-- app.apply_tenant_policies gives, for the commands its grants allow.
------------------------------------------------------------------------------
-- The tenant tables: every table of app with a workspace_id, but the foundation's membership,
-- key grants and idempotency, and each principal's inbox read state (their own policies).
create temporary view tenant_tables as
  select c.oid, c.relname::text as relname from pg_class c
  where c.relnamespace = 'app'::regnamespace and c.relkind in ('r', 'p')
    and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'workspace_id' and not a.attisdropped)
    and c.relname not in ('workspace_members', 'api_key_workspaces', 'idempotency_keys', 'inbox_reads');
select is(
  array(select t.relname from tenant_tables t
        where not exists (select 1 from pg_policy p where p.polrelid = t.oid and p.polname = t.relname || '_definer')
        order by 1),
  '{}'::text[],
  'every tenant table has the tenant policies');

-- The policies a table would get from the helper, as text with the table name
-- replaced, computed on a scratch table with the same commands.
create function pg_temp.policy_shape(p_table regclass) returns text[]
language sql stable as $$
  select array(
    select format('%s %s %s %s using(%s) check(%s)', replace(pol.polname, c.relname, 'T'), pol.polcmd,
                  case when pol.polpermissive then 'permissive' else 'restrictive' end,
                  array(select rolname from pg_roles r where r.oid = any (pol.polroles) order by 1),
                  pg_get_expr(pol.polqual, pol.polrelid), pg_get_expr(pol.polwithcheck, pol.polrelid))
    from pg_policy pol join pg_class c on c.oid = pol.polrelid
    where pol.polrelid = p_table
    order by 1)
$$;
create table pg_temp.tenant_probe (organization_id uuid, workspace_id uuid);
create function pg_temp.expected_shape(p_table regclass, p_write_role text default 'editor') returns text[]
language plpgsql as $$
declare
  v_commands text[] := array(
    select c from unnest(array['select', 'insert', 'update', 'delete']) c
    where exists (select 1 from pg_policy p where p.polrelid = p_table and p.polname = (select relname from pg_class where oid = p_table) || '_api_' || c));
  v_shape text[];
begin
  perform app.apply_tenant_policies('pg_temp.tenant_probe'::regclass, v_commands, p_write_role);
  v_shape := pg_temp.policy_shape('pg_temp.tenant_probe'::regclass);
  return v_shape;
end
$$;
-- (With the write role the table was given: editor, or viewer for app.job_outbox, which any
-- member's request applies.)
select is(
  array(select t.relname from tenant_tables t
        where not exists (select 1 from unnest(array['viewer', 'editor', 'manager']) r
                          where pg_temp.policy_shape(t.oid) is not distinct from pg_temp.expected_shape(t.oid, r))
        order by 1),
  '{}'::text[],
  'each tenant table has exactly the policies of app.apply_tenant_policies, nothing added or drifted');
select ok(cardinality(pg_temp.policy_shape('app.articles')) = 6
          and exists (select 1 from pg_policies where tablename = 'articles' and policyname = 'articles_api_select'
                      and qual like '%workspace_id = app.current_accessible_workspace_id()%'),
  'the articles policies have their workspace term again');
select is(
  array(select format('%s.%s', schemaname, tablename) from pg_policies
        where 'pressroom_request' = any (roles) order by 1),
  '{}'::text[],
  'no policy names pressroom_request: it reaches no table');

------------------------------------------------------------------------------
-- What only the publishing engine writes, refused for every persona.
------------------------------------------------------------------------------
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name)
values (pg_temp.id('ig:A1.x'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'X');
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root'), pg_temp.id('A'), pg_temp.id('A1'), 'Hello');
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
values (pg_temp.id('item'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root'), pg_temp.id('ig:A1.x'),
        'scheduled', now() + interval '1 day');

-- The engine-only writes as one persona: each must be refused with 42501.
-- A principal with no role in the workspace sees no row at all (rows=0),
-- which is a refusal too.
create function pg_temp.engine_writes_refused(p_principal text, p_sees_nothing boolean default false) returns text[]
language plpgsql as $$
declare
  v_item uuid := pg_temp.id('item');
  v_out text[] := '{}';
  v_sql text;
  v_result text;
begin
  perform pg_temp.act_as(p_principal, 'A1');
  foreach v_sql in array array[
    format($s$update app.content_items set status = 'sent' where id = %L$s$, v_item),
    format($s$update app.content_items set status = 'failed' where id = %L$s$, v_item),
    format($s$update app.content_items set permalink = 'https://example.test/p' where id = %L$s$, v_item),
    format($s$update app.content_items set sent_at = now() where id = %L$s$, v_item),
    format($s$update app.content_items set platform_post_id = 'p1' where id = %L$s$, v_item),
    format($s$update app.content_items set error = 'made up' where id = %L$s$, v_item),
    format($s$insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, sent_at)
              values (%L, %L, %L, %L, 'draft', now())$s$, pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root'), pg_temp.id('ig:A1.x')),
    format($s$update app.publishing_states set state = 'published' where content_item_id = %L$s$, v_item),
    format($s$insert into app.publish_attempts (content_item_id) values (%L)$s$, v_item),
    format($s$select app.publish_record(%L, %L, 'published', null, 'p1', 'https://example.test/p')$s$, pg_temp.id('A1'), gen_random_uuid())]
  loop
    v_result := pg_temp.write_outcome(v_sql);
    if v_result <> '42501' and not (p_sees_nothing and v_result = 'rows=0') then
      v_out := v_out || (v_result || ': ' || left(v_sql, 70));
    end if;
  end loop;
  perform pg_temp.act_as_owner();
  return v_out;
end
$$;
select is(pg_temp.engine_writes_refused('A.owner'), '{}'::text[], 'owner: every engine-only write is 42501');
select is(pg_temp.engine_writes_refused('A.manager'), '{}'::text[], 'manager: every engine-only write is 42501');
select is(pg_temp.engine_writes_refused('A.editor'), '{}'::text[], 'editor: every engine-only write is 42501');
select is(pg_temp.engine_writes_refused('A.viewer'), '{}'::text[], 'viewer: every engine-only write is 42501');
select is(pg_temp.engine_writes_refused('key:A1'), '{}'::text[], 'editor key: every engine-only write is 42501');
select is(pg_temp.engine_writes_refused('A.stranger', true), '{}'::text[], 'stranger (no role in A1): every engine-only write is refused');
-- The request role itself, with an owner's context: not even the schema.
select pg_temp.act_as('A.owner', 'A1');
reset role;
set local role pressroom_request;
select is(pg_temp.write_outcome(format($s$update app.content_items set status = 'sent' where id = %L$s$, pg_temp.id('item'))),
  '42501', 'pressroom_request: no way to the content table at all');
select pg_temp.act_as_owner();
-- The rule does not stop the engine: the worker still marks content sent.
set local role pressroom_worker;
select is(pg_temp.write_outcome(format($s$update app.content_items set status = 'sent', permalink = 'https://example.test/p', sent_at = now()
                                          where id = %L$s$, pg_temp.id('item'))),
  'rows=1', 'pressroom_worker marks content sent with its permalink');
reset role;
-- A request may still clear the last error (retry does).
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.write_outcome(format($s$update app.content_items set error = null where id = %L$s$, pg_temp.id('item'))),
  'rows=1', 'editor: clearing the publishing error is allowed');
select pg_temp.act_as_owner();

------------------------------------------------------------------------------
-- The rulebook reads from the catalog: every table and api function says
-- what it is (db/README.md, "Migrations").
------------------------------------------------------------------------------
select is(
  array(select c.oid::regclass::text from pg_class c
        where c.relnamespace in ('app'::regnamespace, 'audit'::regnamespace) and c.relkind in ('r', 'p')
          and not c.relispartition and obj_description(c.oid, 'pg_class') is null
        order by 1),
  '{}'::text[],
  'every table of app and audit has a comment');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'api'::regnamespace and obj_description(p.oid, 'pg_proc') is null
        order by 1),
  '{}'::text[],
  'every api function has a comment');

------------------------------------------------------------------------------
-- Names say what things do.
------------------------------------------------------------------------------
select is(
  array(select format('%s.%s', c.relname, t.tgname) from pg_trigger t join pg_class c on c.oid = t.tgrelid
        where not t.tgisinternal and c.relnamespace in ('app'::regnamespace, 'audit'::regnamespace)
          and (t.tgname ~ '_guard' or t.tgname not like
               regexp_replace(c.relname, '_\d{4}_\d{2}$|_default$', '') || '\_%')
        order by 1),
  '{}'::text[],
  'every trigger is named <table>_<order>_<what it does>, none just "guard"');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'app'::regnamespace and p.prorettype = 'trigger'::regtype
          and (p.proname !~ '^tg_' or p.proname ~ '_guard')
        order by 1),
  '{}'::text[],
  'every trigger function is tg_<what it does>');

select * from finish();
rollback;
