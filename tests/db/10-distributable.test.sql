-- The rulebook distributes by workspace (docs/citus.md): what a single node can check of it.
-- Citus refuses subqueries in the row-level security policies of distributed tables, so no
-- policy holds one (db/migrations/committed/000036-policies-without-subqueries.sql rewrote them);
-- a new table whose policy would not distribute fails here, on one node.
begin;
select plan(40);
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

-- Keys hold workspace_id (db/migrations/committed/000043-keys-carry-the-workspace.sql): Citus
-- distributes a table by workspace_id only when every primary and unique key of it holds
-- workspace_id, and keeps a foreign key between two such tables only when it pairs workspace_id
-- with workspace_id; a table that points at a workspace table carries workspace_id itself, and
-- ON DELETE SET NULL names its own columns so that it never nulls workspace_id.
create temporary view key_faults as
  select x.indrelid::regclass || ' ' || i.relname || ': unique without workspace_id' as fault
    from pg_index x join pg_class i on i.oid = x.indexrelid
   where x.indisunique and app.is_workspace_table(x.indrelid)
     and not exists (select 1 from unnest(x.indkey::int2[]) k(n) join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n
                      where a.attname = 'workspace_id')
  union all
  select con.conrelid::regclass || ' ' || con.conname || ': ' || case
           when not app.is_workspace_table(con.conrelid) then 'points at a workspace table without workspace_id'
           when con.confdeltype in ('n', 'd') then 'ON DELETE SET NULL or SET DEFAULT, which Citus refuses'
           when con.confupdtype not in ('a', 'r') then 'an ON UPDATE action, which Citus refuses'
           else 'does not pair workspace_id' end
    from pg_constraint con
   where con.contype = 'f' and app.is_workspace_table(con.confrelid)
     and (not app.is_workspace_table(con.conrelid)
          or not exists (select 1 from generate_subscripts(con.conkey, 1) s
                           join pg_attribute a on a.attrelid = con.conrelid and a.attnum = con.conkey[s]
                           join pg_attribute b on b.attrelid = con.confrelid and b.attnum = con.confkey[s]
                          where a.attname = 'workspace_id' and b.attname = 'workspace_id')
          or con.confdeltype in ('n', 'd') or con.confupdtype not in ('a', 'r'));

select cmp_ok((select count(*)::int from pg_class where relnamespace = 'app'::regnamespace and app.is_workspace_table(oid)), '>', 75,
  'the checks see the workspace tables (more than 75)');
select cmp_ok((select count(*)::int from pg_constraint where contype = 'f' and app.is_workspace_table(confrelid)), '>', 80,
  '... and the foreign keys to them (more than 80)');
select is(array(select fault from key_faults order by 1), '{}'::text[],
  'every unique key of a workspace table holds workspace_id, and every foreign key to one pairs it');
select is((select pg_get_constraintdef(oid) from pg_constraint where conname = 'content_items_pkey'), 'PRIMARY KEY (id, workspace_id)',
  'a primary key by id holds workspace_id after it, so a lookup by id alone still uses its index');
select is((select pg_get_constraintdef(oid) from pg_constraint where conname = 'content_roots_campaign_id_fkey'),
  'FOREIGN KEY (campaign_id, workspace_id) REFERENCES app.campaigns(id, workspace_id) DEFERRABLE INITIALLY DEFERRED',
  'a key that emptied its column when the parent went has no action and is checked at commit');
select is(array(select tgname::text from pg_trigger where tgrelid = 'app.campaigns'::regclass and tgname ~ '_95_detach_' order by 1),
  array['campaigns_95_detach_content_roots_campaign_id'], '... and the parent empties it when it goes');

-- The detach triggers do what ON DELETE SET NULL did: a label of a group that goes stays, without
-- its group; a delivery and its redelivery deleted by one statement (their subscription goes) go
-- together (an AFTER trigger: a BEFORE one would update the redelivery the statement then deletes).
insert into app.media_label_groups (id, organization_id, workspace_id, name)
values (pg_temp.id('group:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Season');
insert into app.media_labels (id, organization_id, workspace_id, group_id, name)
values (pg_temp.id('label:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('group:A1'), 'Spring');
delete from app.media_label_groups where id = pg_temp.id('group:A1');
select is((select group_id from app.media_labels where id = pg_temp.id('label:A1')), null,
  'a label whose group is deleted stays, without its group');
insert into app.webhook_subscriptions (id, organization_id, workspace_id, url, events, secret_ciphertext)
values (pg_temp.id('sub:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'https://hooks.example.test/', '{content.created}', decode(repeat('ab', 40), 'hex'));
insert into app.webhook_events (id, organization_id, workspace_id, type, subject_id, data)
values (pg_temp.id('event:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'content.created', gen_random_uuid(), '{}');
insert into app.webhook_deliveries (id, organization_id, workspace_id, subscription_id, event_id, redelivery_of)
values (pg_temp.id('delivery:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('sub:A1'), pg_temp.id('event:A1'), null),
       (pg_temp.id('redelivery:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('sub:A1'), pg_temp.id('event:A1'), pg_temp.id('delivery:A1'));
delete from app.webhook_deliveries where id = pg_temp.id('delivery:A1');
select is((select redelivery_of from app.webhook_deliveries where id = pg_temp.id('redelivery:A1')), null,
  'a redelivery whose first delivery is deleted stays, without it');
update app.webhook_deliveries set redelivery_of = null where id = pg_temp.id('redelivery:A1');
insert into app.webhook_deliveries (id, organization_id, workspace_id, subscription_id, event_id, redelivery_of)
values (pg_temp.id('delivery2:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('sub:A1'), pg_temp.id('event:A1'), pg_temp.id('redelivery:A1'));
select lives_ok($$delete from app.webhook_subscriptions where id = pg_temp.id('sub:A1')$$,
  'a subscription with a delivery and its redelivery is deleted in one statement');
select is((select count(*)::int from app.webhook_deliveries where subscription_id = pg_temp.id('sub:A1')), 0, '... with both');
select lives_ok($$set constraints all immediate$$, 'and the keys checked at commit hold');

-- Citus cannot plan a parameterised LANGUAGE sql function that reads a table unless PostgreSQL
-- inlines it (db/migrations/committed/000045-sql-functions-as-plpgsql.sql): such functions are
-- PL/pgSQL, but for the set-returning ones PostgreSQL inlines into the caller's FROM.
create temporary view sql_functions_reading_tables as
  select p.oid::regprocedure::text as fn
    from pg_proc p join pg_language l on l.oid = p.prolang
   where l.lanname = 'sql' and p.pronamespace in ('app'::regnamespace, 'api'::regnamespace) and p.pronargs > 0
     and p.prosrc ~* '\m(from|join|update|insert|delete|into)\s+(app|audit|pgboss)\.'
     and not (p.proretset and not p.prosecdef and p.proconfig is null and p.provolatile <> 'v' and not p.proisstrict);
select is(array(select fn from sql_functions_reading_tables order by 1), '{}'::text[],
  'no parameterised LANGUAGE sql function reads a table, but those PostgreSQL inlines');
create function app.distributable_sql_probe(p_id uuid) returns text language sql stable
  as $$ select name from app.workspaces where id = p_id $$;
select is(array(select fn from sql_functions_reading_tables order by 1), array['app.distributable_sql_probe(uuid)'],
  '... and finds one written the old way');
drop function app.distributable_sql_probe(uuid);

-- Citus refuses a function that is not immutable (now(), clock_timestamp(), ...) in the DO UPDATE
-- of an upsert, and a subquery in INSERT ... VALUES, on its tables
-- (db/migrations/committed/000046-statements-citus-accepts.sql): the value is read into a
-- variable first. A text search of each statement of app's and api's functions.
create temporary view statements_citus_refuses as
  select p.oid::regprocedure::text || ': ' || k.kind as fault
    from pg_proc p
    cross join lateral (values
      ('a volatile function in ON CONFLICT DO UPDATE', p.prosrc ~* 'do\s+update\s+set[^;]*\m(now|clock_timestamp|statement_timestamp|random|gen_random_uuid|setting_int|setting)\s*\('),
      ('a subquery in INSERT ... VALUES', p.prosrc ~* 'insert\s+into\s+app\.[a-z_]+[^;]*?\mvalues\s*\([^;]*\(\s*select\M')) k(kind, hit)
   where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace) and k.hit;
select is(array(select fault from statements_citus_refuses order by 1), '{}'::text[],
  'no upsert calls a volatile function in its DO UPDATE, and no INSERT ... VALUES holds a subquery');
create function app.distributable_upsert_probe(p_name text) returns void language plpgsql as $$
begin
  insert into app.connectors (name, platforms, connect) values (p_name, array(select 'x'), 'none')
  on conflict (name) do update set declared_at = now();
end $$;
select is(array(select fault from statements_citus_refuses order by 1), array[
  'app.distributable_upsert_probe(text): a subquery in INSERT ... VALUES',
  'app.distributable_upsert_probe(text): a volatile function in ON CONFLICT DO UPDATE'],
  '... and finds both written the old way');
drop function app.distributable_upsert_probe(text);

-- A PL/pgSQL function reads the request's context once, into a variable, before its BEGIN
-- (db/migrations/committed/000066-the-request-context-read-once.sql): in a statement, the
-- inlined `nullif(current_setting(...), '')::uuid` is no value Citus prunes shards on (a lock on
-- one workspace's rows asks every shard and is refused) and is refused in an UPDATE or DELETE.
-- A text search of the body after its first BEGIN (app.current_workspace_accessible computes the
-- context's answer itself, once per request).
create temporary view context_read_in_statements as
  select p.oid::regprocedure::text as fn
    from pg_proc p
   where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace)
     and p.prolang = (select oid from pg_language where lanname = 'plpgsql')
     and p.oid <> 'app.current_workspace_accessible()'::regprocedure
     and substr(p.prosrc, strpos(p.prosrc, E'\nbegin')) ~ 'app\.current_(workspace_id|principal_id|user_id|api_key_id|organization_id)\(\)';
select is(array(select fn from context_read_in_statements order by 1), '{}'::text[],
  'no PL/pgSQL function calls a request-context function after its BEGIN');
create function app.distributable_context_probe() returns void language plpgsql as $$
begin
  perform 1 from app.content_items where workspace_id = app.current_workspace_id() for update;
end $$;
select is(array(select fn from context_read_in_statements order by 1), array['app.distributable_context_probe()'],
  '... and finds one written the old way');
drop function app.distributable_context_probe();

-- A statement that locks rows of a workspace table names the workspace (Citus locks rows only in
-- a statement on one shard: db/migrations/committed/000067-locks-by-workspace.sql). A text search
-- of each statement; the functions whose callers pass only an id are listed until they take the
-- workspace (docs/citus.md, "Where the schema stands").
create temporary view locks_without_workspace as
  select distinct p.oid::regprocedure::text as fn
    from pg_proc p
    cross join lateral regexp_split_to_table(regexp_replace(p.prosrc, '--[^\n]*', '', 'g'), ';') st
    cross join lateral regexp_matches(st, '\m(?:from|join)\s+app\.([a-z_0-9]+)', 'gi') t
   where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace)
     and st ~* '\mfor\s+(update|share|no\s+key\s+update|key\s+share)\M'
     and st !~* 'workspace_id|v_ctx_workspace'
     and to_regclass('app.' || t[1]) is not null and app.is_workspace_table(to_regclass('app.' || t[1]));
select is(array(select fn from locks_without_workspace order by 1), array[
    'app.campaign_phase_for_update(uuid,uuid)', 'app.credentials_put(uuid,jsonb)', 'app.grid_lock_editions(uuid[])',
    'app.grid_lock_scheduled(uuid)', 'app.grid_tile(uuid,uuid,boolean)', 'app.inbox_action_claim(uuid,uuid,text)',
    'app.inbox_action_record(uuid,uuid,text,boolean,text,text)', 'app.materialize_series(uuid,boolean,uuid,interval,integer)',
    'app.review_advance(uuid,uuid)', 'app.review_complete_if_done(uuid)', 'app.review_end(uuid,text)',
    'app.webhook_record_one(uuid,boolean,jsonb,integer,text,text,integer)'],
  'every statement that locks a workspace table''s rows names the workspace, but those of the functions listed in docs/citus.md');
create function app.distributable_lock_probe(p_id uuid) returns void language plpgsql as $$
begin
  perform 1 from app.content_items where id = p_id for update;
end $$;
select ok('app.distributable_lock_probe(uuid)' = any (array(select fn from locks_without_workspace)),
  '... and finds one written the old way');
drop function app.distributable_lock_probe(uuid);

-- On a Citus worker a trigger fires on the shard, and TG_TABLE_NAME is the shard's name: a
-- trigger reads it through app.trigger_table, which takes a shard's _<id> suffix off
-- (db/migrations/committed/000068-the-content-lifecycle-on-the-cluster.sql); so no table's own name
-- may end in _<digits>.
select is(array(select c.relname::text from pg_class c where c.relnamespace = 'app'::regnamespace and c.relkind in ('r', 'p')
                and c.relname ~ '_[0-9]+$' order by 1), '{}'::text[],
  'no table of app has a name ending in _<digits> (app.trigger_table takes such a suffix for a shard''s)');
select is(array(select p.oid::regprocedure::text from pg_proc p
                where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace)
                  and regexp_replace(p.prosrc, 'app\.trigger_table\(tg_table_name\)', '', 'gi') ~* '\mtg_table_name\M'
                order by 1), '{}'::text[],
  'every trigger reads its table''s name through app.trigger_table');

-- The checks fail on keys written the old way, inside this transaction only.
create table app.distributable_keys_probe (id uuid primary key, workspace_id uuid not null, code text unique,
  parent_id uuid references app.distributable_keys_probe (id) on delete cascade, unique (id, workspace_id));
create table app.distributable_keys_probe_child (probe_id uuid, workspace_id uuid, page uuid,
  foreign key (probe_id, workspace_id) references app.distributable_keys_probe (id, workspace_id) on delete set null (probe_id),
  foreign key (page, workspace_id) references app.distributable_keys_probe (id, workspace_id) on update cascade);
create table app.distributable_keys_probe_org (probe_id uuid, workspace_id_not uuid,
  foreign key (probe_id) references app.distributable_keys_probe (id));
select is(array(select fault from key_faults order by 1), array[
  'app.distributable_keys_probe distributable_keys_probe_code_key: unique without workspace_id',
  'app.distributable_keys_probe distributable_keys_probe_parent_id_fkey: does not pair workspace_id',
  'app.distributable_keys_probe distributable_keys_probe_pkey: unique without workspace_id',
  'app.distributable_keys_probe_child distributable_keys_probe_child_page_workspace_id_fkey: an ON UPDATE action, which Citus refuses',
  'app.distributable_keys_probe_child distributable_keys_probe_child_probe_id_workspace_id_fkey: ON DELETE SET NULL or SET DEFAULT, which Citus refuses',
  'app.distributable_keys_probe_org distributable_keys_probe_org_probe_id_fkey: points at a workspace table without workspace_id'],
  '... and finds a key without workspace_id, a foreign key that does not pair it, SET NULL, ON UPDATE CASCADE and an organization table pointing at a workspace table');
drop table app.distributable_keys_probe_org, app.distributable_keys_probe_child, app.distributable_keys_probe;

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

-- Citus evaluates a column's default on the coordinator and names the column in the INSERT it
-- sends the shard, so a role that may insert some columns of a table may insert each column
-- with a default too (db/migrations/committed/000047-insert-grants-for-defaults.sql).
reset role;
create temporary view insert_grant_faults as
  select format('%s %s: may insert some columns but not %s', c.oid::regclass, r.rolname, string_agg(a.attname, ', ' order by a.attnum)) as fault
    from pg_class c
    cross join (select rolname from pg_roles where rolname like 'pressroom\_%') r
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                        and (a.atthasdef or a.attidentity <> '') and a.attgenerated = ''
   where c.relnamespace in ('app'::regnamespace, 'audit'::regnamespace) and c.relkind in ('r', 'p')
     and not has_table_privilege(r.rolname, c.oid, 'INSERT')
     and has_any_column_privilege(r.rolname, c.oid, 'INSERT')
     and not has_column_privilege(r.rolname, c.oid, a.attnum, 'INSERT')
   group by c.oid, r.rolname;
select is(array(select fault from insert_grant_faults order by 1), '{}'::text[],
  'a role that may insert some columns of a table may insert each column with a default');
create table app.distributable_grant_probe (id uuid primary key default gen_random_uuid(), name text, created_at timestamptz default now());
grant insert (name) on app.distributable_grant_probe to pressroom_api;
select is(array(select fault from insert_grant_faults order by 1),
  array['app.distributable_grant_probe pressroom_api: may insert some columns but not id, created_at'],
  '... and finds a table granted the old way');
drop table app.distributable_grant_probe;

-- A query over a distributed table runs on the shards as written, so a helper that takes a
-- table's row gets it by the table's type, `app.workspace_json(row(w.*)::app.workspaces, ...)`,
-- never as the bare alias `w`, which on a worker is the shard's row type
-- (db/migrations/committed/000048-row-arguments-by-type.sql). A text search: for each helper and
-- each table whose row it takes, the aliases that table has in a function, passed bare.
create temporary view row_arguments_by_alias as
  with helpers as (
    select distinct h.proname::text as helper, c.relname::text as tbl
      from pg_proc h
      cross join unnest(h.proargtypes::oid[]) as a(t)
      join pg_type ty on ty.oid = a.t
      join pg_class c on c.oid = ty.typrelid and c.relkind in ('r', 'p') and c.relnamespace = 'app'::regnamespace
     where h.pronamespace = 'app'::regnamespace),
  aliases as (
    select p.oid, p.prosrc, hp.helper, lower(m[1]) as alias
      from pg_proc p
      join helpers hp on position('app.' || hp.helper || '(' in p.prosrc) > 0
      cross join lateral regexp_matches(p.prosrc, '(?:^|[^a-z0-9_.])(?:app\.)?' || hp.tbl || '\s+(?:as\s+)?([a-z_][a-z0-9_]*)', 'gi') m
     where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace))
  select distinct a.oid::regprocedure::text || ': app.' || a.helper || '(' || a.alias || ')' as fault
    from aliases a
   where a.alias not in ('set', 'where', 'on', 'join', 'left', 'right', 'inner', 'full', 'cross', 'natural', 'using',
                         'returning', 'values', 'for', 'order', 'group', 'limit', 'as', 'select', 'from', 'union',
                         'loop', 'then', 'and', 'or', 'is', 'into', 'with', 'when', 'else', 'end', 'default', 'only',
                         'offset', 'having', 'window', 'except', 'intersect', 'lateral', 'tablesample', 'do', 'not', 'in',
                         'new', 'old')
     and a.prosrc ~* ('app\.' || a.helper || '\((?:[^();]*,)?\s*' || a.alias || '\s*[,)]');
select is(array(select fault from row_arguments_by_alias order by 1), '{}'::text[],
  'no function passes a table alias bare to a helper that takes the table''s row');
create function app.distributable_row_probe() returns jsonb language plpgsql stable as $$
begin
  return (select jsonb_agg(app.workspace_json(w, 'owner')) from app.workspaces w);
end $$;
select is(array(select fault from row_arguments_by_alias order by 1), array['app.distributable_row_probe(): app.workspace_json(w)'],
  '... and finds one written the old way');
drop function app.distributable_row_probe();

-- Citus writes the rows of an INSERT ... SELECT that does not come from the target's own shard
-- with COPY, which row-level security refuses, unless the statement returns its rows or has ON
-- CONFLICT (db/migrations/committed/000049-insert-select-returns-its-rows.sql). A text search of
-- app's and api's functions but the trigger functions (a trigger runs on the shard).
create temporary view insert_selects_by_copy as
  select p.oid::regprocedure::text || ': ' || substring(m[1] from '^insert\s+into\s+app\.[a-z_]+') as fault
    from pg_proc p
    cross join lateral regexp_matches(p.prosrc, '(insert\s+into\s+app\.[a-z_]+[^;]*\)\s*select\M[^;]*;)', 'gi') m
   where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace) and p.prorettype <> 'trigger'::regtype
     and m[1] !~* '\mreturning\M' and m[1] !~* '\mon\s+conflict\M';
select is(array(select fault from insert_selects_by_copy order by 1), '{}'::text[],
  'every INSERT ... SELECT of a function returns its rows or has ON CONFLICT');
create function app.distributable_insert_probe(p_ids uuid[]) returns void language plpgsql as $$
begin
  insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
  select x, x, x from unnest(p_ids) x;
end $$;
select is(array(select fault from insert_selects_by_copy order by 1),
  array['app.distributable_insert_probe(uuid[]): insert into app.api_key_workspaces'],
  '... and finds one written the old way');
drop function app.distributable_insert_probe(uuid[]);

-- Citus runs a join of two distributed tables only when the join pairs their distribution
-- column, so a join of a workspace table on another row's id or key pairs workspace_id too
-- (db/migrations/committed/000052-joins-pair-the-workspace.sql). A text search of app's and
-- api's functions: `join app.<workspace table> x on x.<col> = y.<col>` with no workspace_id in
-- the condition.
create temporary view joins_without_workspace as
  with ws as (select string_agg(relname, '|') as names from pg_class
               where relnamespace = 'app'::regnamespace and relkind in ('r', 'p') and app.is_workspace_table(oid)),
  joins as (
    select p.oid, p.prosrc, m[1] as tbl, m[2] as alias, m[3] as cond
      from pg_proc p
      cross join lateral regexp_matches(p.prosrc,
        '\mjoin\s+app\.([a-z_]+)\s+([a-z_][a-z0-9_]*)\s+on\s+((?:(?!\m(?:join|left|right|inner|cross|full|where|group|order|limit|union|returning)\M)[^;()]|\([^;()]*\))*)', 'gi') m
     where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace))
  select distinct j.oid::regprocedure::text || ': join app.' || j.tbl || ' ' || j.alias as fault
    from joins j cross join ws
    cross join lateral regexp_matches(j.cond, '([a-z_][a-z0-9_]*)\.[a-z_]+', 'gi') o
   where j.tbl ~ ('^(' || ws.names || ')$')
     and j.cond !~* 'workspace_id'
     and o[1] <> j.alias
     -- the other row is a workspace table's (not a value, a CTE or a derived table)
     and j.prosrc ~* ('\m(from|join)\s+app\.(' || ws.names || ')\s+(as\s+)?' || o[1] || '\M')
     and j.prosrc !~* ('\)\s+(as\s+)?' || o[1] || '\M')
     and j.prosrc !~* ('\m' || o[1] || '\s+as\s+(not\s+)?(materialized\s+)?\(');
select is(array(select fault from joins_without_workspace order by 1), '{}'::text[],
  'every join of a workspace table on another row''s column pairs workspace_id');
create function app.distributable_join_probe() returns bigint language plpgsql stable as $$
begin
  return (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id);
end $$;
select is(array(select fault from joins_without_workspace order by 1), array['app.distributable_join_probe(): join app.content_roots r'],
  '... and finds one written the old way');
drop function app.distributable_join_probe();

-- A table a migration creates after the distribute step ran, with a key to a reference table, is
-- made citus-local by Citus at once; the next step distributes it, unless it has an identity
-- column ("cannot complete operation on a table with identity column", measured on the cluster:
-- docs/citus.md). The identity columns are those of the tables made before Citus could be there;
-- a new table numbers its rows with a sequence (bigserial), as app.job_outbox does (000058).
select is(
  array(select format('%s.%s', c.oid::regclass, a.attname) from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relnamespace = 'app'::regnamespace and c.relkind in ('r', 'p') and a.attidentity <> '' and not a.attisdropped
        order by 1),
  array['app.content_item_counts.id', 'app.content_root_counts.id', 'app.inbox_events.id', 'app.post_metric_snapshots.id',
        'app.webhook_deliveries.seq', 'app.webhook_delivery_log.seq', 'app.webhook_events.seq'],
  'no table but those made before a cluster could hold them has an identity column');
create table app.distributable_identity_probe (workspace_id uuid not null, n bigint generated always as identity);
select ok('app.distributable_identity_probe.n' = any (array(
            select format('%s.%s', c.oid::regclass, a.attname) from pg_attribute a join pg_class c on c.oid = a.attrelid
            where c.relnamespace = 'app'::regnamespace and a.attidentity <> '')),
  '... and the check sees one written now');
drop table app.distributable_identity_probe;

select * from finish();
rollback;
