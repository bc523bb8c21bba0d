-- The rulebook distributes by workspace (docs/citus.md): what a single node can check of it.
-- Citus refuses subqueries in the row-level security policies of distributed tables, so no
-- policy holds one (db/migrations/committed/000036-policies-without-subqueries.sql rewrote them);
-- a new table whose policy would not distribute fails here, on one node.
begin;
select plan(8);
-- @include personas.sql

create temporary view policy_subqueries as
  select n.nspname || '.' || c.relname || ' ' || pol.polname as policy
  from pg_policy pol join pg_class c on c.oid = pol.polrelid join pg_namespace n on n.oid = c.relnamespace
  where coalesce(pg_get_expr(pol.polqual, pol.polrelid), '') ~* '\mselect\M'
     or coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '') ~* '\mselect\M';

select cmp_ok((select count(*)::int from pg_policy), '>', 300, 'the checks see the policies (more than 300)');
select is(array(select policy from policy_subqueries order by 1), '{}'::text[], 'no policy holds a subquery');

-- Citus recreates policies on its nodes without AS RESTRICTIVE (docs/citus.md), so none is
-- restrictive (db/migrations/committed/000039-tenant-policies-without-restrictive.sql).
select is(array(select polrelid::regclass || ' ' || polname from pg_policy where not polpermissive order by 1), '{}'::text[],
  'no policy is restrictive');

-- The checks fail on a policy written the old way (and on a lookup), inside this transaction only.
create table app.distributable_probe (workspace_id uuid, id uuid);
create policy probe_wrapped on app.distributable_probe using (workspace_id = (select app.current_workspace_id()));
create policy probe_lookup on app.distributable_probe with check (exists (select 1 from app.workspaces w where w.id = workspace_id));
select is(array(select policy from policy_subqueries order by 1),
  array['app.distributable_probe probe_lookup', 'app.distributable_probe probe_wrapped'], '... and finds one written the old way');
create policy probe_restrictive on app.distributable_probe as restrictive using (workspace_id = app.current_workspace_id());
select is(array(select polname::text from pg_policy where not polpermissive), array['probe_restrictive'], '... and a restrictive one');
drop table app.distributable_probe;

-- inbox_reads carries its thread's workspace: a row naming another workspace is refused by the key.
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, status)
values (pg_temp.id('ig:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'A1 channel', 'active');
insert into app.inbox_threads (id, organization_id, workspace_id, integration_id, platform, kind, thread_key)
values (pg_temp.id('thread:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('ig:A1'), 'x', 'comment', 'post-1');
select matches(pg_temp.sqlerr(format($$insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
    values (%L, %L, %L, %L, now())$$, pg_temp.id('thread:A1'), pg_temp.id('A.owner'), pg_temp.id('A'), pg_temp.id('A2'))),
  '^23503 Key \(workspace_id, thread_id\)', 'a read state in another workspace than its thread''s is refused');
insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
values (pg_temp.id('thread:A1'), pg_temp.id('A.owner'), pg_temp.id('A'), pg_temp.id('A1'), now());

-- The policy without a lookup: the owner sees their read state of A1 in A1, not while acting in A2.
select pg_temp.act_as('A.owner', 'A1');
select is((select count(*)::int from app.inbox_reads), 1, 'the owner sees their own read state in the thread''s workspace');
select pg_temp.act_as('A.owner', 'A2');
select is((select count(*)::int from app.inbox_reads), 0, '... and none while acting in another workspace');
reset role;

select * from finish();
rollback;
