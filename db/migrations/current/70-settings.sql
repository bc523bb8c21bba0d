-- Settings in SQL: the rules read what is in force from one table.
--
-- The server writes its configuration here at start (api.apply_settings, as
-- pressroom_app); the rules read it with app.setting(). Before, sign-up
-- policy, trial length, session lifetime, rate limits and the publishing
-- retry policy arrived as arguments of each call, so a rule's outcome
-- depended on which caller passed what. The functions that took them keep
-- their bodies under app.*_with_* names; the api and engine entry points read
-- the settings and call them. Defaults here equal the server's (README.md,
-- "Configuration").

create table app.settings (
  key text primary key check (key ~ '^[a-z][a-z0-9_]*$'),
  value jsonb not null,
  kind text not null check (kind in ('boolean', 'integer', 'plan')),
  minimum int,
  description text not null,
  updated_at timestamptz not null default now(),
  check (kind = 'boolean' and jsonb_typeof(value) = 'boolean'
      or kind = 'integer' and jsonb_typeof(value) = 'number' and value::text ~ '^\d+$' and value::numeric >= coalesce(minimum, 0)
      or kind = 'plan' and value #>> '{}' in ('trial', 'basic', 'standard', 'premium'))
);
comment on table app.settings is
  'The configuration the rules read (app.setting). Written by the server at start through api.apply_settings from its '
  'environment (README.md, "Configuration"); readable by the roles that run rules, by BI through nothing.';
alter table app.settings enable row level security;
alter table app.settings force row level security;
create policy settings_read on app.settings for select to pressroom_api, pressroom_worker using (true);
create policy settings_definer on app.settings to pressroom_definer using (true) with check (true);
grant select on app.settings to pressroom_api, pressroom_worker, pressroom_definer;
grant update (value, updated_at) on app.settings to pressroom_definer;

insert into app.settings (key, value, kind, minimum, description) values
  ('allow_signup', 'false', 'boolean', null, 'Sign-up is open after the first organization exists (ALLOW_SIGNUP).'),
  ('default_plan', '"trial"', 'plan', null, 'Plan of organizations made by sign-up (DEFAULT_PLAN).'),
  ('trial_days', '3', 'integer', 0, 'Length of the trial plan in days (TRIAL_DAYS).'),
  ('session_ttl_seconds', '604800', 'integer', 60, 'Lifetime of a session token (SESSION_TTL_SECONDS).'),
  ('rate_limit_read', '120', 'integer', 1, 'Read calls per workspace and minute (RATE_LIMIT_READ).'),
  ('rate_limit_write', '30', 'integer', 1, 'Write calls per workspace and minute (RATE_LIMIT_WRITE).'),
  ('rate_limit_expensive', '15', 'integer', 1, 'Expensive calls per workspace and minute (RATE_LIMIT_EXPENSIVE).'),
  ('publish_max_attempts', '5', 'integer', 1, 'Attempts of a transiently failing publish before it fails (PUBLISH_MAX_ATTEMPTS).'),
  ('publish_retry_base_ms', '1000', 'integer', 1, 'First retry delay of a publish, doubled per attempt (PUBLISH_RETRY_BASE_MS).');

create function app.setting(p_key text) returns jsonb
language sql stable parallel safe
set search_path = pg_catalog
as $$ select value from app.settings where key = p_key $$;
comment on function app.setting(text) is 'The value in force of a setting (app.settings), or null for an unknown key.';

create function app.setting_int(p_key text) returns int
language plpgsql stable
set search_path = pg_catalog
as $$
declare
  v jsonb := app.setting(p_key);
begin
  if v is null or jsonb_typeof(v) <> 'number' then
    raise exception 'app.setting_int: % is not an integer setting', p_key;
  end if;
  return v::text::int;
end
$$;
comment on function app.setting_int(text) is 'An integer setting; raises for an unknown key.';
grant execute on function app.setting(text), app.setting_int(text) to pressroom_api, pressroom_worker, pressroom_definer;

-- Writes the settings the server was started with. Unknown keys and values of
-- the wrong kind are refused (400 VALIDATION_FAILED) and nothing is written.
create function api.apply_settings(p_settings jsonb) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_key text;
  v_value jsonb;
  v_problems jsonb := '[]';
  v_row app.settings;
begin
  if jsonb_typeof(p_settings) is distinct from 'object' then
    perform app.raise(400, 'VALIDATION_FAILED', 'Settings are a JSON object.');
  end if;
  for v_key, v_value in select * from jsonb_each(p_settings) loop
    select * into v_row from app.settings where key = v_key;
    if v_row.key is null then
      v_problems := v_problems || jsonb_build_array(app.field_problem(v_key, 'unknown_setting', 'is not a setting'));
    elsif not (v_row.kind = 'boolean' and jsonb_typeof(v_value) = 'boolean'
            or v_row.kind = 'integer' and jsonb_typeof(v_value) = 'number' and v_value::text ~ '^\d+$'
               and v_value::numeric >= coalesce(v_row.minimum, 0)
            or v_row.kind = 'plan' and v_value #>> '{}' in ('trial', 'basic', 'standard', 'premium')) then
      v_problems := v_problems || jsonb_build_array(app.field_problem(v_key, 'invalid', format('must be a %s%s', v_row.kind,
        case when v_row.minimum is not null then format(' of at least %s', v_row.minimum) else '' end)));
    end if;
  end loop;
  if jsonb_array_length(v_problems) > 0 then
    perform app.raise_field_problems(v_problems);
  end if;
  update app.settings s set value = p_settings -> s.key, updated_at = now()
  where p_settings ? s.key and s.value is distinct from p_settings -> s.key;
  return (select jsonb_object_agg(key, value order by key) from app.settings);
end
$$;
alter function api.apply_settings(jsonb) owner to pressroom_definer;
revoke all on function api.apply_settings(jsonb) from public;
grant execute on function api.apply_settings(jsonb) to pressroom_app;
comment on function api.apply_settings(jsonb) is
  'Called by the server at start (as pressroom_app) with its configuration: writes the given settings after checking '
  'every key and value (400 VALIDATION_FAILED otherwise); returns every setting in force.';

------------------------------------------------------------------------------
-- The gate: the rate limit of a class is a setting.
------------------------------------------------------------------------------
alter function api.gate(bytea, uuid, text, int, text, text) set schema app;
alter function app.gate(bytea, uuid, text, int, text, text) rename to gate_with_limit;
revoke all on function app.gate_with_limit(bytea, uuid, text, int, text, text) from pressroom_app, pressroom_request;
comment on function app.gate_with_limit(bytea, uuid, text, int, text, text) is
  'The gate''s body (authentication, workspace grant, plan, rate limit) with the limit given; called by api.gate.';

create function api.gate(
  p_token_hash bytea,
  p_workspace_id uuid,
  p_class text,
  p_min_plan text default 'basic',
  p_bucket text default null)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
begin
  if p_class not in ('read', 'write', 'expensive') then
    raise exception 'api.gate: unknown throttle class %', p_class;
  end if;
  return app.gate_with_limit(p_token_hash, p_workspace_id, p_class, app.setting_int('rate_limit_' || p_class),
                             p_min_plan, p_bucket);
end
$$;
alter function api.gate(bytea, uuid, text, text, text) owner to pressroom_definer;
revoke all on function api.gate(bytea, uuid, text, text, text) from public;
grant execute on function api.gate(bytea, uuid, text, text, text) to pressroom_app, pressroom_request;
comment on function api.gate(bytea, uuid, text, text, text) is
  'Runs first for every /v1 and /v2 call (server/http/pipeline.ts), as pressroom_app: authenticates the bearer token '
  '(session or API key), checks the workspace grant and the plan, and counts the rate limit of the operation''s class '
  'with the limit in force (app.settings rate_limit_<class>). Returns the principal, the workspace role and the rate '
  'state, or the error to answer (401 UNAUTHENTICATED, PLAN_REQUIRED; 403 WORKSPACE_FORBIDDEN; 429 RATE_LIMITED).';

------------------------------------------------------------------------------
-- Sign-up and sign-in: policy, plan, trial and session lifetime are settings.
------------------------------------------------------------------------------
alter function api.signup(text, text, text, text, bytea, int, boolean, text, int) set schema app;
alter function app.signup(text, text, text, text, bytea, int, boolean, text, int) rename to signup_with_policy;
revoke all on function app.signup_with_policy(text, text, text, text, bytea, int, boolean, text, int) from pressroom_request;
comment on function app.signup_with_policy(text, text, text, text, bytea, int, boolean, text, int) is
  'Sign-up''s body with the policy given; called by api.signup with the settings in force.';

create function api.signup(p_email text, p_password_hash text, p_organization_name text, p_workspace_name text,
  p_session_token_hash bytea)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.signup_with_policy(p_email, p_password_hash, p_organization_name, p_workspace_name, p_session_token_hash,
    app.setting_int('session_ttl_seconds'), (app.setting('allow_signup'))::text::boolean,
    app.setting('default_plan') #>> '{}', app.setting_int('trial_days'))
$$;
alter function api.signup(text, text, text, text, bytea) owner to pressroom_definer;
revoke all on function api.signup(text, text, text, text, bytea) from public;
grant execute on function api.signup(text, text, text, text, bytea) to pressroom_request;
comment on function api.signup(text, text, text, text, bytea) is
  'Serves POST /v1/auth/signup (signup_v1): creates an organization with the plan in force (default_plan, trial_days), '
  'its owner, a first workspace and a session. After the first organization, refused with 403 SIGNUP_CLOSED unless '
  'allow_signup is on.';

alter function api.create_session(uuid, text, bytea, int) set schema app;
alter function app.create_session(uuid, text, bytea, int) rename to create_session_with_ttl;
revoke all on function app.create_session_with_ttl(uuid, text, bytea, int) from pressroom_request;
comment on function app.create_session_with_ttl(uuid, text, bytea, int) is
  'Sign-in''s session creation with the lifetime given; called by api.create_session.';

create function api.create_session(p_user_id uuid, p_verified_hash text, p_token_hash bytea)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.create_session_with_ttl(p_user_id, p_verified_hash, p_token_hash, app.setting_int('session_ttl_seconds'))
$$;
alter function api.create_session(uuid, text, bytea) owner to pressroom_definer;
revoke all on function api.create_session(uuid, text, bytea) from public;
grant execute on function api.create_session(uuid, text, bytea) to pressroom_request;
comment on function api.create_session(uuid, text, bytea) is
  'Serves POST /v1/auth/login (login_v1) once the server verified the password against the hash it read: opens a '
  'session of the lifetime in force (session_ttl_seconds).';

------------------------------------------------------------------------------
-- The publishing engine: the retry policy is a setting, and a channel that is
-- disconnected or deleted fails the edition here, not in the worker.
------------------------------------------------------------------------------
alter function app.publish_record(uuid, text, text, text, text, int, int) rename to publish_record_with_policy;
comment on function app.publish_record_with_policy(uuid, text, text, text, text, int, int) is
  'Records a publish attempt''s outcome with the retry policy given; called by app.publish_record.';

create function app.publish_record(p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text,
  p_permalink text)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.publish_record_with_policy(p_attempt_id, p_outcome, p_error, p_platform_post_id, p_permalink,
    app.setting_int('publish_max_attempts'), app.setting_int('publish_retry_base_ms'))
$$;
alter function app.publish_record(uuid, text, text, text, text) owner to pressroom_definer;
revoke all on function app.publish_record(uuid, text, text, text, text) from public;
grant execute on function app.publish_record(uuid, text, text, text, text) to pressroom_worker;
comment on function app.publish_record(uuid, text, text, text, text) is
  'The engine records what the platform answered for a claimed attempt (published, failed, transient, unknown): '
  'statuses, retries with exponential backoff (publish_max_attempts, publish_retry_base_ms), awaiting confirmation.';

alter function app.publish_claim(uuid, uuid, text[]) rename to publish_claim_attempt;
comment on function app.publish_claim_attempt(uuid, uuid, text[]) is
  'Claims a due edition for a publish job and commits the attempt before the platform is called; called by '
  'app.publish_claim.';

create function app.publish_claim(p_content_id uuid, p_job_id uuid, p_resendable text[]) returns jsonb
language plpgsql volatile
set search_path = pg_catalog, app
as $$
declare
  v_claim jsonb := app.publish_claim_attempt(p_content_id, p_job_id, p_resendable);
  v_integration jsonb := v_claim #> '{edition,integration}';
begin
  if v_claim ->> 'action' = 'send'
     and ((v_integration ->> 'deleted')::boolean or v_integration ->> 'status' = 'disconnected') then
    -- Nothing to send to: a permanent failure, recorded at once.
    perform app.publish_record((v_claim ->> 'attemptId')::uuid, 'failed', 'The channel was disconnected or deleted.',
      null, null);
    return jsonb_build_object('action', 'skip', 'reason', 'channel_unavailable');
  end if;
  return v_claim;
end
$$;
revoke all on function app.publish_claim(uuid, uuid, text[]) from public;
grant execute on function app.publish_claim(uuid, uuid, text[]) to pressroom_worker, pressroom_definer;
comment on function app.publish_claim(uuid, uuid, text[]) is
  'The engine''s claim of a due edition (app.publish_claim_attempt); an edition whose channel is disconnected or '
  'deleted fails permanently here instead of being sent.';
