--! Previous: sha1:45cc0b4a576580a09f9d9b9d040788bb0d2c2772
--! Hash: sha1:1c48aa4784aadf6ea72ffceecb74ce1c091a1c4f
--! Message: the publishing engine by workspace

--! split: 01-current.sql
-- The publishing engine by workspace.
--
-- Every look-up of the engine (the claim, the record, the sandbox platform's writes, the grid
-- tiles of sent editions) now names the edition's workspace beside its id: the jobs' data and
-- the outcomes carry `workspaceId`, the engine's helpers take `p_workspace_id` first, and each
-- statement reads and locks the rows of one workspace. On one PostgreSQL the same primary keys
-- answer (they are `(id, workspace_id)`); on a Citus cluster each statement is a query on one
-- shard, which Citus plans (a look-up by id alone inside a statement that locks rows was
-- refused: `could not create distributed plan`, docs/citus.md).
--
-- * app.publish_claim_batch reads the jobs' editions workspace by workspace (one statement
--   each), then locks the connectors' app windows and claims integration by integration, in
--   (workspace, integration) order, as before. A job without `workspaceId` is refused: the
--   publish job's data has carried it since the job was first queued.
-- * The claim runs as pressroom_definer, as the record does: the claim of an edition whose
--   channel is gone records its failure (app.publish_record, a definer) in the same
--   transaction, and Citus refuses a shard written in one transaction by two roles.
-- * The claim's answer for the common case builds the editions' JSON in a statement of its
--   own, after the INSERT of the attempts: a helper that reads tables cannot run inside a
--   statement that Citus sends to a shard.
-- * app.publish_record_batch records workspace by workspace; app.sandbox_receive_posts writes
--   workspace by workspace.
-- * The single-edition helpers (app.publish_claim, app.publish_claim_attempt) take the batch as
--   a parameter with a default instead of a second signature.
-- * The triggers a published edition fires read their workspace's rows by workspace_id: the
--   media frozen at send, the media-in-bin check, the media usage record (app.media_usage_record
--   takes the workspace first), and the review-in-progress check (a trigger on a shard may run
--   only queries whose rows are on its node: `cannot execute a distributed query from a query on
--   a shard`, seen when the first post was recorded sent on the cluster).

drop function if exists app.publish_claim(uuid, uuid, text[]);
drop function if exists app.publish_claim(uuid, uuid, text[], uuid);
drop function if exists app.publish_claim_attempt(uuid, uuid, text[]);
drop function if exists app.publish_claim_attempt(uuid, uuid, text[], uuid);
drop function if exists app.publish_claim_editions(uuid[], uuid[], text[], uuid);
drop function if exists app.publish_edition_json(uuid);
drop function if exists app.publish_editions_json(uuid[]);
drop function if exists app.publish_limits_of(uuid);
drop function if exists app.publish_hold_estimate(uuid, integer);
drop function if exists app.publish_record(uuid, text, text, text, text);
drop function if exists app.publish_record_with_policy(uuid, text, text, text, text, integer, integer);
drop function if exists app.publish_record_rate_limited(uuid, text, timestamptz);
drop function if exists app.grid_mark_sent(uuid[]);

------------------------------------------------------------------------------
-- What the engine sends, its limits
------------------------------------------------------------------------------

create function app.publish_editions_json(p_workspace_id uuid, p_item_ids uuid[])
 RETURNS TABLE(id uuid, edition jsonb)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  -- PL/pgSQL keeps this plan for the session (a SQL function would plan it at every call: once per integration of a batch).
  return query
  select i.id, jsonb_build_object(
    'id', i.id, 'rootId', i.root_id, 'workspaceId', i.workspace_id, 'version', i.version,
    'caption', coalesce(i.caption, r.caption, ''),
    'title', r.title,
    'settings', case when i.settings = '{}' then '{}'::jsonb else app.sanitize_settings(g.platform, i.settings) end,
    'scheduledAt', i.scheduled_at,
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'type', m.type, 'contentType', m.content_type,
                'altText', m.alt_text) order by x.n), '[]')
              from unnest(case when i.own_media then
                            (select coalesce(array_agg(cm.media_id order by cm.position), '{}') from app.content_item_media cm
                             where cm.content_item_id = i.id and cm.workspace_id = p_workspace_id)
                          else (select coalesce(array_agg(rm.media_id order by rm.position), '{}') from app.content_root_media rm
                                where rm.root_id = i.root_id and rm.workspace_id = p_workspace_id) end) with ordinality x (id, n)
              join app.media_items m on m.id = x.id and m.workspace_id = p_workspace_id),
    'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                 'mediaIds', coalesce(e -> 'mediaIds', '[]')) order by n), '[]')
               from jsonb_array_elements(i.thread) with ordinality t (e, n)),
    'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
      'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret,
      'status', g.status, 'deleted', g.deleted_at is not null))
  from app.content_items i
  join app.content_roots r on r.id = i.root_id and r.workspace_id = p_workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = p_workspace_id
  where i.workspace_id = p_workspace_id and i.id = any (p_item_ids);
end
$function$;
comment on function app.publish_editions_json(uuid, uuid[]) is 'What the engine sends to a connector for each of the editions given, of one workspace (caption, title, sanitized settings, media, thread, the integration with its webhook secret): one query for a claim batch. Worker only.';
grant execute on function app.publish_editions_json(uuid, uuid[]) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_editions_json(uuid, uuid[]) from public;

create function app.publish_edition_json(p_workspace_id uuid, p_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (select edition from app.publish_editions_json(p_workspace_id, array[p_item_id]));
end
$function$;
comment on function app.publish_edition_json(uuid, uuid) is 'What the engine sends to a connector for one edition (app.publish_editions_json).';
grant execute on function app.publish_edition_json(uuid, uuid) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_edition_json(uuid, uuid) from public;

create function app.publish_limits_of(p_workspace_id uuid, p_integration_id uuid)
 RETURNS TABLE(connector text, max_in_flight integer, max_per_window integer, window_seconds integer, app_max_per_window integer, app_window_seconds integer)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select g.connector,
    nullif(least(coalesce(c.integration_max_in_flight, 2147483647), coalesce(o.max_in_flight, 2147483647)), 2147483647),
    case when c.integration_max_per_window is null then o.max_per_window
         when o.max_per_window is null then c.integration_max_per_window
         -- the stricter of the two rates
         when o.max_per_window::numeric / o.window_seconds < c.integration_max_per_window::numeric / c.integration_window_seconds
           then o.max_per_window else c.integration_max_per_window end,
    case when c.integration_max_per_window is null then o.window_seconds
         when o.max_per_window is null then c.integration_window_seconds
         when o.max_per_window::numeric / o.window_seconds < c.integration_max_per_window::numeric / c.integration_window_seconds
           then o.window_seconds else c.integration_window_seconds end,
    c.app_max_per_window, c.app_window_seconds
  from app.integrations g
  left join app.connector_publish_limits c on c.connector = g.connector
  left join app.integration_publish_limits o on o.integration_id = g.id and o.workspace_id = p_workspace_id
  where g.workspace_id = p_workspace_id and g.id = p_integration_id;
end
$function$;
comment on function app.publish_limits_of(uuid, uuid) is 'The publish limits in force for an integration of the workspace: its connector''s declaration, lowered by the integration''s own row.';
grant execute on function app.publish_limits_of(uuid, uuid) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_limits_of(uuid, uuid) from public;

create function app.publish_hold_estimate(p_workspace_id uuid, p_integration_id uuid, p_default_ms integer)
 RETURNS interval
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    -- Its last 20 attempts by start (index publish_attempts_integration_started_idx), the finished ones.
    select case when x.hold is null then p_default_ms * interval '1 millisecond'
                else least(greatest(x.hold, interval '1 millisecond'), interval '1 minute') end
    from (select percentile_cont(0.5) within group (order by a.finished_at - a.started_at) as hold
          from (select a.started_at, a.finished_at from app.publish_attempts a
                where a.integration_id = p_integration_id and a.workspace_id = p_workspace_id
                order by a.started_at desc limit 20) a
          where a.finished_at is not null) x
  );
end
$function$;
comment on function app.publish_hold_estimate(uuid, uuid, integer) is 'How long a post of the integration holds an in-flight slot: the median time from claim to record of its last 20 finished attempts (1 ms to 1 minute; the median, so a few attempts stuck until a recovery do not count), or p_default_ms when it has none.';
grant execute on function app.publish_hold_estimate(uuid, uuid, integer) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_hold_estimate(uuid, uuid, integer) from public;

------------------------------------------------------------------------------
-- The claim
------------------------------------------------------------------------------

create function app.publish_claim_attempt(p_workspace_id uuid, p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid default null)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
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
  select * into v from app.content_items where workspace_id = p_workspace_id and id = p_content_id for update;
  if v.id is null or v.deleted_at is not null then
    return jsonb_build_object('action', 'skip', 'reason', 'gone');
  end if;
  if v.status <> 'scheduled' then
    return jsonb_build_object('action', 'skip', 'reason', 'status ' || v.status);
  end if;
  if v.publish_job_id is distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'stale job');
  end if;
  select * into s from app.publishing_states where workspace_id = p_workspace_id and content_item_id = v.id for update;
  if s.state = 'awaiting_confirmation' and s.job_id is not distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'awaiting confirmation');
  end if;
  select connector into v_connector from app.integrations where workspace_id = p_workspace_id and id = v.integration_id;
  select * into a from app.publish_attempts where workspace_id = p_workspace_id and content_item_id = v.id and finished_at is null
  order by attempt desc limit 1;
  if a.id is not null then
    -- A worker died while this attempt was in flight: the platform may have the post.
    if a.connector = any (p_resendable) then
      update app.publish_attempts set resent = resent + 1, job_id = p_job_id, claim_batch = p_batch,
        integration_id = coalesce(integration_id, v.integration_id)
      where workspace_id = p_workspace_id and id = a.id;
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', a.run_attempt)
      on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'publishing', next_attempt_at = null, updated_at = v_now;
      return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
        'token', a.idempotency_token, 'resend', true, 'edition', app.publish_edition_json(p_workspace_id, v.id));
    end if;
    v_clock := clock_timestamp();
    update app.publish_attempts set finished_at = v_clock, outcome = 'unknown',
      error = 'The worker stopped while this attempt was in flight; the platform may or may not have the post.'
    where workspace_id = p_workspace_id and id = a.id;
    insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts, last_error)
    values (v.id, v.organization_id, v.workspace_id, p_job_id, 'awaiting_confirmation', a.run_attempt,
            'The worker stopped while the post was being sent; check the platform and resolve the outcome.')
    on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'awaiting_confirmation', next_attempt_at = null,
      last_error = excluded.last_error, updated_at = v_now;
    return jsonb_build_object('action', 'skip', 'reason', 'unknown outcome of an interrupted attempt');
  end if;
  select coalesce(max(attempt), 0) + 1 into v_n from app.publish_attempts where workspace_id = p_workspace_id and content_item_id = v.id;
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
    'token', a.idempotency_token, 'resend', false, 'edition', app.publish_edition_json(p_workspace_id, v.id));
end
$function$;
comment on function app.publish_claim_attempt(uuid, uuid, uuid, text[], uuid) is 'Claims a due edition of the workspace for a publish job and writes the attempt (with its integration and claim batch, when it is part of one) before the platform is called; called by app.publish_claim.';
grant execute on function app.publish_claim_attempt(uuid, uuid, uuid, text[], uuid) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_claim_attempt(uuid, uuid, uuid, text[], uuid) from public;

create function app.publish_claim(p_workspace_id uuid, p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid default null)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_claim jsonb := app.publish_claim_attempt(p_workspace_id, p_content_id, p_job_id, p_resendable, p_batch);
  v_integration jsonb := v_claim #> '{edition,integration}';
begin
  if v_claim ->> 'action' = 'send'
     and ((v_integration ->> 'deleted')::boolean or v_integration ->> 'status' = 'disconnected') then
    -- Nothing to send to: a permanent failure, recorded at once.
    perform app.publish_record(p_workspace_id, (v_claim ->> 'attemptId')::uuid, 'failed', 'The channel was disconnected or deleted.',
      null, null);
    return jsonb_build_object('action', 'skip', 'reason', 'channel_unavailable');
  end if;
  return v_claim;
end
$function$;
comment on function app.publish_claim(uuid, uuid, uuid, text[], uuid) is 'The engine''s claim of a due edition of the workspace (app.publish_claim_attempt), in a claim batch or alone; an edition whose channel is disconnected or deleted fails permanently here instead of being sent.';
grant execute on function app.publish_claim(uuid, uuid, uuid, text[], uuid) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_claim(uuid, uuid, uuid, text[], uuid) from public;

create function app.publish_claim_editions(p_workspace_id uuid, p_content_ids uuid[], p_job_ids uuid[], p_resendable text[], p_batch uuid)
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
    join app.content_items i on i.id = u.id and i.workspace_id = p_workspace_id
  order by u.n for update of i;
  -- Their publishing states, by edition.
  perform 1 from app.publishing_states s where s.workspace_id = p_workspace_id and s.content_item_id = any (p_content_ids)
  order by s.content_item_id for update;
  -- The common case: what app.publish_claim_attempt would send as a first attempt of this job
  -- (the edition's own job, so at most one per edition).
  select coalesce(array_agg(f.job_id), '{}') into v_fast
  from (select distinct on (u.id) u.job_id
        from unnest(p_content_ids, p_job_ids) u (id, job_id)
        join app.content_items i on i.id = u.id and i.workspace_id = p_workspace_id
        join app.integrations g on g.id = i.integration_id and g.workspace_id = p_workspace_id
        left join app.publishing_states s on s.content_item_id = i.id and s.workspace_id = p_workspace_id
        where i.deleted_at is null and i.status = 'scheduled' and i.publish_job_id = u.job_id
          and not (s.state is not distinct from 'awaiting_confirmation' and s.job_id is not distinct from u.job_id)
          and g.deleted_at is null and g.status <> 'disconnected'
          -- (by the edition alone, as in app.publish_claim_batch)
          and not exists (select 1 from (select a.finished_at from app.publish_attempts a where a.content_item_id = i.id and a.workspace_id = p_workspace_id offset 0) a
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
        coalesce((select max(x.attempt) from app.publish_attempts x where x.content_item_id = i.id and x.workspace_id = p_workspace_id), 0) + 1,
        case when s.job_id is not distinct from f.job_id then coalesce(s.run_attempts, 0) + 1 else 1 end,
        f.job_id, g.connector,
        -- One token per edition and version: the same post whatever the attempt.
        'pr_' || replace(i.id::text, '-', '') || '_v' || i.version, i.integration_id, p_batch
      from f
      join app.content_items i on i.id = f.id and i.workspace_id = p_workspace_id
      join app.integrations g on g.id = i.integration_id and g.workspace_id = p_workspace_id
      left join app.publishing_states s on s.content_item_id = i.id and s.workspace_id = p_workspace_id
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
             'runAttempt', a.run_attempt, 'token', a.idempotency_token, 'resend', false,
             'jobId', a.job_id, 'contentId', a.content_item_id))
    into v_sent
    from a;
    -- What to send, in a statement of its own: a helper that reads tables cannot run inside a
    -- statement Citus sends to the workspace's shard.
    select jsonb_object_agg(c.key, c.value || jsonb_build_object('edition', e.edition))
    into v_sent
    from jsonb_each(v_sent) c
    join app.publish_editions_json(p_workspace_id, array(select (x.value ->> 'contentId')::uuid from jsonb_each(v_sent) x)) e
      on e.id = (c.value ->> 'contentId')::uuid;
  end if;

  -- Every claim in the order given; the others one by one, exactly as a claim alone.
  select array_agg(coalesce(v_sent -> u.job_id::text,
           app.publish_claim(p_workspace_id, u.id, u.job_id, p_resendable, p_batch) || jsonb_build_object('jobId', u.job_id, 'contentId', u.id))
         order by u.n)
  into v_out
  from unnest(p_content_ids, p_job_ids) with ordinality u (id, job_id, n);
  return coalesce(v_out, '{}');
end
$function$;
comment on function app.publish_claim_editions(uuid, uuid[], uuid[], text[], uuid) is 'Claims editions of one integration of the workspace that the limits allow, for app.publish_claim_batch: rows locked in the order given; the common case (scheduled, live, this job, no attempt in flight, not awaiting a confirmation, channel connected) in one INSERT of attempts and one upsert of publishing states, then their editions'' JSON in one query; every other edition through app.publish_claim. Returns the claims in the order given, each with its jobId and contentId.';
grant execute on function app.publish_claim_editions(uuid, uuid[], uuid[], text[], uuid) to pressroom_definer, pressroom_worker;
revoke all on function app.publish_claim_editions(uuid, uuid[], uuid[], text[], uuid) from public;

create or replace function app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
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
  v_batch uuid := gen_random_uuid();
  v_ws uuid;
  g record;
  l record;
  w_take record;
  k int;
  v_rows jsonb := '[]';  -- the jobs with their editions' channel, connector and attempt in flight
  v_claims jsonb;
  v_claim_list jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
  v_allowed int;
  v_until timestamptz;
  v_step interval;       -- the time between two paced editions of one integration
  v_start timestamptz;   -- when the first of them may go
  v_retry_ms int := app.setting_int('publish_limit_retry_ms');
  v_media jsonb := '[]';
begin
  -- p_jobs: [{"jobId", "contentId", "workspaceId"}] as pg-boss fetched them (the publish job's data).
  -- Locks are taken in one order by every worker: the app windows of the connectors involved,
  -- then workspace by workspace and integration by integration (its row when it has an
  -- in-flight limit, its window, then its editions by id).
  if exists (select 1 from jsonb_array_elements(p_jobs) e where e ->> 'workspaceId' is null) then
    raise exception 'publish_claim_batch: every job names its workspace (workspaceId)' using errcode = '22023';
  end if;
  -- The jobs' editions, read workspace by workspace (each statement stays in one workspace).
  -- (Each starts from the jobs and looks rows up by key, one lateral look-up each: a generic
  -- plan cannot walk a whole index of a table that grows during a burst.)
  for v_ws in select distinct (e ->> 'workspaceId')::uuid from jsonb_array_elements(p_jobs) e order by 1 loop
    select v_rows || coalesce(jsonb_agg(jsonb_build_object('ws', v_ws, 'integration', i.integration_id, 'connector', i.connector,
             'job', e ->> 'jobId', 'content', e ->> 'contentId', 'open', o.open)), '[]')
    into v_rows
    from jsonb_array_elements(p_jobs) e
    left join lateral (select i.integration_id, c.connector from app.content_items i
                       join app.integrations c on c.id = i.integration_id and c.workspace_id = v_ws
                       where i.workspace_id = v_ws and i.id = (e ->> 'contentId')::uuid offset 0) i on true
    -- An attempt in flight: the edition's attempts looked up by the edition alone (a plan may
    -- otherwise walk the partial index of every open attempt of the channel, filtering on the edition).
    cross join lateral (select exists (select 1 from (select a.finished_at from app.publish_attempts a
                                                      where a.workspace_id = v_ws and a.content_item_id = (e ->> 'contentId')::uuid offset 0) a
                                       where a.finished_at is null) as open) o
    where (e ->> 'workspaceId')::uuid = v_ws;
  end loop;

  perform 1 from app.publish_windows w
  where w.scope = 'app' and w.key in (select distinct r ->> 'connector' from jsonb_array_elements(v_rows) r where r ->> 'connector' is not null)
  order by w.key for update;

  for g in
    select (r ->> 'ws')::uuid as workspace_id, (r ->> 'integration')::uuid as integration_id,
      -- editions with an attempt in flight first: their claim settles it whatever the limits
      array_agg((r ->> 'job')::uuid order by (r ->> 'open')::boolean desc, (r ->> 'content')::uuid) as job_ids,
      array_agg((r ->> 'content')::uuid order by (r ->> 'open')::boolean desc, (r ->> 'content')::uuid) as content_ids,
      count(*) filter (where (r ->> 'open')::boolean)::int as resumed
    from jsonb_array_elements(v_rows) r
    group by 1, 2
    order by 1, 2 nulls first
  loop
    -- How many of this integration's editions may go now (limits counted once per integration).
    v_allowed := cardinality(g.job_ids);
    v_until := null;
    v_step := interval '0';
    if g.integration_id is not null then
      select * into l from app.publish_limits_of(g.workspace_id, g.integration_id);
      if l.max_in_flight is not null then
        -- Claims of one integration count its attempts in flight one after the other
        -- (the integration's row, locked in integration order, as every worker does).
        perform 1 from app.integrations i where i.workspace_id = g.workspace_id and i.id = g.integration_id for no key update;
        v_allowed := greatest(least(v_allowed, l.max_in_flight - (select count(*) from app.publish_attempts a
                                      where a.workspace_id = g.workspace_id and a.integration_id = g.integration_id
                                        and a.finished_at is null)::int), 0);
        if v_allowed < cardinality(g.job_ids) then
          -- Every slot is taken: one frees about every (how long a post holds one) / (slots).
          v_step := app.publish_hold_estimate(g.workspace_id, g.integration_id, v_retry_ms) / l.max_in_flight;
          v_until := clock_timestamp() + v_step;
        end if;
      end if;
      if l.max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('integration', g.integration_id::text, l.max_per_window, l.window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.window_seconds * interval '1 second' / l.max_per_window);
        end if;
      end if;
      if l.app_max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('app', l.connector, l.app_max_per_window, l.app_window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.app_window_seconds * interval '1 second' / l.app_max_per_window);
        end if;
      end if;
      v_allowed := greatest(v_allowed, g.resumed);
      if v_allowed < cardinality(g.job_ids) then
        -- The editions put back are paced at the rate the limit lets through, after those this
        -- integration already put back (app.publish_pacing): each comes back about when it can go,
        -- instead of every one coming back together at each retry and going back again.
        insert into app.publish_pacing as p (integration_id, organization_id, workspace_id, next_at)
        select i.id, i.organization_id, i.workspace_id, v_until from app.integrations i
        where i.workspace_id = g.workspace_id and i.id = g.integration_id
        on conflict (integration_id, workspace_id) do nothing;
        -- At most 10 s of pace ahead of the limit's own next opening: a pace that ran ahead (a
        -- long burst, or a hold measured while slots were stuck) costs a look every 10 s at most.
        select greatest(v_until, least(p.next_at, v_until + interval '10 seconds')) into v_start from app.publish_pacing p
        where p.workspace_id = g.workspace_id and p.integration_id = g.integration_id for update;
        update app.publish_pacing set next_at = v_start + (cardinality(g.job_ids) - v_allowed) * v_step
        where workspace_id = g.workspace_id and integration_id = g.integration_id;
      end if;
    end if;
    -- The first v_allowed editions are claimed together (the common case set-based, the rest one by one).
    if v_allowed > 0 then
      v_claim_list := v_claim_list || app.publish_claim_editions(g.workspace_id, g.content_ids[1:v_allowed], g.job_ids[1:v_allowed],
        p_resendable, v_batch);
    end if;
    for k in v_allowed + 1 .. cardinality(g.job_ids) loop
      -- Over a limit: the job goes back with a later start, its turn in the pace; no attempt is written.
      v_until := v_start + (k - v_allowed - 1) * v_step;
      perform app.publish_defer_job(g.job_ids[k], v_until);
      v_claim_list := array_append(v_claim_list, jsonb_build_object('action', 'deferred', 'reason', 'rate_limited', 'until', v_until,
        'jobId', g.job_ids[k], 'contentId', g.content_ids[k]));
    end loop;
  end loop;

  v_claims := to_jsonb(v_claim_list);
  -- Where the media of the editions to send are stored, for signed URLs (workspace by workspace).
  for v_ws in select distinct (c #>> '{edition,workspaceId}')::uuid from jsonb_array_elements(v_claims) c
              where c ->> 'action' = 'send' order by 1 loop
    select v_media || coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'key', m.storage_key, 'filename', m.filename,
           'contentType', m.content_type)), '[]')
  into v_media
  from app.media_items m
    where m.workspace_id = v_ws and m.id = any (array(
      select (x ->> 'id')::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,media}') x
      where c ->> 'action' = 'send' and (c #>> '{edition,workspaceId}')::uuid = v_ws
      union
      select y::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,thread}') t,
          jsonb_array_elements_text(t -> 'mediaIds') y
        where c ->> 'action' = 'send' and (c #>> '{edition,workspaceId}')::uuid = v_ws));
  end loop;
  return jsonb_build_object('batch', v_batch, 'claims', v_claims, 'media', v_media);
end
$function$;
alter function app.publish_claim_batch(jsonb, text[]) owner to pressroom_definer;
comment on function app.publish_claim_batch(jsonb,text[]) is 'Claims a fetched batch of publish jobs (each with its jobId, contentId and workspaceId) in one statement, workspace by workspace and integration by integration: the editions its limits allow through app.publish_claim_editions (the common case set-based, the rest through app.publish_claim; attempts written and committed before any platform call), editions over their integration''s or connector''s publish limits put back with later starts paced by the limit (app.publish_pacing); returns the claims and where the media to send are stored. Runs as pressroom_definer, as the record does.';

------------------------------------------------------------------------------
-- The record
------------------------------------------------------------------------------

create function app.publish_record_with_policy(p_workspace_id uuid, p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text, p_permalink text, p_max_attempts integer, p_retry_base_ms integer)
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
  select * into a from app.publish_attempts where workspace_id = p_workspace_id and id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where workspace_id = p_workspace_id and id = a.content_item_id for update;
  -- Already settled (by a resolve, or by another worker that took over).
  if a.finished_at is not null and not (a.outcome = 'unknown' and p_outcome in ('published', 'failed')) then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  v_clock := clock_timestamp();
  update app.publish_attempts set finished_at = v_clock, outcome = p_outcome, error = p_error,
    platform_post_id = p_platform_post_id, permalink = p_permalink
  where workspace_id = p_workspace_id and id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  if p_outcome = 'published' then
    v_clock := clock_timestamp();
    update app.content_items set status = 'sent', sent_at = v_clock, permalink = p_permalink,
      platform_post_id = p_platform_post_id, error = null
    where workspace_id = p_workspace_id and id = v.id;
    update app.publishing_states set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
    where workspace_id = p_workspace_id and content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'sent');
  elsif p_outcome = 'failed' or (p_outcome = 'transient' and a.run_attempt >= p_max_attempts) then
    update app.content_items set status = 'failed', error = coalesce(p_error, 'The platform refused the post.')
    where workspace_id = p_workspace_id and id = v.id;
    update app.publishing_states set state = 'failed', last_error = p_error, next_attempt_at = null, updated_at = now()
    where workspace_id = p_workspace_id and content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'failed');
  elsif p_outcome = 'transient' then
    v_delay_ms := p_retry_base_ms::bigint * (2 ^ least(a.run_attempt - 1, 20))::bigint;
    v_next := clock_timestamp() + v_delay_ms * interval '1 millisecond';
    update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_next, updated_at = now()
    where workspace_id = p_workspace_id and content_item_id = v.id;
    update pgboss.job set state = 'retry', start_after = v_next, started_on = null
    where name = 'content.publish' and id = v.publish_job_id and state = 'active';
    return jsonb_build_object('action', 'retry', 'delayMs', v_delay_ms, 'nextAttemptAt', v_next);
  else
    update app.publishing_states set state = 'awaiting_confirmation', last_error = p_error, next_attempt_at = null, updated_at = now()
    where workspace_id = p_workspace_id and content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'scheduled', 'state', 'awaiting_confirmation');
  end if;
end
$function$;
alter function app.publish_record_with_policy(uuid, uuid, text, text, text, text, integer, integer) owner to pressroom_definer;
comment on function app.publish_record_with_policy(uuid, uuid, text, text, text, text, integer, integer) is 'Records a publish attempt''s outcome, in the workspace, with the retry policy given; called by app.publish_record.';
grant execute on function app.publish_record_with_policy(uuid, uuid, text, text, text, text, integer, integer) to pressroom_worker;
revoke all on function app.publish_record_with_policy(uuid, uuid, text, text, text, text, integer, integer) from public;

create function app.publish_record(p_workspace_id uuid, p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text, p_permalink text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  return app.publish_record_with_policy(p_workspace_id, p_attempt_id, p_outcome, p_error, p_platform_post_id, p_permalink,
    app.setting_int('publish_max_attempts'), app.setting_int('publish_retry_base_ms'));
end
$function$;
alter function app.publish_record(uuid, uuid, text, text, text, text) owner to pressroom_definer;
comment on function app.publish_record(uuid, uuid, text, text, text, text) is 'The engine records what the platform answered for a claimed attempt of the workspace (published, failed, transient, unknown): statuses, retries with exponential backoff (publish_max_attempts, publish_retry_base_ms), awaiting confirmation.';
grant execute on function app.publish_record(uuid, uuid, text, text, text, text) to pressroom_worker;
revoke all on function app.publish_record(uuid, uuid, text, text, text, text) from public;

create function app.publish_record_rate_limited(p_workspace_id uuid, p_attempt_id uuid, p_error text, p_retry_at timestamp with time zone)
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
  select * into a from app.publish_attempts where workspace_id = p_workspace_id and id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where workspace_id = p_workspace_id and id = a.content_item_id for update;
  if a.finished_at is not null then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  v_clock := clock_timestamp();
  update app.publish_attempts set finished_at = v_clock, outcome = 'transient', error = p_error,
    platform_post_id = null, permalink = null
  where workspace_id = p_workspace_id and id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  v_until := greatest(v_clock, least(coalesce(p_retry_at, v_clock), v_clock + interval '1 day'));
  -- The run's attempt is given back: the next claim of this job counts from the same number.
  update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_until,
    run_attempts = greatest(a.run_attempt - 1, 0), updated_at = now()
  where workspace_id = p_workspace_id and content_item_id = v.id;
  perform app.publish_defer_job(v.publish_job_id, v_until);
  -- The account's window is spent until the reset: app.publish_window_take grants nothing before
  -- window_start + window_seconds = v_until (never moved earlier than a fuller window already is).
  select * into l from app.publish_limits_of(p_workspace_id, v.integration_id);
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
alter function app.publish_record_rate_limited(uuid, uuid, text, timestamp with time zone) owner to pressroom_definer;
comment on function app.publish_record_rate_limited(uuid, uuid, text, timestamp with time zone) is 'Records an attempt of the workspace that the platform refused for its rate limit (429 with a reset): the attempt ends transient, the edition''s job starts again at the reset (now at the earliest, a day ahead at the latest; app.publish_defer_job, no retry spent) and the run''s attempt is given back; the integration''s rate window, where it has one, is full until the reset. Worker only (server/jobs/publish.ts).';
grant execute on function app.publish_record_rate_limited(uuid, uuid, text, timestamp with time zone) to pressroom_worker;
revoke all on function app.publish_record_rate_limited(uuid, uuid, text, timestamp with time zone) from public;

create function app.grid_mark_sent(p_workspace_id uuid, p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECT below
  v_keep uuid[];   -- tiles that stay, published (their key taken off)
  v_drop uuid[];   -- tiles that go (not a live post of a feed-grid channel, or of another channel)
  v_add uuid[];    -- editions that get a published tile
begin
  -- What app.grid_place_edition does for a sent edition, for many at once: a published
  -- tile (no key) on a feed-grid channel's live post edition, no tile otherwise. One
  -- look-up by key per edition decides; each change is one statement by id, usually
  -- only the first.
  select array_agg(t.id) filter (where x.eligible and t.integration_id = i.integration_id and t.position_key is not null),
         array_agg(t.id) filter (where t.id is not null and not (x.eligible and t.integration_id = i.integration_id)),
         array_agg(i.id order by i.id) filter (where x.eligible and (t.id is null or t.integration_id <> i.integration_id))
  into v_keep, v_drop, v_add
  from unnest(p_ids) u (id)
  -- Looked up by key (offset 0 keeps the status test out of the look-up): a plan may
  -- otherwise walk the partial index of sent editions, filtering on the id.
  cross join lateral (select * from app.content_items i where i.workspace_id = p_workspace_id and i.id = u.id offset 0) i
  join app.integrations g on g.id = i.integration_id and g.workspace_id = p_workspace_id
  left join app.platforms p on p.code = g.platform
  left join app.grid_tiles t on t.content_item_id = i.id and t.workspace_id = p_workspace_id
  cross join lateral (select i.deleted_at is null and i.kind = 'post' and coalesce(p.feed_grid, false) as eligible) x
  where i.status = 'sent';
  if v_drop is not null then
    delete from app.grid_tiles where workspace_id = p_workspace_id and id = any (v_drop);
  end if;
  if v_keep is not null then
    update app.grid_tiles set position_key = null where workspace_id = p_workspace_id and id = any (v_keep);
  end if;
  if v_add is not null then
    with inserted as (
      insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
      select i.organization_id, i.workspace_id, i.integration_id, i.id, i.created_by
      from unnest(v_add) u (id) join app.content_items i on i.id = u.id and i.workspace_id = p_workspace_id
      order by i.id
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
end
$function$;
alter function app.grid_mark_sent(uuid, uuid[]) owner to pressroom_definer;
comment on function app.grid_mark_sent(uuid, uuid[]) is 'The grid tiles of sent editions of the workspace, in one pass: what app.grid_place_edition does for each (a published tile, without a key, for a live post edition of a feed-grid channel; none otherwise). Used by app.publish_record_batch for the editions it marks sent, whose deferred grid trigger it skips.';
grant execute on function app.grid_mark_sent(uuid, uuid[]) to pressroom_worker;
revoke all on function app.grid_mark_sent(uuid, uuid[]) from public;

create or replace function app.publish_record_batch(p_outcomes jsonb)
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
  v_ws uuid;
  v_sent uuid[];
  v_items uuid[];
  v_answers jsonb := '{}';  -- by the outcome's place in p_outcomes
  v_contents jsonb;
  v_clock timestamptz;
begin
  -- p_outcomes: [{"attemptId", "workspaceId", "outcome", "error", "platformPostId", "permalink"}].
  if exists (select 1 from jsonb_array_elements(p_outcomes) e where e ->> 'workspaceId' is null) then
    raise exception 'publish_record_batch: every outcome names its workspace (workspaceId)' using errcode = '22023';
  end if;
  -- Workspace by workspace (each statement stays in one workspace).
  for v_ws in select distinct (e ->> 'workspaceId')::uuid from jsonb_array_elements(p_outcomes) e order by 1 loop
    -- Published outcomes: their editions locked by id (as the claim locks them), then their attempts.
    -- (Each statement starts from the outcomes and looks rows up by key, one lateral look-up
    -- each: a generic plan cannot walk a whole index of a table that grows during a burst.)
    perform 1 from (select distinct a.content_item_id from jsonb_array_elements(p_outcomes) e
                    cross join lateral (select a.content_item_id from app.publish_attempts a
                                        where a.workspace_id = v_ws and a.id = (e ->> 'attemptId')::uuid offset 0) a
                    where e ->> 'outcome' = 'published' and (e ->> 'workspaceId')::uuid = v_ws order by 1) x
    cross join lateral (select 1 from app.content_items i where i.workspace_id = v_ws and i.id = x.content_item_id for update) l;
    -- The common case: an attempt in flight of an edition still scheduled (once per attempt).
    select coalesce(array_agg(a.id order by a.content_item_id), '{}') into v_sent
    from (select (e ->> 'attemptId')::uuid as id from jsonb_array_elements(p_outcomes) e
          where e ->> 'outcome' = 'published' and (e ->> 'workspaceId')::uuid = v_ws
          group by 1 having count(*) = 1) o
    cross join lateral (select a.id, a.content_item_id, a.finished_at from app.publish_attempts a
                        where a.workspace_id = v_ws and a.id = o.id offset 0) a
    cross join lateral (select i.deleted_at, i.status from app.content_items i
                        where i.workspace_id = v_ws and i.id = a.content_item_id offset 0) i
    where a.finished_at is null and i.deleted_at is null and i.status = 'scheduled';
    perform 1 from app.publish_attempts a where a.workspace_id = v_ws and a.id = any (v_sent) order by a.content_item_id for update;

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
        from o where a.workspace_id = v_ws and a.id = o.id
        returning a.content_item_id, o.post_id, o.permalink
      ),
      i as (
        update app.content_items i set status = 'sent', sent_at = v_clock, permalink = a.permalink,
          platform_post_id = a.post_id, error = null
        from a where i.workspace_id = v_ws and i.id = a.content_item_id
        returning i.id
      ),
      s as (
        update app.publishing_states s set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
        from i where s.workspace_id = v_ws and s.content_item_id = i.id
      )
      -- (s, a data-modifying part, runs to completion whether read or not.)
      select coalesce(array_agg(i.id order by i.id), '{}') into v_items from i;
      perform set_config('pressroom.grid_sent_batch', 'off', true);
      -- Their grid tiles, in one pass (the deferred grid trigger skipped them).
      perform app.grid_mark_sent(v_ws, v_items);
    end if;

    -- The edition of each of the workspace's outcomes (by its place in p_outcomes).
    select coalesce(jsonb_object_agg(x.n::text, a.content_item_id), '{}') into v_contents
    from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
    cross join lateral (select a.content_item_id from app.publish_attempts a
                        where a.workspace_id = v_ws and a.id = (x.e ->> 'attemptId')::uuid offset 0) a
    where (x.e ->> 'workspaceId')::uuid = v_ws;
    -- The workspace's answers; the others recorded one by one, by edition. (This statement reads
    -- no table: app.publish_record reads and writes in statements of its own.)
    v_answers := v_answers || (
      select coalesce(jsonb_object_agg(o.n::text, jsonb_build_object('attemptId', o.e ->> 'attemptId', 'contentId', v_contents -> o.n::text)
          || case when (o.e ->> 'attemptId')::uuid = any (v_sent) then jsonb_build_object('action', 'done', 'status', 'sent')
                  else app.publish_record(v_ws, (o.e ->> 'attemptId')::uuid, o.e ->> 'outcome', o.e ->> 'error', o.e ->> 'platformPostId',
                                          o.e ->> 'permalink') end), '{}')
      from (select x.e, x.n from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
            where (x.e ->> 'workspaceId')::uuid = v_ws
            order by (v_contents ->> x.n::text)::uuid, x.n offset 0) o);
  end loop;
  -- Answers in the order of the outcomes.
  return (select coalesce(jsonb_agg(v_answers -> n::text order by n), '[]')
          from generate_series(1, jsonb_array_length(p_outcomes)) n);
end
$function$;
comment on function app.publish_record_batch(jsonb) is 'Records a batch of publish outcomes (each with its attemptId and workspaceId), workspace by workspace: published outcomes of attempts in flight of editions still scheduled together (editions locked by id, then attempts; one UPDATE each of the attempts, the editions and their publishing states, then their grid tiles in one pass through app.grid_mark_sent, the deferred grid trigger skipping those rows), every other outcome through app.publish_record (failed, retries, awaiting confirmation, late or settled attempts); returns one result per outcome, in the order given.';


------------------------------------------------------------------------------
-- The triggers a published edition fires, in its workspace
------------------------------------------------------------------------------
-- A trigger on a Citus shard may read only rows on its node (local tasks): each of these now
-- reads its own workspace's rows by workspace_id, as the version record and the grid do
-- (db/migrations/committed/000056-content-versions-and-checks-by-workspace.sql).

create or replace function app.tg_content_items_freeze_media()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
  select new.id, m.media_id, m.workspace_id, m.organization_id, m.position
  from app.content_root_media m where m.workspace_id = new.workspace_id and m.root_id = new.root_id
    and not exists (select 1 from app.content_item_media x where x.workspace_id = new.workspace_id and x.content_item_id = new.id);
  return null;
end
$function$;

create or replace function app.tg_content_items_media_not_binned()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ids uuid[];
begin
  perform 1 from app.media_items m
  where m.workspace_id = new.workspace_id
    and m.id in (select media_id from app.content_item_media where workspace_id = new.workspace_id and content_item_id = new.id
                 union select media_id from app.content_root_media where workspace_id = new.workspace_id and root_id = new.root_id)
  for share of m;
  select coalesce(array_agg(m.id order by m.id), '{}') into v_ids from app.media_items m
  where m.workspace_id = new.workspace_id and m.state = 'deleted'
    and m.id in (select media_id from app.content_item_media where workspace_id = new.workspace_id and content_item_id = new.id
                 union select media_id from app.content_root_media where workspace_id = new.workspace_id and root_id = new.root_id);
  if cardinality(v_ids) > 0 then
    perform app.raise(409, 'MEDIA_IN_BIN', 'This content uses media that is in the bin; restore it or take it out of the content first.',
      jsonb_build_object('contentId', new.id, 'mediaIds', to_jsonb(v_ids)));
  end if;
  return new;
end
$function$;

drop function app.media_usage_record(uuid, text, text, uuid, uuid);
create function app.media_usage_record(p_workspace_id uuid, p_media_id uuid, p_event text, p_via text, p_content_item_id uuid, p_root_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_media record;
  v_status text;
  v_scheduled_at timestamptz;
  v_root uuid := p_root_id;
  v_opposite text := case p_event when 'attached' then 'detached' when 'detached' then 'attached' end;
begin
  -- Nothing to record while the media item, or its workspace, is being deleted.
  select m.workspace_id, m.organization_id into v_media from app.media_items m
  join app.workspaces w on w.id = m.workspace_id
  where m.workspace_id = p_workspace_id and m.id = p_media_id;
  if not found then
    return;
  end if;
  if p_content_item_id is not null then
    select ci.status, ci.scheduled_at, coalesce(v_root, ci.root_id) into v_status, v_scheduled_at, v_root
    from app.content_items ci where ci.workspace_id = p_workspace_id and ci.id = p_content_item_id;
  end if;
  if v_opposite is not null then
    delete from app.media_usage_events
    where workspace_id = p_workspace_id and media_id = p_media_id and event = v_opposite and via = p_via and xact_id = pg_current_xact_id()
      and content_item_id is not distinct from p_content_item_id and root_id is not distinct from v_root;
    if found then
      return;
    end if;
  end if;
  insert into app.media_usage_events (organization_id, workspace_id, media_id, event, via, content_item_id, root_id,
    content_status, scheduled_at)
  values (v_media.organization_id, v_media.workspace_id, p_media_id, p_event, p_via, p_content_item_id,
    v_root, v_status, v_scheduled_at);
end
$function$;
alter function app.media_usage_record(uuid, uuid, text, text, uuid, uuid) owner to pressroom_definer;
comment on function app.media_usage_record(uuid, uuid, text, text, uuid, uuid) is 'Records one usage event of a media item of the workspace (attached, detached, scheduled, unscheduled, published, failed), with the edition''s status and time; an attach and a detach of the same pair in one transaction cancel out. Called by the media-list and status triggers.';
grant execute on function app.media_usage_record(uuid, uuid, text, text, uuid, uuid) to pressroom_api, pressroom_worker;
revoke all on function app.media_usage_record(uuid, uuid, text, text, uuid, uuid) from public;

create or replace function app.tg_content_items_usage_on_status_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_event text := case
    when new.status = 'scheduled' then 'scheduled'
    when new.status = 'sent' then 'published'
    when new.status = 'failed' then 'failed'
    when old.status = 'scheduled' then 'unscheduled'
  end;
  r record;
begin
  if v_event is null then
    return null;
  end if;
  for r in
    select media_id, 'edition' as via from app.content_item_media where workspace_id = new.workspace_id and content_item_id = new.id
    union
    select media_id, 'root' from app.content_root_media where workspace_id = new.workspace_id and root_id = new.root_id
  loop
    perform app.media_usage_record(new.workspace_id, r.media_id, v_event, r.via, new.id, new.root_id);
  end loop;
  return null;
end
$function$;

create or replace function app.tg_content_item_media_usage_on_list_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform app.media_usage_record(new.workspace_id, new.media_id, 'attached', 'edition', new.content_item_id, null);
  elsif tg_op = 'DELETE' then
    perform app.media_usage_record(old.workspace_id, old.media_id, 'detached', 'edition', old.content_item_id, null);
  elsif new.media_id is distinct from old.media_id or new.content_item_id is distinct from old.content_item_id then
    perform app.media_usage_record(old.workspace_id, old.media_id, 'detached', 'edition', old.content_item_id, null);
    perform app.media_usage_record(new.workspace_id, new.media_id, 'attached', 'edition', new.content_item_id, null);
  end if;
  return null;
end
$function$;

create or replace function app.tg_content_root_media_usage_on_list_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform app.media_usage_record(new.workspace_id, new.media_id, 'attached', 'root', null, new.root_id);
  elsif tg_op = 'DELETE' then
    perform app.media_usage_record(old.workspace_id, old.media_id, 'detached', 'root', null, old.root_id);
  elsif new.media_id is distinct from old.media_id or new.root_id is distinct from old.root_id then
    perform app.media_usage_record(old.workspace_id, old.media_id, 'detached', 'root', null, old.root_id);
    perform app.media_usage_record(new.workspace_id, new.media_id, 'attached', 'root', null, new.root_id);
  end if;
  return null;
end
$function$;

create or replace function app.assert_not_in_review(v app.content_items)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  if v.status = 'pending_approval' then
    perform app.raise(409, 'REVIEW_IN_PROGRESS',
      'This content is in review; it can be scheduled or published once the review approves it, or after the review is cancelled or the item removed.',
      jsonb_build_object('contentId', v.id, 'reviewId',
        (select ri.review_id from app.review_items ri where ri.workspace_id = v.workspace_id and ri.content_id = v.id and ri.open limit 1)));
  end if;
end
$function$;
