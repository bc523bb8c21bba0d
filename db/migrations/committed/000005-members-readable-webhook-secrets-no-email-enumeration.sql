--! Previous: sha1:3c98fcceb93f36e61c988d61391fcea5c1ca4aab
--! Hash: sha1:98f25d69981d28915e47d9fe0dbeaf9630e8fa0d
--! Message: members readable webhook secrets no email enumeration

--! split: 10-members-readable.sql
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

--! split: 20-webhook-secrets.sql
-- Webhook secrets follow the Standard Webhooks convention.
--
-- A new webhook integration's secret is `whsec_` followed by the base64 of 24
-- to 64 bytes of key material (https://www.standardwebhooks.com: the HMAC key
-- is the decoded bytes), so receivers pass it as is to a Standard Webhooks
-- library (`new Webhook(secret)` of the `standardwebhooks` npm package). The
-- server issues one (32 random bytes, server/platforms/webhook.ts
-- issueWebhookSecret) when the request names none, and shows it once
-- (server/routes/integrations.ts); a secret given by the caller must have the
-- same form. Integrations created earlier may hold a secret without the
-- prefix, documented then as raw: they are left as they are (the table's
-- check integrations_webhook_secret_length still admits them) and are still
-- signed with the secret's UTF-8 bytes as the key (webhookSecretKey in
-- server/platforms/webhook.ts). Proved in tests/db/09-members.test.sql
-- (section "webhook secrets") and tests/api/integrations.test.ts.

-- Length of the key material of a Standard Webhooks secret `whsec_<base64>`;
-- null when the text is not one, or its key is not 24 to 64 bytes.
create or replace function app.webhook_secret_key_length(p_secret text) returns int
language plpgsql immutable as $$
declare
  v_len int;
begin
  if p_secret is null or p_secret !~ '^whsec_[A-Za-z0-9+/]+={0,2}$' or length(p_secret) > 6 + 88 then
    return null;
  end if;
  begin
    v_len := length(decode(substr(p_secret, 7), 'base64'));
  exception when others then
    return null;
  end;
  return case when v_len between 24 and 64 then v_len end;
end
$$;
revoke all on function app.webhook_secret_key_length(text) from public;
grant execute on function app.webhook_secret_key_length(text) to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.webhook_secret_key_length(text) is
  'Bytes of key material of a Standard Webhooks secret whsec_<base64> (24 to 64), or null when the text is not such a secret; api.create_integration refuses new secrets for which it is null.';

create or replace function api.create_integration(p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb, p_webhook_url text, p_webhook_secret text)
returns jsonb
language plpgsql as $function$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
begin
  perform app.require_role('manager');
  if p_connector is null or p_connector not in ('sandbox', 'webhook') then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s; use sandbox or webhook.', coalesce(p_connector, 'null')),
      jsonb_build_object('field', 'connector', 'connectors', jsonb_build_array('sandbox', 'webhook')));
  end if;
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
  end if;
  if p_name is null or length(btrim(p_name)) not between 1 and 200 then
    perform app.raise(400, 'VALIDATION_FAILED', 'name must have 1 to 200 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.name', 'code', 'length', 'message', 'must have 1 to 200 characters'))));
  end if;
  if jsonb_typeof(v_settings) <> 'object' then
    perform app.raise(400, 'INVALID_SETTINGS', 'settings must be an object.', jsonb_build_object('field', 'settings'));
  end if;

  if p_connector = 'sandbox' then
    if p_webhook_url is not null or p_webhook_secret is not null then
      perform app.raise(400, 'VALIDATION_FAILED', 'url and secret belong to the webhook connector only.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'unexpected', 'message', 'only for connector webhook'))
                                      from unnest(array[case when p_webhook_url is not null then 'body.url' end,
                                                        case when p_webhook_secret is not null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'behavior';
    if v_bad is not null
       or (v_settings ? 'behavior' and coalesce(v_settings ->> 'behavior', '') not in ('succeed', 'fail', 'transient-then-succeed', 'unknown')) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Sandbox settings take only behavior: succeed, fail, transient-then-succeed or unknown.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('behavior', coalesce(v_settings ->> 'behavior', 'succeed'));
  else
    if p_webhook_url is null or p_webhook_secret is null then
      perform app.raise(400, 'VALIDATION_FAILED', 'The webhook connector needs url and secret.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'required', 'message', 'is required for connector webhook'))
                                      from unnest(array[case when p_webhook_url is null then 'body.url' end,
                                                        case when p_webhook_secret is null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    if length(p_webhook_url) > 2048
       or p_webhook_url !~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$' then
      perform app.raise(400, 'INVALID_WEBHOOK_URL',
        'The webhook url must be an http or https URL without credentials, at most 2048 characters.',
        jsonb_build_object('field', 'url'));
    end if;
    if app.webhook_secret_key_length(p_webhook_secret) is null then
      perform app.raise(400, 'VALIDATION_FAILED',
        'secret must be a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 random bytes (omit it and one is issued).',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'format',
          'message', 'must be whsec_ followed by the base64 of 24 to 64 bytes'))));
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'boards';
    if v_bad is not null
       or (v_settings ? 'boards' and (jsonb_typeof(v_settings -> 'boards') <> 'array'
           or jsonb_array_length(v_settings -> 'boards') > 100
           or exists (select 1 from jsonb_array_elements(v_settings -> 'boards') b
                      where jsonb_typeof(b) <> 'object' or jsonb_typeof(b -> 'id') <> 'string'
                         or jsonb_typeof(b -> 'name') <> 'string'))) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Webhook settings take only boards: up to 100 objects {id, name} with string values.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('boards', coalesce((
      select jsonb_agg(jsonb_build_object('id', b ->> 'id', 'name', b ->> 'name') order by ord)
      from jsonb_array_elements(v_settings -> 'boards') with ordinality x (b, ord)), '[]'));
  end if;

  insert into app.integrations (organization_id, workspace_id, connector, platform, name, username, settings,
    webhook_url, webhook_secret, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), p_connector, p_platform, btrim(p_name),
    nullif(btrim(p_username), ''), v_settings,
    case when p_connector = 'webhook' then p_webhook_url end,
    case when p_connector = 'webhook' then p_webhook_secret end,
    app.current_user_id())
  returning id into v_id;
  return app.integration_json(v_id, true);
end
$function$;

comment on function api.create_integration(text,text,text,text,jsonb,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a connector that needs no OAuth '
  '(sandbox, or webhook whose URL the server resolved and checked before this call, with a Standard Webhooks secret whsec_<base64 of 24 to 64 bytes>, '
  'issued by the server when the request names none) and normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, '
  'UNKNOWN_PLATFORM, INVALID_SETTINGS, INVALID_WEBHOOK_URL and VALIDATION_FAILED.';

select app.harden_api_functions();

--! split: 30-no-email-enumeration.sql
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
