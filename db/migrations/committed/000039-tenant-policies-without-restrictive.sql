--! Previous: sha1:c0092b81b3841b700e0f35025441e1e39a899978
--! Hash: sha1:ab46c5079157805fa29f068f8c2cfb0855a23c37
--! Message: tenant policies without restrictive

--! split: 01-current.sql
-- Tenant policies without RESTRICTIVE.
--
-- Each tenant table had a restrictive policy `<table>_api_scope` (the context's
-- organization and workspace, a role there, a principal who may use it) beside
-- permissive per-command policies (`_api_select` using (true), `_api_insert` with
-- check (role >= editor), ...). Citus recreates policies on its shards and worker
-- tables without AS RESTRICTIVE (its policy.c never writes it; measured in
-- docs/citus.md), so a distributed table's scope would become one more
-- permissive policy and any row would pass. The scope is now written into each
-- permissive policy instead, with the same meaning (a row passes when a
-- permissive policy passes and every restrictive one does: here the scope
-- and the command's own condition):
--
--   _api_select   using (scope)
--   _api_insert   with check (scope and role >= write_role)
--   _api_update   using (scope) with check (scope and role >= write_role)
--   _api_delete   using (scope and role >= write_role)
--
-- A table declared without commands (engine-only: credentials, states) gets no
-- pressroom_api policy at all, which refuses every row, as the lone scope did.
-- tests/db/10-distributable.test.sql fails on any restrictive policy.

create or replace function app.apply_tenant_policies(p_table regclass, p_commands text[] DEFAULT ARRAY['select'::text, 'insert'::text, 'update'::text, 'delete'::text], p_write_role text DEFAULT 'editor'::text)
 returns void
 language plpgsql
 set search_path to 'pg_catalog'
as $function$
declare
  v_name text := (select relname from pg_class where oid = p_table);
  v_policy record;
  v_write int := app.role_rank(p_write_role);
  -- The tenant scope: the row is of the context's organization and workspace, the caller
  -- has a role there, and the principal may really use that workspace (so a forged context
  -- reaches nothing). In every permissive policy, not in a restrictive one (Citus drops
  -- AS RESTRICTIVE on its nodes), and without subqueries (Citus refuses them in policies).
  v_scope text := $s$organization_id = app.current_organization_id()
      and workspace_id = app.current_accessible_workspace_id()
      and app.role_rank(app.current_workspace_role()) >= 1$s$;
  v_role text;
begin
  if v_write = 0 then
    raise exception 'apply_tenant_policies: unknown write role %', p_write_role;
  end if;
  if exists (select 1 from unnest(p_commands) c where c not in ('select', 'insert', 'update', 'delete')) then
    raise exception 'apply_tenant_policies: commands are select, insert, update, delete; got %', p_commands;
  end if;
  v_role := format('app.role_rank(app.current_workspace_role()) >= %s', v_write);
  execute format('alter table %s enable row level security', p_table);
  execute format('alter table %s force row level security', p_table);
  -- Exactly these policies: whatever the table had is dropped first.
  for v_policy in select polname from pg_policy where polrelid = p_table loop
    execute format('drop policy %I on %s', v_policy.polname, p_table);
  end loop;
  execute format('create policy %I on %s to pressroom_definer using (true) with check (true)', v_name || '_definer', p_table);
  execute format('create policy %I on %s to pressroom_worker using (true) with check (true)', v_name || '_worker', p_table);
  if 'select' = any (p_commands) then
    execute format('create policy %I on %s for select to pressroom_api using (%s)', v_name || '_api_select', p_table, v_scope);
  end if;
  if 'insert' = any (p_commands) then
    execute format('create policy %I on %s for insert to pressroom_api with check (%s and %s)', v_name || '_api_insert', p_table, v_scope, v_role);
  end if;
  if 'update' = any (p_commands) then
    -- A row the caller can see but may not change fails WITH CHECK (42501),
    -- rather than being skipped without a word.
    execute format('create policy %I on %s for update to pressroom_api using (%s) with check (%s and %s)',
      v_name || '_api_update', p_table, v_scope, v_scope, v_role);
  end if;
  if 'delete' = any (p_commands) then
    execute format('create policy %I on %s for delete to pressroom_api using (%s and %s)', v_name || '_api_delete', p_table, v_scope, v_role);
  end if;
  execute format('grant select, insert, update, delete on %s to pressroom_definer, pressroom_worker', p_table);
end
$function$;
comment on function app.apply_tenant_policies(regclass,text[],text) is 'Gives a tenant table (one with organization_id and workspace_id) exactly its policies: definer and worker see all; pressroom_api reads with any role and writes the listed commands with p_write_role or above, each policy held to the request''s organization, workspace and role (the scope is in every permissive policy: no restrictive policy, which Citus would not keep). Drops every other policy of the table. The catalog test tests/db/07-catalog.test.sql checks every tenant table against it.';

-- Every tenant table again, with the commands it has and its write role.
do $$
declare
  t record;
  v_commands text[];
  v_rank text;
  v_ungranted text[];
  v_grant record;
begin
  for t in
    select c.oid, c.relname from pg_class c
    where c.relnamespace = 'app'::regnamespace
      and exists (select 1 from pg_policy p where p.polrelid = c.oid and p.polname = c.relname || '_api_scope' and not p.polpermissive)
    order by c.relname
  loop
    v_commands := array(select cmd from unnest(array['select', 'insert', 'update', 'delete']) cmd
                        where exists (select 1 from pg_policy p where p.polrelid = t.oid and p.polname = t.relname || '_api_' || cmd));
    -- The write role, from the command policies' condition (one rank for the table).
    select string_agg(distinct (regexp_match(coalesce(pg_get_expr(p.polwithcheck, p.polrelid), pg_get_expr(p.polqual, p.polrelid)), '>= (\d)\)*$'))[1], ',')
    into v_rank
    from pg_policy p where p.polrelid = t.oid and p.polname in (t.relname || '_api_insert', t.relname || '_api_update', t.relname || '_api_delete');
    if v_rank is not null and v_rank not in ('1', '2', '3') then
      raise exception 'apply_tenant_policies again: % has write policies of several ranks (%)', t.relname, v_rank;
    end if;
    -- The helper also grants the four commands to the definer and the worker; a table
    -- that had taken some back (the worker only reads credentials) keeps it that way.
    v_ungranted := array(select r || ':' || priv from unnest(array['pressroom_definer', 'pressroom_worker']) r,
                         unnest(array['select', 'insert', 'update', 'delete']) priv
                         where not has_table_privilege(r, t.oid, priv));
    perform app.apply_tenant_policies(t.oid::regclass, v_commands,
      case coalesce(v_rank, '2') when '1' then 'viewer' when '2' then 'editor' else 'manager' end);
    for v_grant in select split_part(g, ':', 1) as role, split_part(g, ':', 2) as priv from unnest(v_ungranted) g loop
      execute format('revoke %s on %s from %I', v_grant.priv, t.oid::regclass, v_grant.role);
    end loop;
  end loop;
end
$$;
