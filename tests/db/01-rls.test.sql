-- Row-level security is on and forced for every table of the private
-- schemas, and the request role can never read or write a secret.
begin;
select plan(17);

-- Every ordinary or partitioned table in app and audit, found in the catalog
-- (so a table added later is covered without touching this file). The
-- partitions of audit.api_calls are listed separately below, because a
-- partition queried directly bypasses its parent's policies.
select is(
  array(select format('%I.%I', n.nspname, c.relname)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('app', 'audit') and c.relkind in ('r', 'p') and not c.relispartition
          and not (c.relrowsecurity and c.relforcerowsecurity)
        order by 1),
  '{}'::text[],
  'every table in app and audit (partitions aside) has row-level security enabled and forced');

select cmp_ok(
  (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname in ('app', 'audit') and c.relkind in ('r', 'p') and not c.relispartition),
  '>=', 10,
  'the catalog query above really sees the tables (at least 10)');

select is(
  array(select format('%I.%I', n.nspname, c.relname)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('app', 'audit') and c.relkind in ('r', 'p') and c.relispartition
          and not (c.relrowsecurity and c.relforcerowsecurity)
        order by 1),
  '{}'::text[],
  'every partition in app and audit (audit.api_calls_*) has row-level security enabled and forced too');

-- Every table with RLS has at least one policy (RLS with no policy would
-- refuse everything silently, hiding a missing grant design).
select is(
  array(select format('%I.%I', n.nspname, c.relname)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('app', 'audit') and c.relkind in ('r', 'p') and not c.relispartition
          and not exists (select 1 from pg_policy p where p.polrelid = c.oid)
        order by 1),
  '{}'::text[],
  'every table in app and audit has at least one policy');

-- No role the server or BI uses may bypass RLS or own the tables.
select is(
  array(select rolname::text from pg_roles
        where rolname in ('pressroom_request', 'pressroom_app', 'pressroom_worker', 'pressroom_bi', 'pressroom_definer')
          and (rolbypassrls or rolsuper)
        order by 1),
  '{}'::text[],
  'no pressroom role is a superuser or has BYPASSRLS');
select is(
  array(select format('%I.%I', n.nspname, c.relname)
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('app', 'audit') and c.relkind in ('r', 'p')
          and pg_get_userbyid(c.relowner) in ('pressroom_request', 'pressroom_app', 'pressroom_bi', 'pressroom_worker')
        order by 1),
  '{}'::text[],
  'no table in app or audit is owned by the request, app, worker or BI role');
select ok((select rolinherit from pg_roles where rolname = 'pressroom_app') = false,
  'the server login role pressroom_app is NOINHERIT');

-- Secrets: the request role holds no privilege on them.
select is(
  array(select format('%s.%s %s', t.tbl, t.col, p.priv)
        from (values ('app.users', 'password_hash'), ('app.api_keys', 'key_hash'), ('app.sessions', 'token_hash')) t (tbl, col)
        cross join (values ('SELECT'), ('UPDATE'), ('REFERENCES')) p (priv)
        cross join (values ('pressroom_request'), ('pressroom_api')) r (role)
        where has_column_privilege(r.role, t.tbl, t.col, p.priv)
        order by 1),
  '{}'::text[],
  'pressroom_request and pressroom_api cannot select, update or reference password_hash, key_hash or token_hash');
-- Writing a new key's hash is the one exception: api.create_api_key runs as
-- pressroom_api and stores the hash the server computed. Passwords and session
-- tokens are written only by security-definer functions.
select is(
  array(select format('%s.%s', t.tbl, t.col)
        from (values ('app.users', 'password_hash'), ('app.sessions', 'token_hash')) t (tbl, col)
        cross join (values ('pressroom_request'), ('pressroom_api')) r (role)
        where has_column_privilege(r.role, t.tbl, t.col, 'INSERT')
        order by 1),
  '{}'::text[],
  'pressroom_request and pressroom_api cannot insert password_hash or token_hash');
select is(
  array(select format('%s.%s %s', t.tbl, t.col, p.priv)
        from (values ('app.users', 'password_hash'), ('app.api_keys', 'key_hash'), ('app.sessions', 'token_hash')) t (tbl, col)
        cross join (values ('SELECT'), ('INSERT'), ('UPDATE'), ('REFERENCES')) p (priv)
        cross join (values ('pressroom_app'), ('pressroom_bi'), ('pressroom_worker')) r (role)
        where has_column_privilege(r.role, t.tbl, t.col, p.priv)
        order by 1),
  '{}'::text[],
  'pressroom_app, pressroom_bi and pressroom_worker hold no privilege on any secret column');

-- The same, as the request role really experiences it.
insert into app.organizations (id, name, plan) values ('00000000-0000-4000-8000-00000000000a', 'Org', 'basic');
insert into app.users (id, organization_id, email, password_hash, org_role)
values ('00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-00000000000a', 'o@example.test', 'secret-hash', 'owner');
select set_config('pressroom.actor_kind', 'user', true),
       set_config('pressroom.user_id', '00000000-0000-4000-8000-0000000000a1', true),
       set_config('pressroom.organization_id', '00000000-0000-4000-8000-00000000000a', true);
set local role pressroom_request;
select throws_ok('select count(*) from app.users', '42501', null,
  'the request role reaches no table of app: only api functions');
reset role;
-- The api functions run as pressroom_api, under these policies and grants.
set local role pressroom_api;
select is((select count(*)::int from app.users), 1, 'the request role sees its own user row');
select throws_ok('select password_hash from app.users', '42501', null,
  'the request role gets 42501 reading app.users.password_hash');
select throws_ok('select key_hash from app.api_keys', '42501', null,
  'the request role gets 42501 reading app.api_keys.key_hash');
select throws_ok('select token_hash from app.sessions', '42501', null,
  'the request role gets 42501 reading app.sessions.token_hash');
select throws_ok('select * from app.users', '42501', null,
  'the request role cannot select * from app.users (column-listed grants)');
select throws_ok($$update app.users set password_hash = 'x'$$, '42501', null,
  'the request role cannot update app.users.password_hash');
reset role;

select * from finish();
rollback;
