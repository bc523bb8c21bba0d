--! Previous: sha1:121b9049ad0a85db0e7a2c0cc0393526eb75c704
--! Hash: sha1:8f42d60b00a336a0a3323c774ad41ba532d548bd
--! Message: scale batched publishing list totals search metrics reporting

--! split: 15a-publish-batch.sql
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

--! split: 15b-lists.sql
-- Scale, part b: lists that do not slow with size (db/README.md, "Scale").
--
-- * Content list totals from per-workspace counters kept by a trigger
--   (app.content_item_counts, app.content_list_total) instead of a count of
--   every edition on every page; filters the counters cannot answer (since,
--   anything added later) still count exactly.
-- * Indexes for the sorts and filters the content list allows.
-- * Trigram (pg_trgm) indexes for the substring searches: media file name and
--   alt text, campaign name, media label name (their ILIKE '%...%' uses them).

------------------------------------------------------------------------------
-- Content totals
------------------------------------------------------------------------------
create table if not exists app.content_item_counts (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null,
  status text not null,
  n bigint not null
);
comment on table app.content_item_counts is 'Live (not deleted) editions per workspace, integration and status, as deltas: the sum of n over the rows of a key is its count. Written only by triggers content_items_90_count and content_items_90_count_update (insert-only, so concurrent writers never wait on each other) and compacted by app.compact_content_item_counts; read by app.content_list_total.';
create index if not exists content_item_counts_key_idx on app.content_item_counts (workspace_id, integration_id, status) include (n);
create index if not exists content_item_counts_organization_id_idx on app.content_item_counts (organization_id);
select app.apply_tenant_policies('app.content_item_counts', array['select']);
grant select on app.content_item_counts to pressroom_api;
grant select, insert, delete on app.content_item_counts to pressroom_definer;

-- The counts of the editions already there.
insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
select organization_id, workspace_id, integration_id, status, count(*)
from app.content_items where deleted_at is null
group by 1, 2, 3, 4;

create or replace function app.compact_content_item_counts(p_workspace_id uuid) returns int
language plpgsql security definer set search_path = pg_catalog, app
as $$
declare
  v_rows int;
begin
  -- One compactor per workspace at a time; writers only insert and never wait.
  if not pg_try_advisory_xact_lock(hashtext('app.content_item_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_item_counts where workspace_id = p_workspace_id returning *),
  s as (insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
        select organization_id, workspace_id, integration_id, status, sum(n) from d
        group by 1, 2, 3, 4 having sum(n) <> 0 returning 1)
  select (select count(*) from d) into v_rows;
  return v_rows;
end
$$;
alter function app.compact_content_item_counts(uuid) owner to pressroom_definer;
comment on function app.compact_content_item_counts(uuid) is 'Folds a workspace''s content count deltas into one row per integration and status (skipped when another transaction is compacting the same workspace); returns the rows folded.';
revoke all on function app.compact_content_item_counts(uuid) from public;
grant execute on function app.compact_content_item_counts(uuid) to pressroom_worker;

create or replace function app.tg_content_items_count() returns trigger
language plpgsql security definer set search_path = pg_catalog, app
as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (old.organization_id, old.workspace_id, old.integration_id, old.status, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (new.organization_id, new.workspace_id, new.integration_id, new.status, 1);
  end if;
  -- Now and then, fold the deltas (about one change in 500).
  if random() < 0.002 then
    perform app.compact_content_item_counts(coalesce(new.workspace_id, old.workspace_id));
  end if;
  return null;
end
$$;
alter function app.tg_content_items_count() owner to pressroom_definer;
comment on function app.tg_content_items_count() is 'Keeps app.content_item_counts: a -1 delta for the edition as it was, a +1 for it as it is (live editions only).';
revoke all on function app.tg_content_items_count() from public;

drop trigger if exists content_items_90_count on app.content_items;
create trigger content_items_90_count after insert or delete on app.content_items
for each row execute function app.tg_content_items_count();
drop trigger if exists content_items_90_count_update on app.content_items;
create trigger content_items_90_count_update after update of status, deleted_at, integration_id on app.content_items
for each row when (old.status is distinct from new.status or old.deleted_at is distinct from new.deleted_at
                   or old.integration_id is distinct from new.integration_id)
execute function app.tg_content_items_count();

create or replace function app.content_list_total(p_query jsonb) returns bigint
language plpgsql stable set search_path = pg_catalog, app
as $$
declare
  v_workflow text[];
  v_statuses text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_due bigint := 0;
  v_total bigint;
begin
  -- Only the filters the counters know; any other (since, or one added later) is counted exactly by the caller.
  if exists (select 1 from jsonb_object_keys(p_query) k
             where k not in ('limit', 'offset', 'sortBy', 'sortDirection', 'includeReviewLifecycle',
                             'status', 'integrationId', 'workflowStatus', 'workflowStatuses')) then
    return null;
  end if;
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  if p_query ->> 'status' is not null and v_workflow is not null then
    return null;
  elsif p_query ->> 'status' is not null then
    v_statuses := array[p_query ->> 'status'];
  elsif v_workflow is not null then
    v_statuses := array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                               when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
                        from unnest(v_workflow) w);
    -- "publishing" is a scheduled edition that is due, "scheduled" one that is not: the due
    -- ones are few (the engine is sending them), counted on the index.
    if ('scheduled' = any (v_workflow)) <> ('publishing' = any (v_workflow)) then
      select count(*) into v_due from app.content_items i
      where i.workspace_id = app.current_workspace_id() and i.status = 'scheduled' and i.deleted_at is null
        and i.scheduled_at <= now() and (v_integration is null or i.integration_id = v_integration);
    end if;
  else
    v_statuses := array['draft', 'scheduled', 'sent', 'failed'];
  end if;
  select coalesce(sum(c.n), 0) into v_total from app.content_item_counts c
  where c.workspace_id = app.current_workspace_id() and c.status = any (v_statuses)
    and (v_integration is null or c.integration_id = v_integration);
  if v_workflow is not null and 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
    v_total := v_total - v_due;
  elsif v_workflow is not null and 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
    v_total := v_total - (select coalesce(sum(c.n), 0) from app.content_item_counts c
                          where c.workspace_id = app.current_workspace_id() and c.status = 'scheduled'
                            and (v_integration is null or c.integration_id = v_integration)) + v_due;
  end if;
  return v_total;
end
$$;
comment on function app.content_list_total(jsonb) is 'The total of a content list query from the counters (app.content_item_counts): default statuses, a status, workflow statuses, an integration; null when the query has a filter the counters cannot answer (the list then counts exactly).';
revoke all on function app.content_list_total(jsonb) from public;
grant execute on function app.content_list_total(jsonb) to pressroom_api;

CREATE OR REPLACE FUNCTION api.list_content(p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 20);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_since timestamptz := (p_query ->> 'since')::timestamptz;
  v_status text := p_query ->> 'status';
  v_workflow text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_review boolean := coalesce((p_query ->> 'includeReviewLifecycle')::boolean, false);
  v_sort text := coalesce(p_query ->> 'sortBy', 'updatedAt');
  v_dir text := coalesce(p_query ->> 'sortDirection', case when v_since is not null then 'asc' else 'desc' end);
  v_live text := 'i.deleted_at is null';
  v_where text := 'i.workspace_id = $1';
  v_join text := '';
  v_order text;
  v_total bigint;
  v_ids uuid[];
  -- reviews: the reviewLifecycle* filters (migration 000010, split 10c-content-review-filters.sql)
  v_lc jsonb := jsonb_strip_nulls(jsonb_build_object(
    'phase', p_query -> 'reviewLifecyclePhase', 'state', p_query -> 'reviewLifecycleState',
    'actor', p_query -> 'reviewLifecycleActor', 'nextAction', p_query -> 'reviewLifecycleNextAction',
    'blocker', p_query -> 'reviewLifecycleBlocker', 'blocksPublishing', p_query -> 'reviewLifecycleBlocksPublishing',
    'batchId', p_query -> 'reviewLifecycleBatchId', 'itemId', p_query -> 'reviewLifecycleItemId'));
begin
  perform app.require_role('viewer');
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  v_dir := case when lower(v_dir) = 'asc' then 'asc' else 'desc' end;
  -- Filters of live editions; without any, the default statuses.
  if v_status is not null then
    v_live := v_live || ' and i.status = $3';
  end if;
  if v_workflow is not null then
    -- The statuses the workflow statuses cover narrow the scan (an index
    -- serves them); only when exactly one of scheduled/publishing is asked
    -- does a plain comparison of scheduled_at split them (the same rule as
    -- app.content_workflow_status, written so the planner can use an index).
    v_live := v_live || format(' and i.status = any (%L::text[])',
      array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                   when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
            from unnest(v_workflow) w));
    if 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at > now() or i.scheduled_at is null)$w$;
    elsif 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at <= now())$w$;
    end if;
  end if;
  if v_status is null and v_workflow is null and v_lc = '{}' then
    v_live := v_live || $w$ and i.status in ('draft', 'scheduled', 'sent', 'failed')$w$;
  end if;
  -- reviews: any reviewLifecycle filter opts review-held content in and adds reviewLifecycle to items.
  if v_lc <> '{}' then
    v_review := true;
    v_live := v_live || ' and app.content_review_lifecycle_matches(i, $8)';
  end if;
  if v_integration is not null then
    v_where := v_where || ' and i.integration_id = $5';
  end if;
  if v_since is not null then
    v_where := v_where || format(' and ((%s and i.updated_at > $2) or (i.deleted_at is not null and i.deleted_at > $2))', v_live);
  else
    v_where := v_where || ' and ' || v_live;
  end if;
  v_order := case v_sort
    when 'createdAt' then format('i.created_at %s, i.id %s', v_dir, v_dir)
    when 'scheduledAt' then format('i.scheduled_at %s nulls last, i.id %s', v_dir, v_dir)
    when 'status' then format('i.status %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    when 'platform' then format('g.platform %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    else format('i.updated_at %s, i.id %s', v_dir, v_dir)
  end;
  if v_sort = 'platform' then
    v_join := 'join app.integrations g on g.id = i.integration_id';
  end if;
  -- The total: from the per-workspace counters when the query allows it
  -- (app.content_list_total), else an exact count of the filtered set.
  v_total := app.content_list_total(p_query);
  if v_total is null then
    execute format('select count(*) from app.content_items i where %s', v_where)
    into v_total
    using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc;
  end if;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

------------------------------------------------------------------------------
-- Indexes for the content list's sorts and filters (live editions)
------------------------------------------------------------------------------
-- sortBy=createdAt
create index if not exists content_items_workspace_created_idx on app.content_items (workspace_id, created_at desc, id desc)
  include (organization_id) where deleted_at is null;
-- status=..., default sort (updatedAt) and sortBy=status
create index if not exists content_items_workspace_status_updated_idx on app.content_items (workspace_id, status, updated_at desc, id desc)
  include (organization_id) where deleted_at is null;
-- status=..., sortBy=scheduledAt (desc nulls last, the list's default direction)
create index if not exists content_items_workspace_status_scheduled_idx on app.content_items (workspace_id, status, scheduled_at desc nulls last, id desc)
  include (organization_id) where deleted_at is null;
-- integrationId=..., default sort
create index if not exists content_items_workspace_channel_updated_idx on app.content_items (workspace_id, integration_id, updated_at desc, id desc)
  include (organization_id) where deleted_at is null;

------------------------------------------------------------------------------
-- Substring search: trigram indexes
------------------------------------------------------------------------------
create extension if not exists pg_trgm with schema public;
create index if not exists media_items_filename_trgm_idx on app.media_items using gin (filename public.gin_trgm_ops);
create index if not exists media_items_alt_text_trgm_idx on app.media_items using gin (alt_text public.gin_trgm_ops);
create index if not exists campaigns_name_trgm_idx on app.campaigns using gin (name public.gin_trgm_ops);
create index if not exists media_labels_name_trgm_idx on app.media_labels using gin (name public.gin_trgm_ops);

------------------------------------------------------------------------------
-- Content roots totals
------------------------------------------------------------------------------
create table if not exists app.content_root_counts (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  n bigint not null
);
comment on table app.content_root_counts is 'Live (not deleted) content roots per workspace, as deltas (sum of n = the count). Written only by triggers content_roots_90_count and content_roots_90_count_update (insert-only), folded by app.compact_content_root_counts; read by app.content_root_total.';
create index if not exists content_root_counts_workspace_idx on app.content_root_counts (workspace_id) include (n);
create index if not exists content_root_counts_organization_id_idx on app.content_root_counts (organization_id);
select app.apply_tenant_policies('app.content_root_counts', array['select']);
grant select on app.content_root_counts to pressroom_api;
grant select, insert, delete on app.content_root_counts to pressroom_definer;
insert into app.content_root_counts (organization_id, workspace_id, n)
select organization_id, workspace_id, count(*) from app.content_roots where deleted_at is null group by 1, 2;

create or replace function app.compact_content_root_counts(p_workspace_id uuid) returns int
language plpgsql security definer set search_path = pg_catalog, app
as $$
declare
  v_rows int;
begin
  if not pg_try_advisory_xact_lock(hashtext('app.content_root_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_root_counts where workspace_id = p_workspace_id returning *),
  s as (insert into app.content_root_counts (organization_id, workspace_id, n)
        select organization_id, workspace_id, sum(n) from d group by 1, 2 having sum(n) <> 0 returning 1)
  select (select count(*) from d) into v_rows;
  return v_rows;
end
$$;
alter function app.compact_content_root_counts(uuid) owner to pressroom_definer;
comment on function app.compact_content_root_counts(uuid) is 'Folds a workspace''s content root count deltas into one row (skipped while another transaction folds them); returns the rows folded.';
revoke all on function app.compact_content_root_counts(uuid) from public;
grant execute on function app.compact_content_root_counts(uuid) to pressroom_worker;

create or replace function app.tg_content_roots_count() returns trigger
language plpgsql security definer set search_path = pg_catalog, app
as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
    insert into app.content_root_counts (organization_id, workspace_id, n) values (old.organization_id, old.workspace_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
    insert into app.content_root_counts (organization_id, workspace_id, n) values (new.organization_id, new.workspace_id, 1);
  end if;
  if random() < 0.002 then
    perform app.compact_content_root_counts(coalesce(new.workspace_id, old.workspace_id));
  end if;
  return null;
end
$$;
alter function app.tg_content_roots_count() owner to pressroom_definer;
comment on function app.tg_content_roots_count() is 'Keeps app.content_root_counts: -1 for the root as it was, +1 as it is (live roots only).';
revoke all on function app.tg_content_roots_count() from public;
drop trigger if exists content_roots_90_count on app.content_roots;
create trigger content_roots_90_count after insert or delete on app.content_roots
for each row execute function app.tg_content_roots_count();
drop trigger if exists content_roots_90_count_update on app.content_roots;
create trigger content_roots_90_count_update after update of deleted_at on app.content_roots
for each row when (old.deleted_at is distinct from new.deleted_at) execute function app.tg_content_roots_count();

create or replace function app.content_root_total() returns bigint
language sql stable set search_path = pg_catalog, app
as $$ select coalesce(sum(n), 0)::bigint from app.content_root_counts where workspace_id = app.current_workspace_id() $$;
comment on function app.content_root_total() is 'Live content roots of the current workspace, from app.content_root_counts.';
revoke all on function app.content_root_total() from public;
grant execute on function app.content_root_total() to pressroom_api;

------------------------------------------------------------------------------
-- Searches through the trigram indexes. Row-level security evaluates a
-- query's own conditions after its policies unless they are leakproof, and
-- ILIKE is not, so under the request's policies an ILIKE can never drive an
-- index scan. These helpers run the substring match alone, as pressroom_definer
-- and restricted to the current workspace, so the trigram index serves it; the
-- list keeps every other condition under its own policies and takes the ids as
-- one array (`id = any (array(...))`: a primary-key lookup of the matches,
-- rather than a walk of the whole workspace testing each row against them).
------------------------------------------------------------------------------
create or replace function app.media_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$
  select m.id from app.media_items m
  where m.workspace_id = app.current_workspace_id() and (m.filename ilike p_pattern or m.alt_text ilike p_pattern)
$$;
alter function app.media_search_ids(text) owner to pressroom_definer;
comment on function app.media_search_ids(text) is 'Ids of the current workspace''s media items whose file name or alt text matches an ILIKE pattern, through the trigram indexes; used by api.list_media.';
revoke all on function app.media_search_ids(text) from public;
grant execute on function app.media_search_ids(text) to pressroom_api;

create or replace function app.campaign_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$ select c.id from app.campaigns c where c.workspace_id = app.current_workspace_id() and c.name ilike p_pattern $$;
alter function app.campaign_search_ids(text) owner to pressroom_definer;
comment on function app.campaign_search_ids(text) is 'Ids of the current workspace''s campaigns whose name matches an ILIKE pattern, through the trigram index; used by api.list_campaigns.';
revoke all on function app.campaign_search_ids(text) from public;
grant execute on function app.campaign_search_ids(text) to pressroom_api;

create or replace function app.media_label_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$ select l.id from app.media_labels l where l.workspace_id = app.current_workspace_id() and l.name ilike p_pattern $$;
alter function app.media_label_search_ids(text) owner to pressroom_definer;
comment on function app.media_label_search_ids(text) is 'Ids of the current workspace''s media labels whose name matches an ILIKE pattern, through the trigram index; used by api.list_media_labels.';
revoke all on function app.media_label_search_ids(text) from public;
grant execute on function app.media_label_search_ids(text) to pressroom_api;

CREATE OR REPLACE FUNCTION api.list_media(p_filters jsonb, p_after jsonb, p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_state text := coalesce(p_filters ->> 'state', 'active');
  v_sort text := coalesce(p_filters ->> 'sortBy', 'createdAt');
  v_desc boolean := coalesce(p_filters ->> 'order', 'desc') = 'desc';
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_expr text;
  v_cast text;
  v_where text := 'm.workspace_id = $1';
  v_labels uuid[];
  v_used_expr text := '(exists (select 1 from app.content_item_media cim join app.content_items ci on ci.id = cim.content_item_id
        where cim.media_id = m.id and ci.deleted_at is null)
     or exists (select 1 from app.content_root_media crm join app.content_roots cr on cr.id = crm.root_id
        where crm.media_id = m.id and cr.deleted_at is null))';
  v_rows app.media_items[];
  v_items jsonb;
  v_last app.media_items;
  v_has_more boolean;
  v_key jsonb;
begin
  perform app.require_role('viewer');
  if (p_filters ->> 'rootOnly')::boolean and p_filters ->> 'folderId' is not null then
    perform app.media_invalid('query.rootOnly', 'conflict', 'cannot be combined with folderId');
  end if;
  if (p_filters ->> 'isUnlabeled')::boolean and p_filters ? 'labelIds' then
    perform app.media_invalid('query.isUnlabeled', 'conflict', 'cannot be true together with labelIds');
  end if;
  if p_filters ? 'isUsed' and p_filters ? 'isUnused'
     and (p_filters ->> 'isUsed')::boolean = (p_filters ->> 'isUnused')::boolean then
    perform app.media_invalid('query.isUnused', 'conflict', 'contradicts isUsed');
  end if;
  case v_sort
    when 'createdAt' then v_expr := 'm.created_at'; v_cast := 'timestamptz';
    when 'filename' then v_expr := 'lower(m.filename)'; v_cast := 'text';
    when 'fileSize' then v_expr := 'm.file_size'; v_cast := 'bigint';
    else perform app.media_invalid('query.sortBy', 'enum', 'must be createdAt, filename or fileSize');
  end case;
  if v_state <> 'all' then
    v_where := v_where || ' and m.state = $2';
  end if;
  if p_filters ->> 'folderId' is not null then
    v_where := v_where || ' and m.folder_id = $3';
  end if;
  if (p_filters ->> 'rootOnly')::boolean then
    v_where := v_where || ' and m.folder_id is null';
  end if;
  if p_filters ? 'labelIds' then
    select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_filters -> 'labelIds') x;
    v_where := v_where || ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id and x.label_id = any ($4))';
  end if;
  if p_filters ? 'isUnlabeled' then
    v_where := v_where || case when (p_filters ->> 'isUnlabeled')::boolean
      then ' and not exists (select 1 from app.media_item_labels x where x.media_id = m.id)'
      else ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id)' end;
  end if;
  if p_filters ? 'type' then
    v_where := v_where || ' and m.type = $5';
  end if;
  if coalesce(p_filters ->> 'search', '') <> '' then
    -- Through the trigram indexes (app.media_search_ids).
    v_where := v_where || ' and m.id = any (array(select app.media_search_ids($6)))';
  end if;
  if p_filters ? 'isFavorite' then
    v_where := v_where || ' and m.is_favorite = $7';
  end if;
  if p_filters ? 'isUsed' then
    v_where := v_where || case when (p_filters ->> 'isUsed')::boolean then ' and ' else ' and not ' end || v_used_expr;
  elsif p_filters ? 'isUnused' then
    v_where := v_where || case when (p_filters ->> 'isUnused')::boolean then ' and not ' else ' and ' end || v_used_expr;
  end if;
  if p_filters ? 'source' then
    v_where := v_where || ' and m.source = $8';
  end if;
  if p_after is not null then
    v_where := v_where || format(' and (%s, m.id) %s ($9::%s, $10::uuid)', v_expr, case when v_desc then '<' else '>' end, v_cast);
  end if;
  execute format('select array(select m from app.media_items m where %s order by %s %s, m.id %s limit $11)',
                 v_where, v_expr, case when v_desc then 'desc' else 'asc' end, case when v_desc then 'desc' else 'asc' end)
    into v_rows
    using app.current_workspace_id(), v_state, (p_filters ->> 'folderId')::uuid, v_labels, p_filters ->> 'type',
          app.media_contains_pattern(coalesce(p_filters ->> 'search', '')), (p_filters ->> 'isFavorite')::boolean,
          p_filters ->> 'source', p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid, v_limit + 1;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
  end if;
  v_items := app.media_json_list(v_rows);
  if v_has_more then
    v_last := v_rows[v_limit];
    v_key := jsonb_build_array(case v_sort when 'createdAt' then to_jsonb(v_last.created_at)
                                           when 'filename' then to_jsonb(lower(v_last.filename))
                                           else to_jsonb(v_last.file_size) end, v_last.id);
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', v_has_more, 'last', v_key);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_campaigns(p_search text, p_include_phases boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  if nullif(p_search, '') is null then
    return (
      select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                                order by c.starts_on nulls last, lower(c.name), c.id), '[]')
      from app.campaigns c
      where c.workspace_id = app.current_workspace_id());
  end if;
  -- A search goes through the trigram index (app.campaign_search_ids), in a
  -- statement of its own: no plan shared with the unfiltered list walks the workspace.
  return (
    select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = app.current_workspace_id()
      and c.id = any (array(select app.campaign_search_ids('%' || app.like_escape(p_search) || '%'))));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_media_labels(p_group text, p_include_merged boolean, p_search text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_group uuid;
begin
  perform app.require_role('viewer');
  if nullif(p_group, '') is not null then
    v_group := (app.media_label_group(p_group::uuid, 'groupId')).id;
  end if;
  return (
    select coalesce(jsonb_agg(app.media_label_json(l) order by lower(l.name), l.id), '[]')
    from app.media_labels l
    where l.workspace_id = app.current_workspace_id()
      and (coalesce(p_include_merged, false) or l.merged_into_id is null)
      and (p_group is null or (p_group = '' and l.group_id is null) or l.group_id = v_group)
      -- Through the trigram index (app.media_label_search_ids).
      and (coalesce(p_search, '') = '' or l.id = any (array(select app.media_label_search_ids(app.media_contains_pattern(p_search))))));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_content_roots(p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_total bigint;
  v_ids uuid[];
begin
  perform app.require_role('viewer');
  -- From the counter kept by trigger (app.content_root_counts).
  v_total := app.content_root_total();
  v_ids := array(select r.id from app.content_roots r
                 where r.workspace_id = app.current_workspace_id() and r.deleted_at is null
                 order by r.updated_at desc, r.id desc
                 limit p_limit offset p_offset);
  return jsonb_build_object('items', (select app.content_roots_json(v_ids)),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
                               'hasMore', p_offset + cardinality(v_ids) < v_total));
end
$function$;

select app.harden_api_functions();

--! split: 15d-metrics.sql
-- Scale, part d: what GET /metrics reads from the database (server/metrics.ts).
-- app.queue_stats(): pg-boss jobs per queue and state, with the age of the
-- oldest, for the pressroom_queue_* gauges; security definer so the worker role
-- reads pgboss without being granted the schema.

create or replace function app.queue_stats() returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app
as $$
begin
  -- plpgsql: pgboss.job is created by pg-boss after the migrations.
  return (
    select coalesce(jsonb_agg(jsonb_build_object('queue', name, 'state', state, 'jobs', jobs, 'oldestSeconds', oldest)
                              order by name, state), '[]')
    from (
      select j.name, j.state::text as state, count(*)::int as jobs,
        round(extract(epoch from now() - min(case when j.state = 'active' then j.started_on else j.start_after end))::numeric, 3) as oldest
      from pgboss.job j
      where j.state in ('created', 'retry', 'active')
        -- due jobs only: a job scheduled for next week is not waiting
        and (j.state = 'active' or j.start_after <= now())
      group by j.name, j.state) s);
end
$$;
alter function app.queue_stats() owner to pressroom_definer;
comment on function app.queue_stats() is 'pg-boss jobs due or running per queue and state, with the age of the oldest (for created and retry: since it became due; for active: since it started); read by the metrics endpoint.';
revoke all on function app.queue_stats() from public;
grant execute on function app.queue_stats() to pressroom_worker;

select app.harden_api_functions();

--! split: 15e-reporting.sql
-- Scale, part e: what BI tools see (README.md, "BI access"; db/README.md,
-- "Reporting views"). Read-only views for pressroom_bi over what was
-- published, where, when, how late, what failed and why: editions, publish
-- attempts, channels (integrations), media and their use, campaigns. Owned by
-- pressroom_definer (whose policies see every tenant, as the existing
-- reporting views do); no secret, token, hash, webhook URL or settings column.

create or replace view reporting.integrations as
  select g.id, g.organization_id, g.workspace_id, g.connector, g.platform, g.name, g.username, g.status,
         g.created_at, g.updated_at, g.deleted_at
  from app.integrations g;
comment on view reporting.integrations is 'Channels (integrations) without their secrets, webhook URLs or settings.';

create or replace view reporting.content_editions as
  select i.id, i.organization_id, i.workspace_id, i.root_id, r.campaign_id, r.phase_id, i.integration_id,
         g.platform, g.connector, i.kind, i.status,
         -- app.content_workflow_status written out: a view's functions run with the reader's privileges.
         case i.status when 'pending_approval' then 'in_review' when 'rejected' then 'changes_requested'
                       when 'scheduled' then case when i.scheduled_at <= now() then 'publishing' else 'scheduled' end
                       when 'sent' then 'published' else i.status end as workflow_status,
         i.version, r.title, coalesce(i.caption, r.caption) as caption,
         i.scheduled_at, i.sent_at,
         extract(epoch from i.sent_at - i.scheduled_at)::numeric(12, 3) as lateness_seconds,
         i.permalink, i.platform_post_id, i.error,
         s.state as publishing_state, s.run_attempts, s.next_attempt_at,
         (select count(*) from app.publish_attempts a where a.content_item_id = i.id)::int as attempts,
         i.created_by, i.created_at, i.updated_at, i.deleted_at
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  left join app.publishing_states s on s.content_item_id = i.id;
comment on view reporting.content_editions is 'One row per edition (a root on one channel): status, when it was due and sent, how late, its post, the publishing state and number of attempts.';

create or replace view reporting.publish_attempts as
  select a.id, a.organization_id, a.workspace_id, a.content_item_id, coalesce(a.integration_id, i.integration_id) as integration_id,
         a.connector, a.attempt, a.run_attempt, a.started_at, a.finished_at,
         (extract(epoch from a.finished_at - a.started_at) * 1000)::numeric(12, 1) as duration_ms,
         a.outcome, a.error, a.platform_post_id, a.permalink, a.resent, a.claim_batch
  from app.publish_attempts a
  join app.content_items i on i.id = a.content_item_id;
comment on view reporting.publish_attempts is 'Every attempt to publish an edition: when, how long, the outcome (published, failed, transient, unknown, resolved_*, skipped) and the platform''s error.';

create or replace view reporting.media_items as
  select m.id, m.organization_id, m.workspace_id, m.folder_id, m.type, m.filename, m.content_type, m.file_size,
         m.width, m.height, m.duration_ms, m.source, m.state, m.is_favorite, m.created_by, m.created_at, m.deleted_at,
         (select count(distinct e.id) from app.content_items e
          where e.deleted_at is null and (e.id in (select cim.content_item_id from app.content_item_media cim where cim.media_id = m.id)
                or (not e.own_media and e.root_id in (select crm.root_id from app.content_root_media crm where crm.media_id = m.id))))::int
           as editions_using,
         (select count(distinct e.id) from app.content_items e
          where e.status = 'sent' and (e.id in (select cim.content_item_id from app.content_item_media cim where cim.media_id = m.id)
                or (not e.own_media and e.root_id in (select crm.root_id from app.content_root_media crm where crm.media_id = m.id))))::int
           as editions_published,
         (select max(u.occurred_at) from app.media_usage_events u where u.media_id = m.id) as last_used_at
  from app.media_items m;
comment on view reporting.media_items is 'Media items (no storage key or checksum) with how many live editions use them, how many published ones did, and when they were last used.';

create or replace view reporting.media_usage_events as
  select u.id, u.organization_id, u.workspace_id, u.media_id, u.event, u.via, u.content_item_id, u.root_id,
         u.content_status, u.scheduled_at, u.occurred_at
  from app.media_usage_events u;
comment on view reporting.media_usage_events is 'The history of media use: attached, detached, published, ... per edition or root.';

create or replace view reporting.campaigns as
  select c.id, c.organization_id, c.workspace_id, c.name, c.starts_on, c.ends_on, c.created_at, c.updated_at,
         (select count(*) from app.content_roots r where r.campaign_id = c.id and r.deleted_at is null)::int as roots,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null)::int as editions,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null and i.status = 'sent')::int as editions_sent,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null and i.status = 'failed')::int as editions_failed
  from app.campaigns c;
comment on view reporting.campaigns is 'Campaigns with their dates and how many roots and editions they hold, sent and failed.';

alter view reporting.integrations owner to pressroom_definer;
alter view reporting.content_editions owner to pressroom_definer;
alter view reporting.publish_attempts owner to pressroom_definer;
alter view reporting.media_items owner to pressroom_definer;
alter view reporting.media_usage_events owner to pressroom_definer;
alter view reporting.campaigns owner to pressroom_definer;
revoke all on reporting.integrations, reporting.content_editions, reporting.publish_attempts, reporting.media_items,
  reporting.media_usage_events, reporting.campaigns from public;
grant select on reporting.integrations, reporting.content_editions, reporting.publish_attempts, reporting.media_items,
  reporting.media_usage_events, reporting.campaigns to pressroom_bi;
