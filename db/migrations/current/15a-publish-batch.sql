-- Scale, part a: the batched publishing engine and per-integration limits
-- (docs/architecture.md, "Publishing"; db/README.md, "Scale").
--
-- One statement claims a fetched batch of publish jobs (app.publish_claim_batch),
-- one records a batch of outcomes (app.publish_record_batch), one records what
-- the sandbox platform received for a batch (app.sandbox_receive_posts). Each
-- edition goes through the very same per-edition rules as before
-- (app.publish_claim_attempt, app.publish_record), so exactly-once is unchanged:
-- every attempt is committed before its platform call.
--
-- Limits: a connector declares how many posts of one integration may be in
-- flight and how many per window, per integration and per app
-- (app.connector_publish_limits, written by app.declare_connector_limits when
-- a worker starts); an operator may set a lower limit for one integration
-- (app.integration_publish_limits). The claim refuses an edition over a limit
-- and puts its job back with a later start, without an attempt, so the other
-- integrations' editions of the batch go on.

------------------------------------------------------------------------------
-- Attempts know their integration and their claim batch
------------------------------------------------------------------------------
alter table app.publish_attempts add column if not exists integration_id uuid references app.integrations (id) on delete cascade;
alter table app.publish_attempts add column if not exists claim_batch uuid;
comment on column app.publish_attempts.integration_id is 'The integration the attempt publishes to (counts its attempts in flight for the publish limits).';
comment on column app.publish_attempts.claim_batch is 'The batch claim (app.publish_claim_batch) that wrote the attempt; null for a claim of one edition.';
create index if not exists publish_attempts_open_integration_idx on app.publish_attempts (integration_id) where finished_at is null;
create index if not exists publish_attempts_integration_started_idx on app.publish_attempts (integration_id, started_at);

insert into app.settings (key, value, kind, minimum, description) values
  ('publish_limit_retry_ms', '500', 'integer', 10,
   'How long an edition refused because its integration has as many posts in flight as its limit allows waits before its job is tried again.')
on conflict (key) do nothing;

------------------------------------------------------------------------------
-- Limits: declared by connectors, lowered per integration
------------------------------------------------------------------------------
create table if not exists app.connector_publish_limits (
  connector text primary key,
  integration_max_in_flight int check (integration_max_in_flight > 0),
  integration_max_per_window int check (integration_max_per_window > 0),
  integration_window_seconds int check (integration_window_seconds > 0),
  app_max_per_window int check (app_max_per_window > 0),
  app_window_seconds int check (app_window_seconds > 0),
  declared_at timestamptz not null default now(),
  check ((integration_max_per_window is null) = (integration_window_seconds is null)),
  check ((app_max_per_window is null) = (app_window_seconds is null))
);
comment on table app.connector_publish_limits is 'The publish limits a connector declares (server/platforms, Connector.publishLimits), written by app.declare_connector_limits when a worker starts: posts in flight and posts per window for each integration, and posts per window for the whole app (all integrations of the connector). Null means no limit. Engine-only.';
alter table app.connector_publish_limits enable row level security;
alter table app.connector_publish_limits force row level security;
drop policy if exists connector_publish_limits_definer on app.connector_publish_limits;
create policy connector_publish_limits_definer on app.connector_publish_limits to pressroom_definer using (true) with check (true);
drop policy if exists connector_publish_limits_worker on app.connector_publish_limits;
create policy connector_publish_limits_worker on app.connector_publish_limits for select to pressroom_worker using (true);
grant select, insert, update, delete on app.connector_publish_limits to pressroom_definer;
grant select on app.connector_publish_limits to pressroom_worker;

create table if not exists app.integration_publish_limits (
  integration_id uuid primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  max_in_flight int check (max_in_flight > 0),
  max_per_window int check (max_per_window > 0),
  window_seconds int check (window_seconds > 0),
  updated_at timestamptz not null default now(),
  check ((max_per_window is null) = (window_seconds is null)),
  foreign key (integration_id) references app.integrations (id) on delete cascade
);
comment on table app.integration_publish_limits is 'An operator''s lower publish limits for one integration (an account with a smaller quota than its platform''s default): the engine applies the lower of these and its connector''s declaration. Written by the operator in SQL; requests read their workspace''s rows.';
select app.apply_tenant_policies('app.integration_publish_limits', array['select']);
grant select on app.integration_publish_limits to pressroom_api;
grant select, insert, update, delete on app.integration_publish_limits to pressroom_definer, pressroom_worker;
create index if not exists integration_publish_limits_organization_id_idx on app.integration_publish_limits (organization_id);
create index if not exists integration_publish_limits_workspace_id_idx on app.integration_publish_limits (workspace_id);

create table if not exists app.publish_windows (
  scope text not null check (scope in ('integration', 'app')),
  key text not null,
  window_start timestamptz not null,
  used int not null default 0,
  primary key (scope, key)
);
comment on table app.publish_windows is 'The current fixed window of each publish rate limit: posts claimed since window_start, per integration (key: its id) or per app (key: the connector). Engine-only.';
alter table app.publish_windows enable row level security;
alter table app.publish_windows force row level security;
drop policy if exists publish_windows_definer on app.publish_windows;
create policy publish_windows_definer on app.publish_windows to pressroom_definer using (true) with check (true);
drop policy if exists publish_windows_worker on app.publish_windows;
create policy publish_windows_worker on app.publish_windows to pressroom_worker using (true) with check (true);
grant select, insert, update, delete on app.publish_windows to pressroom_definer, pressroom_worker;

create or replace function app.declare_connector_limits(p_limits jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app
as $$
declare
  v_connector text;
  v jsonb;
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
      declared_at = now()
    where (l.integration_max_in_flight, l.integration_max_per_window, l.integration_window_seconds, l.app_max_per_window, l.app_window_seconds)
      is distinct from (excluded.integration_max_in_flight, excluded.integration_max_per_window, excluded.integration_window_seconds,
                        excluded.app_max_per_window, excluded.app_window_seconds);
  end loop;
  return (select coalesce(jsonb_object_agg(connector, to_jsonb(l) - 'connector' - 'declared_at'), '{}') from app.connector_publish_limits l);
end
$$;
alter function app.declare_connector_limits(jsonb) owner to pressroom_definer;
comment on function app.declare_connector_limits(jsonb) is 'Records the publish limits each connector declares (called by the publish worker at start); returns what is in force.';
revoke all on function app.declare_connector_limits(jsonb) from public;
grant execute on function app.declare_connector_limits(jsonb) to pressroom_worker;

create or replace function app.publish_limits_of(p_integration_id uuid)
returns table (connector text, max_in_flight int, max_per_window int, window_seconds int, app_max_per_window int, app_window_seconds int)
language sql stable set search_path = pg_catalog, app
as $$
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
  left join app.integration_publish_limits o on o.integration_id = g.id
  where g.id = p_integration_id
$$;
comment on function app.publish_limits_of(uuid) is 'The publish limits in force for an integration: its connector''s declaration, lowered by the integration''s own row.';
revoke all on function app.publish_limits_of(uuid) from public;
grant execute on function app.publish_limits_of(uuid) to pressroom_worker, pressroom_definer;

-- Takes up to p_want posts of a fixed window: returns how many were granted
-- and, when fewer than wanted, when the window ends.
create or replace function app.publish_window_take(p_scope text, p_key text, p_max int, p_seconds int, p_want int,
  out granted int, out frees_at timestamptz)
language plpgsql set search_path = pg_catalog, app
as $$
declare
  w app.publish_windows;
begin
  insert into app.publish_windows as pw (scope, key, window_start, used) values (p_scope, p_key, clock_timestamp(), 0)
  on conflict (scope, key) do nothing;
  select * into w from app.publish_windows where scope = p_scope and key = p_key for update;
  if w.window_start + p_seconds * interval '1 second' <= clock_timestamp() then
    w.window_start := clock_timestamp();
    w.used := 0;
  end if;
  granted := greatest(least(p_want, p_max - w.used), 0);
  update app.publish_windows set window_start = w.window_start, used = w.used + granted where scope = p_scope and key = p_key;
  if granted < p_want then
    frees_at := w.window_start + p_seconds * interval '1 second';
  end if;
end
$$;
comment on function app.publish_window_take(text, text, int, int, int) is 'Counts up to p_want posts in a publish rate window (app.publish_windows): how many were granted and, if fewer than wanted, when the window ends.';
revoke all on function app.publish_window_take(text, text, int, int, int) from public;
grant execute on function app.publish_window_take(text, text, int, int, int) to pressroom_worker, pressroom_definer;

-- Puts an active publish job back to start later, as a transient failure does
-- (started_on cleared: pg-boss does not count it as a retry).
create or replace function app.publish_defer_job(p_job_id uuid, p_until timestamptz)
returns void
language plpgsql security definer set search_path = pg_catalog, app
as $$
begin
  -- plpgsql: pgboss.job is created by pg-boss after the migrations.
  update pgboss.job set state = 'retry', start_after = p_until, started_on = null
  where name = 'content.publish' and id = p_job_id and state = 'active';
end
$$;
alter function app.publish_defer_job(uuid, timestamptz) owner to pressroom_definer;
comment on function app.publish_defer_job(uuid, timestamptz) is 'Puts an active content.publish job back to start at the given time (an edition over a publish limit); pg-boss does not count it as a retry.';
revoke all on function app.publish_defer_job(uuid, timestamptz) from public;
grant execute on function app.publish_defer_job(uuid, timestamptz) to pressroom_worker;

------------------------------------------------------------------------------
-- The per-edition claim, now writing the attempt's integration and batch
------------------------------------------------------------------------------
create or replace function app.publish_claim_attempt(p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid)
returns jsonb
language plpgsql
as $function$
declare
  v app.content_items;
  s app.publishing_states;
  a app.publish_attempts;
  v_connector text;
  v_n int;
  v_run int;
  v_token text;
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
      on conflict (content_item_id) do update set job_id = p_job_id, state = 'publishing', next_attempt_at = null, updated_at = now();
      return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
        'token', a.idempotency_token, 'resend', true, 'edition', app.publish_edition_json(v.id));
    end if;
    update app.publish_attempts set finished_at = clock_timestamp(), outcome = 'unknown',
      error = 'The worker stopped while this attempt was in flight; the platform may or may not have the post.'
    where id = a.id;
    insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts, last_error)
    values (v.id, v.organization_id, v.workspace_id, p_job_id, 'awaiting_confirmation', a.run_attempt,
            'The worker stopped while the post was being sent; check the platform and resolve the outcome.')
    on conflict (content_item_id) do update set job_id = p_job_id, state = 'awaiting_confirmation', next_attempt_at = null,
      last_error = excluded.last_error, updated_at = now();
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
  on conflict (content_item_id) do update set job_id = p_job_id, state = 'publishing', run_attempts = v_run,
    next_attempt_at = null, updated_at = now();
  return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
    'token', a.idempotency_token, 'resend', false, 'edition', app.publish_edition_json(v.id));
end
$function$;
comment on function app.publish_claim_attempt(uuid, uuid, text[], uuid) is 'Claims a due edition for a publish job and writes the attempt (with its integration and claim batch) before the platform is called; called by app.publish_claim.';
revoke all on function app.publish_claim_attempt(uuid, uuid, text[], uuid) from public;
grant execute on function app.publish_claim_attempt(uuid, uuid, text[], uuid) to pressroom_definer, pressroom_worker;

create or replace function app.publish_claim_attempt(p_content_id uuid, p_job_id uuid, p_resendable text[])
returns jsonb
language sql
as $$ select app.publish_claim_attempt(p_content_id, p_job_id, p_resendable, null::uuid) $$;
comment on function app.publish_claim_attempt(uuid, uuid, text[]) is 'Claims a due edition for a publish job outside a batch (app.publish_claim_attempt with no batch).';

create or replace function app.publish_claim(p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid)
returns jsonb
language plpgsql
set search_path = pg_catalog, app
as $function$
declare
  v_claim jsonb := app.publish_claim_attempt(p_content_id, p_job_id, p_resendable, p_batch);
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
$function$;
comment on function app.publish_claim(uuid, uuid, text[], uuid) is 'The engine''s claim of a due edition in a claim batch (app.publish_claim_attempt); an edition whose channel is disconnected or deleted fails permanently here instead of being sent.';
revoke all on function app.publish_claim(uuid, uuid, text[], uuid) from public;
grant execute on function app.publish_claim(uuid, uuid, text[], uuid) to pressroom_definer, pressroom_worker;

create or replace function app.publish_claim(p_content_id uuid, p_job_id uuid, p_resendable text[])
returns jsonb
language sql
set search_path = pg_catalog, app
as $$ select app.publish_claim(p_content_id, p_job_id, p_resendable, null::uuid) $$;
comment on function app.publish_claim(uuid, uuid, text[]) is 'The engine''s claim of one due edition outside a batch (app.publish_claim with no batch); an edition whose channel is disconnected or deleted fails permanently here instead of being sent.';

------------------------------------------------------------------------------
-- The batch claim
------------------------------------------------------------------------------
create or replace function app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
returns jsonb
language plpgsql
set search_path = pg_catalog, app
as $function$
declare
  v_batch uuid := gen_random_uuid();
  g record;
  l record;
  w_take record;
  k int;
  v_claim jsonb;
  v_claims jsonb := '[]';
  v_allowed int;
  v_until timestamptz;
  v_retry_ms int := app.setting_int('publish_limit_retry_ms');
begin
  -- p_jobs: [{"jobId", "contentId"}] as pg-boss fetched them. Locks are taken
  -- in one order by every worker: the app windows of the connectors involved,
  -- then integration by integration (its row when it has an in-flight limit,
  -- its window, then its editions by id).
  perform 1 from app.publish_windows w
  where w.scope = 'app' and w.key in (
    select distinct c.connector from jsonb_array_elements(p_jobs) e
    join app.content_items i on i.id = (e ->> 'contentId')::uuid
    join app.integrations c on c.id = i.integration_id)
  order by w.key for update;

  for g in
    select i.integration_id,
      -- editions with an attempt in flight first: their claim settles it whatever the limits
      array_agg((e ->> 'jobId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as job_ids,
      array_agg((e ->> 'contentId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as content_ids,
      count(*) filter (where o.open)::int as resumed
    from jsonb_array_elements(p_jobs) e
    left join app.content_items i on i.id = (e ->> 'contentId')::uuid
    cross join lateral (select exists (select 1 from app.publish_attempts a
                                       where a.content_item_id = (e ->> 'contentId')::uuid and a.finished_at is null) as open) o
    group by i.integration_id
    order by i.integration_id nulls first
  loop
    -- How many of this integration's editions may go now (limits counted once per integration).
    v_allowed := cardinality(g.job_ids);
    v_until := null;
    if g.integration_id is not null then
      select * into l from app.publish_limits_of(g.integration_id);
      if l.max_in_flight is not null then
        -- Claims of one integration count its attempts in flight one after the other
        -- (the integration's row, locked in integration order, as every worker does).
        perform 1 from app.integrations i where i.id = g.integration_id for no key update;
        v_allowed := greatest(least(v_allowed, l.max_in_flight - (select count(*) from app.publish_attempts a
                                      where a.integration_id = g.integration_id and a.finished_at is null)::int), 0);
        if v_allowed < cardinality(g.job_ids) then
          v_until := clock_timestamp() + v_retry_ms * interval '1 millisecond';
        end if;
      end if;
      if l.max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('integration', g.integration_id::text, l.max_per_window, l.window_seconds, v_allowed);
        v_allowed := w_take.granted;
        v_until := greatest(v_until, w_take.frees_at);
      end if;
      if l.app_max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('app', l.connector, l.app_max_per_window, l.app_window_seconds, v_allowed);
        v_allowed := w_take.granted;
        v_until := greatest(v_until, w_take.frees_at);
      end if;
      v_allowed := greatest(v_allowed, g.resumed);
    end if;
    for k in 1 .. cardinality(g.job_ids) loop
      if k <= v_allowed then
        v_claim := app.publish_claim(g.content_ids[k], g.job_ids[k], p_resendable, v_batch);
      else
        -- Over a limit: the job goes back with a later start, no attempt is written.
        perform app.publish_defer_job(g.job_ids[k], v_until);
        v_claim := jsonb_build_object('action', 'deferred', 'reason', 'rate_limited', 'until', v_until);
      end if;
      v_claims := v_claims || jsonb_build_array(v_claim || jsonb_build_object('jobId', g.job_ids[k], 'contentId', g.content_ids[k]));
    end loop;
  end loop;

  return jsonb_build_object('batch', v_batch, 'claims', v_claims,
    -- Where the media of the editions to send are stored, for signed URLs.
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'key', m.storage_key, 'filename', m.filename,
                'contentType', m.content_type)), '[]')
              from app.media_items m
              where m.id in (
                select (x ->> 'id')::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,media}') x
                where c ->> 'action' = 'send'
                union
                select y::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,thread}') t,
                  jsonb_array_elements_text(t -> 'mediaIds') y
                where c ->> 'action' = 'send')));
end
$function$;
comment on function app.publish_claim_batch(jsonb, text[]) is 'Claims a fetched batch of publish jobs in one statement: each edition through app.publish_claim (attempt written and committed before any platform call), editions over their integration''s or connector''s publish limits put back with a later start; returns the claims and where the media to send are stored.';
revoke all on function app.publish_claim_batch(jsonb, text[]) from public;
grant execute on function app.publish_claim_batch(jsonb, text[]) to pressroom_worker;

------------------------------------------------------------------------------
-- The batch record
------------------------------------------------------------------------------
create or replace function app.publish_record_batch(p_outcomes jsonb)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, app
as $function$
declare
  r record;
  v_out jsonb := '[]';
begin
  -- p_outcomes: [{"attemptId", "outcome", "error", "platformPostId", "permalink"}]; in edition order, as the claim locks.
  for r in
    select e, a.content_item_id
    from jsonb_array_elements(p_outcomes) e
    left join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
    order by a.content_item_id
  loop
    v_out := v_out || jsonb_build_array(jsonb_build_object('attemptId', r.e ->> 'attemptId', 'contentId', r.content_item_id)
      || app.publish_record((r.e ->> 'attemptId')::uuid, r.e ->> 'outcome', r.e ->> 'error', r.e ->> 'platformPostId', r.e ->> 'permalink'));
  end loop;
  return v_out;
end
$function$;
alter function app.publish_record_batch(jsonb) owner to pressroom_definer;
comment on function app.publish_record_batch(jsonb) is 'Records a batch of publish outcomes in one statement, each through app.publish_record (statuses, retries, awaiting confirmation); returns one result per outcome.';
revoke all on function app.publish_record_batch(jsonb) from public;
grant execute on function app.publish_record_batch(jsonb) to pressroom_worker;

------------------------------------------------------------------------------
-- The sandbox platform receives a batch
------------------------------------------------------------------------------
create or replace function app.sandbox_receive_posts(p_posts jsonb)
returns jsonb
language sql
set search_path = pg_catalog, app
as $$
  select coalesce(jsonb_agg(app.sandbox_receive_post((p ->> 'integrationId')::uuid, p ->> 'token', (p ->> 'contentId')::uuid,
    p ->> 'platformPostId', p ->> 'permalink', p ->> 'caption', p -> 'payload') order by n), '[]')
  from jsonb_array_elements(p_posts) with ordinality x (p, n)
$$;
comment on function app.sandbox_receive_posts(jsonb) is 'The sandbox platform receives a batch of posts in one statement (app.sandbox_receive_post for each, in order); returns one answer per post.';
revoke all on function app.sandbox_receive_posts(jsonb) from public;
grant execute on function app.sandbox_receive_posts(jsonb) to pressroom_worker;

select app.harden_api_functions();
