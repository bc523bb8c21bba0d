--! Previous: sha1:725374fc4e8771129074ebf713ea7f1b4fbf652e
--! Hash: sha1:b97f2439d49172b76486bf5bd0ca00add631a949
--! Message: api key reads citus plans

--! split: 01-current.sql
-- The API key reads as Citus plans them (docs/citus.md, "Functions"). app.api_keys is a reference
-- table and app.api_key_workspaces is distributed by workspace_id; Citus refuses a subquery on
-- the distributed table correlated with a row of the reference table:
--   correlated subqueries are not supported when the FROM clause contains a reference table
-- (app.administrable_api_key_ids: "no grant outside the workspaces I manage", per key; and
-- app.api_key_json: the key's workspaces). Both now read the grants without correlation: the
-- keys with a grant outside the managed workspaces are found once, and a key's grants are read
-- by its id. Same answers on a single PostgreSQL.

-- The API keys the current user may change: all of the organization's for an owner or admin;
-- for a member, the keys whose every granted workspace the member manages.
create or replace function app.administrable_api_key_ids() returns setof uuid
  language plpgsql stable security definer set search_path to pg_catalog, app as $$
declare
  v_org uuid := app.current_organization_id();
  v_managed uuid[];
begin
  if app.current_actor_kind() is distinct from 'user' then
    return;
  end if;
  if exists (select 1 from app.users u where u.id = app.current_user_id() and u.org_role in ('owner', 'admin')) then
    return query select k.id from app.api_keys k where k.organization_id = v_org;
    return;
  end if;
  v_managed := app.managed_workspace_ids();
  return query
  select k.id from app.api_keys k
  where k.organization_id = v_org
    and k.id <> all (array(select g.api_key_id from app.api_key_workspaces g
                           where g.organization_id = v_org and not (g.workspace_id = any (v_managed))));
end
$$;

create or replace function app.api_key_json(p_id uuid, p_with_grants boolean) returns jsonb
  language plpgsql stable as $$
declare
  k record;
begin
  -- The columns the caller's role may read (not key_hash).
  select id, name, key_prefix, role, created_at, expires_at, last_used_at into k from app.api_keys where id = p_id;
  if k.id is null then
    return null;
  end if;
  return jsonb_build_object('id', k.id, 'name', k.name, 'keyPrefix', k.key_prefix, 'role', k.role,
      'createdAt', k.created_at, 'expiresAt', k.expires_at)
    || case when p_with_grants then jsonb_build_object(
      'lastUsedAt', k.last_used_at,
      'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name) order by w.name, w.id)
                              from app.api_key_workspaces g join app.workspaces w on w.id = g.workspace_id
                              where g.api_key_id = p_id), '[]'),
      'workspaceCount', (select count(*) from app.api_key_workspaces g where g.api_key_id = p_id))
    else '{}'::jsonb end;
end
$$;
