--! Previous: -
--! Hash: sha1:32454ef2191e85eee877021592d0c2c7431734a9
--! Message: foundation

-- Pressroom foundation: roles, schemas, identity, workspaces, API keys,
-- audit, rate limits, idempotency. See db/README.md for the map.

------------------------------------------------------------------------------
-- Roles (cluster-wide, so created only when missing)
------------------------------------------------------------------------------
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'pressroom_request') then
    create role pressroom_request nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'pressroom_definer') then
    create role pressroom_definer nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'pressroom_worker') then
    create role pressroom_worker nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'pressroom_app') then
    create role pressroom_app login noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'pressroom_bi') then
    create role pressroom_bi login noinherit;
  end if;
end
$$;

-- The server's login role holds no privileges of its own (NOINHERIT): each
-- request transaction switches into pressroom_request, each job into
-- pressroom_worker.
grant pressroom_request to pressroom_app;
grant pressroom_worker to pressroom_app;
-- The migrating role must be able to hand functions to the definer role.
grant pressroom_definer to :DATABASE_OWNER;

revoke create, temporary on database :DATABASE_NAME from public;
grant connect on database :DATABASE_NAME to pressroom_app, pressroom_bi;
revoke create on schema public from public;

------------------------------------------------------------------------------
-- Schemas
------------------------------------------------------------------------------
create schema app;        -- tables and private helpers
create schema api;        -- functions the HTTP layer calls
create schema audit;      -- append-only audit log
create schema reporting;  -- read-only views for BI tools

grant usage on schema app, api to pressroom_request, pressroom_definer, pressroom_worker;
grant usage on schema audit to pressroom_definer;
-- Owning a function requires CREATE on its schema.
grant create on schema app, api, audit, reporting to pressroom_definer;
-- Called by the login role outside any request transaction.
grant usage on schema api, audit to pressroom_app;
grant usage on schema reporting to pressroom_bi;

------------------------------------------------------------------------------
-- Errors: PTxyz carries HTTP status xyz; DETAIL carries the machine code;
-- HINT carries JSON details. Register: db/ERRORS.md
------------------------------------------------------------------------------
create function app.raise(p_status int, p_code text, p_message text, p_details jsonb default null)
returns void
language plpgsql
as $$
begin
  raise exception using
    errcode = 'PT' || p_status::text,
    message = p_message,
    detail = p_code,
    hint = coalesce(p_details::text, '');
end
$$;

------------------------------------------------------------------------------
-- Per-request context, read only through these helpers
------------------------------------------------------------------------------
create function app.current_actor_kind() returns text
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.actor_kind', true), '') $$;

create function app.current_user_id() returns uuid
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.user_id', true), '')::uuid $$;

create function app.current_api_key_id() returns uuid
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.api_key_id', true), '')::uuid $$;

create function app.current_organization_id() returns uuid
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.organization_id', true), '')::uuid $$;

create function app.current_workspace_id() returns uuid
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.workspace_id', true), '')::uuid $$;

create function app.current_workspace_role() returns text
language sql stable parallel safe
as $$ select nullif(current_setting('pressroom.workspace_role', true), '') $$;

create function app.current_principal_id() returns uuid
language sql stable parallel safe
as $$ select coalesce(app.current_api_key_id(), app.current_user_id()) $$;

create function app.role_rank(p_role text) returns int
language sql immutable parallel safe
as $$ select case p_role when 'viewer' then 1 when 'editor' then 2 when 'manager' then 3 else 0 end $$;

create function app.plan_rank(p_plan text) returns int
language sql immutable parallel safe
as $$ select case p_plan when 'basic' then 1 when 'standard' then 2 when 'premium' then 3 when 'trial' then 3 else 0 end $$;

-- Refuses unless the caller's role in the current workspace is at least p_role.
create function app.require_role(p_role text) returns void
language plpgsql stable
as $$
begin
  if app.current_workspace_id() is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  if app.role_rank(app.current_workspace_role()) < app.role_rank(p_role) then
    perform app.raise(403, 'ROLE_REQUIRED',
      format('This operation needs the %s role in this workspace; the caller has %s.',
             p_role, coalesce(app.current_workspace_role(), 'none')),
      jsonb_build_object('requiredRole', p_role, 'role', app.current_workspace_role()));
  end if;
end
$$;

create function app.require_session() returns void
language plpgsql stable
as $$
begin
  if app.current_actor_kind() is distinct from 'user' then
    perform app.raise(403, 'SESSION_REQUIRED',
      'This operation needs a session token; API keys cannot perform it.');
  end if;
end
$$;

------------------------------------------------------------------------------
-- Timestamps
------------------------------------------------------------------------------
create function app.tg_set_updated_at() returns trigger
language plpgsql
as $$
begin
  new.updated_at := now();
  return new;
end
$$;

------------------------------------------------------------------------------
-- Identity
------------------------------------------------------------------------------
create table app.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(btrim(name)) between 1 and 200),
  plan text not null default 'trial' check (plan in ('trial', 'basic', 'standard', 'premium')),
  trial_ends_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (plan <> 'trial' or trial_ends_at is not null)
);
create trigger organizations_10_set_updated_at before update on app.organizations
  for each row execute function app.tg_set_updated_at();

create table app.users (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  email text not null check (email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  password_hash text,
  org_role text not null default 'member' check (org_role in ('owner', 'admin', 'member')),
  status text not null default 'active' check (status in ('active', 'invited', 'disabled')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (status <> 'active' or password_hash is not null)
);
create unique index users_email_key on app.users (lower(email));
alter table app.users add constraint users_id_organization_key unique (id, organization_id);
create index users_organization_id_idx on app.users (organization_id);
create trigger users_10_set_updated_at before update on app.users
  for each row execute function app.tg_set_updated_at();

create table app.sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references app.users (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  token_hash bytea not null unique check (length(token_hash) = 32),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
alter table app.sessions add constraint sessions_user_same_organization
  foreign key (user_id, organization_id) references app.users (id, organization_id) on delete cascade;
create index sessions_user_id_idx on app.sessions (user_id);
create index sessions_organization_id_idx on app.sessions (organization_id);
create index sessions_expires_at_idx on app.sessions (expires_at);

create table app.workspaces (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 200),
  timezone text not null default 'UTC',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index workspaces_organization_id_idx on app.workspaces (organization_id);
alter table app.workspaces add constraint workspaces_id_organization_key unique (id, organization_id);
create trigger workspaces_10_set_updated_at before update on app.workspaces
  for each row execute function app.tg_set_updated_at();

-- IANA zone names are checked against the server's zone database.
create function app.tg_workspaces_check_timezone() returns trigger
language plpgsql
as $$
begin
  if not exists (select 1 from pg_timezone_names where name = new.timezone) then
    perform app.raise(400, 'INVALID_TIMEZONE',
      format('%s is not an IANA time zone name.', new.timezone),
      jsonb_build_object('field', 'timezone'));
  end if;
  return new;
end
$$;
create trigger workspaces_20_check_timezone before insert or update of timezone on app.workspaces
  for each row execute function app.tg_workspaces_check_timezone();

create table app.workspace_members (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  user_id uuid not null references app.users (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  role text not null check (role in ('viewer', 'editor', 'manager')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, user_id)
);
-- A membership never links a user and a workspace of different organizations.
alter table app.workspace_members add constraint workspace_members_user_same_organization
  foreign key (user_id, organization_id) references app.users (id, organization_id) on delete cascade;
alter table app.workspace_members add constraint workspace_members_workspace_same_organization
  foreign key (workspace_id, organization_id) references app.workspaces (id, organization_id) on delete cascade;
create index workspace_members_user_id_idx on app.workspace_members (user_id);
create index workspace_members_organization_id_idx on app.workspace_members (organization_id);
create trigger workspace_members_10_set_updated_at before update on app.workspace_members
  for each row execute function app.tg_set_updated_at();

-- A membership's workspace, user and organization never change: move = remove + add.
create function app.tg_workspace_members_immutable() returns trigger
language plpgsql
as $$
begin
  if new.workspace_id <> old.workspace_id or new.user_id <> old.user_id or new.organization_id <> old.organization_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A membership''s workspace and user cannot change; remove it and add another.');
  end if;
  return new;
end
$$;
create trigger workspace_members_20_immutable before update on app.workspace_members
  for each row execute function app.tg_workspace_members_immutable();

-- A workspace keeps at least one manager among its members, whoever edits.
-- Runs as the definer: the caller may have just lost sight of the workspace.
-- The workspace row is locked so two managers demoting each other at once
-- cannot both succeed.
create function app.tg_workspace_members_keep_manager() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
begin
  if tg_op = 'UPDATE' and new.role = 'manager' and new.workspace_id = old.workspace_id then
    return null;
  end if;
  perform 1 from app.workspaces w where w.id = old.workspace_id for update;
  if exists (select 1 from app.workspaces w where w.id = old.workspace_id)
     and not exists (select 1 from app.workspace_members m
                     where m.workspace_id = old.workspace_id and m.role = 'manager') then
    perform app.raise(409, 'LAST_MANAGER',
      'A workspace must keep at least one manager; add another manager first.',
      jsonb_build_object('workspaceId', old.workspace_id, 'userId', old.user_id));
  end if;
  return null;
end
$$;
create constraint trigger workspace_members_30_keep_manager
  after update or delete on app.workspace_members
  deferrable initially immediate
  for each row when (old.role = 'manager')
  execute function app.tg_workspace_members_keep_manager();

------------------------------------------------------------------------------
-- API keys
------------------------------------------------------------------------------
create table app.api_keys (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  created_by uuid references app.users (id) on delete set null,
  name text not null check (length(btrim(name)) between 1 and 200),
  key_prefix text not null unique,
  key_hash bytea not null unique check (length(key_hash) = 32),
  role text not null default 'editor' check (role in ('viewer', 'editor', 'manager')),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz,
  revoked_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now()
);
create index api_keys_organization_id_idx on app.api_keys (organization_id) where revoked_at is null;
alter table app.api_keys add constraint api_keys_id_organization_key unique (id, organization_id);

-- Revocation is permanent; the secret, owner and grants never change.
create function app.tg_api_keys_guard() returns trigger
language plpgsql
as $$
begin
  if old.revoked_at is not null and new.revoked_at is distinct from old.revoked_at then
    perform app.raise(409, 'KEY_REVOKED', 'A revoked API key stays revoked.');
  end if;
  if new.key_hash <> old.key_hash or new.key_prefix <> old.key_prefix
     or new.organization_id <> old.organization_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'An API key''s secret and organization cannot change.');
  end if;
  return new;
end
$$;
create trigger api_keys_10_guard before update on app.api_keys
  for each row execute function app.tg_api_keys_guard();

create table app.api_key_workspaces (
  api_key_id uuid not null references app.api_keys (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  primary key (api_key_id, workspace_id)
);
alter table app.api_key_workspaces add constraint api_key_workspaces_key_same_organization
  foreign key (api_key_id, organization_id) references app.api_keys (id, organization_id) on delete cascade;
alter table app.api_key_workspaces add constraint api_key_workspaces_workspace_same_organization
  foreign key (workspace_id, organization_id) references app.workspaces (id, organization_id) on delete cascade;
create index api_key_workspaces_workspace_id_idx on app.api_key_workspaces (workspace_id);
create index api_key_workspaces_organization_id_idx on app.api_key_workspaces (organization_id);

------------------------------------------------------------------------------
-- Workspace access of the current principal: (workspace_id, role).
-- An org owner or admin acts as manager everywhere in the organization.
-- A key's role is capped by its creator's current role in that workspace,
-- so a key never outlives its creator's own access.
------------------------------------------------------------------------------
create function app.user_workspace_roles(p_user_id uuid)
returns table (workspace_id uuid, role text)
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select w.id, 'manager'::text
  from app.users u
  join app.workspaces w on w.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role in ('owner', 'admin')
  union all
  select m.workspace_id, m.role
  from app.users u
  join app.workspace_members m on m.user_id = u.id and m.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role = 'member'
$$;

create function app.api_key_workspace_roles(p_api_key_id uuid)
returns table (workspace_id uuid, role text)
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select g.workspace_id,
         case when app.role_rank(k.role) <= app.role_rank(c.role) then k.role else c.role end
  from app.api_keys k
  join app.api_key_workspaces g on g.api_key_id = k.id
  join app.user_workspace_roles(k.created_by) c on c.workspace_id = g.workspace_id
  where k.id = p_api_key_id
    and k.revoked_at is null
    and (k.expires_at is null or k.expires_at > now())
$$;

create function app.principal_workspace_roles()
returns table (workspace_id uuid, role text)
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select * from app.api_key_workspace_roles(app.current_api_key_id())
  where app.current_actor_kind() = 'api_key'
  union all
  select * from app.user_workspace_roles(app.current_user_id())
  where app.current_actor_kind() = 'user'
$$;

create function app.accessible_workspace_ids() returns uuid[]
language sql stable security definer
set search_path = pg_catalog, app
as $$ select coalesce(array_agg(workspace_id), '{}') from app.principal_workspace_roles() $$;

create function app.managed_workspace_ids() returns uuid[]
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select coalesce(array_agg(workspace_id), '{}')
  from app.principal_workspace_roles() where role = 'manager'
$$;

------------------------------------------------------------------------------
-- Row-level security. pressroom_request sees its own organization and the
-- workspaces it may access; pressroom_definer (owner of the few
-- security-definer functions) sees everything.
------------------------------------------------------------------------------
alter table app.organizations enable row level security;
alter table app.organizations force row level security;
alter table app.users enable row level security;
alter table app.users force row level security;
alter table app.sessions enable row level security;
alter table app.sessions force row level security;
alter table app.workspaces enable row level security;
alter table app.workspaces force row level security;
alter table app.workspace_members enable row level security;
alter table app.workspace_members force row level security;
alter table app.api_keys enable row level security;
alter table app.api_keys force row level security;
alter table app.api_key_workspaces enable row level security;
alter table app.api_key_workspaces force row level security;

create policy organizations_definer on app.organizations to pressroom_definer using (true) with check (true);
create policy organizations_request_select on app.organizations for select to pressroom_request
  using (id = (select app.current_organization_id()));

create policy users_definer on app.users to pressroom_definer using (true) with check (true);
create policy users_request_select on app.users for select to pressroom_request
  using (organization_id = (select app.current_organization_id()));
create policy users_request_insert on app.users for insert to pressroom_request
  with check (organization_id = (select app.current_organization_id())
              and status = 'invited' and org_role = 'member' and password_hash is null);

create policy sessions_definer on app.sessions to pressroom_definer using (true) with check (true);
-- A session's owner may see and end it.
create policy sessions_request_select on app.sessions for select to pressroom_request
  using (user_id = (select app.current_user_id()));
create policy sessions_request_update on app.sessions for update to pressroom_request
  using (user_id = (select app.current_user_id()))
  with check (user_id = (select app.current_user_id()));

create policy workspaces_definer on app.workspaces to pressroom_definer using (true) with check (true);
create policy workspaces_request_select on app.workspaces for select to pressroom_request
  using (organization_id = (select app.current_organization_id())
         and id in (select unnest(app.accessible_workspace_ids())));

create policy workspace_members_definer on app.workspace_members to pressroom_definer using (true) with check (true);
create policy workspace_members_request_select on app.workspace_members for select to pressroom_request
  using (organization_id = (select app.current_organization_id())
         and workspace_id in (select unnest(app.accessible_workspace_ids())));
create policy workspace_members_request_write on app.workspace_members for all to pressroom_request
  using (organization_id = (select app.current_organization_id())
         and workspace_id in (select unnest(app.managed_workspace_ids())))
  with check (organization_id = (select app.current_organization_id())
              and workspace_id in (select unnest(app.managed_workspace_ids())));

create policy api_keys_definer on app.api_keys to pressroom_definer using (true) with check (true);
create policy api_keys_request_select on app.api_keys for select to pressroom_request
  using (organization_id = (select app.current_organization_id()));
create policy api_keys_request_insert on app.api_keys for insert to pressroom_request
  with check (organization_id = (select app.current_organization_id())
              and (select app.current_actor_kind()) = 'user'
              and created_by = (select app.current_user_id()));

create policy api_key_workspaces_definer on app.api_key_workspaces to pressroom_definer using (true) with check (true);
create policy api_key_workspaces_request_select on app.api_key_workspaces for select to pressroom_request
  using (organization_id = (select app.current_organization_id()));
create policy api_key_workspaces_request_insert on app.api_key_workspaces for insert to pressroom_request
  with check (organization_id = (select app.current_organization_id())
              and workspace_id in (select unnest(app.managed_workspace_ids())));

-- Column-listed grants: the request role never reads secrets or hashes.
grant select (id, name, plan, trial_ends_at, created_at, updated_at) on app.organizations to pressroom_request;
grant select (id, organization_id, email, org_role, status, created_at, updated_at) on app.users to pressroom_request;
grant insert (organization_id, email, org_role, status) on app.users to pressroom_request;
grant select (id, user_id, expires_at, revoked_at, created_at) on app.sessions to pressroom_request;
grant update (revoked_at) on app.sessions to pressroom_request;
grant select (id, organization_id, name, timezone, created_at, updated_at) on app.workspaces to pressroom_request;
grant select, delete on app.workspace_members to pressroom_request;
grant insert (workspace_id, user_id, organization_id, role) on app.workspace_members to pressroom_request;
grant update (role) on app.workspace_members to pressroom_request;
grant select (id, organization_id, created_by, name, key_prefix, role, expires_at, last_used_at, revoked_at, revoked_by, created_at)
  on app.api_keys to pressroom_request;
grant insert (organization_id, created_by, name, key_prefix, key_hash, role, expires_at) on app.api_keys to pressroom_request;
grant update (revoked_at, revoked_by) on app.api_keys to pressroom_request;
grant select, insert on app.api_key_workspaces to pressroom_request;

grant select, insert, update, delete on app.organizations, app.users, app.sessions, app.workspaces,
  app.workspace_members, app.api_keys, app.api_key_workspaces to pressroom_definer;

------------------------------------------------------------------------------
-- Rate limits: fixed one-minute windows per bucket and class, in the
-- database so they hold across API processes. Unlogged: a crash forgets at
-- most one minute of counts.
------------------------------------------------------------------------------
create unlogged table app.rate_limit_counters (
  bucket text not null,
  class text not null check (class in ('read', 'write', 'expensive')),
  window_start timestamptz not null,
  hits int not null,
  primary key (bucket, class, window_start)
);
alter table app.rate_limit_counters enable row level security;
alter table app.rate_limit_counters force row level security;
create policy rate_limit_counters_definer on app.rate_limit_counters to pressroom_definer using (true) with check (true);
grant select, insert, update, delete on app.rate_limit_counters to pressroom_definer;

create function app.rate_limit_hit(p_bucket text, p_class text, p_limit int)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_hits int;
  v_reset int;
begin
  insert into app.rate_limit_counters as c (bucket, class, window_start, hits)
  values (p_bucket, p_class, v_window, 1)
  on conflict (bucket, class, window_start) do update set hits = c.hits + 1
  returning hits into v_hits;
  v_reset := greatest(1, ceil(extract(epoch from (v_window + interval '1 minute' - clock_timestamp())))::int);
  return jsonb_build_object(
    'class', p_class,
    'limit', p_limit,
    'remaining', greatest(p_limit - v_hits, 0),
    'reset', v_reset,
    'allowed', v_hits <= p_limit);
end
$$;

------------------------------------------------------------------------------
-- Authentication and the per-request gate.
-- Returns the principal (for the audit row even on refusal), the workspace
-- role, the rate-limit state, and an error object when the call is refused.
------------------------------------------------------------------------------
create function api.gate(
  p_token_hash bytea,
  p_workspace_id uuid,
  p_class text,
  p_limit int,
  p_min_plan text default 'basic',
  p_bucket text default null)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_principal jsonb;
  v_user app.users;
  v_key app.api_keys;
  v_org app.organizations;
  v_session_id uuid;
  v_role text;
  v_rate jsonb;
begin
  if p_token_hash is null then
    if p_bucket is null then
      return jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', 'Send a bearer credential: Authorization: Bearer <API key or session token>.'));
    end if;
    -- Anonymous routes (sign-up, sign-in) are limited per client bucket.
    v_rate := app.rate_limit_hit(p_bucket, p_class, p_limit);
    if not (v_rate ->> 'allowed')::boolean then
      return jsonb_build_object('rate', v_rate, 'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', 'Too many requests; retry after the time in Retry-After.'));
    end if;
    return jsonb_build_object('rate', v_rate);
  end if;

  select s.id into v_session_id
  from app.sessions s
  where s.token_hash = p_token_hash and s.revoked_at is null and s.expires_at > now();
  if v_session_id is not null then
    select u.* into v_user from app.users u join app.sessions s on s.user_id = u.id
    where s.id = v_session_id and u.status = 'active';
  end if;

  if v_user.id is not null then
    v_principal := jsonb_build_object('actorKind', 'user', 'userId', v_user.id,
      'sessionId', v_session_id, 'organizationId', v_user.organization_id, 'orgRole', v_user.org_role);
  else
    select * into v_key from app.api_keys where key_hash = p_token_hash;
    if v_key.id is null then
      return jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', 'The bearer credential is not a valid API key or session token.'));
    end if;
    v_principal := jsonb_build_object('actorKind', 'api_key', 'apiKeyId', v_key.id,
      'apiKeyPrefix', v_key.key_prefix, 'organizationId', v_key.organization_id,
      'userId', v_key.created_by);
    if v_key.revoked_at is not null then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
        'code', 'KEY_REVOKED', 'message', 'This API key was revoked.'));
    end if;
    if v_key.expires_at is not null and v_key.expires_at <= now() then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
        'code', 'KEY_EXPIRED', 'message', format('This API key expired at %s.', v_key.expires_at)));
    end if;
    if v_key.last_used_at is null or v_key.last_used_at < now() - interval '5 seconds' then
      update app.api_keys set last_used_at = now() where id = v_key.id;
    end if;
  end if;

  select * into v_org from app.organizations where id = (v_principal ->> 'organizationId')::uuid;
  v_principal := v_principal || jsonb_build_object('plan', v_org.plan);
  if v_org.plan = 'trial' and v_org.trial_ends_at <= now() then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
      'code', 'PLAN_REQUIRED',
      'message', format('The free trial of this organization ended at %s; an owner must choose a paid plan.', v_org.trial_ends_at),
      'details', jsonb_build_object('plan', v_org.plan, 'trialEndedAt', v_org.trial_ends_at)));
  end if;
  if app.plan_rank(v_org.plan) < app.plan_rank(p_min_plan) then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
      'code', 'PLAN_REQUIRED',
      'message', format('This route needs the %s plan or higher; this organization is on %s.', p_min_plan, v_org.plan),
      'details', jsonb_build_object('plan', v_org.plan, 'requiredPlan', p_min_plan)));
  end if;

  if p_workspace_id is not null then
    if v_principal ->> 'actorKind' = 'api_key' then
      select r.role into v_role from app.api_key_workspace_roles(v_key.id) r where r.workspace_id = p_workspace_id;
    else
      select r.role into v_role from app.user_workspace_roles(v_user.id) r where r.workspace_id = p_workspace_id;
    end if;
    if v_role is null then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 403,
        'code', 'WORKSPACE_FORBIDDEN',
        'message', 'The credential has no access to this workspace.',
        'details', jsonb_build_object('workspaceId', p_workspace_id)));
    end if;
  end if;

  v_rate := app.rate_limit_hit(coalesce(p_workspace_id::text, 'principal:' || coalesce(v_key.id, v_user.id)::text),
                               p_class, p_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'workspaceId', p_workspace_id, 'workspaceRole', v_role,
      'rate', v_rate, 'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this workspace is used up; retry after %s s.',
                          p_class, p_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', p_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;

  return jsonb_build_object('principal', v_principal, 'workspaceId', p_workspace_id,
    'workspaceRole', v_role, 'rate', v_rate);
end
$$;

------------------------------------------------------------------------------
-- Sign-up, sign-in, sessions
------------------------------------------------------------------------------
create function app.organization_json(o app.organizations) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', o.id, 'name', o.name, 'plan', o.plan,
  'trialEndsAt', o.trial_ends_at, 'createdAt', o.created_at) $$;

create function app.user_json(u app.users) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', u.id, 'email', u.email, 'organizationId', u.organization_id,
  'orgRole', u.org_role, 'status', u.status, 'createdAt', u.created_at) $$;

create function app.workspace_json(w app.workspaces, p_role text) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', w.id, 'name', w.name, 'timezone', w.timezone,
  'organizationId', w.organization_id, 'role', p_role, 'createdAt', w.created_at, 'updatedAt', w.updated_at) $$;

-- Creates an organization, its owner, a first workspace and a session.
-- Open while no organization exists, or when the server allows sign-up.
create function api.signup(
  p_email text, p_password_hash text, p_organization_name text, p_workspace_name text,
  p_session_token_hash bytea, p_session_ttl_seconds int, p_allow_signup boolean,
  p_plan text, p_trial_days int default 3)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_org app.organizations;
  v_user app.users;
  v_ws app.workspaces;
  v_session app.sessions;
begin
  -- One sign-up at a time decides whether the install is still empty.
  perform pg_advisory_xact_lock(hashtext('pressroom.signup'));
  if not p_allow_signup and exists (select 1 from app.organizations) then
    perform app.raise(403, 'SIGNUP_CLOSED',
      'Sign-up is closed on this server; ask an administrator for an account (ALLOW_SIGNUP=true opens it).');
  end if;
  if exists (select 1 from app.users where lower(email) = lower(p_email)) then
    perform app.raise(409, 'EMAIL_TAKEN', 'An account with this email already exists.',
      jsonb_build_object('field', 'email'));
  end if;
  insert into app.organizations (name, plan, trial_ends_at)
  values (p_organization_name, p_plan,
          case when p_plan = 'trial' then now() + make_interval(days => p_trial_days) end)
  returning * into v_org;
  insert into app.users (organization_id, email, password_hash, org_role, status)
  values (v_org.id, p_email, p_password_hash, 'owner', 'active')
  returning * into v_user;
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

-- The stored password hash of an active user (the KDF runs in the server).
create function api.login_lookup(p_email text)
returns table (user_id uuid, password_hash text)
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select id, password_hash from app.users
  where lower(email) = lower(p_email) and status = 'active'
$$;

-- Opens a session once the server verified the password against the hash
-- it was given; a hash changed in between (reset) refuses.
create function api.create_session(p_user_id uuid, p_verified_hash text,
  p_token_hash bytea, p_ttl_seconds int)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_user app.users;
  v_session app.sessions;
begin
  select * into v_user from app.users where id = p_user_id and status = 'active'
    and password_hash = p_verified_hash;
  if v_user.id is null then
    perform app.raise(401, 'INVALID_CREDENTIALS', 'The email or password is wrong.');
  end if;
  insert into app.sessions (user_id, organization_id, token_hash, expires_at)
  values (v_user.id, v_user.organization_id, p_token_hash, now() + make_interval(secs => p_ttl_seconds))
  returning * into v_session;
  return jsonb_build_object('token', null, 'expiresAt', v_session.expires_at,
    'user', app.user_json(v_user));
end
$$;

create function api.end_current_session() returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid := nullif(current_setting('pressroom.session_id', true), '')::uuid;
  v_row record;
begin
  perform app.require_session();
  update app.sessions set revoked_at = now()
  where id = v_id and user_id = app.current_user_id() and revoked_at is null
  returning id, revoked_at into v_row;
  if v_row.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No open session to end.');
  end if;
  return jsonb_build_object('id', v_row.id, 'endedAt', v_row.revoked_at);
end
$$;

------------------------------------------------------------------------------
-- Workspaces
------------------------------------------------------------------------------
create function api.list_workspaces() returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(app.workspace_json(w, r.role) order by w.created_at, w.id), '[]')
  from app.workspaces w
  join app.principal_workspace_roles() r on r.workspace_id = w.id
  where w.organization_id = app.current_organization_id()
$$;

create function api.create_workspace(p_name text, p_timezone text) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_user app.users;
  v_ws app.workspaces;
begin
  perform app.require_session();
  select * into v_user from app.users where id = app.current_user_id();
  if v_user.org_role not in ('owner', 'admin') then
    perform app.raise(403, 'ROLE_REQUIRED', 'Only organization owners and admins can create workspaces.',
      jsonb_build_object('requiredOrgRole', 'admin', 'orgRole', v_user.org_role));
  end if;
  insert into app.workspaces (organization_id, name, timezone)
  values (v_user.organization_id, p_name, coalesce(p_timezone, 'UTC'))
  returning * into v_ws;
  insert into app.workspace_members (workspace_id, user_id, organization_id, role)
  values (v_ws.id, v_user.id, v_user.organization_id, 'manager');
  return app.workspace_json(v_ws, 'manager');
end
$$;

------------------------------------------------------------------------------
-- Members
------------------------------------------------------------------------------
create function app.member_json(m app.workspace_members) returns jsonb
language sql stable
as $$ select jsonb_build_object('userId', u.id, 'email', u.email, 'role', m.role,
  'orgRole', u.org_role, 'status', u.status, 'createdAt', m.created_at, 'updatedAt', m.updated_at)
  from app.users u where u.id = m.user_id $$;

create function api.list_members() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('manager');
  return (
    select coalesce(jsonb_agg(app.member_json(m) order by m.created_at, m.user_id), '[]')
    from app.workspace_members m
    where m.workspace_id = app.current_workspace_id());
end
$$;

create function api.add_member(p_email text, p_role text) returns jsonb
language plpgsql volatile
as $$
declare
  v_user record;
  v_member app.workspace_members;
begin
  perform app.require_role('manager');
  select id into v_user from app.users where lower(email) = lower(p_email);
  if v_user.id is null then
    -- Not in this organization (another organization's users are invisible
    -- here): create an invited user of this organization.
    begin
      insert into app.users (organization_id, email, org_role, status)
      values (app.current_organization_id(), p_email, 'member', 'invited')
      returning id into v_user;
    exception when unique_violation then
      perform app.raise(409, 'EMAIL_TAKEN', 'This email belongs to an account outside this organization.',
        jsonb_build_object('field', 'email'));
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

create function api.update_member(p_user_id uuid, p_role text) returns jsonb
language plpgsql volatile
as $$
declare
  v_member app.workspace_members;
begin
  perform app.require_role('manager');
  update app.workspace_members set role = p_role
  where workspace_id = app.current_workspace_id() and user_id = p_user_id
  returning * into v_member;
  if v_member.user_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No such member in this workspace.', jsonb_build_object('userId', p_user_id));
  end if;
  return app.member_json(v_member);
end
$$;

create function api.remove_member(p_user_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v_removed uuid;
begin
  perform app.require_role('manager');
  delete from app.workspace_members
  where workspace_id = app.current_workspace_id() and user_id = p_user_id
  returning user_id into v_removed;
  if v_removed is null then
    perform app.raise(404, 'NOT_FOUND', 'No such member in this workspace.', jsonb_build_object('userId', p_user_id));
  end if;
  return jsonb_build_object('userId', v_removed, 'removed', true);
end
$$;

------------------------------------------------------------------------------
-- API keys
------------------------------------------------------------------------------
-- Keys the current session may administer: owners and admins all of the
-- organization's; managers those whose granted workspaces they all manage.
create function app.administrable_api_key_ids() returns setof uuid
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select k.id from app.api_keys k
  where k.organization_id = app.current_organization_id()
    and app.current_actor_kind() = 'user'
    and (
      exists (select 1 from app.users u where u.id = app.current_user_id() and u.org_role in ('owner', 'admin'))
      or not exists (
        select 1 from app.api_key_workspaces g
        where g.api_key_id = k.id and not (g.workspace_id = any (app.managed_workspace_ids()))))
$$;

-- Only revocation, only of keys the session may administer, only in its own name.
create policy api_keys_request_update on app.api_keys for update to pressroom_request
  using (organization_id = (select app.current_organization_id())
         and (select app.current_actor_kind()) = 'user'
         and id in (select app.administrable_api_key_ids()))
  with check (organization_id = (select app.current_organization_id())
              and revoked_by = (select app.current_user_id()));

create function app.api_key_json(p_id uuid, p_with_grants boolean) returns jsonb
language sql stable
as $$
  select jsonb_build_object('id', k.id, 'name', k.name, 'keyPrefix', k.key_prefix, 'role', k.role,
    'createdAt', k.created_at, 'expiresAt', k.expires_at)
    || case when p_with_grants then jsonb_build_object(
      'lastUsedAt', k.last_used_at,
      'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name) order by w.name, w.id)
                              from app.api_key_workspaces g join app.workspaces w on w.id = g.workspace_id
                              where g.api_key_id = k.id), '[]'),
      'workspaceCount', (select count(*) from app.api_key_workspaces g where g.api_key_id = k.id))
    else '{}'::jsonb end
  from app.api_keys k where k.id = p_id
$$;

create function api.create_api_key(p_name text, p_workspace_ids uuid[], p_role text,
  p_expires_at timestamptz, p_key_prefix text, p_key_hash bytea)
returns jsonb
language plpgsql volatile
as $$
declare
  v_key_id uuid;
  v_missing uuid[];
  v_managed uuid[] := app.managed_workspace_ids();
begin
  perform app.require_session();
  perform app.require_role('manager');
  if p_expires_at is not null and p_expires_at <= now() then
    perform app.raise(400, 'VALIDATION_FAILED', 'expiresAt must be in the future.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'expiresAt',
        'code', 'in_past', 'message', 'must be in the future'))));
  end if;
  select coalesce(array_agg(x), '{}') into v_missing
  from unnest(p_workspace_ids) x where not (x = any (v_managed));
  if cardinality(v_missing) > 0 then
    perform app.raise(403, 'WORKSPACE_FORBIDDEN',
      'Every workspace granted to a key must be one you manage.',
      jsonb_build_object('workspaceIds', to_jsonb(v_missing)));
  end if;
  -- The key's role cannot exceed the creator's role in any granted
  -- workspace; managing them all, the creator is manager in each.
  insert into app.api_keys (organization_id, created_by, name, key_prefix, key_hash, role, expires_at)
  values (app.current_organization_id(), app.current_user_id(), p_name, p_key_prefix, p_key_hash,
          coalesce(p_role, 'editor'), p_expires_at)
  returning id into v_key_id;
  insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
  select v_key_id, x, app.current_organization_id() from (select distinct unnest(p_workspace_ids) x) s;
  return app.api_key_json(v_key_id, false);
end
$$;

create function api.list_api_keys() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_session();
  perform app.require_role('manager');
  return (
    select coalesce(jsonb_agg(app.api_key_json(k.id, true) order by k.created_at desc, k.id), '[]')
    from app.api_keys k
    where k.id in (select app.administrable_api_key_ids())
      and k.revoked_at is null and (k.expires_at is null or k.expires_at > now()));
end
$$;

create function api.revoke_api_key(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
begin
  perform app.require_session();
  perform app.require_role('manager');
  update app.api_keys set revoked_at = now(), revoked_by = app.current_user_id()
  where id = p_id and revoked_at is null
    and id in (select app.administrable_api_key_ids())
  returning id into v_id;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No active API key with this id that you may administer.',
      jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v_id, 'revoked', true);
end
$$;

------------------------------------------------------------------------------
-- Idempotency: scope (workspace, principal, method, route, key).
-- begin: claims the key (autocommit) or reports replay / mismatch / in use;
-- finish: records the outcome in the request's own transaction (success)
-- or right after it (refusals); release: forgets a claim after a 5xx.
------------------------------------------------------------------------------
create table app.idempotency_keys (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  principal_id uuid not null,
  method text not null,
  route text not null,
  key text not null check (length(key) between 1 and 255),
  request_hash bytea not null,
  state text not null default 'in_flight' check (state in ('in_flight', 'done')),
  response_status int,
  response_body jsonb,
  locked_until timestamptz not null default now() + interval '5 minutes',
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '24 hours',
  primary key (workspace_id, principal_id, method, route, key)
);
create index idempotency_keys_expires_at_idx on app.idempotency_keys (expires_at);
alter table app.idempotency_keys enable row level security;
alter table app.idempotency_keys force row level security;
create policy idempotency_keys_definer on app.idempotency_keys to pressroom_definer using (true) with check (true);
create policy idempotency_keys_request on app.idempotency_keys for all to pressroom_request
  using (workspace_id = (select app.current_workspace_id()) and principal_id = (select app.current_principal_id()))
  with check (workspace_id = (select app.current_workspace_id()) and principal_id = (select app.current_principal_id()));
grant select, insert, update, delete on app.idempotency_keys to pressroom_request, pressroom_definer;

create function api.idempotency_begin(p_method text, p_route text, p_key text, p_request_hash bytea)
returns jsonb
language plpgsql volatile
as $$
declare
  v_row app.idempotency_keys;
begin
  insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash)
  values (app.current_workspace_id(), app.current_principal_id(), p_method, p_route, p_key, p_request_hash)
  on conflict do nothing
  returning * into v_row;
  if v_row.key is not null then
    return jsonb_build_object('state', 'claimed');
  end if;
  select * into v_row from app.idempotency_keys
  where workspace_id = app.current_workspace_id() and principal_id = app.current_principal_id()
    and method = p_method and route = p_route and key = p_key
  for update;
  if v_row.expires_at <= now() or (v_row.state = 'in_flight' and v_row.locked_until <= now()) then
    -- An expired record, or a claim whose request died: start afresh.
    update app.idempotency_keys set request_hash = p_request_hash, state = 'in_flight',
      response_status = null, response_body = null, created_at = now(),
      locked_until = now() + interval '5 minutes', expires_at = now() + interval '24 hours'
    where workspace_id = v_row.workspace_id and principal_id = v_row.principal_id
      and method = v_row.method and route = v_row.route and key = v_row.key;
    return jsonb_build_object('state', 'claimed');
  end if;
  if v_row.request_hash <> p_request_hash then
    perform app.raise(422, 'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was used with a different request body; use a new key for a new request.',
      jsonb_build_object('key', p_key));
  end if;
  if v_row.state = 'in_flight' then
    perform app.raise(409, 'IDEMPOTENCY_KEY_IN_USE',
      'A request with this Idempotency-Key is still in progress; retry when it has finished.',
      jsonb_build_object('key', p_key));
  end if;
  return jsonb_build_object('state', 'replay', 'status', v_row.response_status, 'body', v_row.response_body);
end
$$;

create function api.idempotency_finish(p_method text, p_route text, p_key text, p_status int, p_body jsonb)
returns void
language sql volatile
as $$
  update app.idempotency_keys set state = 'done', response_status = p_status, response_body = p_body
  where workspace_id = app.current_workspace_id() and principal_id = app.current_principal_id()
    and method = p_method and route = p_route and key = p_key and state = 'in_flight'
$$;

create function api.idempotency_release(p_method text, p_route text, p_key text)
returns void
language sql volatile
as $$
  delete from app.idempotency_keys
  where workspace_id = app.current_workspace_id() and principal_id = app.current_principal_id()
    and method = p_method and route = p_route and key = p_key and state = 'in_flight'
$$;

------------------------------------------------------------------------------
-- Audit: one row per call, append-only, partitioned by month.
------------------------------------------------------------------------------
create table audit.api_calls (
  id uuid not null default gen_random_uuid(),
  occurred_at timestamptz not null default now(),
  actor_kind text not null check (actor_kind in ('user', 'api_key', 'anonymous')),
  actor_id uuid,
  api_key_prefix text,
  organization_id uuid,
  workspace_id uuid,
  method text not null,
  route text not null,
  status int not null check (status between 100 and 599),
  duration_ms numeric(12, 3) not null check (duration_ms >= 0),
  outcome text not null check (outcome in ('success', 'client_error', 'server_error')),
  error_code text,
  request_id text not null,
  primary key (id, occurred_at)
) partition by range (occurred_at);
create index api_calls_organization_id_idx on audit.api_calls (organization_id, occurred_at);
create index api_calls_workspace_id_idx on audit.api_calls (workspace_id, occurred_at);
create table audit.api_calls_default partition of audit.api_calls default;

create function audit.tg_refuse_change() returns trigger
language plpgsql
as $$
begin
  raise exception using errcode = 'PT409', message = 'The audit log is append-only.',
    detail = 'AUDIT_APPEND_ONLY', hint = '';
end
$$;
create trigger api_calls_10_append_only before update or delete on audit.api_calls
  for each row execute function audit.tg_refuse_change();

-- Creates the monthly partitions from this month to p_months_ahead months
-- ahead, each with its own TRUNCATE guard. Idempotent; run by a daily job.
create function audit.ensure_partitions(p_months_ahead int default 3) returns int
language plpgsql volatile security definer
set search_path = pg_catalog, audit
as $$
declare
  v_month date := date_trunc('month', now())::date;
  v_name text;
  v_created int := 0;
begin
  for i in 0 .. p_months_ahead loop
    v_name := 'api_calls_' || to_char(v_month + make_interval(months => i), 'YYYY_MM');
    if to_regclass('audit.' || v_name) is null then
      execute format('create table audit.%I partition of audit.api_calls for values from (%L) to (%L)',
        v_name, (v_month + make_interval(months => i))::timestamptz,
        (v_month + make_interval(months => i + 1))::timestamptz);
      execute format('create trigger %I before truncate on audit.%I for each statement execute function audit.tg_refuse_change()',
        v_name || '_10_append_only', v_name);
      -- Read only through the parent's policies, never directly.
      execute format('alter table audit.%I enable row level security', v_name);
      execute format('alter table audit.%I force row level security', v_name);
      v_created := v_created + 1;
    end if;
  end loop;
  return v_created;
end
$$;
create trigger api_calls_10_append_only_truncate before truncate on audit.api_calls
  for each statement execute function audit.tg_refuse_change();
create trigger api_calls_default_10_append_only before truncate on audit.api_calls_default
  for each statement execute function audit.tg_refuse_change();

alter table audit.api_calls enable row level security;
alter table audit.api_calls force row level security;
alter table audit.api_calls_default enable row level security;
alter table audit.api_calls_default force row level security;
create policy api_calls_definer_insert on audit.api_calls for insert to pressroom_definer with check (true);
create policy api_calls_definer_select on audit.api_calls for select to pressroom_definer using (true);
grant select, insert on audit.api_calls to pressroom_definer;

create function audit.record(
  p_actor_kind text, p_actor_id uuid, p_api_key_prefix text, p_organization_id uuid,
  p_workspace_id uuid, p_method text, p_route text, p_status int, p_duration_ms numeric,
  p_error_code text, p_request_id text)
returns void
language sql volatile security definer
set search_path = pg_catalog, audit
as $$
  insert into audit.api_calls (actor_kind, actor_id, api_key_prefix, organization_id, workspace_id,
    method, route, status, duration_ms, outcome, error_code, request_id)
  values (p_actor_kind, p_actor_id, p_api_key_prefix, p_organization_id, p_workspace_id,
    p_method, p_route, p_status, p_duration_ms,
    case when p_status >= 500 then 'server_error' when p_status >= 400 then 'client_error' else 'success' end,
    p_error_code, p_request_id)
$$;

------------------------------------------------------------------------------
-- Maintenance run by jobs (as pressroom_worker)
------------------------------------------------------------------------------
create function app.purge_expired() returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_idem int;
  v_sessions int;
  v_counters int;
begin
  delete from app.idempotency_keys where expires_at <= now();
  get diagnostics v_idem = row_count;
  delete from app.sessions where expires_at <= now() - interval '1 day'
     or revoked_at <= now() - interval '1 day';
  get diagnostics v_sessions = row_count;
  delete from app.rate_limit_counters where window_start < date_trunc('minute', now()) - interval '1 minute';
  get diagnostics v_counters = row_count;
  return jsonb_build_object('idempotencyKeys', v_idem, 'sessions', v_sessions, 'rateLimitWindows', v_counters);
end
$$;

------------------------------------------------------------------------------
-- Reporting (BI): read-only views
------------------------------------------------------------------------------
create view reporting.api_calls as
  select id, occurred_at, actor_kind, actor_id, api_key_prefix, organization_id, workspace_id,
         method, route, status, duration_ms, outcome, request_id, error_code
  from audit.api_calls;

-- Keys without their secrets: who holds which access, and since when.
create view reporting.api_keys as
  select k.id, k.organization_id, k.name, k.key_prefix, k.role, k.created_by, k.created_at,
         k.expires_at, k.last_used_at, k.revoked_at,
         (select array_agg(g.workspace_id order by g.workspace_id) from app.api_key_workspaces g where g.api_key_id = k.id) as workspace_ids
  from app.api_keys k;

create view reporting.organizations as
  select id, name, plan, trial_ends_at, created_at, updated_at from app.organizations;

create view reporting.workspaces as
  select id, organization_id, name, timezone, created_at, updated_at from app.workspaces;

------------------------------------------------------------------------------
-- Ownership and execute grants
------------------------------------------------------------------------------
alter function app.user_workspace_roles(uuid) owner to pressroom_definer;
alter function app.api_key_workspace_roles(uuid) owner to pressroom_definer;
alter function app.principal_workspace_roles() owner to pressroom_definer;
alter function app.accessible_workspace_ids() owner to pressroom_definer;
alter function app.managed_workspace_ids() owner to pressroom_definer;
alter function app.rate_limit_hit(text, text, int) owner to pressroom_definer;
alter function app.administrable_api_key_ids() owner to pressroom_definer;
alter function app.purge_expired() owner to pressroom_definer;
alter function app.tg_workspace_members_keep_manager() owner to pressroom_definer;
alter function api.gate(bytea, uuid, text, int, text, text) owner to pressroom_definer;
alter function api.signup(text, text, text, text, bytea, int, boolean, text, int) owner to pressroom_definer;
alter function api.login_lookup(text) owner to pressroom_definer;
alter function api.create_session(uuid, text, bytea, int) owner to pressroom_definer;
alter function api.create_workspace(text, text) owner to pressroom_definer;
alter function audit.record(text, uuid, text, uuid, uuid, text, text, int, numeric, text, text) owner to pressroom_definer;
alter view reporting.api_calls owner to pressroom_definer;
alter view reporting.workspaces owner to pressroom_definer;
alter view reporting.api_keys owner to pressroom_definer;
alter view reporting.organizations owner to pressroom_definer;

revoke execute on all functions in schema app, api, audit from public;
grant execute on all functions in schema app to pressroom_request, pressroom_definer;
grant execute on all functions in schema api to pressroom_request;
revoke execute on function app.purge_expired() from pressroom_request;
grant execute on function app.purge_expired() to pressroom_worker;
grant usage on schema audit to pressroom_worker;
grant execute on function audit.ensure_partitions(int) to pressroom_worker;
grant execute on function audit.record(text, uuid, text, uuid, uuid, text, text, int, numeric, text, text) to pressroom_app;
grant execute on function api.gate(bytea, uuid, text, int, text, text) to pressroom_app;
alter function audit.ensure_partitions(int) owner to pressroom_definer;
grant create on schema audit to pressroom_definer;
alter table audit.api_calls owner to pressroom_definer;
alter table audit.api_calls_default owner to pressroom_definer;
alter function audit.tg_refuse_change() owner to pressroom_definer;

grant select on all tables in schema reporting to pressroom_bi;

select audit.ensure_partitions(3);
