-- No cross-organization e-mail enumeration.
--
-- api.add_member answered 409 EMAIL_TAKEN for an address of another
-- organization's user and 201 for an unknown one, and sign-up answered 409
-- EMAIL_TAKEN for a taken address: both told a caller that an address has an
-- account somewhere. Now:
--
-- * An invitation is not an account. Addresses are unique among accounts
--   (status active or disabled: index users_email_key, now partial) and
--   within an organization (index users_organization_email_key); invited
--   users of several organizations may share an address with each other and
--   with one account. So adding a member by an address that is not a user of
--   this organization always invites a user of this organization, whether or
--   not the address has an account elsewhere: api.add_member never looks
--   outside the caller's organization, answers 201 with the same shape in
--   both cases, and leaves the other account untouched. The invitation is
--   accepted when an administrator sets its password (`pressroom
--   reset-password`, server/cli/pressroom.ts); while the address has an
--   account elsewhere that activation is refused by users_email_key (a person
--   has one account).
-- * Sign-up with an address that has an account answers 403 SIGNUP_REFUSED,
--   which names no reason (db/ERRORS.md); an address that is only invited
--   somewhere may sign up. Sign-up creates a session at once and the server
--   sends no e-mail, so on a server with open sign-up the refusal itself is
--   the one thing a caller learns (README.md "Identity and access").
--
-- Proved in tests/db/09-members.test.sql and tests/api/members.test.ts,
-- tests/api/auth.test.ts.

drop index app.users_email_key;
create unique index users_email_key on app.users (lower(email)) where status <> 'invited';
create unique index users_organization_email_key on app.users (organization_id, lower(email));
comment on index app.users_email_key is
  'An address belongs to at most one account (an active or disabled user) on the server, ignoring case; invitations are not accounts.';
comment on index app.users_organization_email_key is
  'An address is at most one user (account or invitation) of an organization, ignoring case.';
comment on table app.users is
  'A person with an account in exactly one organization, or an invitation of an organization, with an organization role (owner, admin, member) '
  'and a status (an active user has a password hash, an invited one has none). An address is one account on the server (index users_email_key, '
  'invitations excepted) and one user per organization (index users_organization_email_key), ignoring case. A request sees its organization''s '
  'users (policy users_api_select) and may only add invited members without a password (policy users_api_insert, used by api.add_member).';

create or replace function api.add_member(p_email text, p_role text) returns jsonb
language plpgsql as $$
declare
  v_user record;
  v_member app.workspace_members;
begin
  perform app.require_role('manager');
  -- The request sees only its organization's users (policy users_api_select):
  -- what happens next never depends on other organizations.
  select id into v_user from app.users where lower(email) = lower(p_email);
  if v_user.id is null then
    -- Not a user of this organization: invite one, whether or not the
    -- address has an account elsewhere (an invitation is not an account).
    begin
      insert into app.users (organization_id, email, org_role, status)
      values (app.current_organization_id(), p_email, 'member', 'invited')
      returning id into v_user;
    exception when unique_violation then
      -- Only users_organization_email_key can refuse an invitation: a
      -- concurrent request invited the same address into this organization.
      select id into v_user from app.users where lower(email) = lower(p_email);
    end;
  end if;
  if exists (select 1 from app.workspace_members
             where workspace_id = app.current_workspace_id() and user_id = v_user.id) then
    perform app.raise(409, 'ALREADY_MEMBER', 'This user is already a member of the workspace; PATCH the member to change the role.',
      jsonb_build_object('userId', v_user.id));
  end if;
  insert into app.workspace_members (workspace_id, user_id, organization_id, role)
  values (app.current_workspace_id(), v_user.id, app.current_organization_id(), p_role)
  returning * into v_member;
  return app.member_json(v_member);
end
$$;
comment on function api.add_member(text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/members (addMember_v1). Adds a user of the organization to the workspace with a role, inviting a '
  'new user of the organization when the address is not one of its users, whether or not it has an account in another organization (nothing '
  'outside the caller''s organization is looked at). Requires the manager role; raises 409 ALREADY_MEMBER.';

create or replace function app.signup_with_policy(p_email text, p_password_hash text, p_organization_name text, p_workspace_name text,
  p_session_token_hash bytea, p_session_ttl_seconds integer, p_allow_signup boolean, p_plan text, p_trial_days integer default 3)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_org app.organizations;
  v_user app.users;
  v_ws app.workspaces;
  v_session app.sessions;
  v_refused constant text := 'Sign-up is not possible with these details. If you have an account, sign in; '
    'otherwise ask an administrator of your organization to add you.';
begin
  -- One sign-up at a time decides whether the install is still empty.
  perform pg_advisory_xact_lock(hashtext('pressroom.signup'));
  if not p_allow_signup and exists (select 1 from app.organizations) then
    perform app.raise(403, 'SIGNUP_CLOSED',
      'Sign-up is closed on this server; ask an administrator for an account (ALLOW_SIGNUP=true opens it).');
  end if;
  -- An address with an account (active or disabled) cannot sign up again;
  -- the refusal names no reason. Invitations are not accounts.
  if exists (select 1 from app.users where lower(email) = lower(p_email) and status <> 'invited') then
    perform app.raise(403, 'SIGNUP_REFUSED', v_refused);
  end if;
  insert into app.organizations (name, plan, trial_ends_at)
  values (p_organization_name, p_plan,
          case when p_plan = 'trial' then now() + make_interval(days => p_trial_days) end)
  returning * into v_org;
  begin
    insert into app.users (organization_id, email, password_hash, org_role, status)
    values (v_org.id, p_email, p_password_hash, 'owner', 'active')
    returning * into v_user;
  exception when unique_violation then
    perform app.raise(403, 'SIGNUP_REFUSED', v_refused);
  end;
  insert into app.workspaces (organization_id, name) values (v_org.id, p_workspace_name)
  returning * into v_ws;
  insert into app.workspace_members (workspace_id, user_id, organization_id, role)
  values (v_ws.id, v_user.id, v_org.id, 'manager');
  insert into app.sessions (user_id, organization_id, token_hash, expires_at)
  values (v_user.id, v_org.id, p_session_token_hash, now() + make_interval(secs => p_session_ttl_seconds))
  returning * into v_session;
  return jsonb_build_object(
    'user', app.user_json(v_user),
    'organization', app.organization_json(v_org),
    'workspace', app.workspace_json(v_ws, 'manager'),
    'session', jsonb_build_object('token', null, 'expiresAt', v_session.expires_at));
end
$$;
comment on function app.signup_with_policy(text,text,text,text,bytea,integer,boolean,text,integer) is
  'Sign-up''s body with the policy given; called by api.signup with the settings in force. Raises 403 SIGNUP_CLOSED, and 403 SIGNUP_REFUSED '
  '(no reason named) for an address that has an account.';
comment on function api.signup(text,text,text,text,bytea) is
  'Serves POST /v1/auth/signup (signup_v1): creates an organization with the plan in force (default_plan, trial_days), its owner, a first '
  'workspace and a session. After the first organization, refused with 403 SIGNUP_CLOSED unless allow_signup is on; an address that has an '
  'account is refused with 403 SIGNUP_REFUSED, which names no reason.';

select app.harden_api_functions();
