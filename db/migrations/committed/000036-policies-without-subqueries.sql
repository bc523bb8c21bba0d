--! Previous: sha1:b9ca9941821e0f59a6fda511a57e8e71b92a7686
--! Hash: sha1:12b62639ea8be5a8564180a81d24d7cdb2432423
--! Message: policies without subqueries

--! split: 01-current.sql
-- Row-level security policies without subqueries.
--
-- Policies used to wrap each context helper in a scalar subquery,
-- `workspace_id = (select app.current_workspace_id())`, so PostgreSQL would
-- evaluate it once per query (an InitPlan). Citus refuses subqueries in the
-- policies of distributed tables (docs/citus.md). Without the wrapper a
-- helper in a policy is evaluated once per row it filters (PostgreSQL never
-- hoists a security qual out of the scan), which costs nothing for the
-- `app.current_*_id()` readers (inlined to `current_setting(...)`, and taken
-- as an index key once per scan), but about 60 microseconds a row for
-- `app.current_workspace_accessible()`, which reads five tables. So the
-- tenant scope of a workspace table becomes
--
--   workspace_id = app.current_accessible_workspace_id()
--
-- the current workspace when the current principal may act in it (else null,
-- which matches no row): one comparison that an index on workspace_id takes
-- as its key, evaluated once per scan, and which otherwise answers from a
-- transaction-local memo after the first row (a few microseconds).
-- bench/scenarios/policies.ts measures the old and new policies side by side.
--
-- Every policy is rewritten here from the catalog, with the same meaning:
--
--   (select app.f())                      -> app.f()
--   col in (select unnest(app.f()))       -> col = any (app.f())
--   id in (select app.administrable_api_key_ids())
--                                         -> app.api_key_administrable(id)
--   (workspace_id = app.current_workspace_id()) and (rank >= 1)
--     and app.current_workspace_accessible()
--                                         -> (workspace_id = app.current_accessible_workspace_id()) and (rank >= 1)
--
-- The one policy whose subquery was a lookup, inbox_reads_api_own ("threads
-- the principal can see": an EXISTS on app.inbox_threads under its policies),
-- now reads the workspace from the row: app.inbox_reads carries the thread's
-- workspace_id, held to it by a foreign key on (workspace_id, thread_id), and
-- the policy states the thread policy's conditions on it.
-- tests/db/10-distributable.test.sql fails on any policy with a subquery.

-- The workspace the policies admit.
create or replace function app.current_accessible_workspace_id() returns uuid
language plpgsql stable parallel restricted as $$
declare
  v_ws uuid := nullif(current_setting('pressroom.workspace_id', true), '')::uuid;
  v_key text;
begin
  if v_ws is null then
    return null;
  end if;
  -- The memo holds the context it was computed for, so a context changed within the
  -- transaction (another workspace, principal or key) is checked again.
  v_key := concat_ws('|', v_ws, current_setting('pressroom.organization_id', true), current_setting('pressroom.actor_kind', true),
                     current_setting('pressroom.user_id', true), current_setting('pressroom.api_key_id', true));
  if current_setting('pressroom.accessible_workspace', true) = v_key then
    return v_ws;
  end if;
  if not app.current_workspace_accessible() then
    return null;
  end if;
  perform set_config('pressroom.accessible_workspace', v_key, true);
  return v_ws;
end
$$;
revoke all on function app.current_accessible_workspace_id() from public;
grant execute on function app.current_accessible_workspace_id() to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.current_accessible_workspace_id() is 'The current workspace (pressroom.workspace_id) when the current principal may act in it (app.current_workspace_accessible), else null. The tenant scope of the workspace tables'' policies: workspace_id = app.current_accessible_workspace_id(). The answer is kept for the transaction in pressroom.accessible_workspace, with the context it was computed for.';

-- inbox_reads carries its thread's workspace.
alter table app.inbox_reads add column if not exists workspace_id uuid;
update app.inbox_reads r set workspace_id = t.workspace_id
from app.inbox_threads t where t.id = r.thread_id and r.workspace_id is null;
alter table app.inbox_reads alter column workspace_id set not null;
create unique index if not exists inbox_threads_workspace_id_id_key on app.inbox_threads (workspace_id, id);
alter table app.inbox_reads drop constraint if exists inbox_reads_thread_id_fkey;
alter table app.inbox_reads drop constraint if exists inbox_reads_workspace_thread_fkey;
alter table app.inbox_reads add constraint inbox_reads_workspace_thread_fkey
  foreign key (workspace_id, thread_id) references app.inbox_threads (workspace_id, id) on delete cascade;
comment on column app.inbox_reads.workspace_id is 'The thread''s workspace (foreign key on (workspace_id, thread_id)); policy inbox_reads_api_own reads it.';

drop policy if exists inbox_reads_api_own on app.inbox_reads;
create policy inbox_reads_api_own on app.inbox_reads for all to pressroom_api
  using (organization_id = app.current_organization_id() and workspace_id = app.current_accessible_workspace_id()
         and principal_id = app.current_principal_id() and app.role_rank(app.current_workspace_role()) >= 1)
  with check (organization_id = app.current_organization_id() and workspace_id = app.current_accessible_workspace_id()
              and principal_id = app.current_principal_id() and app.role_rank(app.current_workspace_role()) >= 1);

create or replace function api.mark_inbox_thread(p_id uuid, p_read boolean)
 returns jsonb
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'public', 'pg_temp'
as $function$
declare
  v app.inbox_threads;
  v_at timestamptz;
begin
  perform app.require_role('viewer');
  v := app.inbox_thread(p_id);
  if app.current_principal_id() is null then
    perform app.raise(403, 'ROLE_REQUIRED', 'Read state belongs to a member or API key.');
  end if;
  if p_read then
    v_at := greatest(now(), (select max(created_at) from app.inbox_messages where thread_id = p_id));
  else
    -- Unread from the newest inbound message on (none: nothing is unread).
    v_at := (select max(created_at) from app.inbox_messages
             where thread_id = p_id and direction = 'inbound' and has_original) - interval '1 microsecond';
    v_at := coalesce(v_at, now());
  end if;
  insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
  values (p_id, app.current_principal_id(), app.current_organization_id(), v.workspace_id, v_at)
  on conflict (thread_id, principal_id) do update set read_at = excluded.read_at, updated_at = now();
  return app.inbox_thread_json(v);
end
$function$;

-- Whether the current user may change an API key, for the api_keys update
-- policy: the rule stays in app.administrable_api_key_ids().
create or replace function app.api_key_administrable(p_key uuid) returns boolean
language sql stable security definer set search_path = pg_catalog, app as $$
  select p_key in (select app.administrable_api_key_ids())
$$;
alter function app.api_key_administrable(uuid) owner to pressroom_definer;
revoke all on function app.api_key_administrable(uuid) from public;
grant execute on function app.api_key_administrable(uuid) to pressroom_api, pressroom_worker;
comment on function app.api_key_administrable(uuid) is 'Whether the current user may change this API key (app.administrable_api_key_ids), for policy api_keys_api_update.';

-- The policies a new tenant table gets, in the same form.
create or replace function app.apply_tenant_policies(p_table regclass, p_commands text[] DEFAULT ARRAY['select'::text, 'insert'::text, 'update'::text, 'delete'::text], p_write_role text DEFAULT 'editor'::text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
declare
  v_name text := (select relname from pg_class where oid = p_table);
  v_policy record;
  v_write int := app.role_rank(p_write_role);
  -- No subqueries (Citus refuses them in policies): app.current_accessible_workspace_id()
  -- is the context's workspace only when the principal may really use it.
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
$function$;

-- Every policy, rewritten from the catalog.
do $$
declare
  p record;
  v_using text;
  v_check text;
  v_sql text;
begin
  for p in
    select c.oid as relid, n.nspname, c.relname, pol.polname,
           pg_get_expr(pol.polqual, pol.polrelid) as qual,
           pg_get_expr(pol.polwithcheck, pol.polrelid) as with_check
    from pg_policy pol
    join pg_class c on c.oid = pol.polrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname not in ('pg_catalog', 'information_schema')
    order by n.nspname, c.relname, pol.polname
  loop
    v_using := p.qual;
    v_check := p.with_check;
    v_using := regexp_replace(v_using, '(\w+) IN \( SELECT app\.administrable_api_key_ids\(\) AS \w+\)', 'app.api_key_administrable(\1)', 'g');
    v_check := regexp_replace(v_check, '(\w+) IN \( SELECT app\.administrable_api_key_ids\(\) AS \w+\)', 'app.api_key_administrable(\1)', 'g');
    v_using := regexp_replace(v_using, '\( SELECT (app\.\w+\(\)) AS \w+\)', '\1', 'g');
    v_check := regexp_replace(v_check, '\( SELECT (app\.\w+\(\)) AS \w+\)', '\1', 'g');
    v_using := regexp_replace(v_using, '(\w+) IN \( SELECT unnest\((app\.\w+\(\))\) AS unnest\)', '\1 = ANY (\2)', 'g');
    v_check := regexp_replace(v_check, '(\w+) IN \( SELECT unnest\((app\.\w+\(\))\) AS unnest\)', '\1 = ANY (\2)', 'g');
    v_using := replace(v_using, '(workspace_id = app.current_workspace_id()) AND (app.role_rank(app.current_workspace_role()) >= 1) AND app.current_workspace_accessible()',
                       '(workspace_id = app.current_accessible_workspace_id()) AND (app.role_rank(app.current_workspace_role()) >= 1)');
    v_check := replace(v_check, '(workspace_id = app.current_workspace_id()) AND (app.role_rank(app.current_workspace_role()) >= 1) AND app.current_workspace_accessible()',
                       '(workspace_id = app.current_accessible_workspace_id()) AND (app.role_rank(app.current_workspace_role()) >= 1)');
    if v_using ~* '\mselect\M' or v_check ~* '\mselect\M' then
      raise exception 'policy %.% on % still holds a subquery after the rewrite: % / %',
        p.nspname, p.polname, p.relname, v_using, v_check;
    end if;
    if v_using is distinct from p.qual or v_check is distinct from p.with_check then
      v_sql := format('alter policy %I on %I.%I', p.polname, p.nspname, p.relname);
      if v_using is not null then v_sql := v_sql || format(' using (%s)', v_using); end if;
      if v_check is not null then v_sql := v_sql || format(' with check (%s)', v_check); end if;
      execute v_sql;
    end if;
  end loop;
end
$$;
