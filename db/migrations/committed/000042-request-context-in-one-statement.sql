--! Previous: sha1:f4e7c91bef308d483b4c2b7c8fb0efa088e449dd
--! Hash: sha1:4e453d790ddfa4412c9cf80078d731afddf23ac8
--! Message: request context in one statement

--! split: 01-current.sql
-- The request context in one statement.
--
-- app.set_request_context (committed/000040-request-context-with-set-local.sql)
-- ran ten EXECUTEs and a function call for its SET LOCALs, on every request.
-- One EXECUTE of the nine SET LOCALs (PL/pgSQL runs a string of several
-- commands; Citus sees each SET LOCAL as before), and one for the memo of the
-- workspace's accessibility, do the same: 0.64 against 0.80 to 0.85 ms for
-- begin, context and rollback (pgbench, PostgreSQL 15, one client).
-- app.remember_accessible_workspace stays for app.current_accessible_workspace_id.
create or replace function app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid,
  p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text) returns void
language plpgsql volatile security invoker set search_path to 'pg_catalog' as $$
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
  -- Last, and not with SET LOCAL (committed/000040-request-context-with-set-local.sql says why).
  perform set_config('role', 'pressroom_request', true);
end
$$;
comment on function app.remember_accessible_workspace(text) is 'Sets the memo pressroom.accessible_workspace for the transaction with SET LOCAL (propagated to Citus workers under citus.propagate_set_commands = local). Called by app.current_accessible_workspace_id when it computed the answer itself; app.set_request_context sets the memo in its own statement.';
