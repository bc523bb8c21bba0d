--! Previous: sha1:ab46c5079157805fa29f068f8c2cfb0855a23c37
--! Hash: sha1:acfff4e27f3dbab6ed063b27518f91bf4be4e17f
--! Message: request context with set local

--! split: 02-request-context.sql
-- The request context reaches every Citus node.
--
-- A request transaction starts by setting its context (role, principal,
-- workspace, workspace role, request id). It was one statement of
-- set_config(..., true) calls (server/http/pipeline.ts, setContext). On a
-- Citus cluster the policies of a distributed table are evaluated on the
-- workers, with the workers' own settings, and Citus hands a worker only the
-- transaction's SET LOCAL commands, and only under
-- citus.propagate_set_commands = 'local'; set_config() never reaches a worker
-- (measured in docs/citus.md). So the context is now set by one function,
-- app.set_request_context, with SET LOCAL. Without Citus the settings are the
-- same transaction-local values as before.
--
-- The tenant scope of the policies, workspace_id =
-- app.current_accessible_workspace_id(), answers from a memo
-- (pressroom.accessible_workspace) when it holds the key of the current
-- context (app.context_key). app.set_request_context computes the answer once,
-- on the coordinator, and sets the memo with SET LOCAL too: to the key when
-- the principal may act in the workspace, to '!' and the key when it may not.
-- A worker then answers from the memo and never reads a table (a policy that
-- reads a table fails on a shard: "cannot execute a distributed query from a
-- query on a shard").
--
-- The role switch stays a set_config('role', ..., true): a SET LOCAL ROLE
-- would be propagated too, and Citus replays the transaction's SET LOCALs at
-- the start of every worker connection, including those it opens as the owner
-- of a security definer function (pressroom_api, pressroom_definer), which may
-- not become pressroom_request ("permission denied to set role", measured).
-- The worker connections are opened as the current role anyway.

-- The key of the context the accessibility memo is computed for: workspace,
-- organization, actor kind, user and API key as set. A context changed within
-- the transaction (another workspace, principal or key) is checked again.
create or replace function app.context_key() returns text
language sql stable parallel safe as $$
  select format('%s|%s|%s|%s|%s', current_setting('pressroom.workspace_id', true), current_setting('pressroom.organization_id', true),
                current_setting('pressroom.actor_kind', true), current_setting('pressroom.user_id', true),
                current_setting('pressroom.api_key_id', true))
$$;
comment on function app.context_key() is 'The key of the current context that the memo pressroom.accessible_workspace is kept for (workspace, organization, actor kind, user, API key as set). Used by app.current_accessible_workspace_id and app.set_request_context, so both compute it in one place.';
revoke all on function app.context_key() from public;
grant execute on function app.context_key() to pressroom_api, pressroom_definer, pressroom_worker, pressroom_app;

-- May the current principal act in the current workspace? Plain lookups, one
-- table at a time: Citus plans each as a simple query, where it refused the
-- former CTE with correlated subqueries once the tables were Citus tables
-- ("correlated subqueries are not supported when the FROM clause contains a
-- CTE or subquery"). Same meaning as before: the acting person is the
-- session's user, or the creator of a live key (not revoked, not expired)
-- granted this workspace; the person is active, of the workspace's
-- organization, and its owner or admin or a member of the workspace.
create or replace function app.current_workspace_accessible() returns boolean
language plpgsql stable security definer set search_path to 'pg_catalog', 'app' as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_kind text := app.current_actor_kind();
  v_person uuid;
  v_key_id uuid;
  v_revoked_at timestamptz;
  v_expires_at timestamptz;
  v_org uuid;
  v_org_role text;
begin
  if v_ws is null then
    return false;
  end if;
  if v_kind = 'user' then
    v_person := app.current_user_id();
  elsif v_kind = 'api_key' then
    select k.id, k.created_by, k.revoked_at, k.expires_at into v_key_id, v_person, v_revoked_at, v_expires_at
    from app.api_keys k where k.id = app.current_api_key_id();
    if v_key_id is null or v_revoked_at is not null or v_expires_at <= now() then
      return false;
    end if;
    perform 1 from app.api_key_workspaces g where g.api_key_id = v_key_id and g.workspace_id = v_ws;
    if not found then
      return false;
    end if;
  else
    return false;
  end if;
  if v_person is null then
    return false;
  end if;
  select u.organization_id, u.org_role into v_org, v_org_role
  from app.users u where u.id = v_person and u.status = 'active';
  if v_org is null then
    return false;
  end if;
  perform 1 from app.workspaces w where w.id = v_ws and w.organization_id = v_org;
  if not found then
    return false;
  end if;
  if v_org_role in ('owner', 'admin') then
    return true;
  end if;
  perform 1 from app.workspace_members m where m.workspace_id = v_ws and m.user_id = v_person;
  return found;
end
$$;
alter function app.current_workspace_accessible() owner to pressroom_definer;
comment on function app.current_workspace_accessible() is 'True when the current principal may act in the current workspace (pressroom.workspace_id): the session''s user, or the creator of a live API key granted the workspace, is active, of the workspace''s organization, and its owner or admin or a member of the workspace. Plain lookups (Citus refuses a CTE with correlated subqueries on its tables). Called once per request by app.set_request_context, and by app.current_accessible_workspace_id when its memo does not answer.';
revoke all on function app.current_workspace_accessible() from public;
grant execute on function app.current_workspace_accessible() to pressroom_api, pressroom_worker, pressroom_app;

-- Sets the memo with SET LOCAL (so Citus hands it to the workers too). Its
-- own volatile function: a stable one may not run SET ("SET is not allowed
-- in a non-volatile function"). The memo is an ordinary custom setting that
-- any role may set with set_config; this adds no power.
create or replace function app.remember_accessible_workspace(p_memo text) returns void
language plpgsql volatile parallel restricted set search_path to 'pg_catalog' as $$
begin
  execute format('set local pressroom.accessible_workspace = %L', coalesce(p_memo, ''));
end
$$;
comment on function app.remember_accessible_workspace(text) is 'Sets the memo pressroom.accessible_workspace for the transaction with SET LOCAL (propagated to Citus workers under citus.propagate_set_commands = local). Called by app.current_accessible_workspace_id and app.set_request_context.';
revoke all on function app.remember_accessible_workspace(text) from public;
grant execute on function app.remember_accessible_workspace(text) to pressroom_api, pressroom_definer, pressroom_worker, pressroom_app;

-- The workspace the policies admit.
create or replace function app.current_accessible_workspace_id() returns uuid
language plpgsql stable parallel restricted as $$
declare
  v_ws uuid := nullif(current_setting('pressroom.workspace_id', true), '')::uuid;
  v_key text;
  v_memo text;
begin
  if v_ws is null then
    return null;
  end if;
  v_key := app.context_key();
  v_memo := current_setting('pressroom.accessible_workspace', true);
  if v_memo = v_key then
    return v_ws;
  end if;
  -- Refused for this context by app.set_request_context: a worker answers without a lookup.
  if v_memo = '!' || v_key then
    return null;
  end if;
  if not app.current_workspace_accessible() then
    return null;
  end if;
  perform app.remember_accessible_workspace(v_key);
  return v_ws;
end
$$;
comment on function app.current_accessible_workspace_id() is 'The current workspace (pressroom.workspace_id) when the current principal may act in it (app.current_workspace_accessible), else null. The tenant scope of the workspace tables'' policies: workspace_id = app.current_accessible_workspace_id(). Answers from the memo pressroom.accessible_workspace when it holds app.context_key() (may act) or ''!'' and the key (may not; set by app.set_request_context only); otherwise computes the answer and, when it may act, keeps it in the memo with SET LOCAL for the transaction.';
revoke all on function app.current_accessible_workspace_id() from public;
grant execute on function app.current_accessible_workspace_id() to pressroom_api, pressroom_definer, pressroom_worker;

-- The request's context, set by the server (pressroom_app) as the first
-- statement of every request transaction.
create or replace function app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid,
  p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text) returns void
language plpgsql volatile security invoker set search_path to 'pg_catalog' as $$
begin
  -- Citus hands the transaction's SET LOCALs to its workers only with this; without Citus it is
  -- a placeholder setting that nothing reads.
  set local citus.propagate_set_commands = 'local';
  execute format('set local pressroom.actor_kind = %L', coalesce(p_actor_kind, ''));
  execute format('set local pressroom.user_id = %L', coalesce(p_user::text, ''));
  execute format('set local pressroom.session_id = %L', coalesce(p_session::text, ''));
  execute format('set local pressroom.api_key_id = %L', coalesce(p_api_key::text, ''));
  execute format('set local pressroom.review_link_id = %L', coalesce(p_review_link::text, ''));
  execute format('set local pressroom.organization_id = %L', coalesce(p_organization::text, ''));
  execute format('set local pressroom.workspace_id = %L', coalesce(p_workspace::text, ''));
  execute format('set local pressroom.workspace_role = %L', coalesce(p_role, ''));
  execute format('set local pressroom.request_id = %L', coalesce(p_request_id, ''));
  -- The accessibility of the workspace, computed once here (as pressroom_app, before the role
  -- switch), for app.current_accessible_workspace_id on every node.
  if p_workspace is null then
    perform app.remember_accessible_workspace('');
  elsif app.current_workspace_accessible() then
    perform app.remember_accessible_workspace(app.context_key());
  else
    perform app.remember_accessible_workspace('!' || app.context_key());
  end if;
  -- Last, and not with SET LOCAL: see the head of this migration.
  perform set_config('role', 'pressroom_request', true);
end
$$;
comment on function app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text) is 'The first statement of every request transaction (server/http/pipeline.ts, setContext), as pressroom_app: sets pressroom.actor_kind, user_id, session_id, api_key_id, review_link_id, organization_id, workspace_id, workspace_role and request_id (null -> '''', read as unset by app.current_*()) with SET LOCAL under citus.propagate_set_commands = local, so Citus workers get them too; sets the memo pressroom.accessible_workspace (app.current_workspace_accessible, computed once); then switches to pressroom_request with set_config(''role'', ..., true), which Citus does not propagate. Security invoker; everything is transaction-local.';
revoke all on function app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text) from public;
grant execute on function app.set_request_context(text,uuid,uuid,uuid,uuid,uuid,uuid,text,text) to pressroom_app;
-- pressroom_app reaches the function (and nothing else of app: every app function's execute is granted by name).
grant usage on schema app to pressroom_app;

select app.harden_api_functions();
