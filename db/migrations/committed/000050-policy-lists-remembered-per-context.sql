--! Previous: sha1:fe7669ccc11273fee49dc902ef740107f91c08c8
--! Hash: sha1:725374fc4e8771129074ebf713ea7f1b4fbf652e
--! Message: policy lists remembered per context

--! split: 01-current.sql
-- The organization-level policies without table reads on the workers (docs/citus.md,
-- "Functions"). Three policy functions read tables: app.accessible_workspace_ids() and
-- app.managed_workspace_ids() (the workspaces the principal may use or manage: api_key_workspaces,
-- workspaces) and app.api_key_administrable(uuid) (api_keys). On a distributed database a policy
-- runs where the rows are, on a worker's shard, and a table read there is a distributed query
-- inside a query on a shard, which Citus refuses:
--   cannot execute a distributed query from a query on a shard
--   (CONTEXT: ... function managed_workspace_ids(), on INSERT INTO app.api_key_workspaces_102144)
-- As app.set_request_context does for the workspace's accessibility (committed/000040), each list
-- is now computed once per context on the coordinator and remembered with SET LOCAL, which Citus
-- hands to the workers (citus.propagate_set_commands = local): `context key=list`. A function
-- that writes under these policies reads the list first (api.create_api_key already does;
-- api.list_api_keys and api.revoke_api_key now do), so the policy on the shard reads the memo.
-- The memo is keyed by app.context_key() and emptied by app.set_request_context, so a new
-- principal or workspace never reads another's list. On a worker with no memo for the context
-- the function reads the tables as before, and Citus refuses it: the policy fails closed.

-- The remembered list of this context in setting p_setting, or null when there is none.
create or replace function app.recall_ids(p_setting text) returns uuid[]
  language plpgsql stable parallel restricted set search_path to pg_catalog as $$
declare
  v_memo text := current_setting(p_setting, true);
  v_key text := app.context_key() || '=';
begin
  if v_memo is null or left(v_memo, length(v_key)) <> v_key then
    return null;
  end if;
  return substr(v_memo, length(v_key) + 1)::uuid[];
end
$$;
comment on function app.recall_ids(text) is 'The list of ids remembered in setting p_setting for the current context (app.context_key()), or null; see app.remember_ids.';

-- Remembers p_ids for this context in setting p_setting, with SET LOCAL (which Citus hands to
-- the workers).
create or replace function app.remember_ids(p_setting text, p_ids uuid[]) returns uuid[]
  language plpgsql parallel restricted set search_path to pg_catalog as $$
begin
  execute format('set local %s = %L', p_setting, app.context_key() || '=' || coalesce(p_ids, '{}')::text);
  return p_ids;
end
$$;
comment on function app.remember_ids(text, uuid[]) is 'Remembers a list of ids for the current context in setting p_setting (SET LOCAL, propagated to Citus workers); returns the list.';
revoke all on function app.recall_ids(text) from public;
revoke all on function app.remember_ids(text, uuid[]) from public;
grant execute on function app.recall_ids(text) to pressroom_api, pressroom_definer, pressroom_worker;
grant execute on function app.remember_ids(text, uuid[]) to pressroom_api, pressroom_definer, pressroom_worker;

create or replace function app.accessible_workspace_ids() returns uuid[]
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
begin
  return coalesce(app.recall_ids('pressroom.accessible_workspaces'),
    app.remember_ids('pressroom.accessible_workspaces',
      (select coalesce(array_agg(workspace_id), '{}') from app.principal_workspace_roles())));
end
$$;

create or replace function app.managed_workspace_ids() returns uuid[]
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
begin
  return coalesce(app.recall_ids('pressroom.managed_workspaces'),
    app.remember_ids('pressroom.managed_workspaces',
      (select coalesce(array_agg(workspace_id), '{}') from app.principal_workspace_roles() where role = 'manager')));
end
$$;

-- The API keys the current user may change (app.administrable_api_key_ids), as a list.
create or replace function app.administrable_api_key_id_list() returns uuid[]
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
begin
  return coalesce(app.recall_ids('pressroom.administrable_api_keys'),
    app.remember_ids('pressroom.administrable_api_keys', array(select app.administrable_api_key_ids())));
end
$$;
alter function app.administrable_api_key_id_list() owner to pressroom_definer;
comment on function app.administrable_api_key_id_list() is 'The API keys the current user may change (app.administrable_api_key_ids), remembered for the context (app.remember_ids), for policy api_keys_api_update on every node.';
revoke all on function app.administrable_api_key_id_list() from public;
grant execute on function app.administrable_api_key_id_list() to pressroom_api, pressroom_worker;

create or replace function app.api_key_administrable(p_key uuid) returns boolean
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
begin
  return p_key = any (app.administrable_api_key_id_list());
end
$$;

CREATE OR REPLACE FUNCTION app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid, p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
begin
  -- Citus hands the transaction's SET LOCALs to its workers only with propagate_set_commands;
  -- without Citus it is a placeholder setting that nothing reads.
  execute format('set local citus.propagate_set_commands = local; '
    'set local pressroom.actor_kind = %L; set local pressroom.user_id = %L; set local pressroom.session_id = %L; '
    'set local pressroom.api_key_id = %L; set local pressroom.review_link_id = %L; set local pressroom.organization_id = %L; '
    'set local pressroom.workspace_id = %L; set local pressroom.workspace_role = %L; set local pressroom.request_id = %L',
    coalesce(p_actor_kind, ''), coalesce(p_user::text, ''), coalesce(p_session::text, ''), coalesce(p_api_key::text, ''),
    coalesce(p_review_link::text, ''), coalesce(p_organization::text, ''), coalesce(p_workspace::text, ''),
    coalesce(p_role, ''), coalesce(p_request_id, ''));
  -- The accessibility of the workspace, computed once here (as pressroom_app, before the role
  -- switch), for app.current_accessible_workspace_id on every node: the context's key when the
  -- principal may act in it, '!' and the key when it may not.
  execute format('set local pressroom.accessible_workspace = %L',
    case when p_workspace is null then ''
         when app.current_workspace_accessible() then app.context_key()
         else '!' || app.context_key() end);
  -- The lists the organization-level policies read are remembered per context, on first use
  -- (app.recall_ids); a new context starts without them.
  execute 'set local pressroom.accessible_workspaces = ''''; set local pressroom.managed_workspaces = ''''; '
    'set local pressroom.administrable_api_keys = ''''';
  -- Last, and not with SET LOCAL (committed/000040-request-context-with-set-local.sql says why).
  perform set_config('role', 'pressroom_request', true);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_api_keys()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_session();
  perform app.require_role('manager');
  return (
    select coalesce(jsonb_agg(app.api_key_json(k.id, true) order by k.created_at desc, k.id), '[]')
    from app.api_keys k
    where k.id = any (app.administrable_api_key_id_list())
      and k.revoked_at is null and (k.expires_at is null or k.expires_at > now()));
end
$function$;

CREATE OR REPLACE FUNCTION api.revoke_api_key(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_ids uuid[];
begin
  perform app.require_session();
  perform app.require_role('manager');
  v_ids := app.administrable_api_key_id_list();
  update app.api_keys set revoked_at = now(), revoked_by = app.current_user_id()
  where id = p_id and revoked_at is null
    and id = any (v_ids)
  returning id into v_id;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No active API key with this id that you may administer.',
      jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v_id, 'revoked', true);
end
$function$;


-- An API key's roles: the key's grants and its creator's roles, read one after the other on the
-- coordinator. Joined in one query, the creator's roles (app.user_workspace_roles, which reads
-- tables) were computed per row on the shards of app.api_key_workspaces, where Citus refuses the
-- read ("cannot execute a distributed query from a query on a shard").
create or replace function app.api_key_workspace_roles(p_api_key_id uuid)
  returns table(workspace_id uuid, role text)
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
#variable_conflict use_column
declare
  v_key app.api_keys;
  v_granted uuid[];
begin
  select * into v_key from app.api_keys k
  where k.id = p_api_key_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
  if v_key.id is null then
    return;
  end if;
  v_granted := array(select g.workspace_id from app.api_key_workspaces g where g.api_key_id = p_api_key_id);
  return query
  select c.workspace_id,
         case when app.role_rank(v_key.role) <= app.role_rank(c.role) then v_key.role else c.role end
  from app.user_workspace_roles(v_key.created_by) c
  where c.workspace_id = any (v_granted);
end
$$;
