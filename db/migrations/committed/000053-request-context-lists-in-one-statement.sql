--! Previous: sha1:e0581ffdd6413fd66a2c6c0d224aff84e35ea834
--! Hash: sha1:fe60d01abbdcff59aedc4d9ebde6cf9291655980
--! Message: request context lists in one statement

--! split: 01-current.sql
-- The request context in two statements again (docs/citus.md, "Request context and roles").
-- committed/000050-policy-lists-remembered-per-context.sql emptied the three remembered lists with
-- an EXECUTE of its own, a third statement on every request's path; the empties now go with the
-- nine SET LOCALs of the context, in the first one. Same settings, one statement fewer.
CREATE OR REPLACE FUNCTION app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid, p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
begin
  -- Citus hands the transaction's SET LOCALs to its workers only with propagate_set_commands;
  -- without Citus it is a placeholder setting that nothing reads. The lists the
  -- organization-level policies read are remembered per context, on first use (app.recall_ids):
  -- a new context starts without them.
  execute format('set local citus.propagate_set_commands = local; '
    'set local pressroom.actor_kind = %L; set local pressroom.user_id = %L; set local pressroom.session_id = %L; '
    'set local pressroom.api_key_id = %L; set local pressroom.review_link_id = %L; set local pressroom.organization_id = %L; '
    'set local pressroom.workspace_id = %L; set local pressroom.workspace_role = %L; set local pressroom.request_id = %L; '
    'set local pressroom.accessible_workspaces = ''''; set local pressroom.managed_workspaces = ''''; '
    'set local pressroom.administrable_api_keys = ''''',
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
$function$;
