-- The API role and the helpers every area uses to declare its tables.
--
-- Roles after this migration (db/README.md, "Roles"):
--   pressroom_request  what a request transaction runs as. It may use the
--                      schema api and execute its functions, and nothing else:
--                      no table, no function of app.
--   pressroom_api      owner of the api functions, which are security definer
--                      (app.harden_api_functions). It holds the column-listed
--                      grants on app tables and is the role the tenant
--                      policies (app.apply_tenant_policies) apply to, so every
--                      api function still runs under row-level security with
--                      the request's context (pressroom.* settings).
--   pressroom_definer  owner of the few functions that must see across
--                      tenants (sign-in, the gate, the publishing engine's
--                      records). Bypasses tenant policies by its own policy.
--   pressroom_worker   what jobs run as: the publishing engine and the purges.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'pressroom_api') then
    create role pressroom_api nologin noinherit;
  end if;
end
$$;
-- The migrating role hands api functions to pressroom_api.
grant pressroom_api to :DATABASE_OWNER;
grant usage on schema app, api to pressroom_api;
grant create on schema api to pressroom_api;

------------------------------------------------------------------------------
-- app.apply_tenant_policies: the one way a tenant table gets its policies.
------------------------------------------------------------------------------
create function app.apply_tenant_policies(
  p_table regclass,
  p_commands text[] default array['select', 'insert', 'update', 'delete'],
  p_write_role text default 'editor'
) returns void
language plpgsql
set search_path = pg_catalog
as $$
declare
  v_name text := (select relname from pg_class where oid = p_table);
  v_policy record;
  v_write int := app.role_rank(p_write_role);
  v_scope text := $s$organization_id = (select app.current_organization_id())
      and workspace_id = (select app.current_workspace_id())
      and app.role_rank((select app.current_workspace_role())) >= 1
      and (select app.current_workspace_accessible())$s$;
  v_role text;
begin
  if v_write = 0 then
    raise exception 'apply_tenant_policies: unknown write role %', p_write_role;
  end if;
  if exists (select 1 from unnest(p_commands) c where c not in ('select', 'insert', 'update', 'delete')) then
    raise exception 'apply_tenant_policies: commands are select, insert, update, delete; got %', p_commands;
  end if;
  v_role := format('app.role_rank((select app.current_workspace_role())) >= %s', v_write);
  execute format('alter table %s enable row level security', p_table);
  execute format('alter table %s force row level security', p_table);
  -- Exactly these policies: whatever the table had is dropped first.
  for v_policy in select polname from pg_policy where polrelid = p_table loop
    execute format('drop policy %I on %s', v_policy.polname, p_table);
  end loop;
  execute format('create policy %I on %s to pressroom_definer using (true) with check (true)', v_name || '_definer', p_table);
  execute format('create policy %I on %s to pressroom_worker using (true) with check (true)', v_name || '_worker', p_table);
  -- The tenant scope: the row is of the context's organization and workspace,
  -- the caller has a role there, and the principal may really use that
  -- workspace (so a forged context reaches nothing).
  execute format('create policy %I on %s as restrictive for all to pressroom_api using (%s) with check (%s)',
    v_name || '_api_scope', p_table, v_scope, v_scope);
  if 'select' = any (p_commands) then
    execute format('create policy %I on %s for select to pressroom_api using (true)', v_name || '_api_select', p_table);
  end if;
  if 'insert' = any (p_commands) then
    execute format('create policy %I on %s for insert to pressroom_api with check (%s)', v_name || '_api_insert', p_table, v_role);
  end if;
  if 'update' = any (p_commands) then
    -- A row the caller can see but may not change fails WITH CHECK (42501),
    -- rather than being skipped without a word.
    execute format('create policy %I on %s for update to pressroom_api using (true) with check (%s)',
      v_name || '_api_update', p_table, v_role);
  end if;
  if 'delete' = any (p_commands) then
    execute format('create policy %I on %s for delete to pressroom_api using (%s)', v_name || '_api_delete', p_table, v_role);
  end if;
  execute format('grant select, insert, update, delete on %s to pressroom_definer, pressroom_worker', p_table);
end
$$;
comment on function app.apply_tenant_policies(regclass, text[], text) is
  'Gives a tenant table (one with organization_id and workspace_id) exactly its policies: definer and worker see all; '
  'pressroom_api is held to the request''s organization, workspace and role by a restrictive scope policy, reads with '
  'any role and writes the listed commands with p_write_role or above. Drops every other policy of the table. '
  'The catalog test tests/db/07-catalog.test.sql checks every tenant table against it.';

------------------------------------------------------------------------------
-- app.grant_api_columns: column-listed insert and update for pressroom_api.
------------------------------------------------------------------------------
-- Grants insert and update on every column of the table except those listed
-- (and, for update, the row's identity and tenancy, which never change).
-- Columns added later are granted by nobody until a migration says so.
create function app.grant_api_columns(
  p_table regclass,
  p_privileges text[],
  p_except text[] default '{}'
) returns void
language plpgsql
set search_path = pg_catalog
as $$
declare
  v_privilege text;
  v_columns text;
  v_never_updated text[] := array['id', 'organization_id', 'workspace_id', 'created_at', 'created_by'];
begin
  foreach v_privilege in array p_privileges loop
    if v_privilege not in ('insert', 'update') then
      raise exception 'grant_api_columns: privileges are insert and update; got %', v_privilege;
    end if;
    select string_agg(quote_ident(attname), ', ' order by attnum) into v_columns
    from pg_attribute
    where attrelid = p_table and attnum > 0 and not attisdropped and attgenerated = ''
      and attname <> all (p_except)
      and (v_privilege = 'insert' or attname <> all (v_never_updated));
    if v_columns is not null then
      execute format('grant %s (%s) on %s to pressroom_api', v_privilege, v_columns, p_table);
    end if;
  end loop;
end
$$;
comment on function app.grant_api_columns(regclass, text[], text[]) is
  'Grants pressroom_api insert and/or update on every column of a table but the listed ones (update never covers '
  'id, organization_id, workspace_id, created_at, created_by). Engine-only columns are listed in p_except.';

------------------------------------------------------------------------------
-- app.harden_api_functions: every api function runs as pressroom_api.
------------------------------------------------------------------------------
-- Run at the end of every migration that adds api functions (see
-- db/README.md). An invoker api function becomes security definer, owned by
-- pressroom_api, with a pinned search_path; execute goes to pressroom_request
-- (and pressroom_api, for api functions calling one another) and to nobody
-- else. Functions owned by pressroom_definer keep their owner and grants.
create function app.harden_api_functions() returns int
language plpgsql
set search_path = pg_catalog
as $$
declare
  v record;
  v_count int := 0;
begin
  for v in
    select p.oid::regprocedure as fn, p.prosecdef, pg_get_userbyid(p.proowner) as owner
    from pg_proc p
    where p.pronamespace = 'api'::regnamespace and p.prokind = 'f'
  loop
    if v.owner <> 'pressroom_definer' then
      if v.owner <> 'pressroom_api' then
        execute format('alter function %s owner to pressroom_api', v.fn);
      end if;
      if not v.prosecdef then
        execute format('alter function %s security definer', v.fn);
      end if;
      execute format('alter function %s set search_path = pg_catalog, public, pg_temp', v.fn);
      execute format('grant execute on function %s to pressroom_request, pressroom_api', v.fn);
      v_count := v_count + 1;
    end if;
    -- Definer-owned api functions keep the grants their migration gave them.
    execute format('revoke all on function %s from public', v.fn);
  end loop;
  -- Functions of app are granted by their migration to the roles that need
  -- them, never to PUBLIC.
  for v in select p.oid::regprocedure as fn from pg_proc p where p.pronamespace = 'app'::regnamespace loop
    execute format('revoke execute on function %s from public', v.fn);
  end loop;
  return v_count;
end
$$;
comment on function app.harden_api_functions() is
  'Makes every api function not owned by pressroom_definer a security definer function owned by pressroom_api with '
  'search_path pinned, executable by pressroom_request and pressroom_api only; and takes execute on app functions '
  'from PUBLIC. Every migration that adds functions ends by calling it; tests/db/07-catalog.test.sql fails when '
  'one was missed.';
