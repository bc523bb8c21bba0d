-- The audit log: audit.record writes rows that reporting shows; UPDATE,
-- DELETE and TRUNCATE are refused on the table and every partition, even for
-- the superuser; audit.ensure_partitions keeps months ahead, idempotently;
-- pressroom_bi reads reporting and nothing else.
begin;
select plan(53);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- One row in every partition of audit.api_calls (a row at the lower bound
-- of each monthly partition, and one far in the past for the default), so
-- row triggers have something to fire on.
create function pg_temp.audit_partitions() returns setof regclass
language sql as $$
  select i.inhrelid::regclass from pg_inherits i
  where i.inhparent = 'audit.api_calls'::regclass order by 1::text
$$;
create function pg_temp.fill_partitions() returns int
language plpgsql as $$
declare
  p regclass;
  v_at timestamptz;
  n int := 0;
begin
  for p in select * from pg_temp.audit_partitions() loop
    v_at := coalesce(
      (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz + interval '1 hour',
      '2000-01-01 00:00:00+00')
      from pg_class c where c.oid = p;
    insert into audit.api_calls (occurred_at, actor_kind, method, route, status, duration_ms, outcome, request_id)
    values (v_at, 'anonymous', 'GET', '/fill', 200, 1, 'success', 'fill:' || p::text);
    n := n + 1;
  end loop;
  return n;
end
$$;
-- The partitions (or the parent) on which a statement template (%s = the
-- table) is NOT refused with PT409; effects are always rolled back.
create function pg_temp.not_refused(p_template text, p_include_parent boolean) returns text[]
language plpgsql as $$
declare
  t text;
  v_bad text[] := '{}';
begin
  for t in
    select 'audit.api_calls' where p_include_parent
    union all select p::text from pg_temp.audit_partitions() p
  loop
    if pg_temp.write_outcome(format(p_template, t)) <> 'PT409' then
      v_bad := v_bad || t;
    end if;
  end loop;
  return v_bad;
end
$$;
create function pg_temp.month_partition(p_months int) returns text
language sql as $$
  select 'audit.api_calls_' || to_char(date_trunc('month', now()) + make_interval(months => p_months), 'YYYY_MM')
$$;

------------------------------------------------------------------------------
-- audit.record, called by the server's login role outside the request.
------------------------------------------------------------------------------
set local role pressroom_app;
select lives_ok(format(
  $$select audit.record('user', %L, null, %L, %L, 'GET', '/v1/workspaces/{workspaceId}/members', 404, 12.5, 'NOT_FOUND', 'req-pgtap-1')$$,
  pg_temp.id('A.owner'), pg_temp.id('A'), pg_temp.id('A1')),
  'pressroom_app writes an audit row with audit.record');
select lives_ok(format(
  $$select audit.record('api_key', %L, 'pr_abc', %L, %L, 'POST', '/v1/workspaces/{workspaceId}/api-keys', 201, 3, null, 'req-pgtap-2')$$,
  pg_temp.id('key:A1'), pg_temp.id('A'), pg_temp.id('A1')),
  'pressroom_app writes a success row');
select lives_ok($$select audit.record('anonymous', null, null, null, null, 'POST', '/v1/auth/login', 500, 0, 'INTERNAL', 'req-pgtap-3')$$,
  'pressroom_app writes an anonymous server-error row');
select throws_ok($$insert into audit.api_calls (actor_kind, method, route, status, duration_ms, outcome, request_id)
  values ('anonymous', 'GET', '/x', 200, 1, 'success', 'direct')$$, '42501', null,
  'pressroom_app cannot insert into audit.api_calls directly');
select throws_ok('select count(*) from audit.api_calls', '42501', null, 'pressroom_app cannot read audit.api_calls');
reset role;
select pg_temp.act_as('A.owner', 'A1');
select throws_ok($$select audit.record('anonymous', null, null, null, null, 'GET', '/x', 200, 1, null, 'req-x')$$, '42501', null,
  'the request role cannot call audit.record');
select throws_ok('select count(*) from audit.api_calls', '42501', null, 'the request role cannot read audit.api_calls');
select throws_ok('select count(*) from reporting.api_calls', '42501', null, 'the request role cannot read reporting.api_calls');
select pg_temp.act_as_owner();

select results_eq(
  $$select actor_kind, actor_id, organization_id, workspace_id, method, route, status, duration_ms, outcome
    from reporting.api_calls where request_id = 'req-pgtap-1'$$,
  format($$values ('user'::text, %L::uuid, %L::uuid, %L::uuid, 'GET'::text, '/v1/workspaces/{workspaceId}/members'::text, 404, 12.5::numeric(12, 3), 'client_error'::text)$$,
         pg_temp.id('A.owner'), pg_temp.id('A'), pg_temp.id('A1')),
  'the recorded row is visible in reporting.api_calls, outcome client_error for a 404');
select results_eq(
  $$select request_id, outcome, api_key_prefix from reporting.api_calls where request_id in ('req-pgtap-2', 'req-pgtap-3') order by request_id$$,
  $$values ('req-pgtap-2'::text, 'success'::text, 'pr_abc'::text), ('req-pgtap-3', 'server_error', null)$$,
  'outcome is success for a 201 and server_error for a 500');
select is((select error_code from audit.api_calls where request_id = 'req-pgtap-1'), 'NOT_FOUND', 'the error code is stored');
select throws_ok($$select audit.record('robot', null, null, null, null, 'GET', '/x', 200, 1, null, 'req-bad')$$, '23514', null,
  'audit.record refuses an unknown actor kind (check violation)');

------------------------------------------------------------------------------
-- Partitions: created this month and ahead, idempotently.
------------------------------------------------------------------------------
select set_config('pgtap.missing_4_5',
  (select count(*)::text from generate_series(4, 5) i where to_regclass(pg_temp.month_partition(i)) is null), true);
set local role pressroom_worker;
select cmp_ok(audit.ensure_partitions(3), '>=', 0, 'pressroom_worker runs audit.ensure_partitions(3)');
select is(
  array(select pg_temp.month_partition(i) from generate_series(0, 3) i where to_regclass(pg_temp.month_partition(i)) is null),
  '{}'::text[], 'this month''s and the next 3 months'' partitions exist');
select is(audit.ensure_partitions(3), 0, 'a second audit.ensure_partitions(3) creates nothing');
select is(audit.ensure_partitions(5), current_setting('pgtap.missing_4_5')::int,
  'audit.ensure_partitions(5) creates exactly the missing months 4 and 5');
select is(
  array(select pg_temp.month_partition(i) from generate_series(0, 5) i where to_regclass(pg_temp.month_partition(i)) is null),
  '{}'::text[], 'the partitions up to 5 months ahead exist');
select is(audit.ensure_partitions(5), 0, 'audit.ensure_partitions(5) again creates nothing');
reset role;
select is(
  (select count(*)::int from pg_trigger t
   where t.tgrelid = to_regclass(pg_temp.month_partition(5)) and t.tgtype & 32 = 32 and not t.tgisinternal),
  1, 'the newly created partition has its own TRUNCATE guard');
with ins as (
  insert into audit.api_calls (occurred_at, actor_kind, method, route, status, duration_ms, outcome, request_id)
  values (date_trunc('month', now()) + interval '5 months', 'anonymous', 'GET', '/x', 200, 1, 'success', 'bound')
  returning tableoid::regclass::text t)
select is((select t from ins), pg_temp.month_partition(5), 'a row at the first instant of a month lands in that month''s partition');
select pg_temp.act_as('A.owner', 'A1');
select throws_ok('select audit.ensure_partitions(3)', '42501', null, 'the request role cannot run audit.ensure_partitions');
select pg_temp.act_as_owner();

------------------------------------------------------------------------------
-- Append-only, even for the superuser: triggers refuse UPDATE, DELETE and
-- TRUNCATE on the parent and on every partition.
------------------------------------------------------------------------------
select cmp_ok(pg_temp.fill_partitions(), '>=', 7, 'one row written into each of the (at least 7) partitions');
select is(
  array(select p::text from pg_temp.audit_partitions() p
        where not exists (select 1 from audit.api_calls a where a.tableoid = p)),
  '{}'::text[], 'every partition holds a row');
select throws_ok($$update audit.api_calls set status = 200 where request_id = 'req-pgtap-1'$$, 'PT409', null,
  'superuser: UPDATE on audit.api_calls -> PT409');
select throws_ok($$delete from audit.api_calls where request_id = 'req-pgtap-1'$$, 'PT409', null,
  'superuser: DELETE on audit.api_calls -> PT409');
select throws_ok('truncate audit.api_calls', 'PT409', null, 'superuser: TRUNCATE audit.api_calls -> PT409');
select is(pg_temp.not_refused('update %s set status = 599', true), '{}'::text[],
  'superuser: UPDATE of every row is refused on the parent and on each partition');
select is(pg_temp.not_refused('delete from %s', true), '{}'::text[],
  'superuser: DELETE is refused on the parent and on each partition');
select is(pg_temp.not_refused('truncate %s', true), '{}'::text[],
  'superuser: TRUNCATE is refused on the parent and on each partition');
select is((select count(*)::int from audit.api_calls where request_id like 'req-pgtap-%'), 3, 'the audit rows are all still there');

------------------------------------------------------------------------------
-- pressroom_bi reads reporting and nothing else.
------------------------------------------------------------------------------
set local role pressroom_bi;
select is((select count(*)::int from reporting.api_calls where request_id like 'req-pgtap-%'), 3,
  'pressroom_bi reads reporting.api_calls');
select is((select array_agg(name order by name) from reporting.workspaces), array['A1', 'A2', 'B1'],
  'pressroom_bi reads reporting.workspaces');
select throws_ok('select count(*) from app.workspaces', '42501', null, 'pressroom_bi cannot read app.workspaces');
select throws_ok('select count(*) from app.users', '42501', null, 'pressroom_bi cannot read app.users');
select throws_ok('select count(*) from app.api_keys', '42501', null, 'pressroom_bi cannot read app.api_keys');
select throws_ok('select count(*) from audit.api_calls', '42501', null, 'pressroom_bi cannot read audit.api_calls');
select throws_ok('select count(*) from audit.api_calls_default', '42501', null, 'pressroom_bi cannot read an audit partition');
select throws_ok('select api.list_workspaces()', '42501', null, 'pressroom_bi cannot call api functions');
select throws_ok($$insert into reporting.api_calls (actor_kind, method, route, status, duration_ms, outcome, request_id)
  values ('anonymous', 'GET', '/x', 200, 1, 'success', 'bi')$$, '42501', null, 'pressroom_bi cannot insert into reporting.api_calls');
select throws_ok('update reporting.api_calls set status = 200', '42501', null, 'pressroom_bi cannot update reporting.api_calls');
select throws_ok('delete from reporting.api_calls', '42501', null, 'pressroom_bi cannot delete from reporting.api_calls');
select throws_ok($$insert into reporting.workspaces (organization_id, name) values (gen_random_uuid(), 'bi')$$, '42501', null,
  'pressroom_bi cannot insert into reporting.workspaces');
select throws_ok($$update reporting.workspaces set name = 'bi'$$, '42501', null, 'pressroom_bi cannot update reporting.workspaces');
select throws_ok('delete from reporting.workspaces', '42501', null, 'pressroom_bi cannot delete from reporting.workspaces');
select throws_ok('create table public.bi_table (x int)', '42501', null, 'pressroom_bi cannot create a table in public');
select throws_ok('create table reporting.bi_table (x int)', '42501', null, 'pressroom_bi cannot create a table in reporting');
select throws_ok('create view reporting.bi_view as select 1 as x', '42501', null, 'pressroom_bi cannot create a view in reporting');
select throws_ok('create schema bi_schema', '42501', null, 'pressroom_bi cannot create a schema');
reset role;
-- The same, from the catalog, for every relation and schema there is.
select is(
  array(select format('%s %s', c.oid::regclass, p.priv)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        cross join (values ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE'), ('REFERENCES'), ('TRIGGER')) p (priv)
        where c.relkind in ('r', 'p', 'v', 'm', 'f') and n.nspname not like 'pg\_%' and n.nspname <> 'information_schema'
          and has_table_privilege('pressroom_bi', c.oid, p.priv)
        order by 1),
  '{}'::text[], 'pressroom_bi holds no write privilege on any relation');
select is(
  array(select format('%s SELECT', c.oid::regclass)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind in ('r', 'p', 'v', 'm', 'f') and n.nspname in ('app', 'audit', 'api')
          and has_table_privilege('pressroom_bi', c.oid, 'SELECT')
        order by 1),
  '{}'::text[], 'pressroom_bi holds no SELECT on anything in app, audit or api');
select is(
  array(select nspname::text from pg_namespace
        where nspname not like 'pg\_%' and nspname <> 'information_schema' and has_schema_privilege('pressroom_bi', oid, 'CREATE')
        order by 1),
  '{}'::text[], 'pressroom_bi may create in no schema');
-- (TEMPORARY is not checked here: CREATE DATABASE ... TEMPLATE does not copy
-- the template's database-level grants, so a clone has PostgreSQL's defaults.)
select ok(not has_database_privilege('pressroom_bi', current_database(), 'CREATE'),
  'pressroom_bi may not create schemas in the database');

select pg_temp.act_as_owner();
-- Every actor kind the service writes has its row (a check re-created by one
-- area once dropped another area's kind).
select lives_ok($$select audit.record(k, null, null, null, null, 'GET', '/v1/any', 200, 1, null, 'req-pgtap-kind-' || k)
                  from unnest(array['user', 'api_key', 'anonymous', 'review_link', 'platform_webhook']) k$$,
  'audit.record takes every actor kind: user, api_key, anonymous, review_link, platform_webhook');

select * from finish();
rollback;
