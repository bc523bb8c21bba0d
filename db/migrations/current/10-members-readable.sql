-- Members are readable by every role of the workspace; e-mail addresses are
-- private to managers.
--
-- api.list_members() needed the manager role, so a viewer (and an editor)
-- could not see who else works in the workspace, which reviews need to pick
-- approvers. Now any role may list the members. Each entry is
-- app.member_json() (committed/000001-foundation.sql) without `email` unless
-- the caller's effective role in the workspace is manager (organization
-- owners and admins are managers there; an API key has its capped role, see
-- app.api_key_workspace_roles()). Documented in openapi/paths/
-- v1_workspaces_{workspaceId}_members.yaml and README.md "Identity and access";
-- proved persona by persona in tests/db/09-members.test.sql.

create or replace function api.list_members() returns jsonb
language plpgsql stable as $$
declare
  v_sees_email boolean;
begin
  perform app.require_role('viewer');
  v_sees_email := app.current_workspace_role() = 'manager';
  return (
    select coalesce(jsonb_agg(case when v_sees_email then app.member_json(m) else app.member_json(m) - 'email' end
                              order by m.created_at, m.user_id), '[]')
    from app.workspace_members m
    where m.workspace_id = app.current_workspace_id());
end
$$;
comment on function api.list_members() is
  'Serves GET /v1/workspaces/{workspaceId}/members (listMembers_v1). The members of the workspace with their roles. '
  'Requires the viewer role; email is included only for a caller whose role in the workspace is manager.';

select app.harden_api_functions();
