--! Previous: sha1:e26469709913aae50b1e360dac80af2bb5b86422
--! Hash: sha1:87a2beed31ba046a4e3855e623fb2664951753f1
--! Message: connected accounts

--! split: 10-connected-accounts.sql
-- Connected accounts (docs/connectors.md): the connectors the server has,
-- operators' platform apps, the OAuth flow's states, accounts waiting for a
-- choice, and each integration's encrypted credentials with its connection
-- state. Ciphertexts are made and read by the server (server/platforms/vault.ts,
-- a key that never enters the database); the database keeps who may reach them:
-- none of these tables is granted to requests or BI, and the functions that
-- touch them are owned by pressroom_definer.
--
-- Idempotent: re-run on every migrate during development.

-- 1. The connectors, declared from the registry (server/platforms/index.ts) --
create table if not exists app.connectors (
  name text primary key,
  platforms text[] not null,
  connect text not null,
  declared_at timestamptz not null default now(),
  -- 1 to 31 characters: the draft's {1,30} refused x, a one-letter connector.
  constraint connectors_name_check check (name ~ '^[a-z][a-z0-9_]{0,30}$'),
  constraint connectors_connect_check check (connect in ('oauth', 'password', 'none')),
  constraint connectors_platforms_check check (cardinality(platforms) >= 1)
);
alter table app.connectors drop constraint if exists connectors_name_check;
alter table app.connectors add constraint connectors_name_check check (name ~ '^[a-z][a-z0-9_]{0,30}$');
comment on table app.connectors is 'The connectors this server has (server/platforms/index.ts is the one list; app.declare_connectors writes it after every migration, server/db/migrate.ts), the platforms each publishes to and how an account is connected (oauth, password, none). app.integrations.connector references it. Not tenant data: requests read it through api functions, the worker reads it.';
alter table app.connectors enable row level security;
alter table app.connectors force row level security;
drop policy if exists connectors_read on app.connectors;
create policy connectors_read on app.connectors for select to pressroom_api, pressroom_worker using (true);
drop policy if exists connectors_definer on app.connectors;
create policy connectors_definer on app.connectors for all to pressroom_definer using (true) with check (true);
grant select on app.connectors to pressroom_api, pressroom_worker;
grant select, insert, update, delete on app.connectors to pressroom_definer;

-- The two connectors every server had before the registry declared them, so
-- the foreign key below holds on a database that never ran the server yet.
insert into app.connectors (name, platforms, connect) values
  ('sandbox', (select array_agg(code order by code) from app.platforms), 'none'),
  ('webhook', (select array_agg(code order by code) from app.platforms), 'none')
on conflict (name) do nothing;

alter table app.integrations drop constraint if exists integrations_connector_check;
alter table app.integrations drop constraint if exists integrations_connector_fkey;
alter table app.integrations add constraint integrations_connector_fkey foreign key (connector) references app.connectors (name);

create or replace function app.declare_connectors(p_connectors jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v jsonb;
  v_names text[] := '{}';
  v_bad text;
  v_changed int := 0;
  v_rows int;
  v_kept text[];
begin
  -- p_connectors: [{"name", "platforms": [...], "connect": "oauth" | "password" | "none"}, ...]
  if jsonb_typeof(p_connectors) is distinct from 'array' then
    raise exception 'declare_connectors: an array of {name, platforms, connect}';
  end if;
  for v in select * from jsonb_array_elements(p_connectors) loop
    select p into v_bad from jsonb_array_elements_text(v -> 'platforms') p
    where not exists (select 1 from app.platforms where code = p) limit 1;
    if v_bad is not null then
      raise exception 'declare_connectors: connector % names unknown platform %', v ->> 'name', v_bad;
    end if;
    insert into app.connectors as c (name, platforms, connect)
    values (v ->> 'name', array(select jsonb_array_elements_text(v -> 'platforms') order by 1), v ->> 'connect')
    on conflict (name) do update set platforms = excluded.platforms, connect = excluded.connect, declared_at = now()
    where (c.platforms, c.connect) is distinct from (excluded.platforms, excluded.connect);
    get diagnostics v_rows = row_count;
    v_changed := v_changed + v_rows;
    v_names := v_names || (v ->> 'name');
  end loop;
  -- A connector no longer in the registry goes, unless integrations still name it.
  delete from app.connectors c where c.name <> all (v_names)
    and not exists (select 1 from app.integrations i where i.connector = c.name);
  select array_agg(name order by name) into v_kept from app.connectors where name <> all (v_names);
  return jsonb_build_object('declared', to_jsonb(v_names), 'changed', v_changed, 'retiredButUsed', coalesce(to_jsonb(v_kept), '[]'));
end
$$;
alter function app.declare_connectors(jsonb) owner to pressroom_definer;
comment on function app.declare_connectors(jsonb) is 'Writes app.connectors from the registry (server/platforms/index.ts, connectorDeclarations): upserts each {name, platforms, connect}, drops a connector no longer listed unless an integration still names it. Called by server/db/migrate.ts after migrating, as the owner.';
revoke all on function app.declare_connectors(jsonb) from public;

-- 2. Connection state of an integration --------------------------------------
alter table app.integrations add column if not exists account_id text;
alter table app.integrations add column if not exists instance_url text;
alter table app.integrations add column if not exists connection_state text not null default 'ok';
alter table app.integrations add column if not exists connection_reason text;
alter table app.integrations add column if not exists connection_changed_at timestamptz;
alter table app.integrations drop constraint if exists integrations_connection_state_check;
alter table app.integrations add constraint integrations_connection_state_check check (connection_state in ('ok', 'reconnect_required'));
alter table app.integrations drop constraint if exists integrations_connection_reason_check;
alter table app.integrations add constraint integrations_connection_reason_check check (connection_reason is null or length(connection_reason) <= 1000);
alter table app.integrations drop constraint if exists integrations_account_id_check;
alter table app.integrations add constraint integrations_account_id_check check (account_id is null or length(account_id) between 1 and 512);
alter table app.integrations drop constraint if exists integrations_instance_url_check;
-- An origin (scheme, host, port), no path: https://mastodon.social
alter table app.integrations add constraint integrations_instance_url_check check (instance_url is null or (length(instance_url) <= 2048 and instance_url ~* '^https?://[^/?#@[:space:]]+$'));
-- One live integration per platform account in a workspace.
create unique index if not exists integrations_account_key on app.integrations (workspace_id, connector, coalesce(instance_url, ''), account_id)
  where deleted_at is null and account_id is not null;
comment on table app.integrations is 'A connected account (channel) of a workspace: its connector (one of app.connectors: sandbox, webhook, or a platform connector of the registry), platform, name and settings; a platform account''s id, instance and connection state (its credentials are in app.integration_credentials, engine-only); a webhook integration also keeps its URL and signing secret, which pressroom_api may insert but never read. Tenant policies of app.apply_tenant_policies (select, insert, update; writes need editor, the api functions manager); never deleted by a request: api.delete_integration sets deleted_at.';
comment on column app.integrations.account_id is 'The platform''s id of the connected account (X user id, LinkedIn person or organization URN, Mastodon account id, Bluesky DID); null for sandbox and webhook. A reconnect must bring back the same account (409 RECONNECT_ACCOUNT_MISMATCH).';
comment on column app.integrations.instance_url is 'The origin of the account''s own server (Mastodon instance, Bluesky PDS); null where the platform is one service.';
comment on column app.integrations.connection_state is 'ok, or reconnect_required (the platform refused the grant for good: revoked, expired, invalid_grant), with connection_reason; editions due meanwhile fail with that reason and can be retried after a reconnect. expiring and refresh_failing are derived from app.integration_credentials (app.integration_connection_json).';
grant select (account_id, instance_url, connection_state, connection_reason, connection_changed_at) on app.integrations to pressroom_api;

-- 3. Operators' platform apps --------------------------------------------------
create table if not exists app.platform_apps (
  id uuid primary key default gen_random_uuid(),
  connector text not null references app.connectors (name) on delete cascade,
  -- '' for an operator's app; the instance's origin for an app registered on a user's instance (Mastodon).
  instance text not null default '',
  client_id text not null,
  secret_ciphertext bytea,
  source text not null,
  redirect_uri text,
  scopes text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint platform_apps_source_check check (source in ('admin', 'registered')),
  constraint platform_apps_instance_check check (instance = '' or (length(instance) <= 2048 and instance ~* '^https?://[^/?#@[:space:]]+$')),
  constraint platform_apps_source_instance_check check ((source = 'admin') = (instance = '')),
  constraint platform_apps_client_id_check check (length(client_id) between 1 and 512),
  constraint platform_apps_secret_check check (secret_ciphertext is null or length(secret_ciphertext) between 34 and 8192),
  constraint platform_apps_redirect_uri_check check (redirect_uri is null or length(redirect_uri) <= 2048),
  constraint platform_apps_key unique (connector, instance)
);
comment on table app.platform_apps is 'Platform apps (OAuth clients): an operator''s (instance '''', set with `npx pressroom platform-app set`; X_CLIENT_ID and the like in the environment take precedence and are never stored) and the apps Pressroom registered on users'' instances (Mastodon, POST /api/v1/apps; instance = its origin, redirect_uri the callback it was registered with), reused for every later connection to that instance. The client secret is a vault ciphertext bound to platform-app:<id>. Server-wide, not tenant data; reached by pressroom_definer functions only.';
alter table app.platform_apps enable row level security;
alter table app.platform_apps force row level security;
drop policy if exists platform_apps_definer on app.platform_apps;
create policy platform_apps_definer on app.platform_apps for all to pressroom_definer using (true) with check (true);
grant select, insert, update, delete on app.platform_apps to pressroom_definer;
drop trigger if exists platform_apps_10_set_updated_at on app.platform_apps;
create trigger platform_apps_10_set_updated_at before update on app.platform_apps for each row execute function app.tg_set_updated_at();

-- 4. OAuth states ----------------------------------------------------------------
-- Tenant tables (workspace_id) get app.apply_tenant_policies with no request
-- command: the scope policy the catalog test wants, and nothing a request can
-- use (no grant to pressroom_api either).
create table if not exists app.oauth_states (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  state_hash bytea not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  user_id uuid references app.users (id) on delete cascade,
  api_key_id uuid references app.api_keys (id) on delete cascade,
  connector text not null references app.connectors (name) on delete cascade,
  platform text not null references app.platforms (code),
  instance_url text,
  platform_app_id uuid references app.platform_apps (id) on delete cascade,
  redirect_uri text not null,
  return_to text not null,
  integration_id uuid references app.integrations (id) on delete cascade,
  verifier_ciphertext bytea,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  consumed_at timestamptz,
  completed_at timestamptz,
  constraint oauth_states_pkey primary key (workspace_id, state_hash),
  constraint oauth_states_hash_check check (length(state_hash) = 32),
  constraint oauth_states_principal_check check (user_id is not null or api_key_id is not null),
  constraint oauth_states_redirect_uri_check check (length(redirect_uri) <= 2048),
  constraint oauth_states_return_to_check check (length(return_to) <= 2048 and return_to ~* '^https?://'),
  constraint oauth_states_verifier_check check (verifier_ciphertext is null or length(verifier_ciphertext) between 34 and 1024)
);
comment on table app.oauth_states is 'One started connection (POST {ws}/integrations/connect or .../reconnect): the SHA-256 of the state the platform hands back (the state itself is <workspace id>.<43 base64url characters>, so the row is found in its workspace), who started it, the PKCE verifier (vault ciphertext bound to oauth-state:<hash hex>), the platform app, where the browser goes back to, and the integration a reconnect is for. Taken once (consumed_at) by the callback within 10 minutes (expires_at), then completed (completed_at) by api.oauth_complete; purged an hour after expiry (app.purge_expired). Engine-only: reached through pressroom_definer functions.';
create index if not exists oauth_states_expires_idx on app.oauth_states (expires_at);
create index if not exists oauth_states_organization_id_idx on app.oauth_states (organization_id);
select app.apply_tenant_policies('app.oauth_states', '{}');
revoke all on app.oauth_states from pressroom_worker;

-- 5. Accounts waiting for a choice (LinkedIn pages, Facebook pages...) --------------
create table if not exists app.pending_connections (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  user_id uuid references app.users (id) on delete cascade,
  api_key_id uuid references app.api_keys (id) on delete cascade,
  connector text not null references app.connectors (name) on delete cascade,
  platform text not null references app.platforms (code),
  instance_url text,
  -- [{integrationId, accountId, username, name, kind, avatarUrl, profileUrl}]: public fields only.
  accounts jsonb not null,
  -- One vault ciphertext per account, in the order of accounts, each bound to integration:<its integrationId>.
  credentials bytea[] not null,
  -- Per account, what app.integration_credentials keeps in clear: {keyVersion, expiresAt, refreshExpiresAt, refreshable, hasRefreshToken}.
  credential_meta jsonb not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  constraint pending_connections_pkey primary key (workspace_id, id),
  constraint pending_connections_principal_check check (user_id is not null or api_key_id is not null),
  constraint pending_connections_accounts_check check (jsonb_typeof(accounts) = 'array' and jsonb_array_length(accounts) between 1 and 500),
  constraint pending_connections_credentials_check check (cardinality(credentials) = jsonb_array_length(accounts)
    and jsonb_typeof(credential_meta) = 'array' and jsonb_array_length(credential_meta) = jsonb_array_length(accounts))
);
comment on table app.pending_connections is 'A consent that covers several accounts (LinkedIn: the member and the organization pages they administer): the accounts (public fields only, each with the integration id it will get) and one vault ciphertext per account, bound to integration:<that id>, so choosing moves ciphertexts without the server decrypting anything; until the user chooses (api.choose_pending_connection: one integration per chosen account) or it expires (30 minutes, app.purge_expired). Engine-only.';
create index if not exists pending_connections_expires_idx on app.pending_connections (expires_at);
create index if not exists pending_connections_organization_id_idx on app.pending_connections (organization_id);
select app.apply_tenant_policies('app.pending_connections', '{}');
revoke all on app.pending_connections from pressroom_worker;

-- 6. Credentials -----------------------------------------------------------------------
create table if not exists app.integration_credentials (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  ciphertext bytea not null,
  key_version int not null,
  expires_at timestamptz,
  refresh_expires_at timestamptz,
  refreshable boolean not null,
  has_refresh_token boolean not null default false,
  refreshed_at timestamptz,
  refresh_failures int not null default 0,
  last_refresh_error text,
  next_refresh_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint integration_credentials_pkey primary key (workspace_id, integration_id),
  constraint integration_credentials_integration_key unique (integration_id),
  constraint integration_credentials_ciphertext_check check (length(ciphertext) between 34 and 65536),
  constraint integration_credentials_key_version_check check (key_version between 1 and 65535),
  constraint integration_credentials_failures_check check (refresh_failures >= 0),
  constraint integration_credentials_error_check check (last_refresh_error is null or length(last_refresh_error) <= 1000)
);
comment on table app.integration_credentials is 'A connected account''s tokens (access, refresh, expiry, scopes, and what the connector keeps with them), as one vault ciphertext bound to integration:<id> (server/platforms/vault.ts, AES-256-GCM, key_version for rotation), with the expiry times in clear for the refresh job and has_refresh_token so that no write replaces a refresh token with none (409 REFRESH_TOKEN_DROPPED). Never granted to requests or BI, never in an answer, a log, an audit row or an idempotency replay: written by pressroom_definer functions (connect, reconnect, the worker''s credentials_store), read by the worker (app.credentials_for, app.credentials_lock).';
create index if not exists integration_credentials_refresh_idx on app.integration_credentials (next_refresh_at) where refreshable;
create index if not exists integration_credentials_organization_id_idx on app.integration_credentials (organization_id);
select app.apply_tenant_policies('app.integration_credentials', '{}');
revoke all on app.integration_credentials from pressroom_worker;
grant select on app.integration_credentials to pressroom_worker;
drop trigger if exists integration_credentials_10_set_updated_at on app.integration_credentials;
create trigger integration_credentials_10_set_updated_at before update on app.integration_credentials for each row execute function app.tg_set_updated_at();

-- ===========================================================================
-- Helpers
-- ===========================================================================

-- The request's principal must be a manager of the context's workspace (definer-owned
-- functions bypass the tenant policies, so they check what the policies would).
create or replace function app.connect_require_manager() returns void
language plpgsql stable security definer set search_path = pg_catalog, app as $$
begin
  perform app.require_role('manager');
  if not app.current_workspace_accessible() then
    perform app.raise(403, 'ROLE_REQUIRED', 'This operation needs the manager role in this workspace.',
      jsonb_build_object('requiredRole', 'manager', 'role', null));
  end if;
end
$$;
alter function app.connect_require_manager() owner to pressroom_definer;
revoke all on function app.connect_require_manager() from public;

-- The role a principal (a user, or an API key capped by its creator) holds in a workspace now.
create or replace function app.principal_role_in(p_user uuid, p_key uuid, p_ws uuid) returns text
language sql stable security definer set search_path = pg_catalog, app as $$
  select case
    when p_key is not null then (select r.role from app.api_key_workspace_roles(p_key) r where r.workspace_id = p_ws)
    else (select r.role from app.user_workspace_roles(p_user) r
          join app.users u on u.id = p_user and u.status = 'active'
          where r.workspace_id = p_ws)
  end
$$;
alter function app.principal_role_in(uuid, uuid, uuid) owner to pressroom_definer;
revoke all on function app.principal_role_in(uuid, uuid, uuid) from public;

-- The connection part of an integration's JSON: never a secret.
create or replace function app.integration_connection_json(p_id uuid, p_ws uuid) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object(
    'accountId', i.account_id,
    'instanceUrl', i.instance_url,
    'connectionState', case
      when i.connection_state = 'reconnect_required' then 'reconnect_required'
      when c.refresh_failures > 0 then 'refresh_failing'
      when c.integration_id is not null
           and (case when c.refreshable and c.has_refresh_token then c.refresh_expires_at else c.expires_at end) < now() + interval '7 days'
        then 'expiring'
      else 'ok' end,
    'connectionReason', case
      when i.connection_state = 'reconnect_required' then i.connection_reason
      when c.refresh_failures > 0 then c.last_refresh_error
      else null end,
    'credentialsExpireAt', case when c.refreshable and c.has_refresh_token then c.refresh_expires_at else c.expires_at end)
  from app.integrations i
  left join app.integration_credentials c on c.workspace_id = i.workspace_id and c.integration_id = i.id
  where i.id = p_id and i.workspace_id = p_ws
$$;
alter function app.integration_connection_json(uuid, uuid) owner to pressroom_definer;
comment on function app.integration_connection_json(uuid, uuid) is 'An integration''s connection for its JSON: accountId, instanceUrl, connectionState (ok; expiring: the hard expiry, the refresh token''s or a token that cannot be refreshed, is within 7 days; refresh_failing: the last refreshes failed and are retried; reconnect_required), connectionReason and credentialsExpireAt. No secret. Called by app.integration_json with the workspace of a row the caller could read.';
revoke all on function app.integration_connection_json(uuid, uuid) from public;
grant execute on function app.integration_connection_json(uuid, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create or replace function app.integration_json(p_id uuid, p_detail boolean default false) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', i.id,
    'connector', i.connector,
    'platform', i.platform,
    'name', i.name,
    'username', i.username,
    'status', i.status,
    'content', jsonb_build_object('canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
    'createdAt', i.created_at,
    'updatedAt', i.updated_at)
    || app.integration_connection_json(i.id, i.workspace_id)
    || case when p_detail then jsonb_build_object(
      'platformName', p.name,
      'rules', app.platform_rules_json(i.platform),
      'capabilities', app.platform_capabilities_json(i.platform),
      'settings', i.settings,
      'webhookUrl', i.webhook_url)
    else '{}'::jsonb end
  from app.integrations i
  join app.platforms p on p.code = i.platform
  where i.id = p_id
$$;
grant execute on function app.integration_json(uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;
revoke all on function app.integration_json(uuid, boolean) from public;

-- A credential given as JSON by the server: {ciphertext (base64), keyVersion, expiresAt,
-- refreshExpiresAt, refreshable, hasRefreshToken}. Writes it for an integration; refuses to
-- replace a stored refresh token with none.
create or replace function app.credentials_put(p_integration uuid, p_credential jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_integ app.integrations;
  v_old app.integration_credentials;
  v_cipher bytea;
  v_expires timestamptz := (p_credential ->> 'expiresAt')::timestamptz;
  v_refreshable boolean := coalesce((p_credential ->> 'refreshable')::boolean, false);
  v_has_refresh boolean := coalesce((p_credential ->> 'hasRefreshToken')::boolean, false);
begin
  if jsonb_typeof(p_credential) is distinct from 'object' or jsonb_typeof(p_credential -> 'ciphertext') is distinct from 'string'
     or jsonb_typeof(p_credential -> 'keyVersion') is distinct from 'number' then
    perform app.raise(400, 'VALIDATION_FAILED', 'A credential is {ciphertext, keyVersion, expiresAt, refreshExpiresAt, refreshable, hasRefreshToken}.');
  end if;
  v_cipher := decode(p_credential ->> 'ciphertext', 'base64');
  select * into v_integ from app.integrations where id = p_integration;
  if v_integ.id is null then
    perform app.raise_not_found('integration', p_integration);
  end if;
  select * into v_old from app.integration_credentials where integration_id = p_integration for update;
  if v_old.integration_id is not null and v_old.has_refresh_token and not v_has_refresh then
    perform app.raise(409, 'REFRESH_TOKEN_DROPPED',
      'The stored refresh token would be replaced with none; the server keeps the stored one when the platform sends no new one.',
      jsonb_build_object('integrationId', p_integration));
  end if;
  insert into app.integration_credentials as c (workspace_id, integration_id, organization_id, ciphertext, key_version,
    expires_at, refresh_expires_at, refreshable, has_refresh_token, refreshed_at, refresh_failures, last_refresh_error, next_refresh_at)
  values (v_integ.workspace_id, v_integ.id, v_integ.organization_id, v_cipher, (p_credential ->> 'keyVersion')::int,
    v_expires, (p_credential ->> 'refreshExpiresAt')::timestamptz, v_refreshable, v_has_refresh, now(), 0, null,
    case when v_refreshable and v_expires is not null then v_expires - interval '10 minutes' end)
  on conflict (workspace_id, integration_id) do update set ciphertext = excluded.ciphertext, key_version = excluded.key_version,
    expires_at = excluded.expires_at, refresh_expires_at = excluded.refresh_expires_at, refreshable = excluded.refreshable,
    has_refresh_token = excluded.has_refresh_token, refreshed_at = now(), refresh_failures = 0, last_refresh_error = null,
    next_refresh_at = excluded.next_refresh_at;
end
$$;
alter function app.credentials_put(uuid, jsonb) owner to pressroom_definer;
comment on function app.credentials_put(uuid, jsonb) is 'Stores an integration''s credential ({ciphertext base64, keyVersion, expiresAt, refreshExpiresAt, refreshable, hasRefreshToken}; the ciphertext bound to integration:<id>), clearing the refresh failures and planning the next refresh 10 minutes before expiry; 409 REFRESH_TOKEN_DROPPED when a stored refresh token would be replaced with none.';
revoke all on function app.credentials_put(uuid, jsonb) from public;

-- Creates or reconnects the integration of one account. p_account: {integrationId, accountId,
-- username, name, credential}. p_target: the integration a reconnect is for (null: a new one).
create or replace function app.connection_save(p_org uuid, p_ws uuid, p_created_by uuid, p_connector text, p_platform text,
  p_instance_url text, p_target uuid, p_account jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_integ app.integrations;
  v_id uuid;
  v_account text := p_account ->> 'accountId';
  v_name text := left(coalesce(nullif(btrim(p_account ->> 'name'), ''), nullif(btrim(p_account ->> 'username'), ''), v_account), 200);
  v_username text := left(nullif(btrim(p_account ->> 'username'), ''), 200);
begin
  if v_account is null or length(v_account) not between 1 and 512 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The platform named no account id.');
  end if;
  if p_target is not null then
    select * into v_integ from app.integrations where id = p_target and workspace_id = p_ws and deleted_at is null for update;
    if v_integ.id is null then
      perform app.raise_not_found('integration', p_target);
    end if;
    if (v_integ.account_id is not null and v_integ.account_id <> v_account)
       or coalesce(v_integ.instance_url, '') <> coalesce(p_instance_url, '') then
      perform app.raise(409, 'RECONNECT_ACCOUNT_MISMATCH',
        format('The platform account signed in (%s) is not the account of this integration; sign in as %s, or connect the other account as a new integration.',
               coalesce(v_username, v_account), coalesce(v_integ.username, v_integ.account_id)),
        jsonb_build_object('integrationId', v_integ.id, 'expectedAccountId', v_integ.account_id, 'accountId', v_account));
    end if;
    update app.integrations set account_id = v_account, username = coalesce(v_username, username),
      connection_state = 'ok', connection_reason = null,
      connection_changed_at = case when connection_state <> 'ok' then now() else connection_changed_at end
    where id = v_integ.id;
    perform app.credentials_put(v_integ.id, p_account -> 'credential');
    return jsonb_build_object('integrationId', v_integ.id, 'reconnected', true);
  end if;
  select id into v_id from app.integrations
  where workspace_id = p_ws and connector = p_connector and coalesce(instance_url, '') = coalesce(p_instance_url, '')
    and account_id = v_account and deleted_at is null;
  if v_id is not null then
    perform app.raise(409, 'ACCOUNT_ALREADY_CONNECTED',
      format('The account %s is connected in this workspace already; reconnect that integration instead (POST .../integrations/%s/reconnect).',
             coalesce(v_username, v_account), v_id),
      jsonb_build_object('integrationId', v_id, 'accountId', v_account));
  end if;
  insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, username, settings, created_by,
    account_id, instance_url, connection_state, connection_changed_at)
  values (coalesce((p_account ->> 'integrationId')::uuid, gen_random_uuid()), p_org, p_ws, p_connector, p_platform, v_name, v_username,
    '{}', p_created_by, v_account, p_instance_url, 'ok', now())
  returning id into v_id;
  perform app.credentials_put(v_id, p_account -> 'credential');
  return jsonb_build_object('integrationId', v_id, 'reconnected', false);
end
$$;
alter function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) owner to pressroom_definer;
comment on function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) is 'The one place a connected account becomes an integration: a reconnect (p_target) updates the same account only (409 RECONNECT_ACCOUNT_MISMATCH), sets connection_state ok and stores the new credential; a new connection refuses an account already connected in the workspace (409 ACCOUNT_ALREADY_CONNECTED) and creates the integration with the id its credential is bound to. Called by api.oauth_complete, api.choose_pending_connection and api.connect_with_password.';
revoke all on function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) from public;

-- Resolves the connector of a platform for a connection: the given one, or the one connectable connector of the platform.
create or replace function app.connect_connector(p_platform text, p_connector text) returns app.connectors
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  v app.connectors;
  v_n int;
begin
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
  end if;
  if p_connector is not null then
    select * into v from app.connectors where name = p_connector;
    if v.name is null then
      perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s.', p_connector),
        jsonb_build_object('field', 'connector', 'connectors', (select jsonb_agg(name order by name) from app.connectors)));
    end if;
    if p_platform <> all (v.platforms) then
      perform app.raise(400, 'PLATFORM_NOT_SUPPORTED', format('The connector %s does not publish to %s.', v.name, p_platform),
        jsonb_build_object('field', 'platform', 'connector', v.name, 'platforms', to_jsonb(v.platforms)));
    end if;
    return v;
  end if;
  select count(*) into v_n from app.connectors where p_platform = any (platforms) and connect <> 'none';
  if v_n = 0 then
    perform app.raise(400, 'PLATFORM_NOT_SUPPORTED', format('No connector of this server connects %s accounts yet.', p_platform),
      jsonb_build_object('field', 'platform', 'platform', p_platform));
  elsif v_n > 1 then
    perform app.raise(400, 'CONNECTOR_REQUIRED', format('Several connectors connect %s accounts; name one in connector.', p_platform),
      jsonb_build_object('field', 'connector', 'connectors', (select jsonb_agg(name order by name) from app.connectors
                                                               where p_platform = any (platforms) and connect <> 'none')));
  end if;
  select * into v from app.connectors where p_platform = any (platforms) and connect <> 'none';
  return v;
end
$$;
alter function app.connect_connector(text, text) owner to pressroom_definer;
revoke all on function app.connect_connector(text, text) from public;

-- ===========================================================================
-- What requests call
-- ===========================================================================

create or replace function api.list_connectors() returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform app.require_role('viewer');
  return jsonb_build_object(
    'connectors', coalesce((
      select jsonb_agg(jsonb_build_object('connector', c.name, 'platforms', to_jsonb(c.platforms), 'connect', c.connect,
        'operatorApp', exists (select 1 from app.platform_apps a where a.connector = c.name and a.instance = ''))
        order by c.name)
      from app.connectors c), '[]'),
    'platformNames', (select jsonb_object_agg(code, name) from app.platforms));
end
$$;
alter function api.list_connectors() owner to pressroom_definer;
comment on function api.list_connectors() is 'Serves GET /v1/workspaces/{workspaceId}/platforms (listPlatforms_v1), which adds the server''s view of the environment: {connectors: [{connector, platforms, connect, operatorApp}], platformNames: {code: name}}; operatorApp says whether an operator app is stored for the connector (never the app itself). Any role.';
grant execute on function api.list_connectors() to pressroom_request, pressroom_api;
revoke all on function api.list_connectors() from public;

create or replace function api.connect_prepare(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_conn app.connectors;
  v_integ app.integrations;
  v_instance text := p_instance_url;
  v_app app.platform_apps;
begin
  perform app.connect_require_manager();
  if p_integration_id is not null then
    select * into v_integ from app.integrations
    where id = p_integration_id and workspace_id = app.current_workspace_id() and deleted_at is null;
    if v_integ.id is null then
      perform app.raise_not_found('integration', p_integration_id);
    end if;
    select * into v_conn from app.connectors where name = v_integ.connector;
    if v_conn.connect = 'none' then
      perform app.raise(409, 'RECONNECT_NOT_APPLICABLE', format('A %s integration has no platform account to reconnect.', v_integ.connector),
        jsonb_build_object('integrationId', v_integ.id, 'connector', v_integ.connector));
    end if;
    v_instance := v_integ.instance_url;
  else
    v_conn := app.connect_connector(p_platform, p_connector);
  end if;
  if v_conn.connect = 'none' then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector needs no platform sign-in: create the integration with POST .../integrations.', v_conn.name),
      jsonb_build_object('connector', v_conn.name));
  end if;
  select * into v_app from app.platform_apps where connector = v_conn.name and instance = coalesce(v_instance, '');
  return jsonb_build_object('connector', v_conn.name, 'connect', v_conn.connect,
    'platform', coalesce(v_integ.platform, p_platform), 'platforms', to_jsonb(v_conn.platforms),
    'integrationId', v_integ.id, 'instanceUrl', v_instance,
    'app', case when v_app.id is not null then jsonb_build_object('id', v_app.id, 'clientId', v_app.client_id,
      'redirectUri', v_app.redirect_uri, 'source', v_app.source, 'scopes', to_jsonb(v_app.scopes)) end);
end
$$;
alter function api.connect_prepare(text, text, uuid, text) owner to pressroom_definer;
comment on function api.connect_prepare(text, text, uuid, text) is 'Serves the first phase of POST /v1/workspaces/{workspaceId}/integrations/connect, .../integrations/{id}/reconnect and .../integrations/connect-password: manager role; resolves the connector (the one connectable connector of the platform unless named; 400 UNKNOWN_PLATFORM, UNKNOWN_CONNECTOR, PLATFORM_NOT_SUPPORTED, CONNECTOR_REQUIRED, CONNECT_FLOW_NOT_APPLICABLE), or the integration a reconnect is for (404, 409 RECONNECT_NOT_APPLICABLE), and the stored platform app of the connector and instance (client id and redirect URI, never the secret).';
grant execute on function api.connect_prepare(text, text, uuid, text) to pressroom_request, pressroom_api;
revoke all on function api.connect_prepare(text, text, uuid, text) from public;

create or replace function api.connect_begin(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text,
  p_state_hash bytea, p_verifier_ciphertext bytea, p_redirect_uri text, p_return_to text, p_app jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_connector text := v ->> 'connector';
  v_instance text := v ->> 'instanceUrl';
  v_app_id uuid;
  v_expires timestamptz := now() + interval '10 minutes';
begin
  if v ->> 'connect' <> 'oauth' then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector signs in with a password: use POST .../integrations/connect-password.', v_connector),
      jsonb_build_object('connector', v_connector));
  end if;
  if p_state_hash is null or length(p_state_hash) <> 32 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The state hash is the SHA-256 of the state (32 bytes).');
  end if;
  if p_app is not null and p_app ? 'secretCiphertext' then
    -- An app the server just registered on the instance (Mastodon): replaces one registered
    -- there before for another callback URL (its unfinished connections go with it).
    v_app_id := (p_app ->> 'id')::uuid;
    delete from app.platform_apps where connector = v_connector and instance = coalesce(v_instance, '') and source = 'registered';
    insert into app.platform_apps (id, connector, instance, client_id, secret_ciphertext, source, redirect_uri, scopes)
    values (v_app_id, v_connector, coalesce(v_instance, ''), p_app ->> 'clientId', decode(p_app ->> 'secretCiphertext', 'base64'),
      'registered', p_app ->> 'redirectUri', array(select jsonb_array_elements_text(coalesce(p_app -> 'scopes', '[]'))));
  elsif p_app is not null then
    v_app_id := (p_app ->> 'id')::uuid;
    if v_app_id is distinct from (v -> 'app' ->> 'id')::uuid then
      perform app.raise(409, 'PLATFORM_APP_CHANGED', 'The platform app changed while the connection started; start again.');
    end if;
  end if;
  insert into app.oauth_states (workspace_id, state_hash, organization_id, user_id, api_key_id, connector, platform, instance_url,
    platform_app_id, redirect_uri, return_to, integration_id, verifier_ciphertext, expires_at)
  values (app.current_workspace_id(), p_state_hash, app.current_organization_id(), app.current_user_id(), app.current_api_key_id(),
    v_connector, v ->> 'platform', v_instance, v_app_id, p_redirect_uri, p_return_to, p_integration_id, p_verifier_ciphertext, v_expires);
  return jsonb_build_object('connector', v_connector, 'platform', v ->> 'platform', 'integrationId', p_integration_id,
    'instanceUrl', v_instance, 'expiresAt', v_expires);
end
$$;
alter function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) owner to pressroom_definer;
comment on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) is 'Serves the last phase of POST /v1/workspaces/{workspaceId}/integrations/connect and .../integrations/{id}/reconnect: the checks of api.connect_prepare again, then stores the state (its SHA-256, the PKCE verifier''s ciphertext, redirect URI, return URL, who started it) for 10 minutes, and the app the server registered on the instance when p_app brings one ({id, clientId, secretCiphertext, redirectUri, scopes}); p_app {id} names the stored operator app used (409 PLATFORM_APP_CHANGED when it changed), null the app from the environment. 400 CONNECT_FLOW_NOT_APPLICABLE for a password connector.';
grant execute on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) to pressroom_request, pressroom_api;
revoke all on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) from public;

create or replace function api.oauth_take_state(p_workspace_id uuid, p_state_hash bytea, p_connector text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.oauth_states;
  v_app app.platform_apps;
  v_cred app.integration_credentials;
begin
  select * into v from app.oauth_states where workspace_id = p_workspace_id and state_hash = p_state_hash for update;
  if v.state_hash is null then
    return jsonb_build_object('found', false, 'reason', 'state_unknown');
  end if;
  if v.consumed_at is not null then
    return jsonb_build_object('found', false, 'reason', 'state_used', 'returnTo', v.return_to);
  end if;
  update app.oauth_states set consumed_at = now() where workspace_id = v.workspace_id and state_hash = v.state_hash;
  if v.expires_at <= now() then
    return jsonb_build_object('found', false, 'reason', 'state_expired', 'returnTo', v.return_to);
  end if;
  if v.connector <> p_connector and v.platform <> p_connector then
    return jsonb_build_object('found', false, 'reason', 'state_unknown', 'returnTo', v.return_to);
  end if;
  if v.platform_app_id is not null then
    select * into v_app from app.platform_apps where id = v.platform_app_id;
  end if;
  if v.integration_id is not null then
    select * into v_cred from app.integration_credentials where workspace_id = v.workspace_id and integration_id = v.integration_id;
  end if;
  return jsonb_build_object('found', true, 'workspaceId', v.workspace_id, 'organizationId', v.organization_id,
    'userId', v.user_id, 'apiKeyId', v.api_key_id, 'connector', v.connector, 'platform', v.platform,
    'instanceUrl', v.instance_url, 'redirectUri', v.redirect_uri, 'returnTo', v.return_to, 'integrationId', v.integration_id,
    'verifierCiphertext', encode(v.verifier_ciphertext, 'base64'), 'stateHashHex', encode(v.state_hash, 'hex'),
    'app', case when v_app.id is not null then jsonb_build_object('id', v_app.id, 'clientId', v_app.client_id,
      'secretCiphertext', encode(v_app.secret_ciphertext, 'base64')) end,
    'currentCredential', case when v_cred.integration_id is not null then jsonb_build_object(
      'ciphertext', encode(v_cred.ciphertext, 'base64'), 'keyVersion', v_cred.key_version) end);
end
$$;
alter function api.oauth_take_state(uuid, bytea, text) owner to pressroom_definer;
comment on function api.oauth_take_state(uuid, bytea, text) is 'Serves GET /v1/oauth/callback/{platform} (server/routes/connections.ts, no bearer): takes the state found in its workspace by its SHA-256, once: {found: false, reason: state_unknown | state_used | state_expired} (a state is used up by its first callback, expired or not), or the context the connection started with (principal, connector, platform, instance, redirect URI, return URL, the integration of a reconnect), the PKCE verifier''s and the platform app secret''s ciphertexts, and for a reconnect the stored credential''s ciphertext (so a refresh token the platform does not send again is kept). Owned by pressroom_definer, executable by pressroom_app only.';
grant execute on function api.oauth_take_state(uuid, bytea, text) to pressroom_app;
revoke all on function api.oauth_take_state(uuid, bytea, text) from public;

create or replace function api.oauth_complete(p_workspace_id uuid, p_state_hash bytea, p_accounts jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.oauth_states;
  v_integ app.integrations;
  v_role text;
  v_account jsonb;
  v_pending uuid;
  v_saved jsonb;
  v_creator uuid;
begin
  select * into v from app.oauth_states where workspace_id = p_workspace_id and state_hash = p_state_hash for update;
  if v.state_hash is null or v.consumed_at is null then
    perform app.raise(404, 'STATE_UNKNOWN', 'No connection was started with this state.');
  end if;
  if v.completed_at is not null then
    perform app.raise(409, 'STATE_USED', 'This connection was completed already.');
  end if;
  update app.oauth_states set completed_at = now() where workspace_id = v.workspace_id and state_hash = v.state_hash;
  -- Whoever started it must still be a manager of the workspace.
  v_role := app.principal_role_in(v.user_id, v.api_key_id, v.workspace_id);
  if app.role_rank(v_role) < app.role_rank('manager') then
    perform app.raise(403, 'ROLE_REQUIRED', 'The one who started this connection is no longer a manager of the workspace.',
      jsonb_build_object('requiredRole', 'manager', 'role', v_role));
  end if;
  if jsonb_typeof(p_accounts) is distinct from 'array' or jsonb_array_length(p_accounts) = 0 then
    perform app.raise(502, 'NO_ACCOUNT', 'The platform named no account for this sign-in.');
  end if;
  v_creator := coalesce(v.user_id, (select created_by from app.api_keys where id = v.api_key_id));
  if v.integration_id is not null then
    select * into v_integ from app.integrations where id = v.integration_id;
    select a into v_account from jsonb_array_elements(p_accounts) a where a ->> 'accountId' = v_integ.account_id;
    v_saved := app.connection_save(v.organization_id, v.workspace_id, v_creator, v.connector, v.platform, v.instance_url,
      v.integration_id, coalesce(v_account, p_accounts -> 0));
    return jsonb_build_object('returnTo', v.return_to, 'integrationId', v_saved ->> 'integrationId', 'reconnected', true);
  end if;
  if jsonb_array_length(p_accounts) = 1 then
    v_saved := app.connection_save(v.organization_id, v.workspace_id, v_creator, v.connector, v.platform, v.instance_url,
      null, p_accounts -> 0);
    return jsonb_build_object('returnTo', v.return_to, 'integrationId', v_saved ->> 'integrationId', 'reconnected', false);
  end if;
  insert into app.pending_connections (workspace_id, organization_id, user_id, api_key_id, connector, platform, instance_url,
    accounts, credentials, credential_meta, expires_at)
  values (v.workspace_id, v.organization_id, v.user_id, v.api_key_id, v.connector, v.platform, v.instance_url,
    (select jsonb_agg(jsonb_build_object('integrationId', a ->> 'integrationId', 'accountId', a ->> 'accountId',
       'username', a -> 'username', 'name', a -> 'name', 'kind', a -> 'kind', 'avatarUrl', a -> 'avatarUrl',
       'profileUrl', a -> 'profileUrl') order by o) from jsonb_array_elements(p_accounts) with ordinality x (a, o)),
    array(select decode(a #>> '{credential,ciphertext}', 'base64') from jsonb_array_elements(p_accounts) with ordinality x (a, o) order by o),
    (select jsonb_agg((a -> 'credential') - 'ciphertext' order by o) from jsonb_array_elements(p_accounts) with ordinality x (a, o)),
    now() + interval '30 minutes')
  returning id into v_pending;
  return jsonb_build_object('returnTo', v.return_to, 'pendingConnectionId', v_pending, 'reconnected', false);
end
$$;
alter function api.oauth_complete(uuid, bytea, jsonb) owner to pressroom_definer;
comment on function api.oauth_complete(uuid, bytea, jsonb) is 'Serves the end of GET /v1/oauth/callback/{platform}: completes a taken state once (404 STATE_UNKNOWN, 409 STATE_USED), re-checks that its user or key is still a manager of the workspace (403 ROLE_REQUIRED), then through app.connection_save creates the integration of the one account or reconnects the state''s integration (409 RECONNECT_ACCOUNT_MISMATCH, ACCOUNT_ALREADY_CONNECTED), or keeps several accounts as a pending connection for 30 minutes. p_accounts: [{integrationId, accountId, username, name, kind, avatarUrl, profileUrl, credential: {ciphertext (base64, bound to integration:<integrationId>), keyVersion, expiresAt, refreshExpiresAt, refreshable, hasRefreshToken}}]. Owned by pressroom_definer, executable by pressroom_app only.';
grant execute on function api.oauth_complete(uuid, bytea, jsonb) to pressroom_app;
revoke all on function api.oauth_complete(uuid, bytea, jsonb) from public;

create or replace function api.get_pending_connection(p_id uuid) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.pending_connections;
begin
  perform app.connect_require_manager();
  select * into v from app.pending_connections where workspace_id = app.current_workspace_id() and id = p_id and expires_at > now();
  if v.id is null then
    perform app.raise_not_found('pending connection', p_id);
  end if;
  return jsonb_build_object('id', v.id, 'connector', v.connector, 'platform', v.platform, 'instanceUrl', v.instance_url,
    'expiresAt', v.expires_at, 'createdAt', v.created_at,
    'accounts', (select jsonb_agg(jsonb_build_object('accountId', a ->> 'accountId', 'username', a -> 'username', 'name', a -> 'name',
        'kind', a -> 'kind', 'avatarUrl', a -> 'avatarUrl', 'profileUrl', a -> 'profileUrl',
        'integrationId', (select i.id from app.integrations i where i.workspace_id = v.workspace_id and i.connector = v.connector
                            and coalesce(i.instance_url, '') = coalesce(v.instance_url, '') and i.account_id = a ->> 'accountId'
                            and i.deleted_at is null)) order by o)
      from jsonb_array_elements(v.accounts) with ordinality x (a, o)));
end
$$;
alter function api.get_pending_connection(uuid) owner to pressroom_definer;
comment on function api.get_pending_connection(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/pending-connections/{id} (getPendingConnection_v1): the accounts one consent covers, each with the integration that already holds it (integrationId) or null. Manager role; 404 when unknown or expired.';
grant execute on function api.get_pending_connection(uuid) to pressroom_request, pressroom_api;
revoke all on function api.get_pending_connection(uuid) from public;

create or replace function api.choose_pending_connection(p_id uuid, p_account_ids text[]) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.pending_connections;
  v_unknown text[];
  v_account text;
  v_saved jsonb;
  v_ids uuid[] := '{}';
  v_i int;
begin
  perform app.connect_require_manager();
  select * into v from app.pending_connections where workspace_id = app.current_workspace_id() and id = p_id and expires_at > now() for update;
  if v.id is null then
    perform app.raise_not_found('pending connection', p_id);
  end if;
  if p_account_ids is null or cardinality(p_account_ids) = 0 then
    perform app.raise(400, 'VALIDATION_FAILED', 'Choose at least one account.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.accountIds', 'code', 'minItems', 'message', 'choose at least one account'))));
  end if;
  select array_agg(x) into v_unknown from unnest(p_account_ids) x
  where not exists (select 1 from jsonb_array_elements(v.accounts) a where a ->> 'accountId' = x);
  if v_unknown is not null then
    perform app.raise(400, 'UNKNOWN_ACCOUNT', 'This consent does not cover these accounts.', jsonb_build_object('accountIds', to_jsonb(v_unknown)));
  end if;
  for v_account in select distinct x from unnest(p_account_ids) x order by 1 loop
    select o::int into v_i from jsonb_array_elements(v.accounts) with ordinality y (a, o) where a ->> 'accountId' = v_account;
    v_saved := app.connection_save(v.organization_id, v.workspace_id, coalesce(v.user_id, (select created_by from app.api_keys where id = v.api_key_id)),
      v.connector, v.platform, v.instance_url, null,
      (v.accounts -> (v_i - 1)) || jsonb_build_object('credential',
        (v.credential_meta -> (v_i - 1)) || jsonb_build_object('ciphertext', encode(v.credentials[v_i], 'base64'))));
    v_ids := v_ids || (v_saved ->> 'integrationId')::uuid;
  end loop;
  delete from app.pending_connections where workspace_id = v.workspace_id and id = v.id;
  return (select jsonb_agg(app.integration_json(x, true) order by o) from unnest(v_ids) with ordinality u (x, o));
end
$$;
alter function api.choose_pending_connection(uuid, text[]) owner to pressroom_definer;
comment on function api.choose_pending_connection(uuid, text[]) is 'Serves POST /v1/workspaces/{workspaceId}/pending-connections/{id}/choose (choosePendingConnection_v1): one integration per chosen account, with the credential the consent gave it (app.connection_save: 409 ACCOUNT_ALREADY_CONNECTED), then the pending connection is gone. Manager role; 404 when unknown or expired; 400 UNKNOWN_ACCOUNT.';
grant execute on function api.choose_pending_connection(uuid, text[]) to pressroom_request, pressroom_api;
revoke all on function api.choose_pending_connection(uuid, text[]) from public;

create or replace function api.connect_with_password(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text, p_account jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_saved jsonb;
begin
  if v ->> 'connect' <> 'password' then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector signs in through the platform: use POST .../integrations/connect.', v ->> 'connector'),
      jsonb_build_object('connector', v ->> 'connector'));
  end if;
  v_saved := app.connection_save(app.current_organization_id(), app.current_workspace_id(), app.current_user_id(),
    v ->> 'connector', v ->> 'platform', coalesce(v ->> 'instanceUrl', p_instance_url), p_integration_id, p_account);
  return app.integration_json((v_saved ->> 'integrationId')::uuid, true);
end
$$;
alter function api.connect_with_password(text, text, uuid, text, jsonb) owner to pressroom_definer;
comment on function api.connect_with_password(text, text, uuid, text, jsonb) is 'Serves the last phase of POST /v1/workspaces/{workspaceId}/integrations/connect-password (connectWithPassword_v1): after the server signed in with the app password (never stored: only the session''s tokens, encrypted), creates the integration of the account, or reconnects p_integration_id (same account only) through app.connection_save. Manager role; the checks of api.connect_prepare.';
grant execute on function api.connect_with_password(text, text, uuid, text, jsonb) to pressroom_request, pressroom_api;
revoke all on function api.connect_with_password(text, text, uuid, text, jsonb) from public;

-- ===========================================================================
-- The worker's functions
-- ===========================================================================

create or replace function app.credentials_row_json(i app.integrations, c app.integration_credentials) returns jsonb
language sql immutable as $$
  select jsonb_build_object('integrationId', i.id, 'workspaceId', i.workspace_id, 'connector', i.connector, 'platform', i.platform,
    'instanceUrl', i.instance_url, 'accountId', i.account_id, 'connectionState', i.connection_state, 'connectionReason', i.connection_reason,
    'ciphertext', encode(c.ciphertext, 'base64'), 'keyVersion', c.key_version, 'expiresAt', c.expires_at,
    'refreshExpiresAt', c.refresh_expires_at, 'refreshable', coalesce(c.refreshable, false), 'hasRefreshToken', coalesce(c.has_refresh_token, false),
    'refreshFailures', coalesce(c.refresh_failures, 0), 'nextRefreshAt', c.next_refresh_at)
$$;
revoke all on function app.credentials_row_json(app.integrations, app.integration_credentials) from public;
grant execute on function app.credentials_row_json(app.integrations, app.integration_credentials) to pressroom_definer;

create or replace function app.credentials_for(p_ids uuid[]) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(jsonb_agg(app.credentials_row_json(i, c) order by i.id), '[]')
  from app.integrations i
  left join app.integration_credentials c on c.workspace_id = i.workspace_id and c.integration_id = i.id
  where i.id = any (p_ids)
$$;
alter function app.credentials_for(uuid[]) owner to pressroom_definer;
comment on function app.credentials_for(uuid[]) is 'The worker''s read of the credentials of a batch of integrations: per integration its connector, instance, account, connection state and the credential''s ciphertext (null when none is stored) with key version and expiry. Executable by pressroom_worker only.';
revoke all on function app.credentials_for(uuid[]) from public;
grant execute on function app.credentials_for(uuid[]) to pressroom_worker;

create or replace function app.credentials_lock(p_integration uuid) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_i app.integrations;
  v_c app.integration_credentials;
begin
  select * into v_i from app.integrations where id = p_integration;
  if v_i.id is null then
    return null;
  end if;
  select * into v_c from app.integration_credentials where workspace_id = v_i.workspace_id and integration_id = v_i.id for update;
  return app.credentials_row_json(v_i, v_c);
end
$$;
alter function app.credentials_lock(uuid) owner to pressroom_definer;
comment on function app.credentials_lock(uuid) is 'Locks an integration''s credential row (FOR UPDATE, until the caller''s transaction ends) and returns it as app.credentials_for does: a refresh runs under it, so two workers never refresh the same grant (X rotates refresh tokens: a second refresh with the old one kills the grant). Null when the integration does not exist. Executable by pressroom_worker only.';
revoke all on function app.credentials_lock(uuid) from public;
grant execute on function app.credentials_lock(uuid) to pressroom_worker;

create or replace function app.credentials_store(p_integration uuid, p_credential jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  perform app.credentials_put(p_integration, p_credential);
  return (select app.credentials_row_json(i, c) - 'ciphertext' from app.integrations i
          join app.integration_credentials c on c.integration_id = i.id where i.id = p_integration);
end
$$;
alter function app.credentials_store(uuid, jsonb) owner to pressroom_definer;
comment on function app.credentials_store(uuid, jsonb) is 'The worker stores a refreshed credential (app.credentials_put: failures cleared, next refresh planned; 409 REFRESH_TOKEN_DROPPED), in the transaction that holds app.credentials_lock. Executable by pressroom_worker only.';
revoke all on function app.credentials_store(uuid, jsonb) from public;
grant execute on function app.credentials_store(uuid, jsonb) to pressroom_worker;

create or replace function app.credentials_refresh_failed(p_integration uuid, p_error text, p_retry_at timestamptz default null) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v app.integration_credentials;
begin
  update app.integration_credentials
  set refresh_failures = refresh_failures + 1, last_refresh_error = left(p_error, 1000),
      next_refresh_at = greatest(coalesce(p_retry_at, now()),
                                 now() + least(interval '1 minute' * power(2, least(refresh_failures, 20)), interval '6 hours'))
  where integration_id = p_integration
  returning * into v;
  if v.integration_id is null then
    return null;
  end if;
  return jsonb_build_object('integrationId', v.integration_id, 'refreshFailures', v.refresh_failures, 'nextRefreshAt', v.next_refresh_at);
end
$$;
alter function app.credentials_refresh_failed(uuid, text, timestamptz) owner to pressroom_definer;
comment on function app.credentials_refresh_failed(uuid, text, timestamptz) is 'A refresh the platform could not answer (5xx, 429, network): counts the failure, keeps the error and plans the next try with backoff (1, 2, 4 ... minutes, at most 6 hours, never before the platform''s own retry time). The integration stays connected (its state shows refresh_failing). Executable by pressroom_worker only.';
revoke all on function app.credentials_refresh_failed(uuid, text, timestamptz) from public;
grant execute on function app.credentials_refresh_failed(uuid, text, timestamptz) to pressroom_worker;

create or replace function app.integration_reconnect_required(p_integration uuid, p_reason text) returns boolean
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_rows int;
begin
  update app.integrations set connection_state = 'reconnect_required', connection_reason = left(coalesce(p_reason, 'The platform refused the grant.'), 1000),
    connection_changed_at = now()
  where id = p_integration and connection_state <> 'reconnect_required';
  get diagnostics v_rows = row_count;
  return v_rows = 1;
end
$$;
alter function app.integration_reconnect_required(uuid, text) owner to pressroom_definer;
comment on function app.integration_reconnect_required(uuid, text) is 'The platform refused the grant for good (invalid_grant, revoked): the integration becomes reconnect_required with the reason (event integration.reconnect_required); true when it changed. Executable by pressroom_worker only.';
revoke all on function app.integration_reconnect_required(uuid, text) from public;
grant execute on function app.integration_reconnect_required(uuid, text) to pressroom_worker;

-- ===========================================================================
-- Operators' apps (the admin command, server/cli/pressroom.ts, runs as the owner)
-- ===========================================================================

create or replace function app.platform_app_set(p_id uuid, p_connector text, p_client_id text, p_secret_ciphertext bytea) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v app.platform_apps;
begin
  if not exists (select 1 from app.connectors where name = p_connector and connect = 'oauth') then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('No OAuth connector named %s.', coalesce(p_connector, 'null')),
      jsonb_build_object('connectors', (select jsonb_agg(name order by name) from app.connectors where connect = 'oauth')));
  end if;
  delete from app.platform_apps where connector = p_connector and instance = '';
  insert into app.platform_apps (id, connector, instance, client_id, secret_ciphertext, source)
  values (p_id, p_connector, '', p_client_id, p_secret_ciphertext, 'admin') returning * into v;
  return jsonb_build_object('id', v.id, 'connector', v.connector, 'clientId', v.client_id, 'hasSecret', v.secret_ciphertext is not null, 'updatedAt', v.updated_at);
end
$$;
alter function app.platform_app_set(uuid, text, text, bytea) owner to pressroom_definer;
comment on function app.platform_app_set(uuid, text, text, bytea) is 'Stores the operator''s app of an OAuth connector (npx pressroom platform-app set): client id and the secret''s vault ciphertext bound to platform-app:<p_id>, replacing the one before (connections started with it must start again).';
revoke all on function app.platform_app_set(uuid, text, text, bytea) from public;

create or replace function app.platform_app_remove(p_connector text) returns boolean
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_rows int;
begin
  delete from app.platform_apps where connector = p_connector and instance = '';
  get diagnostics v_rows = row_count;
  return v_rows > 0;
end
$$;
alter function app.platform_app_remove(text) owner to pressroom_definer;
comment on function app.platform_app_remove(text) is 'Removes the operator''s stored app of a connector (npx pressroom platform-app remove); true when there was one.';
revoke all on function app.platform_app_remove(text) from public;

create or replace function app.platform_apps_list() returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(jsonb_agg(jsonb_build_object('id', a.id, 'connector', a.connector, 'instance', nullif(a.instance, ''), 'source', a.source,
    'clientId', a.client_id, 'hasSecret', a.secret_ciphertext is not null, 'redirectUri', a.redirect_uri, 'updatedAt', a.updated_at)
    order by a.connector, a.instance), '[]')
  from app.platform_apps a
$$;
alter function app.platform_apps_list() owner to pressroom_definer;
comment on function app.platform_apps_list() is 'The stored platform apps (npx pressroom platform-app list), operators'' and registered ones, without secrets.';
revoke all on function app.platform_apps_list() from public;

drop function if exists app.platform_app_secret(uuid);
create or replace function app.platform_app_for(p_connector text, p_instance text) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('id', a.id, 'connector', a.connector, 'clientId', a.client_id, 'secretCiphertext', encode(a.secret_ciphertext, 'base64'))
  from app.platform_apps a where a.connector = p_connector and a.instance = coalesce(p_instance, '')
$$;
alter function app.platform_app_for(text, text) owner to pressroom_definer;
comment on function app.platform_app_for(text, text) is 'The stored platform app of a connector and instance ('''' or null: the operator''s), with its secret''s ciphertext, for the worker''s refresh (an app from the environment needs none). Executable by pressroom_worker only.';
revoke all on function app.platform_app_for(text, text) from public;
grant execute on function app.platform_app_for(text, text) to pressroom_worker;

create or replace function app.credentials_due(p_limit int default 100) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(jsonb_agg(c.integration_id order by c.next_refresh_at), '[]')
  from (select c.integration_id, c.next_refresh_at
        from app.integration_credentials c
        join app.integrations i on i.id = c.integration_id
        where c.refreshable and c.next_refresh_at <= now() and i.deleted_at is null and i.connection_state = 'ok'
        order by c.next_refresh_at
        limit least(greatest(coalesce(p_limit, 100), 1), 1000)) c
$$;
alter function app.credentials_due(int) owner to pressroom_definer;
comment on function app.credentials_due(int) is 'The integrations whose credential is due for a refresh (next_refresh_at passed: 10 minutes before expiry, or the backoff after a failed refresh), live and not reconnect_required, oldest first, at most p_limit (1 to 1000); the refresh job (server/platforms/credentials.ts) refreshes each under app.credentials_lock. Executable by pressroom_worker only.';
revoke all on function app.credentials_due(int) from public;
grant execute on function app.credentials_due(int) to pressroom_worker;

-- Key rotation (npx pressroom credentials rotate, the owner): the ciphertexts
-- made with an older key version, and their rewrite with the current one.
create or replace function app.vault_ciphertexts(p_below_version int) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object(
    'credentials', coalesce((select jsonb_agg(jsonb_build_object('integrationId', c.integration_id, 'ciphertext', encode(c.ciphertext, 'base64'),
        'keyVersion', c.key_version) order by c.integration_id)
      from app.integration_credentials c where c.key_version < p_below_version), '[]'),
    'apps', coalesce((select jsonb_agg(jsonb_build_object('id', a.id, 'ciphertext', encode(a.secret_ciphertext, 'base64')) order by a.id)
      from app.platform_apps a where a.secret_ciphertext is not null
        and get_byte(a.secret_ciphertext, 4) * 256 + get_byte(a.secret_ciphertext, 5) < p_below_version), '[]'))
$$;
alter function app.vault_ciphertexts(int) owner to pressroom_definer;
comment on function app.vault_ciphertexts(int) is 'The credential ciphertexts and platform app secrets made with a key version below p_below_version (the version is bytes 4-5 of a vault ciphertext), for npx pressroom credentials rotate. OAuth states and pending connections are left to expire (10 and 30 minutes).';
revoke all on function app.vault_ciphertexts(int) from public;

create or replace function app.vault_rekey(p_rows jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v jsonb;
  v_creds int := 0;
  v_apps int := 0;
  v_rows int;
begin
  -- p_rows: {credentials: [{integrationId, ciphertext, keyVersion, was}], apps: [{id, ciphertext, was}]}; `was` is
  -- the ciphertext read, so a credential refreshed meanwhile is left as the refresh wrote it.
  for v in select * from jsonb_array_elements(coalesce(p_rows -> 'credentials', '[]')) loop
    update app.integration_credentials set ciphertext = decode(v ->> 'ciphertext', 'base64'), key_version = (v ->> 'keyVersion')::int
    where integration_id = (v ->> 'integrationId')::uuid and ciphertext = decode(v ->> 'was', 'base64');
    get diagnostics v_rows = row_count;
    v_creds := v_creds + v_rows;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_rows -> 'apps', '[]')) loop
    update app.platform_apps set secret_ciphertext = decode(v ->> 'ciphertext', 'base64')
    where id = (v ->> 'id')::uuid and secret_ciphertext = decode(v ->> 'was', 'base64');
    get diagnostics v_rows = row_count;
    v_apps := v_apps + v_rows;
  end loop;
  return jsonb_build_object('credentials', v_creds, 'apps', v_apps);
end
$$;
alter function app.vault_rekey(jsonb) owner to pressroom_definer;
comment on function app.vault_rekey(jsonb) is 'Writes re-encrypted ciphertexts (npx pressroom credentials rotate), each only where the row still holds the ciphertext that was read.';
revoke all on function app.vault_rekey(jsonb) from public;

-- ===========================================================================
-- Lifecycle events: integration.reconnect_required, integration.reconnected
-- ===========================================================================

create or replace function app.webhook_event_types() returns text[]
language sql immutable set search_path = pg_catalog as $$
  select array['content.created', 'content.scheduled', 'content.published', 'content.failed',
    'content.awaiting_confirmation', 'content.deleted', 'review.sent', 'review.decided', 'review.completed',
    'inbox.message.received', 'integration.reconnect_required', 'integration.reconnected']
$$;

create or replace function app.tg_integrations_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
begin
  if new.connection_state = 'reconnect_required' and old.connection_state <> 'reconnect_required' then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'integration.reconnect_required', new.id,
      jsonb_build_object('integrationId', new.id, 'connector', new.connector, 'platform', new.platform, 'name', new.name,
        'username', new.username, 'connectionState', new.connection_state, 'reason', new.connection_reason, 'changedAt', new.connection_changed_at));
  elsif new.connection_state = 'ok' and old.connection_state = 'reconnect_required' then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'integration.reconnected', new.id,
      jsonb_build_object('integrationId', new.id, 'connector', new.connector, 'platform', new.platform, 'name', new.name,
        'username', new.username, 'connectionState', new.connection_state, 'reason', null, 'changedAt', new.connection_changed_at));
  end if;
  return null;
end
$$;
alter function app.tg_integrations_webhooks() owner to pressroom_definer;
comment on function app.tg_integrations_webhooks() is 'Emits integration.reconnect_required and integration.reconnected when the connection state changes.';
revoke all on function app.tg_integrations_webhooks() from public;
grant execute on function app.tg_integrations_webhooks() to pressroom_api, pressroom_worker;
drop trigger if exists integrations_90_webhooks on app.integrations;
create trigger integrations_90_webhooks after update of connection_state on app.integrations
  for each row when (old.connection_state is distinct from new.connection_state) execute function app.tg_integrations_webhooks();

-- ===========================================================================
-- Purge: expired states (an hour after expiry, so a late callback still hears
-- state_expired) and expired pending connections.
-- ===========================================================================

create or replace function app.purge_expired() returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_idem int;
  v_sessions int;
  v_counters int;
  v_bursts int;
  v_states int;
  v_pending int;
begin
  delete from app.idempotency_keys where expires_at <= now();
  get diagnostics v_idem = row_count;
  delete from app.sessions where expires_at <= now() - interval '1 day'
     or revoked_at <= now() - interval '1 day';
  get diagnostics v_sessions = row_count;
  delete from app.rate_limit_counters where window_start < date_trunc('minute', now()) - interval '1 minute';
  get diagnostics v_counters = row_count;
  v_bursts := app.flush_auth_failures(null);
  delete from app.oauth_states where expires_at <= now() - interval '1 hour';
  get diagnostics v_states = row_count;
  delete from app.pending_connections where expires_at <= now();
  get diagnostics v_pending = row_count;
  return jsonb_build_object('idempotencyKeys', v_idem, 'sessions', v_sessions, 'rateLimitWindows', v_counters,
                            'authFailureSummaries', v_bursts, 'oauthStates', v_states, 'pendingConnections', v_pending);
end
$$;
alter function app.purge_expired() owner to pressroom_definer;
grant execute on function app.purge_expired() to pressroom_worker;
revoke all on function app.purge_expired() from public;

-- api.create_integration: the connector list is app.connectors, no longer a literal.
create or replace function api.create_integration(p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb, p_webhook_url text, p_webhook_secret text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
  v_conn app.connectors;
begin
  perform app.require_role('manager');
  -- The connectors are the registry's (app.connectors, declared by app.declare_connectors);
  -- this route creates those that need no platform sign-in.
  select * into v_conn from app.connectors where name = p_connector;
  if v_conn.name is null then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s; use one of %s.', coalesce(p_connector, 'null'),
        (select string_agg(name, ', ' order by name) from app.connectors where connect = 'none')),
      jsonb_build_object('field', 'connector', 'connectors', (select jsonb_agg(name order by name) from app.connectors where connect = 'none')));
  end if;
  if v_conn.connect <> 'none' then
    perform app.raise(400, 'CONNECT_FLOW_REQUIRED',
      format('A %s account is connected by signing in: POST .../integrations/%s.', p_connector,
             case v_conn.connect when 'oauth' then 'connect' else 'connect-password' end),
      jsonb_build_object('field', 'connector', 'connector', p_connector, 'connect', v_conn.connect));
  end if;
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
  end if;
  if p_platform <> all (v_conn.platforms) then
    perform app.raise(400, 'PLATFORM_NOT_SUPPORTED', format('The connector %s does not publish to %s.', p_connector, p_platform),
      jsonb_build_object('field', 'platform', 'connector', p_connector, 'platforms', to_jsonb(v_conn.platforms)));
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
alter function api.create_integration(text,text,text,text,jsonb,text,text) owner to pressroom_api;
comment on function api.create_integration(text,text,text,text,jsonb,text,text) is 'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a connector of app.connectors that needs no sign-in (sandbox, or webhook whose URL the server resolved and checked before this call, with a Standard Webhooks secret whsec_<base64 of 24 to 64 bytes>, issued by the server when the request names none) and normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, CONNECT_FLOW_REQUIRED (an OAuth or password connector), PLATFORM_NOT_SUPPORTED, UNKNOWN_PLATFORM, INVALID_SETTINGS, INVALID_WEBHOOK_URL and VALIDATION_FAILED.';
grant execute on function api.create_integration(text,text,text,text,jsonb,text,text) to pressroom_definer;
grant execute on function api.create_integration(text,text,text,text,jsonb,text,text) to pressroom_request;
revoke all on function api.create_integration(text,text,text,text,jsonb,text,text) from public;

select app.harden_api_functions();
