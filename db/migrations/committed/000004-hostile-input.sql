--! Previous: sha1:2e63ce44744d6ada69295248c1de82d877242422
--! Hash: sha1:3c98fcceb93f36e61c988d61391fcea5c1ca4aab
--! Message: hostile input

--! split: 40-hostile.sql
-- Hostile traffic: failed credentials throttled per client address, bursts of
-- them audited as one summary row per window, and authenticated calls to
-- routes that do not exist audited with route null (README.md "Limits and
-- errors", db/ERRORS.md).

------------------------------------------------------------------------------
-- Audit: a row may stand for several calls (a burst summary), and an
-- unmatched call has no route template.
------------------------------------------------------------------------------
alter table audit.api_calls alter column route drop not null;
alter table audit.api_calls add column calls integer not null default 1 constraint api_calls_calls_check check (calls >= 1);
comment on column audit.api_calls.route is 'The operation''s path template (openapi.yaml); null for a call that matched no route (unknown path, method or an undecodable path) and for a summary row of refused credentials.';
comment on column audit.api_calls.calls is 'How many calls this row stands for: 1, except a summary row of refused credentials (error_code AUTH_FAILURE_BURST, written by app.flush_auth_failures), which counts the refusals of one client address and minute that were not audited one by one. sum(calls) is the number of /v1 calls made.';

create or replace view reporting.api_calls as
  select id, occurred_at, actor_kind, actor_id, api_key_prefix, organization_id, workspace_id,
         method, route, status, duration_ms, outcome, request_id, error_code, calls
  from audit.api_calls;

------------------------------------------------------------------------------
-- Failed credentials per client address and minute.
------------------------------------------------------------------------------
create unlogged table app.auth_failures (
  client text not null,
  window_start timestamptz not null,
  failures int not null check (failures >= 0),
  audited int not null check (audited >= 0),
  primary key (client, window_start)
);
comment on table app.auth_failures is 'Failed credentials (no, malformed or unknown bearer) per client address and minute, counted by api.gate_guarded so that the limit holds across API processes: over the limit the address is answered 429 AUTH_THROTTLED before any credential is looked at; only the first refusals are audited one by one (audited), the rest become one summary row (app.flush_auth_failures). Not tenant data: unlogged, reached by pressroom_definer only.';
alter table app.auth_failures enable row level security;
alter table app.auth_failures force row level security;
create policy auth_failures_definer on app.auth_failures to pressroom_definer using (true) with check (true);
grant select, insert, update, delete on app.auth_failures to pressroom_definer;

-- Writes the summary rows of closed windows (of one client, or of all) and
-- forgets those windows.
create function app.flush_auth_failures(p_client text default null) returns int
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_rows int;
begin
  with closed as (
    delete from app.auth_failures
    where window_start < date_trunc('minute', now()) and (p_client is null or client = p_client)
    returning client, window_start, failures, audited
  )
  insert into audit.api_calls (occurred_at, actor_kind, method, route, status, duration_ms, outcome, error_code,
                               request_id, calls)
  select window_start, 'anonymous', '*', null, 401, 0, 'client_error', 'AUTH_FAILURE_BURST',
         'auth-failures:' || client || ':' || to_char(window_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"'),
         failures - audited
  from closed where failures > audited;
  get diagnostics v_rows = row_count;
  return v_rows;
end
$$;
alter function app.flush_auth_failures(text) owner to pressroom_definer;
comment on function app.flush_auth_failures(text) is 'For each closed minute of app.auth_failures (of one client address, or all): one audit row (error_code AUTH_FAILURE_BURST, route null, calls = the refusals not audited one by one), then the window is forgotten. Run by api.gate_guarded for the caller''s address and by app.purge_expired for all.';

create function api.gate_guarded(p_token_hash bytea, p_workspace_id uuid, p_class text, p_min_plan text,
                                 p_bucket text, p_client text, p_failure_limit int, p_audit_first int)
returns jsonb language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
  v_audited int;
  v_result jsonb;
begin
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= p_failure_limit then
    -- Over the limit: refused before the credential is looked at (a right
    -- guess would answer like a wrong one), counted in the window's summary.
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  if p_token_hash is null and p_bucket is null then
    v_result := jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
      'message', 'Send a bearer credential: Authorization: Bearer <API key or session token>.'));
  else
    v_result := api.gate(p_token_hash, p_workspace_id, p_class, p_min_plan, p_bucket);
  end if;
  if v_result -> 'error' ->> 'code' = 'UNAUTHENTICATED' then
    perform app.flush_auth_failures(p_client);
    insert into app.auth_failures as f (client, window_start, failures, audited)
    values (p_client, v_window, 1, case when p_audit_first >= 1 then 1 else 0 end)
    on conflict (client, window_start) do update
      set failures = f.failures + 1,
          audited = f.audited + case when f.failures < p_audit_first then 1 else 0 end
    returning failures, audited into v_failures, v_audited;
    v_result := v_result || jsonb_build_object('audit', v_failures <= p_audit_first);
  end if;
  return v_result;
end
$$;
alter function api.gate_guarded(bytea, uuid, text, text, text, text, int, int) owner to pressroom_definer;
grant execute on function api.gate_guarded(bytea, uuid, text, text, text, text, int, int) to pressroom_app;
comment on function api.gate_guarded(bytea, uuid, text, text, text, text, int, int) is 'Runs first for every /v1 call (server/http/pipeline.ts), as pressroom_app: api.gate guarded by the failed-credential limit of the client address (p_client, honouring TRUST_PROXY). An address with p_failure_limit failed credentials (401 UNAUTHENTICATED) in the current minute is answered 429 AUTH_THROTTLED with retryAfter before its credential is looked at; a failure is audited one by one (audit: true) only among the first p_audit_first of the minute, the rest in one summary row (app.flush_auth_failures). A missing credential (p_token_hash and p_bucket null) counts as a failure.';

-- An authenticated call that matched no route: one audit row, route null.
create function api.record_unmatched_call(p_token_hash bytea, p_method text, p_status int, p_error_code text,
                                          p_duration_ms numeric, p_request_id text)
returns boolean language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_gate jsonb := api.gate(p_token_hash, null, 'read', 'basic', null);
  v_principal jsonb := v_gate -> 'principal';
begin
  if v_principal is null then
    return false;
  end if;
  perform audit.record(v_principal ->> 'actorKind',
    coalesce(v_principal ->> 'apiKeyId', v_principal ->> 'userId')::uuid,
    v_principal ->> 'apiKeyPrefix', (v_principal ->> 'organizationId')::uuid, null,
    p_method, null, p_status, p_duration_ms, p_error_code, p_request_id);
  return true;
end
$$;
alter function api.record_unmatched_call(bytea, text, int, text, numeric, text) owner to pressroom_definer;
grant execute on function api.record_unmatched_call(bytea, text, int, text, numeric, text) to pressroom_app;
comment on function api.record_unmatched_call(bytea, text, int, text, numeric, text) is 'For a call that matched no route (404 NOT_FOUND, 405 METHOD_NOT_ALLOWED, 400 MALFORMED_URL; server/app.ts), as pressroom_app: when the bearer authenticates (api.gate with the read class, so it counts against the credential''s read limit), writes its audit row with route null and returns true; an unauthenticated call writes nothing and returns false.';

------------------------------------------------------------------------------
-- The maintenance job (app.purge_expired, every 5 minutes) also writes the
-- summaries of closed windows whose address sent nothing since.
------------------------------------------------------------------------------
create or replace function app.purge_expired() returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_idem int;
  v_sessions int;
  v_counters int;
  v_bursts int;
begin
  delete from app.idempotency_keys where expires_at <= now();
  get diagnostics v_idem = row_count;
  delete from app.sessions where expires_at <= now() - interval '1 day'
     or revoked_at <= now() - interval '1 day';
  get diagnostics v_sessions = row_count;
  delete from app.rate_limit_counters where window_start < date_trunc('minute', now()) - interval '1 minute';
  get diagnostics v_counters = row_count;
  v_bursts := app.flush_auth_failures(null);
  return jsonb_build_object('idempotencyKeys', v_idem, 'sessions', v_sessions, 'rateLimitWindows', v_counters,
                            'authFailureSummaries', v_bursts);
end
$$;

select app.harden_api_functions();
