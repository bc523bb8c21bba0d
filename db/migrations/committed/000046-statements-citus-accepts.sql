--! Previous: sha1:4d8878a45026aa5b4c25af10a3e8ab0b72193f26
--! Hash: sha1:a0b908bfeab924ba417673cb627b408327ba8415
--! Message: statements citus accepts

--! split: 01-current.sql
-- Functions whose statements Citus refuses, rewritten so that it accepts them, with the same
-- behaviour on a single PostgreSQL (docs/citus.md, "Functions"; in the style of
-- app.declare_connectors in the migration "startup on citus"). On a distributed database the
-- workspace tables are distributed by workspace_id and the other tables of app are reference
-- tables; Citus plans each statement on them and refuses, on either kind of table:
--
--   * a function that is not IMMUTABLE (now(), clock_timestamp(), app.setting_int(...)) in the
--     DO UPDATE SET of an INSERT ... ON CONFLICT:
--       "functions used in the DO UPDATE SET clause of INSERTs on distributed tables must be
--        marked IMMUTABLE"
--     or in its WHERE:
--       "functions used in the WHERE clause of the ON CONFLICT clause of INSERTs on
--        distributed tables must be marked IMMUTABLE"
--     (timestamptz + interval is a STABLE operator, so it counts too);
--   * a VOLATILE function (clock_timestamp()) in the SET of an UPDATE:
--       "functions used in UPDATE queries on distributed tables must not be VOLATILE"
--     and a non-IMMUTABLE one in a RETURNING clause:
--       "non-IMMUTABLE functions are not allowed in the RETURNING clause";
--   * a subquery in INSERT ... VALUES:
--       "subqueries are not supported within INSERT queries"
--       (hint: "Try rewriting your queries with 'INSERT INTO ... SELECT' syntax.").
--
-- The fix: the value is read into a plpgsql variable first, and the statement uses the
-- variable (a parameter, which Citus accepts). now() is the transaction's start, so a
-- variable set from it holds the same value; clock_timestamp() is read right before the
-- statement that used it; a subquery of VALUES is computed, with the same expression, just
-- before the INSERT.
--
-- Two reads are rewritten as well, met on the cluster: app.user_workspace_roles, whose UNION ALL
-- of a reference-only part and a distributed part made Citus open a connection to the
-- coordinator as the function's owner ("connection to the remote node
-- pressroom_definer@127.0.0.1:9700 failed ... role "pressroom_definer" is not permitted to log
-- in"), is two RETURN QUERY, the same rows in the same order; app.credentials_due, which joined
-- two distributed tables on the integration's id alone ("the query contains a join that
-- requires repartitioning"), joins on workspace_id too, which the credential's foreign key
-- makes equal.
--
-- Each function is re-created from its current definition with only those statements changed
-- (CREATE OR REPLACE keeps its owner, grants and comment), so running this file again changes
-- nothing.

-- app.connector_publish_limits (reference table): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.declare_connector_limits(p_limits jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_connector text;
  v jsonb;
  v_now timestamptz := now();
begin
  -- p_limits: {"<connector>": {"perIntegration": {"maxInFlight", "maxPerWindow", "windowSeconds"},
  --                           "perApp": {"maxPerWindow", "windowSeconds"}}, ...}
  for v_connector, v in select * from jsonb_each(coalesce(p_limits, '{}')) loop
    insert into app.connector_publish_limits as l (connector, integration_max_in_flight, integration_max_per_window,
      integration_window_seconds, app_max_per_window, app_window_seconds)
    values (v_connector, (v #>> '{perIntegration,maxInFlight}')::int, (v #>> '{perIntegration,maxPerWindow}')::int,
      (v #>> '{perIntegration,windowSeconds}')::int, (v #>> '{perApp,maxPerWindow}')::int, (v #>> '{perApp,windowSeconds}')::int)
    on conflict (connector) do update set integration_max_in_flight = excluded.integration_max_in_flight,
      integration_max_per_window = excluded.integration_max_per_window,
      integration_window_seconds = excluded.integration_window_seconds,
      app_max_per_window = excluded.app_max_per_window, app_window_seconds = excluded.app_window_seconds,
      declared_at = v_now
    where (l.integration_max_in_flight, l.integration_max_per_window, l.integration_window_seconds, l.app_max_per_window, l.app_window_seconds)
      is distinct from (excluded.integration_max_in_flight, excluded.integration_max_per_window, excluded.integration_window_seconds,
                        excluded.app_max_per_window, excluded.app_window_seconds);
  end loop;
  return (select coalesce(jsonb_object_agg(connector, to_jsonb(l) - 'connector' - 'declared_at'), '{}') from app.connector_publish_limits l);
end
$function$;

-- app.atproto_oauth_states (reference table): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION api.atproto_oauth_state_put(p_key_hash bytea, p_ciphertext bytea, p_key_version integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_now timestamptz := now();
begin
  -- Written in the last phase of POST {ws}/integrations/connect, beside api.connect_begin: a manager's only.
  perform app.connect_require_manager();
  if p_key_hash is null or length(p_key_hash) <> 32 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The state key hash is the SHA-256 of the key (32 bytes).');
  end if;
  delete from app.atproto_oauth_states where expires_at <= now() - interval '1 hour';
  insert into app.atproto_oauth_states (key_hash, ciphertext, key_version, expires_at)
  values (p_key_hash, p_ciphertext, p_key_version, now() + interval '10 minutes')
  on conflict (key_hash) do update set ciphertext = excluded.ciphertext, key_version = excluded.key_version,
    created_at = v_now, expires_at = excluded.expires_at;
end
$function$;

-- app.inbox_reads (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION api.mark_inbox_thread(p_id uuid, p_read boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.inbox_threads;
  v_at timestamptz;
  v_now timestamptz := now();
begin
  perform app.require_role('viewer');
  v := app.inbox_thread(p_id);
  if app.current_principal_id() is null then
    perform app.raise(403, 'ROLE_REQUIRED', 'Read state belongs to a member or API key.');
  end if;
  if p_read then
    v_at := greatest(now(), (select max(created_at) from app.inbox_messages where thread_id = p_id));
  else
    -- Unread from the newest inbound message on (none: nothing is unread).
    v_at := (select max(created_at) from app.inbox_messages
             where thread_id = p_id and direction = 'inbound' and has_original) - interval '1 microsecond';
    v_at := coalesce(v_at, now());
  end if;
  insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
  values (p_id, app.current_principal_id(), app.current_organization_id(), v.workspace_id, v_at)
  on conflict (thread_id, principal_id, workspace_id) do update set read_at = excluded.read_at, updated_at = v_now;
  return app.inbox_thread_json(v);
end
$function$;

-- app.review_reminders (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION api.remind_review(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  r app.reviews;
  v_waiting text[];
  v_recent text[];
  v_interval int := app.setting_int('review_remind_interval_seconds');
  v_count int;
  v_now timestamptz := now();
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  v_waiting := array(select distinct k from app.review_items it, unnest(it.waiting_on) k
                     where it.review_id = r.id and it.state = 'pending' and it.open order by k);
  if cardinality(v_waiting) = 0 then
    perform app.raise(409, 'NOTHING_TO_REMIND', 'No approver is pending on this review.', jsonb_build_object('reviewId', r.id));
  end if;
  v_recent := array(select m.approver_key from app.review_reminders m
                    where m.review_id = r.id and m.approver_key = any (v_waiting)
                      and m.reminded_at > now() - make_interval(secs => v_interval) order by 1);
  if cardinality(v_recent) > 0 then
    perform app.raise(409, 'REMIND_TOO_SOON',
      format('An approver of this review was reminded less than %s seconds ago.', v_interval),
      jsonb_build_object('reviewId', r.id, 'approvers', to_jsonb(v_recent), 'intervalSeconds', v_interval,
        'retryAfter', (select ceil(extract(epoch from (max(m.reminded_at) + make_interval(secs => v_interval) - now())))::int
                       from app.review_reminders m where m.review_id = r.id and m.approver_key = any (v_recent))));
  end if;
  insert into app.review_reminders (review_id, approver_key, organization_id, workspace_id)
  select r.id, k, r.organization_id, r.workspace_id from unnest(v_waiting) k
  on conflict (review_id, approver_key, workspace_id) do update set reminded_at = v_now;
  v_count := app.review_notify_waiting(r, 'review_reminder', jsonb_build_object('message', p_body ->> 'message'));
  perform app.review_activity_add(r, null, 'system', 'reminded', p_body ->> 'message', jsonb_build_object('approvers', to_jsonb(v_waiting)));
  return jsonb_build_object('reviewId', r.id, 'reminded', cardinality(v_waiting), 'notifications', v_count);
end
$function$;

-- app.review_settings (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION api.set_review_policy(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_now timestamptz := now();
begin
  perform app.require_role('manager');
  insert into app.review_settings (workspace_id, organization_id, review_policy, updated_by)
  values (app.current_workspace_id(), app.current_organization_id(), p_body ->> 'reviewPolicy', app.current_person_id())
  on conflict (workspace_id) do update set review_policy = excluded.review_policy, updated_at = v_now, updated_by = excluded.updated_by;
  return jsonb_build_object('reviewPolicy', app.review_policy(app.current_workspace_id()));
end
$function$;

-- app.integration_sync_state (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.analytics_note_sync(p_integration_id uuid, p_outcome text, p_error text, p_count integer DEFAULT 1)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_integration record;
  v_now timestamptz := now();
begin
  select g.id, g.organization_id, g.workspace_id into v_integration from app.integrations g where g.id = p_integration_id;
  if v_integration.id is null or p_count <= 0 then
    return;
  end if;
  insert into app.integration_sync_state as s (integration_id, organization_id, workspace_id, last_attempt_at,
    last_success_at, last_error, last_error_at)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, now(),
    case when p_outcome = 'ok' then now() end,
    case when p_outcome <> 'ok' then left(p_error, 1000) end, case when p_outcome <> 'ok' then now() end)
  on conflict (integration_id, workspace_id) do update set
    last_attempt_at = v_now,
    last_success_at = case when p_outcome = 'ok' then v_now else s.last_success_at end,
    last_error = case when p_outcome <> 'ok' then left(p_error, 1000) else s.last_error end,
    last_error_at = case when p_outcome <> 'ok' then v_now else s.last_error_at end;
  insert into app.integration_sync_daily as d (integration_id, organization_id, workspace_id, day,
    successes, failures, rate_limit_hits)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, (now() at time zone 'UTC')::date,
    case when p_outcome = 'ok' then p_count else 0 end, case when p_outcome = 'failed' then p_count else 0 end,
    case when p_outcome = 'rate_limited' then p_count else 0 end)
  on conflict (integration_id, day, workspace_id) do update set
    successes = d.successes + excluded.successes, failures = d.failures + excluded.failures,
    rate_limit_hits = d.rate_limit_hits + excluded.rate_limit_hits;
end
$function$;

-- app.analytics_post_sync (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.analytics_record_sync(p_results jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v jsonb;
  v_item app.content_items;
  v_m jsonb;
  v_at timestamptz;
  v_snapshots int := 0;
  v_accounts int := 0;
  v_now timestamptz := now();
begin
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'posts', '[]'::jsonb)) loop
    select * into v_item from app.content_items where id = (v ->> 'contentId')::uuid;
    continue when v_item.id is null;
    insert into app.analytics_post_sync as s (content_item_id, organization_id, workspace_id, last_attempt_at, last_success_at, last_error)
    values (v_item.id, v_item.organization_id, v_item.workspace_id, now(),
      case when v ->> 'outcome' = 'ok' then now() end, case when v ->> 'outcome' <> 'ok' then left(v ->> 'error', 1000) end)
    on conflict (content_item_id, workspace_id) do update set last_attempt_at = v_now,
      last_success_at = case when v ->> 'outcome' = 'ok' then v_now else s.last_success_at end,
      last_error = case when v ->> 'outcome' = 'ok' then null else left(v ->> 'error', 1000) end;
    if v ->> 'outcome' = 'ok' and v ? 'metrics' then
      v_m := v -> 'metrics';
      v_at := coalesce((v ->> 'capturedAt')::timestamptz, now());
      insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
        impressions, reach, likes, comments, shares, saves, clicks, video_views)
      values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, v_at, 'sync',
        coalesce(app.analytics_count(v_m -> 'impressions'), 0), coalesce(app.analytics_count(v_m -> 'reach'), 0),
        coalesce(app.analytics_count(v_m -> 'likes'), 0), coalesce(app.analytics_count(v_m -> 'comments'), 0),
        coalesce(app.analytics_count(v_m -> 'shares'), 0), coalesce(app.analytics_count(v_m -> 'saves'), 0),
        coalesce(app.analytics_count(v_m -> 'clicks'), 0), coalesce(app.analytics_count(v_m -> 'videoViews'), 0))
      on conflict (content_item_id, captured_at, workspace_id) do nothing;
      v_snapshots := v_snapshots + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync(v_item.integration_id, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'accounts', '[]'::jsonb)) loop
    continue when not exists (select 1 from app.integrations where id = (v ->> 'integrationId')::uuid);
    update app.integration_sync_state set account_attempt_at = now() where integration_id = (v ->> 'integrationId')::uuid;
    if not found then
      insert into app.integration_sync_state (integration_id, organization_id, workspace_id, account_attempt_at)
      select g.id, g.organization_id, g.workspace_id, now() from app.integrations g where g.id = (v ->> 'integrationId')::uuid;
    end if;
    if v ->> 'outcome' = 'ok' and jsonb_typeof(v -> 'account') = 'object' then
      perform app.analytics_record_account((v ->> 'integrationId')::uuid, coalesce((v ->> 'capturedAt')::timestamptz, now()),
        'sync', v -> 'account');
      v_accounts := v_accounts + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync((v ->> 'integrationId')::uuid, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  return jsonb_build_object('snapshots', v_snapshots, 'accounts', v_accounts);
end
$function$;

-- app.integration_credentials (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.credentials_put(p_integration uuid, p_credential jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_integ app.integrations;
  v_old app.integration_credentials;
  v_cipher bytea;
  v_expires timestamptz := (p_credential ->> 'expiresAt')::timestamptz;
  v_refreshable boolean := coalesce((p_credential ->> 'refreshable')::boolean, false);
  v_has_refresh boolean := coalesce((p_credential ->> 'hasRefreshToken')::boolean, false);
  v_now timestamptz := now();
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
    has_refresh_token = excluded.has_refresh_token, refreshed_at = v_now, refresh_failures = 0, last_refresh_error = null,
    next_refresh_at = excluded.next_refresh_at;
end
$function$;

-- app.publishing_states (distributed): now() in DO UPDATE SET; app.publish_attempts (distributed): clock_timestamp() in UPDATE.
CREATE OR REPLACE FUNCTION app.publish_claim_attempt(p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
  s app.publishing_states;
  a app.publish_attempts;
  v_connector text;
  v_n int;
  v_run int;
  v_token text;
  v_now timestamptz := now();
  v_clock timestamptz;
begin
  select * into v from app.content_items where id = p_content_id for update;
  if v.id is null or v.deleted_at is not null then
    return jsonb_build_object('action', 'skip', 'reason', 'gone');
  end if;
  if v.status <> 'scheduled' then
    return jsonb_build_object('action', 'skip', 'reason', 'status ' || v.status);
  end if;
  if v.publish_job_id is distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'stale job');
  end if;
  select * into s from app.publishing_states where content_item_id = v.id for update;
  if s.state = 'awaiting_confirmation' and s.job_id is not distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'awaiting confirmation');
  end if;
  select connector into v_connector from app.integrations where id = v.integration_id;
  select * into a from app.publish_attempts where content_item_id = v.id and finished_at is null
  order by attempt desc limit 1;
  if a.id is not null then
    -- A worker died while this attempt was in flight: the platform may have the post.
    if a.connector = any (p_resendable) then
      update app.publish_attempts set resent = resent + 1, job_id = p_job_id, claim_batch = p_batch,
        integration_id = coalesce(integration_id, v.integration_id)
      where id = a.id;
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', a.run_attempt)
      on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'publishing', next_attempt_at = null, updated_at = v_now;
      return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
        'token', a.idempotency_token, 'resend', true, 'edition', app.publish_edition_json(v.id));
    end if;
    v_clock := clock_timestamp();
    update app.publish_attempts set finished_at = v_clock, outcome = 'unknown',
      error = 'The worker stopped while this attempt was in flight; the platform may or may not have the post.'
    where id = a.id;
    insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts, last_error)
    values (v.id, v.organization_id, v.workspace_id, p_job_id, 'awaiting_confirmation', a.run_attempt,
            'The worker stopped while the post was being sent; check the platform and resolve the outcome.')
    on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'awaiting_confirmation', next_attempt_at = null,
      last_error = excluded.last_error, updated_at = v_now;
    return jsonb_build_object('action', 'skip', 'reason', 'unknown outcome of an interrupted attempt');
  end if;
  select coalesce(max(attempt), 0) + 1 into v_n from app.publish_attempts where content_item_id = v.id;
  v_run := case when s.job_id is not distinct from p_job_id then coalesce(s.run_attempts, 0) + 1 else 1 end;
  -- One token per edition and version: the same post whatever the attempt.
  v_token := 'pr_' || replace(v.id::text, '-', '') || '_v' || v.version;
  insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
    idempotency_token, integration_id, claim_batch)
  values (v.organization_id, v.workspace_id, v.id, v_n, v_run, p_job_id, v_connector, v_token, v.integration_id, p_batch)
  returning * into a;
  insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
  values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', v_run)
  on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'publishing', run_attempts = v_run,
    next_attempt_at = null, updated_at = v_now;
  return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
    'token', a.idempotency_token, 'resend', false, 'edition', app.publish_edition_json(v.id));
end
$function$;

-- app.publishing_states (distributed): now() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.publish_claim_editions(p_content_ids uuid[], p_job_ids uuid[], p_resendable text[], p_batch uuid)
 RETURNS jsonb[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_fast uuid[];         -- the jobs of the common case
  v_sent jsonb := '{}';  -- their claims, by job id
  v_out jsonb[];
  v_now timestamptz := now();
begin
  -- The editions, locked in the order given (the claim's order: in flight first, then by id).
  perform 1 from unnest(p_content_ids) with ordinality u (id, n)
    join app.content_items i on i.id = u.id
  order by u.n for update of i;
  -- Their publishing states, by edition.
  perform 1 from app.publishing_states s where s.content_item_id = any (p_content_ids)
  order by s.content_item_id for update;
  -- The common case: what app.publish_claim_attempt would send as a first attempt of this job
  -- (the edition's own job, so at most one per edition).
  select coalesce(array_agg(f.job_id), '{}') into v_fast
  from (select distinct on (u.id) u.job_id
        from unnest(p_content_ids, p_job_ids) u (id, job_id)
        join app.content_items i on i.id = u.id
        join app.integrations g on g.id = i.integration_id
        left join app.publishing_states s on s.content_item_id = i.id
        where i.deleted_at is null and i.status = 'scheduled' and i.publish_job_id = u.job_id
          and not (s.state is not distinct from 'awaiting_confirmation' and s.job_id is not distinct from u.job_id)
          and g.deleted_at is null and g.status <> 'disconnected'
          -- (by the edition alone, as in app.publish_claim_batch)
          and not exists (select 1 from (select a.finished_at from app.publish_attempts a where a.content_item_id = i.id offset 0) a
                          where a.finished_at is null)
        order by u.id) f;

  if cardinality(v_fast) > 0 then
    with f as (
      select distinct u.id, u.job_id from unnest(p_content_ids, p_job_ids) u (id, job_id) where u.job_id = any (v_fast)
    ),
    a as (
      insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
        idempotency_token, integration_id, claim_batch)
      select i.organization_id, i.workspace_id, i.id,
        coalesce((select max(x.attempt) from app.publish_attempts x where x.content_item_id = i.id), 0) + 1,
        case when s.job_id is not distinct from f.job_id then coalesce(s.run_attempts, 0) + 1 else 1 end,
        f.job_id, g.connector,
        -- One token per edition and version: the same post whatever the attempt.
        'pr_' || replace(i.id::text, '-', '') || '_v' || i.version, i.integration_id, p_batch
      from f
      join app.content_items i on i.id = f.id
      join app.integrations g on g.id = i.integration_id
      left join app.publishing_states s on s.content_item_id = i.id
      order by i.id
      returning id, content_item_id, attempt, run_attempt, job_id, idempotency_token, organization_id, workspace_id
    ),
    s as (
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      select a.content_item_id, a.organization_id, a.workspace_id, a.job_id, 'publishing', a.run_attempt from a
      order by a.content_item_id
      on conflict (content_item_id, workspace_id) do update set job_id = excluded.job_id, state = 'publishing',
        run_attempts = excluded.run_attempts, next_attempt_at = null, updated_at = v_now
    )
    -- (s, a data-modifying part, runs to completion whether read or not.)
    select jsonb_object_agg(a.job_id::text, jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt,
             'runAttempt', a.run_attempt, 'token', a.idempotency_token, 'resend', false, 'edition', e.edition,
             'jobId', a.job_id, 'contentId', a.content_item_id))
    into v_sent
    from a join app.publish_editions_json(array(select f.id from f)) e on e.id = a.content_item_id;
  end if;

  -- Every claim in the order given; the others one by one, exactly as a claim alone.
  select array_agg(coalesce(v_sent -> u.job_id::text,
           app.publish_claim(u.id, u.job_id, p_resendable, p_batch) || jsonb_build_object('jobId', u.job_id, 'contentId', u.id))
         order by u.n)
  into v_out
  from unnest(p_content_ids, p_job_ids) with ordinality u (id, job_id, n);
  return coalesce(v_out, '{}');
end
$function$;

-- app.published_captions (distributed): clock_timestamp() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.publishing_set_caption(p_id uuid, p_caption text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
declare
  v_clock timestamptz;
begin
  v_clock := clock_timestamp();
  insert into app.published_captions (content_item_id, organization_id, workspace_id, caption)
  select id, organization_id, workspace_id, p_caption from app.content_items where id = p_id
  on conflict (content_item_id, workspace_id) do update set caption = excluded.caption, edits = app.published_captions.edits + 1,
    updated_at = v_clock;
end
$function$;

-- app.sandbox_posts (distributed): clock_timestamp() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.sandbox_receive_post(p_integration_id uuid, p_token text, p_content_id uuid, p_platform_post_id text, p_permalink text, p_caption text, p_payload jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  p app.sandbox_posts;
  v_clock timestamptz;
begin
  v_clock := clock_timestamp();
  insert into app.sandbox_posts (organization_id, workspace_id, integration_id, content_item_id, idempotency_token,
    platform_post_id, permalink, caption, payload)
  select g.organization_id, g.workspace_id, g.id, p_content_id, p_token, p_platform_post_id, p_permalink, p_caption, p_payload
  from app.integrations g where g.id = p_integration_id
  on conflict (integration_id, idempotency_token, workspace_id) do update set deliveries = app.sandbox_posts.deliveries + 1,
    updated_at = v_clock
  returning * into p;
  return jsonb_build_object('platformPostId', p.platform_post_id, 'permalink', p.permalink, 'deliveries', p.deliveries);
end
$function$;

-- app.sandbox_posts (distributed): clock_timestamp() in DO UPDATE SET.
CREATE OR REPLACE FUNCTION app.sandbox_receive_posts(p_posts jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_out jsonb;
  v_clock timestamptz;
begin
  -- One token twice in the group (a post re-sent while the first delivery is in the same group):
  -- one by one, in order, so the second counts as a repeated delivery.
  if exists (select 1 from jsonb_array_elements(p_posts) p group by p ->> 'integrationId', p ->> 'token' having count(*) > 1) then
    return (select coalesce(jsonb_agg(app.sandbox_receive_post((p ->> 'integrationId')::uuid, p ->> 'token', (p ->> 'contentId')::uuid,
              p ->> 'platformPostId', p ->> 'permalink', p ->> 'caption', p -> 'payload') order by n), '[]')
            from jsonb_array_elements(p_posts) with ordinality x (p, n));
  end if;
  v_clock := clock_timestamp();
  with x as (
      select (p ->> 'integrationId')::uuid as integration_id, p ->> 'token' as token, p, n
      from jsonb_array_elements(p_posts) with ordinality x (p, n)
    ),
    ins as (
      insert into app.sandbox_posts as sp (organization_id, workspace_id, integration_id, content_item_id, idempotency_token,
        platform_post_id, permalink, caption, payload)
      select g.organization_id, g.workspace_id, g.id, (x.p ->> 'contentId')::uuid, x.token, x.p ->> 'platformPostId',
        x.p ->> 'permalink', x.p ->> 'caption', x.p -> 'payload'
      from x join app.integrations g on g.id = x.integration_id
      order by x.n
      on conflict (integration_id, idempotency_token, workspace_id) do update set deliveries = sp.deliveries + 1, updated_at = v_clock
      returning sp.integration_id, sp.idempotency_token, sp.platform_post_id, sp.permalink, sp.deliveries
    )
    select coalesce(jsonb_agg(jsonb_build_object('platformPostId', ins.platform_post_id, 'permalink', ins.permalink,
             'deliveries', ins.deliveries) order by x.n), '[]')
    into v_out
    from x left join ins on ins.integration_id = x.integration_id and ins.idempotency_token = x.token;
  return v_out;
end
$function$;

-- app.work_claims (distributed): clock_timestamp() in DO UPDATE SET and in its WHERE.
CREATE OR REPLACE FUNCTION app.work_claim(p_kind text, p_subject uuid, p_seconds integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_token uuid := gen_random_uuid();
  v_got uuid;
  v_clock timestamptz;
begin
  if app.current_workspace_id() is null or app.current_organization_id() is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  v_clock := clock_timestamp();
  insert into app.work_claims as c (kind, subject_id, organization_id, workspace_id, token, request_id, claimed_until)
  values (p_kind, p_subject, app.current_organization_id(), app.current_workspace_id(), v_token,
          nullif(current_setting('pressroom.request_id', true), ''),
          clock_timestamp() + make_interval(secs => greatest(p_seconds, 1)))
  on conflict (kind, subject_id, workspace_id) do update
    set organization_id = excluded.organization_id, workspace_id = excluded.workspace_id, token = excluded.token,
        request_id = excluded.request_id, claimed_until = excluded.claimed_until, claimed_at = v_clock
    where c.claimed_until <= v_clock
  returning token into v_got;
  return v_got;
end
$function$;

-- app.publish_attempts, app.content_items (distributed): clock_timestamp() in UPDATE ... RETURNING.
CREATE OR REPLACE FUNCTION app.publish_record_batch(p_outcomes jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_sent uuid[];
  v_items uuid[];
  v_out jsonb[];
  v_clock timestamptz;
begin
  -- p_outcomes: [{"attemptId", "outcome", "error", "platformPostId", "permalink"}].
  -- Published outcomes: their editions locked by id (as the claim locks them), then their attempts.
  -- (Each statement starts from the outcomes and looks rows up by key, one lateral look-up
  -- each: a generic plan cannot walk a whole index of a table that grows during a burst.)
  perform 1 from (select distinct a.content_item_id from jsonb_array_elements(p_outcomes) e
                  cross join lateral (select a.content_item_id from app.publish_attempts a
                                      where a.id = (e ->> 'attemptId')::uuid offset 0) a
                  where e ->> 'outcome' = 'published' order by 1) x
  cross join lateral (select 1 from app.content_items i where i.id = x.content_item_id for update) l;
  -- The common case: an attempt in flight of an edition still scheduled (once per attempt).
  select coalesce(array_agg(a.id order by a.content_item_id), '{}') into v_sent
  from (select (e ->> 'attemptId')::uuid as id from jsonb_array_elements(p_outcomes) e where e ->> 'outcome' = 'published'
        group by 1 having count(*) = 1) o
  cross join lateral (select a.id, a.content_item_id, a.finished_at from app.publish_attempts a where a.id = o.id offset 0) a
  cross join lateral (select i.deleted_at, i.status from app.content_items i where i.id = a.content_item_id offset 0) i
  where a.finished_at is null and i.deleted_at is null and i.status = 'scheduled';
  perform 1 from app.publish_attempts a where a.id = any (v_sent) order by a.content_item_id for update;

  if cardinality(v_sent) > 0 then
    -- Read by the WHEN of the deferred grid trigger, for this UPDATE only.
    perform set_config('pressroom.grid_sent_batch', 'on', true);
    v_clock := clock_timestamp();
    with o as (
      select (e ->> 'attemptId')::uuid as id, e ->> 'error' as error, e ->> 'platformPostId' as post_id, e ->> 'permalink' as permalink
      from jsonb_array_elements(p_outcomes) e
      where (e ->> 'attemptId')::uuid = any (v_sent)
    ),
    a as (
      update app.publish_attempts a set finished_at = v_clock, outcome = 'published', error = o.error,
        platform_post_id = o.post_id, permalink = o.permalink
      from o where a.id = o.id
      returning a.content_item_id, o.post_id, o.permalink
    ),
    i as (
      update app.content_items i set status = 'sent', sent_at = v_clock, permalink = a.permalink,
        platform_post_id = a.post_id, error = null
      from a where i.id = a.content_item_id
      returning i.id
    ),
    s as (
      update app.publishing_states s set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
      from i where s.content_item_id = i.id
    )
    -- (s, a data-modifying part, runs to completion whether read or not.)
    select coalesce(array_agg(i.id order by i.id), '{}') into v_items from i;
    perform set_config('pressroom.grid_sent_batch', 'off', true);
    -- Their grid tiles, in one pass (the deferred grid trigger skipped them).
    perform app.grid_mark_sent(v_items);
  end if;

  -- Answers in the order of the outcomes; the others recorded one by one, by edition.
  with o as (
    select e, n, a.content_item_id
    from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
    left join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
  ),
  r as (
    select n, jsonb_build_object('attemptId', e ->> 'attemptId', 'contentId', content_item_id)
      || case when (e ->> 'attemptId')::uuid = any (v_sent) then jsonb_build_object('action', 'done', 'status', 'sent')
              else app.publish_record((e ->> 'attemptId')::uuid, e ->> 'outcome', e ->> 'error', e ->> 'platformPostId', e ->> 'permalink') end
      as answer
    from (select * from o order by content_item_id, n offset 0) o
  )
  select array_agg(answer order by n) into v_out from r;
  return coalesce(to_jsonb(v_out), '[]');
end
$function$;

-- app.publish_attempts, app.content_items (distributed): clock_timestamp() in UPDATE.
CREATE OR REPLACE FUNCTION app.publish_record_with_policy(p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text, p_permalink text, p_max_attempts integer, p_retry_base_ms integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  a app.publish_attempts;
  v app.content_items;
  v_delay_ms bigint;
  v_next timestamptz;
  v_clock timestamptz;
begin
  if p_outcome not in ('published', 'failed', 'transient', 'unknown') then
    raise exception 'publish_record: unknown outcome %', p_outcome;
  end if;
  select * into a from app.publish_attempts where id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where id = a.content_item_id for update;
  -- Already settled (by a resolve, or by another worker that took over).
  if a.finished_at is not null and not (a.outcome = 'unknown' and p_outcome in ('published', 'failed')) then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  v_clock := clock_timestamp();
  update app.publish_attempts set finished_at = v_clock, outcome = p_outcome, error = p_error,
    platform_post_id = p_platform_post_id, permalink = p_permalink
  where id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  if p_outcome = 'published' then
    v_clock := clock_timestamp();
    update app.content_items set status = 'sent', sent_at = v_clock, permalink = p_permalink,
      platform_post_id = p_platform_post_id, error = null
    where id = v.id;
    update app.publishing_states set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'sent');
  elsif p_outcome = 'failed' or (p_outcome = 'transient' and a.run_attempt >= p_max_attempts) then
    update app.content_items set status = 'failed', error = coalesce(p_error, 'The platform refused the post.')
    where id = v.id;
    update app.publishing_states set state = 'failed', last_error = p_error, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'failed');
  elsif p_outcome = 'transient' then
    v_delay_ms := p_retry_base_ms::bigint * (2 ^ least(a.run_attempt - 1, 20))::bigint;
    v_next := clock_timestamp() + v_delay_ms * interval '1 millisecond';
    update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_next, updated_at = now()
    where content_item_id = v.id;
    update pgboss.job set state = 'retry', start_after = v_next, started_on = null
    where name = 'content.publish' and id = v.publish_job_id and state = 'active';
    return jsonb_build_object('action', 'retry', 'delayMs', v_delay_ms, 'nextAttemptAt', v_next);
  else
    update app.publishing_states set state = 'awaiting_confirmation', last_error = p_error, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'scheduled', 'state', 'awaiting_confirmation');
  end if;
end
$function$;

-- app.sandbox_posts (distributed): clock_timestamp() in UPDATE.
CREATE OR REPLACE FUNCTION app.sandbox_edit_caption(p_integration_id uuid, p_platform_post_id text, p_caption text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
declare
  v_result boolean;
  v_clock timestamptz;
begin
  v_clock := clock_timestamp();
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = v_clock
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id returning 1)
  select exists (select 1 from u)
  into v_result;
  return v_result;
end
$function$;

-- app.sandbox_posts (distributed): clock_timestamp() in UPDATE.
CREATE OR REPLACE FUNCTION app.sandbox_edit_caption_for_request(p_integration_id uuid, p_platform_post_id text, p_caption text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ok boolean;
  v_clock timestamptz;
begin
  perform app.require_role('editor');
  v_clock := clock_timestamp();
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = v_clock
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id
               and workspace_id = app.current_workspace_id() returning 1)
  select exists (select 1 from u) into v_ok;
  return v_ok;
end
$function$;

-- app.publish_attempts, app.content_items (distributed): clock_timestamp() in UPDATE.
CREATE OR REPLACE FUNCTION app.publishing_resolve(p_id uuid, p_outcome text, p_permalink text, p_post_id text, p_error text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_clock timestamptz;
begin
  v_clock := clock_timestamp();
  update app.publish_attempts set finished_at = coalesce(finished_at, v_clock),
    outcome = case when p_outcome = 'published' then 'resolved_published' else 'resolved_failed' end,
    platform_post_id = coalesce(p_post_id, platform_post_id), permalink = coalesce(p_permalink, permalink),
    error = coalesce(p_error, error)
  where content_item_id = p_id and (finished_at is null or outcome = 'unknown');
  if p_outcome = 'published' then
    v_clock := clock_timestamp();
    update app.content_items set status = 'sent', sent_at = v_clock, permalink = p_permalink,
      platform_post_id = p_post_id, error = null where id = p_id;
  else
    update app.content_items set status = 'failed',
      error = coalesce(p_error, 'Marked as not published after checking the platform.') where id = p_id;
  end if;
  update app.publishing_states set state = case when p_outcome = 'published' then 'published' else 'failed' end,
    last_error = case when p_outcome = 'failed' then p_error end, next_attempt_at = null, updated_at = now()
  where content_item_id = p_id;
end
$function$;

-- app.publish_attempts (distributed): clock_timestamp() in UPDATE; app.publish_windows (reference table): timestamptz
-- arithmetic on a column (a STABLE operator) in the WHERE of ON CONFLICT.
CREATE OR REPLACE FUNCTION app.publish_record_rate_limited(p_attempt_id uuid, p_error text, p_retry_at timestamp with time zone)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  a app.publish_attempts;
  v app.content_items;
  v_until timestamptz;
  l record;
  v_clock timestamptz;
  v_start timestamptz;
begin
  -- Locked as app.publish_record locks them: the attempt, then its edition.
  select * into a from app.publish_attempts where id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where id = a.content_item_id for update;
  if a.finished_at is not null then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  v_clock := clock_timestamp();
  update app.publish_attempts set finished_at = v_clock, outcome = 'transient', error = p_error,
    platform_post_id = null, permalink = null
  where id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  v_until := greatest(clock_timestamp(), least(coalesce(p_retry_at, clock_timestamp()), clock_timestamp() + interval '1 day'));
  -- The run's attempt is given back: the next claim of this job counts from the same number.
  update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_until,
    run_attempts = greatest(a.run_attempt - 1, 0), updated_at = now()
  where content_item_id = v.id;
  perform app.publish_defer_job(v.publish_job_id, v_until);
  -- The account's window is spent until the reset: app.publish_window_take grants nothing before
  -- window_start + window_seconds = v_until (never moved earlier than a fuller window already is).
  select * into l from app.publish_limits_of(v.integration_id);
  if l.max_per_window is not null then
    -- (w.window_start + window_seconds >= v_until written as w.window_start >= v_until - window_seconds:
    -- the same test, whole seconds on both sides, with no timestamptz arithmetic on the row.)
    v_start := v_until - l.window_seconds * interval '1 second';
    insert into app.publish_windows as w (scope, key, window_start, used)
    values ('integration', v.integration_id::text, v_start, l.max_per_window)
    on conflict (scope, key) do update set window_start = excluded.window_start, used = excluded.used
    where not (w.used >= excluded.used and w.window_start >= v_start);
  end if;
  return jsonb_build_object('action', 'retry', 'reason', 'rate_limited', 'nextAttemptAt', v_until);
end
$function$;

-- app.auth_failures (reference table): app.setting_int (STABLE) in DO UPDATE SET.
CREATE OR REPLACE FUNCTION api.gate_review_link(p_token_hash bytea, p_class text, p_client text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
  v_link app.review_links;
  v_org app.organizations;
  v_principal jsonb;
  v_limit int := app.setting_int('rate_limit_' || p_class);
  v_rate jsonb;
  v_other jsonb;
  v_audit int;
begin
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= app.setting_int('auth_failure_limit') then
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  select * into v_link from app.review_links where token_hash = p_token_hash;
  if p_token_hash is null or v_link.id is null or v_link.revoked_at is not null
     or (v_link.expires_at is not null and v_link.expires_at <= now()) then
    -- An API key or a live session is a credential, of the other family: refused, not counted.
    if v_link.id is null then
      v_other := app.wrong_credential_kind(p_token_hash, 'review_link', p_class);
      if v_other is not null then
        return v_other;
      end if;
    end if;
    perform app.flush_auth_failures(p_client);
    v_audit := app.setting_int('auth_failure_audit');
    insert into app.auth_failures as f (client, window_start, failures, audited)
    values (p_client, v_window, 1, 1)
    on conflict (client, window_start) do update
      set failures = f.failures + 1,
          audited = f.audited + case when f.failures < v_audit then 1 else 0 end
    returning failures into v_failures;
    return jsonb_build_object('audit', v_failures <= app.setting_int('auth_failure_audit'),
      'error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', case when v_link.id is null then 'Send a review link token: Authorization: Bearer <review link token>.'
                        else 'This review link has ended (the review closed or expired).' end));
  end if;
  select * into v_org from app.organizations where id = v_link.organization_id;
  v_principal := jsonb_build_object('actorKind', 'review_link', 'reviewLinkId', v_link.id,
    'organizationId', v_link.organization_id, 'plan', v_org.plan);
  if (v_org.plan = 'trial' and v_org.trial_ends_at <= now()) or app.plan_rank(v_org.plan) < app.plan_rank('standard') then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401, 'code', 'PLAN_REQUIRED',
      'message', format('Client review needs the standard plan or higher; this organization is on %s%s.', v_org.plan,
                        case when v_org.plan = 'trial' then ' (ended)' else '' end),
      'details', jsonb_build_object('plan', v_org.plan, 'requiredPlan', 'standard')));
  end if;
  v_rate := app.rate_limit_hit('review_link:' || v_link.id, p_class, v_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'rate', v_rate,
      'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this link is used up; retry after %s s.', p_class, v_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', v_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;
  return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'workspaceRole', null, 'rate', v_rate);
end
$function$;

-- app.platform_apps (reference table): a subquery (array(select ...)) in INSERT ... VALUES.
CREATE OR REPLACE FUNCTION api.connect_begin(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text, p_state_hash bytea, p_verifier_ciphertext bytea, p_redirect_uri text, p_return_to text, p_app jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_connector text := v ->> 'connector';
  v_instance text := v ->> 'instanceUrl';
  v_app_id uuid;
  v_expires timestamptz := now() + interval '10 minutes';
  v_scopes text[];
begin
  if v ->> 'connect' <> 'oauth' and not coalesce((select c.oauth from app.connectors c where c.name = v_connector), false) then
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
    v_scopes := array(select jsonb_array_elements_text(coalesce(p_app -> 'scopes', '[]')));
    delete from app.platform_apps where connector = v_connector and instance = coalesce(v_instance, '') and source = 'registered';
    insert into app.platform_apps (id, connector, instance, client_id, secret_ciphertext, source, redirect_uri, scopes)
    values (v_app_id, v_connector, coalesce(v_instance, ''), p_app ->> 'clientId', decode(p_app ->> 'secretCiphertext', 'base64'),
      'registered', p_app ->> 'redirectUri', v_scopes);
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
$function$;

-- app.approval_workflows (distributed): a subquery in INSERT ... VALUES.
CREATE OR REPLACE FUNCTION api.create_approval_workflow(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  w app.approval_workflows;
  v_position int;
begin
  perform app.require_role('manager');
  perform app.raise_field_problems(app.workflow_problems(p_body, false), 'The workflow is not valid; see details.fields.');
  perform app.workflow_name_taken(p_body ->> 'name', null);
  v_position := coalesce((select max(position) + 1 from app.approval_workflows where workspace_id = app.current_workspace_id()), 0);
  insert into app.approval_workflows (organization_id, workspace_id, name, position, active, match, stages,
    auto_schedule_on_approval, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_body ->> 'name'),
    v_position,
    coalesce((p_body ->> 'active')::boolean, true), app.workflow_match_normalize(coalesce(p_body -> 'match', '{}')),
    app.review_stages_normalize(p_body -> 'stages'), coalesce((p_body ->> 'autoScheduleOnApproval')::boolean, false),
    app.current_person_id())
  returning * into w;
  return app.workflow_json(w);
end
$function$;

-- app.content_roots (distributed): a subquery in INSERT ... VALUES.
CREATE OR REPLACE FUNCTION api.create_content(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_channels jsonb := coalesce(p_body -> 'channels', '[]');
  v_scheduled_at timestamptz := (p_body ->> 'scheduledAt')::timestamptz;
  v_intended_at timestamptz := (p_body ->> 'intendedPublishAt')::timestamptz;
  v_problems jsonb := '[]';
  v_channel jsonb;
  v_i int := 0;
  v_platform text;
  v_root app.content_roots;
  v_ids uuid[] := '{}';
  v_prefixes text[] := '{}';
  v_status text;
  v_at timestamptz;
  v_campaign uuid;
begin
  perform app.require_role('editor');
  if v_intent = 'schedule' and v_scheduled_at is null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'required', 'intent schedule needs scheduledAt');
  end if;
  if v_intent <> 'schedule' and v_scheduled_at is not null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'not_allowed',
      'scheduledAt goes with intent schedule; a draft takes intendedPublishAt, publish_now publishes at once');
  end if;
  if v_intent = 'schedule' and v_scheduled_at < now() then
    v_problems := v_problems || app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled');
  end if;
  if v_intent <> 'draft' and v_intended_at is not null then
    v_problems := v_problems || app.field_problem('intendedPublishAt', 'not_allowed', 'intendedPublishAt is the planned time of a draft');
  end if;
  if v_intent <> 'draft' and jsonb_array_length(v_channels) = 0 then
    v_problems := v_problems || app.field_problem('channels', 'required', format('intent %s needs at least one channel', v_intent));
  end if;
  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    if v_intent = 'publish_now' then
      v_problems := v_problems || app.field_problem('recurrence', 'not_allowed', 'a recurring series is scheduled or drafted, not published now');
    elsif jsonb_array_length(v_channels) = 0 then
      v_problems := v_problems || app.field_problem('channels', 'required', 'a recurring series needs at least one channel');
    elsif v_intent = 'draft' and v_intended_at is null then
      v_problems := v_problems || app.field_problem('intendedPublishAt', 'required', 'a recurring series of drafts needs intendedPublishAt as its first time');
    end if;
  end if;
  v_problems := v_problems || (select app.media_ref_problems(app.current_workspace_id(), app.jsonb_uuids(p_body -> 'mediaIds'), 'mediaIds'));
  v_problems := v_problems || app.planning_problems(p_body);
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    select g.platform into v_platform from app.integrations g
    where g.id = (v_channel ->> 'integrationId')::uuid and g.workspace_id = app.current_workspace_id() and g.deleted_at is null;
    if v_platform is null then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'integration_not_found',
        'no connected channel with this id in this workspace');
    end if;
    if exists (select 1 from jsonb_array_elements(v_channels) with ordinality e (x, n)
               where x ->> 'integrationId' = v_channel ->> 'integrationId' and n - 1 < v_i) then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'duplicate_channel',
        'a root has one edition per channel; this channel is listed twice');
    end if;
    v_problems := v_problems || app.content_payload_problems(v_platform, v_channel, 'channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.raise_field_problems(v_problems, 'The request is not valid; see details.fields.');

  v_campaign := coalesce((p_body ->> 'campaignId')::uuid,
                         (select campaign_id from app.campaign_phases where id = (p_body ->> 'phaseId')::uuid));
  insert into app.content_roots (organization_id, workspace_id, title, caption, organizational_title, notes,
    campaign_id, phase_id, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), p_body ->> 'title', p_body ->> 'caption',
    p_body ->> 'organizationalTitle', case when p_body ->> 'notes' is not null then to_jsonb(p_body ->> 'notes') end,
    v_campaign,
    (p_body ->> 'phaseId')::uuid, app.current_user_id())
  returning * into v_root;
  if jsonb_typeof(p_body -> 'mediaIds') = 'array' then
    perform app.replace_root_media(v_root.id, app.jsonb_uuids(p_body -> 'mediaIds'));
  end if;
  perform app.apply_root_taxonomy(v_root, p_body);

  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    return app.create_recurring_series(v_root, p_body);
  end if;

  v_status := case v_intent when 'draft' then 'draft' else 'scheduled' end;
  v_at := case v_intent when 'schedule' then v_scheduled_at when 'publish_now' then now() end;
  perform app.defer_content_checks();
  v_i := 0;
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    v_ids := v_ids || app.create_edition(v_root, v_channel, v_status, v_at, v_intended_at);
    v_prefixes := v_prefixes || ('channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.assert_publishable(v_ids, v_prefixes);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v_root.id, v_ids));
end
$function$;

-- app.media_label_groups (distributed): a subquery in INSERT ... VALUES.
CREATE OR REPLACE FUNCTION api.create_media_label_group(p_name text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_label_groups;
  v_position int;
begin
  perform app.require_role('editor');
  perform pg_advisory_xact_lock(hashtext('media_label_groups:' || app.current_workspace_id()::text));
  v_position := coalesce((select max(position) + 1 from app.media_label_groups where workspace_id = app.current_workspace_id()), 0);
  begin
    insert into app.media_label_groups (organization_id, workspace_id, name, position)
    values (app.current_organization_id(), app.current_workspace_id(), btrim(p_name),
            v_position)
    returning * into v;
  exception when unique_violation then
    perform app.media_label_group_name_taken(btrim(p_name));
  end;
  return app.media_label_group_json(v);
end
$function$;

-- app.pending_connections (distributed): subqueries in INSERT ... VALUES.
CREATE OR REPLACE FUNCTION api.oauth_complete(p_workspace_id uuid, p_state_hash bytea, p_accounts jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.oauth_states;
  v_integ app.integrations;
  v_role text;
  v_account jsonb;
  v_pending uuid;
  v_saved jsonb;
  v_creator uuid;
  v_accounts jsonb;
  v_credentials bytea[];
  v_meta jsonb;
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
  v_accounts := (select jsonb_agg(jsonb_build_object('integrationId', a ->> 'integrationId', 'accountId', a ->> 'accountId',
       'username', a -> 'username', 'name', a -> 'name', 'kind', a -> 'kind', 'avatarUrl', a -> 'avatarUrl',
       'profileUrl', a -> 'profileUrl') order by o) from jsonb_array_elements(p_accounts) with ordinality x (a, o));
  v_credentials := array(select decode(a #>> '{credential,ciphertext}', 'base64') from jsonb_array_elements(p_accounts) with ordinality x (a, o) order by o);
  v_meta := (select jsonb_agg((a -> 'credential') - 'ciphertext' order by o) from jsonb_array_elements(p_accounts) with ordinality x (a, o));
  insert into app.pending_connections (workspace_id, organization_id, user_id, api_key_id, connector, platform, instance_url,
    accounts, credentials, credential_meta, expires_at)
  values (v.workspace_id, v.organization_id, v.user_id, v.api_key_id, v.connector, v.platform, v.instance_url,
    v_accounts, v_credentials, v_meta,
    now() + interval '30 minutes')
  returning id into v_pending;
  return jsonb_build_object('returnTo', v.return_to, 'pendingConnectionId', v_pending, 'reconnected', false);
end
$function$;

-- app.users, app.workspaces (reference tables) and app.workspace_members (distributed): a UNION ALL of
-- a reference-only part and a distributed part is planned with an intermediate result that Citus
-- sends to the coordinator's own placement over a new connection as the current role, which may not
-- log in there ("connection to the remote node pressroom_definer@...:9700 failed ... role
-- "pressroom_definer" is not permitted to log in"). Two RETURN QUERY give the same rows in the
-- same order.
CREATE OR REPLACE FUNCTION app.user_workspace_roles(p_user_id uuid)
 RETURNS TABLE(workspace_id uuid, role text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select w.id, 'manager'::text
  from app.users u
  join app.workspaces w on w.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role in ('owner', 'admin');
  return query
  select m.workspace_id, m.role
  from app.users u
  join app.workspace_members m on m.user_id = u.id and m.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role = 'member';
end
$function$;

-- app.integration_credentials and app.integrations (distributed): a join on the integration's id alone
-- is a join Citus cannot do shard by shard ("the query contains a join that requires
-- repartitioning"). The credential's foreign key is (integration_id, workspace_id), so its
-- integration has its workspace_id: the join on both columns gives the same rows.
CREATE OR REPLACE FUNCTION app.credentials_due(p_limit integer DEFAULT 100)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(c.integration_id order by c.next_refresh_at), '[]')
    from (select c.integration_id, c.next_refresh_at
          from app.integration_credentials c
          join app.integrations i on i.id = c.integration_id and i.workspace_id = c.workspace_id
          where c.refreshable and c.next_refresh_at <= now() and i.deleted_at is null and i.connection_state = 'ok'
          order by c.next_refresh_at
          limit least(greatest(coalesce(p_limit, 100), 1), 1000)) c
  );
end
$function$;
