-- Recurring content (issue 3): a series repeats a template at a fixed local
-- wall-clock time in its time zone ("Mondays 09:00 Europe/Berlin" stays 09:00
-- in Berlin across daylight-saving changes). Each occurrence gets its own
-- root and editions, made ahead by app.materialize_series: at creation (in
-- the request) and by the hourly job content.recurring-materialize
-- (server/jobs/recurring.ts, as pressroom_worker).
--
-- Series status: active -> completed (count or until reached: every
-- occurrence made) -> cancelled; active -> cancelled.
-- Occurrence status: materialized (content made) | missed (its time had
-- passed when it came up; no content) | cancelled. "published" is read from
-- its editions (one was sent).

create table if not exists app.recurring_series (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  -- { frequency, interval, byWeekday: [MO..SU], count, until }
  rule jsonb not null check (rule ->> 'frequency' in ('daily', 'weekly', 'monthly')),
  timezone text not null,
  -- The first time; its wall-clock time in `timezone` is the series' time.
  anchor_at timestamptz not null,
  intent text not null check (intent in ('draft', 'schedule')),
  -- What each occurrence is made of: root fields, planning metadata, channels.
  template jsonb not null,
  status text not null default 'active' check (status in ('active', 'completed', 'cancelled')),
  version int not null default 1 check (version > 0),
  next_index int not null default 0 check (next_index >= 0),
  materialized_until timestamptz,
  cancelled_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists recurring_series_workspace_id_idx on app.recurring_series (workspace_id);
create index if not exists recurring_series_organization_id_idx on app.recurring_series (organization_id);
create index if not exists recurring_series_due_idx on app.recurring_series (materialized_until) where status = 'active';
drop trigger if exists recurring_series_10_set_updated_at on app.recurring_series;
create trigger recurring_series_10_set_updated_at before update on app.recurring_series
  for each row execute function app.tg_set_updated_at();

create table if not exists app.recurring_occurrences (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  series_id uuid not null references app.recurring_series (id) on delete cascade,
  occurrence_index int not null check (occurrence_index >= 0),
  starts_at timestamptz not null,
  root_id uuid references app.content_roots (id) on delete set null,
  status text not null check (status in ('materialized', 'missed', 'cancelled')),
  cancelled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (series_id, occurrence_index),
  check ((status = 'cancelled') = (cancelled_at is not null))
);
create unique index if not exists recurring_occurrences_root_id_key on app.recurring_occurrences (root_id);
create index if not exists recurring_occurrences_workspace_id_idx on app.recurring_occurrences (workspace_id);
create index if not exists recurring_occurrences_organization_id_idx on app.recurring_occurrences (organization_id);
drop trigger if exists recurring_occurrences_10_set_updated_at on app.recurring_occurrences;
create trigger recurring_occurrences_10_set_updated_at before update on app.recurring_occurrences
  for each row execute function app.tg_set_updated_at();

-- A cancelled occurrence or series stays cancelled; a series keeps its rule.
create or replace function app.tg_recurring_guard() returns trigger
language plpgsql
as $$
begin
  if tg_table_name = 'recurring_series' then
    -- A completed series (every occurrence made) may still be cancelled;
    -- a cancelled one is final.
    if (old.status = 'cancelled' and new.status <> 'cancelled') or (old.status = 'completed' and new.status = 'active') then
      perform app.raise(409, 'SERIES_ALREADY_CANCELLED', format('This series is %s for good.', old.status),
        jsonb_build_object('seriesId', old.id, 'status', old.status));
    end if;
    if new.rule <> old.rule or new.timezone <> old.timezone or new.anchor_at <> old.anchor_at
       or new.workspace_id <> old.workspace_id or new.version < old.version then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'A series'' rule, time zone, first time and workspace cannot change.',
        jsonb_build_object('seriesId', old.id));
    end if;
  else
    if old.status = 'cancelled' and new.status <> 'cancelled' then
      perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is cancelled for good.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
    if new.series_id <> old.series_id or new.occurrence_index <> old.occurrence_index or new.starts_at <> old.starts_at then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'An occurrence''s series, position and time cannot change.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
  end if;
  return new;
end
$$;
drop trigger if exists recurring_series_20_guard on app.recurring_series;
create trigger recurring_series_20_guard before update on app.recurring_series
  for each row execute function app.tg_recurring_guard();
drop trigger if exists recurring_occurrences_20_guard on app.recurring_occurrences;
create trigger recurring_occurrences_20_guard before update on app.recurring_occurrences
  for each row execute function app.tg_recurring_guard();

do $$
declare
  t text;
  x text;
begin
  foreach t in array array['recurring_series', 'recurring_occurrences']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    -- Idempotent: the policies are made afresh.
    foreach x in array array['definer', 'worker', 'request_select', 'request_insert', 'request_update', 'request_delete',
                             'request_scope', 'request_role'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id())
                  and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I as restrictive to pressroom_request
      using (app.role_rank((select app.current_workspace_role())) >= 1)
      with check (app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_role', t);
    -- As the skeleton's tables: even a forged workspace context reaches only the
    -- organization's workspaces the principal may really access.
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
    execute format('grant select, insert, update on app.%I to pressroom_request', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
  end loop;
end
$$;

------------------------------------------------------------------------------
-- Expansion
------------------------------------------------------------------------------
-- Local wall-clock times of a rule from its first local time, in order,
-- numbered from 0; p_from skips the first ones, p_max bounds the answer.
-- count and until are the caller's business. Weekly: the weeks start on
-- Monday and the series' weeks are every `interval`-th week from the first
-- time's week; times before the first time are skipped. Monthly: the first
-- time's day of the month, the month's last day when it is shorter.
create or replace function app.recurrence_local_times(p_rule jsonb, p_anchor_local timestamp, p_from int, p_max int)
returns table (occurrence_index int, local_at timestamp)
language plpgsql immutable
as $$
declare
  v_freq text := p_rule ->> 'frequency';
  v_interval int := greatest(coalesce((p_rule ->> 'interval')::int, 1), 1);
  v_days int[];
  v_week date := date_trunc('week', p_anchor_local)::date;
  v_time time := p_anchor_local::time;
  v_period int := 0;
  v_idx int := 0;
  v_emitted int := 0;
  v_day int;
  v_at timestamp;
begin
  if p_max <= 0 then
    return;
  end if;
  if v_freq = 'weekly' then
    v_days := array(select distinct case d when 'MO' then 1 when 'TU' then 2 when 'WE' then 3 when 'TH' then 4
                                            when 'FR' then 5 when 'SA' then 6 when 'SU' then 7 end
                    from jsonb_array_elements_text(coalesce(p_rule -> 'byWeekday', '[]')) d order by 1);
    if cardinality(v_days) = 0 then
      v_days := array[extract(isodow from p_anchor_local)::int];
    end if;
  end if;
  while v_period < 100000 loop
    if v_freq = 'weekly' then
      foreach v_day in array v_days loop
        v_at := (v_week + v_period * v_interval * 7 + (v_day - 1)) + v_time;
        if v_at >= p_anchor_local then
          if v_idx >= p_from then
            occurrence_index := v_idx;
            local_at := v_at;
            return next;
            v_emitted := v_emitted + 1;
            if v_emitted >= p_max then
              return;
            end if;
          end if;
          v_idx := v_idx + 1;
        end if;
      end loop;
    else
      v_at := case v_freq
        when 'daily' then p_anchor_local + make_interval(days => v_period * v_interval)
        else p_anchor_local + make_interval(months => v_period * v_interval) end;
      if v_idx >= p_from then
        occurrence_index := v_idx;
        local_at := v_at;
        return next;
        v_emitted := v_emitted + 1;
        if v_emitted >= p_max then
          return;
        end if;
      end if;
      v_idx := v_idx + 1;
    end if;
    v_period := v_period + 1;
  end loop;
end
$$;

-- Instants of a series' occurrences from p_from: the local times read in the
-- series' time zone.
create or replace function app.series_occurrence_times(s app.recurring_series, p_from int, p_max int)
returns table (occurrence_index int, starts_at timestamptz)
language sql stable
as $$
  select t.occurrence_index, t.local_at at time zone s.timezone
  from app.recurrence_local_times(s.rule, s.anchor_at at time zone s.timezone, p_from, p_max) t
$$;

------------------------------------------------------------------------------
-- Materialization
------------------------------------------------------------------------------
-- A root for an occurrence, from the series template. p_lenient drops
-- references that went away since the series was made (a deleted campaign,
-- tag or media in the bin) instead of failing.
create or replace function app.create_occurrence_root(s app.recurring_series, p_lenient boolean) returns app.content_roots
language plpgsql
as $$
declare
  t jsonb := s.template;
  v_root app.content_roots;
  v_campaign uuid := (t ->> 'campaignId')::uuid;
  v_phase uuid := (t ->> 'phaseId')::uuid;
  v_media uuid[] := coalesce(app.jsonb_uuids(t -> 'mediaIds'), '{}');
  v_tax jsonb := jsonb_build_object('tagIds', coalesce(t -> 'tagIds', '[]'), 'pillarIds', coalesce(t -> 'pillarIds', '[]'),
                                    'formatIds', coalesce(t -> 'formatIds', '[]'));
begin
  if p_lenient then
    if not exists (select 1 from app.campaigns where id = v_campaign and workspace_id = s.workspace_id) then
      v_campaign := null;
    end if;
    if v_campaign is null or not exists (select 1 from app.campaign_phases where id = v_phase and campaign_id = v_campaign) then
      v_phase := null;
    end if;
    v_media := array(select x.id from unnest(v_media) with ordinality x (id, n)
                     join app.media_items m on m.id = x.id and m.workspace_id = s.workspace_id and m.state = 'active'
                     order by x.n);
    v_tax := jsonb_build_object(
      'tagIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'tagIds')) x
                               where exists (select 1 from app.tags g where g.id = x and g.workspace_id = s.workspace_id))),
      'pillarIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'pillarIds')) x
                               where exists (select 1 from app.pillars g where g.id = x and g.workspace_id = s.workspace_id))),
      'formatIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'formatIds')) x
                               where exists (select 1 from app.formats g where g.id = x and g.workspace_id = s.workspace_id))));
  end if;
  insert into app.content_roots (organization_id, workspace_id, title, caption, organizational_title, notes,
    campaign_id, phase_id, created_by)
  values (s.organization_id, s.workspace_id, t ->> 'title', t ->> 'caption', t ->> 'organizationalTitle',
    case when t ->> 'notes' is not null then to_jsonb(t ->> 'notes') end, v_campaign, v_phase, s.created_by)
  returning * into v_root;
  perform app.replace_root_media(v_root.id, v_media);
  perform app.apply_root_taxonomy(v_root, v_tax);
  return v_root;
end
$$;

-- An occurrence's editions, one per template channel. Made as drafts, then
-- scheduled (intent schedule); in lenient mode (the job) an edition that
-- cannot be scheduled stays a draft with the reason in `error`, and a channel
-- that went away is skipped. Returns the edition ids.
create or replace function app.create_occurrence_editions(s app.recurring_series, p_root app.content_roots, p_starts_at timestamptz,
  p_lenient boolean)
returns uuid[]
language plpgsql
as $$
declare
  v_channel jsonb;
  v_id uuid;
  v_ids uuid[] := '{}';
  v_msg text;
begin
  for v_channel in select e from jsonb_array_elements(s.template -> 'channels') e loop
    if not p_lenient then
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
      if s.intent = 'schedule' then
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
      end if;
      v_ids := v_ids || v_id;
      continue;
    end if;
    begin
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
    exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
      -- The channel went away (deleted, or a rule of another area refuses it).
      continue;
    end;
    v_ids := v_ids || v_id;
    if s.intent = 'schedule' then
      begin
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
        if jsonb_array_length(app.content_item_problems(v_id, '')) > 0 then
          raise exception using errcode = 'PT400', message = 'The edition breaks its platform''s rules.',
            detail = 'VALIDATION_FAILED', hint = jsonb_build_object('fields', app.content_item_problems(v_id, ''))::text;
        end if;
      exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
        get stacked diagnostics v_msg = message_text;
        update app.content_items set error = left('Could not be scheduled: ' || v_msg || coalesce(
          ' ' || (select string_agg(p ->> 'field' || ': ' || (p ->> 'message'), '; ')
                  from jsonb_array_elements(app.content_item_problems(v_id, '')) p), ''), 2000)
        where id = v_id;
      end;
    end if;
  end loop;
  return v_ids;
end
$$;

-- Makes the series' occurrences up to p_horizon ahead (and at least
-- p_min_ahead future ones), marks past ones missed, and completes the series
-- when its count or until is reached. p_first_root is the root the create
-- call made, used for the first occurrence. Returns the occurrences made.
create or replace function app.materialize_series(p_series_id uuid, p_lenient boolean, p_first_root uuid default null,
  p_horizon interval default interval '30 days', p_min_ahead int default 3)
returns jsonb
language plpgsql
as $$
declare
  s app.recurring_series;
  v_occ record;
  v_ahead int;
  v_root app.content_roots;
  v_made jsonb := '[]';
  v_occ_id uuid;
  v_next int;
  v_done boolean := false;
  v_first uuid := p_first_root;
  v_limit timestamptz := now() + p_horizon;
begin
  select * into s from app.recurring_series where id = p_series_id for update;
  if s.id is null or s.status <> 'active' then
    return v_made;
  end if;
  v_next := s.next_index;
  select count(*) into v_ahead from app.recurring_occurrences
  where series_id = s.id and status = 'materialized' and starts_at > now();
  for v_occ in select * from app.series_occurrence_times(s, s.next_index, 1000) loop
    if (s.rule ? 'count' and v_occ.occurrence_index >= (s.rule ->> 'count')::int)
       or (s.rule ? 'until' and v_occ.starts_at > (s.rule ->> 'until')::timestamptz) then
      v_done := true;
      exit;
    end if;
    exit when v_occ.starts_at > v_limit and v_ahead >= p_min_ahead;
    if v_occ.starts_at <= now() then
      insert into app.recurring_occurrences (organization_id, workspace_id, series_id, occurrence_index, starts_at, status)
      values (s.organization_id, s.workspace_id, s.id, v_occ.occurrence_index, v_occ.starts_at, 'missed')
      returning id into v_occ_id;
      v_made := v_made || jsonb_build_object('occurrenceId', v_occ_id, 'startsAt', v_occ.starts_at, 'rootId', null,
                                             'status', 'missed');
    else
      if v_first is not null then
        select * into v_root from app.content_roots where id = v_first;
        v_first := null;
      else
        v_root := app.create_occurrence_root(s, p_lenient);
      end if;
      insert into app.recurring_occurrences (organization_id, workspace_id, series_id, occurrence_index, starts_at, root_id, status)
      values (s.organization_id, s.workspace_id, s.id, v_occ.occurrence_index, v_occ.starts_at, v_root.id, 'materialized')
      returning id into v_occ_id;
      perform app.create_occurrence_editions(s, v_root, v_occ.starts_at, p_lenient);
      v_ahead := v_ahead + 1;
      v_made := v_made || jsonb_build_object('occurrenceId', v_occ_id, 'startsAt', v_occ.starts_at, 'rootId', v_root.id,
                                             'status', 'materialized');
    end if;
    v_next := v_occ.occurrence_index + 1;
  end loop;
  update app.recurring_series
  set next_index = v_next, materialized_until = v_limit,
      status = case when v_done then 'completed' else status end
  where id = s.id;
  return v_made;
end
$$;

-- The job: every active series whose horizon needs extending, each in its
-- own subtransaction (one broken series does not stop the others).
create or replace function app.materialize_due_series(p_horizon interval default interval '30 days') returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_series int := 0;
  v_made int := 0;
  v_failed int := 0;
  v_out jsonb;
begin
  for v_id in select id from app.recurring_series
              where status = 'active' and (materialized_until is null or materialized_until < now() + p_horizon - interval '1 hour')
              order by materialized_until nulls first, id
              limit 500 loop
    begin
      v_out := app.materialize_series(v_id, true, null, p_horizon);
      v_series := v_series + 1;
      v_made := v_made + jsonb_array_length(v_out);
    exception when others then
      v_failed := v_failed + 1;
      raise warning 'materializing recurring series % failed: %', v_id, sqlerrm;
    end;
  end loop;
  return jsonb_build_object('series', v_series, 'occurrences', v_made, 'failed', v_failed);
end
$$;

------------------------------------------------------------------------------
-- Creation (called by api.create_content when the body has `recurrence`)
------------------------------------------------------------------------------
create or replace function app.create_recurring_series(p_root app.content_roots, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  r jsonb := p_body -> 'recurrence';
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_anchor timestamptz := coalesce((p_body ->> 'scheduledAt')::timestamptz, (p_body ->> 'intendedPublishAt')::timestamptz);
  v_tz text := coalesce(r ->> 'timezone', (select timezone from app.workspaces where id = p_root.workspace_id));
  v_problems jsonb := '[]';
  v_rule jsonb;
  s app.recurring_series;
  v_made jsonb;
  v_first_ids uuid[];
  v_prefixes text[];
begin
  if not exists (select 1 from pg_timezone_names where name = v_tz) then
    v_problems := v_problems || app.field_problem('recurrence.timezone', 'invalid_timezone', format('%s is not an IANA time zone name', v_tz));
  end if;
  if r ? 'byWeekday' and r ->> 'frequency' <> 'weekly' then
    v_problems := v_problems || app.field_problem('recurrence.byWeekday', 'not_allowed', 'byWeekday goes with frequency weekly');
  end if;
  if r ? 'count' and r ? 'until' then
    v_problems := v_problems || app.field_problem('recurrence.until', 'not_allowed', 'a series ends by count or by until, not both');
  end if;
  if v_anchor <= now() then
    v_problems := v_problems || app.field_problem(case when v_intent = 'schedule' then 'scheduledAt' else 'intendedPublishAt' end,
      'in_past', 'a recurring series starts in the future');
  end if;
  if r ? 'until' and (r ->> 'until')::timestamptz < v_anchor then
    v_problems := v_problems || app.field_problem('recurrence.until', 'before_start', 'until is before the first time');
  end if;
  perform app.raise_field_problems(v_problems, 'The recurrence is not valid; see details.fields.');

  v_rule := jsonb_strip_nulls(jsonb_build_object('frequency', r ->> 'frequency',
    'interval', coalesce((r ->> 'interval')::int, 1), 'byWeekday', r -> 'byWeekday',
    'count', (r ->> 'count')::int, 'until', (r ->> 'until')::timestamptz));
  insert into app.recurring_series (organization_id, workspace_id, rule, timezone, anchor_at, intent, template, created_by)
  values (p_root.organization_id, p_root.workspace_id, v_rule, v_tz, v_anchor, v_intent,
    jsonb_strip_nulls(jsonb_build_object(
      'title', p_body -> 'title', 'caption', p_body -> 'caption', 'organizationalTitle', p_body -> 'organizationalTitle',
      'notes', p_body -> 'notes', 'mediaIds', p_body -> 'mediaIds', 'campaignId', p_root.campaign_id,
      'phaseId', p_root.phase_id, 'tagIds', p_body -> 'tagIds', 'pillarIds', p_body -> 'pillarIds',
      'formatIds', p_body -> 'formatIds', 'channels', p_body -> 'channels')),
    app.current_user_id())
  returning * into s;

  perform app.defer_content_checks();
  v_made := app.materialize_series(s.id, false, p_root.id);
  -- Every occurrence has the same content: the first one's problems, named
  -- by channel, stand for all (the deferred checks hold the others).
  v_first_ids := array(select i.id from app.content_items i
                       join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                         on (c.e ->> 'integrationId')::uuid = i.integration_id
                       where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  v_prefixes := array(select 'channels.' || (c.n - 1) || '.' from app.content_items i
                      join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                        on (c.e ->> 'integrationId')::uuid = i.integration_id
                      where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  perform app.assert_publishable(v_first_ids, v_prefixes);
  perform app.undefer_content_checks();
  select * into s from app.recurring_series where id = s.id;
  return (select app.content_mutation_json(p_root.id, v_first_ids))
    || jsonb_build_object('series', jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'occurrences', v_made));
end
$$;

------------------------------------------------------------------------------
-- recurringMetadata on list items, detail and roots
------------------------------------------------------------------------------
create or replace function app.recurring_occurrence_published(p_root_id uuid) returns boolean
language sql stable
as $$ select exists (select 1 from app.content_items where root_id = p_root_id and status = 'sent' and deleted_at is null) $$;

create or replace function app.content_recurring_metadata_batch(p_root_ids uuid[]) returns table (root_id uuid, metadata jsonb)
language sql stable
as $$
  with occ as (
    select o.id, o.series_id, o.occurrence_index, o.starts_at, o.root_id, o.status, s.version as series_version,
           s.status as series_status,
           exists (select 1 from app.content_items i where i.root_id = o.root_id and i.status = 'sent' and i.deleted_at is null) as published
    from app.recurring_occurrences o
    join app.recurring_series s on s.id = o.series_id
    where o.root_id = any (p_root_ids))
  select occ.root_id, jsonb_build_object(
    'seriesId', occ.series_id,
    'occurrenceId', occ.id,
    'seriesVersion', occ.series_version,
    'effectiveOccurrenceId', case
      when occ.status = 'materialized' and not occ.published then occ.id
      else (select n.id from app.recurring_occurrences n
            where n.series_id = occ.series_id and n.occurrence_index > occ.occurrence_index and n.status = 'materialized'
              and not exists (select 1 from app.content_items i where i.root_id = n.root_id and i.status = 'sent' and i.deleted_at is null)
            order by n.occurrence_index limit 1) end,
    'startsAt', occ.starts_at,
    'occurrenceStatus', case when occ.status = 'materialized' and occ.published then 'published' else occ.status end,
    'seriesStatus', occ.series_status)
  from occ
$$;

------------------------------------------------------------------------------
-- Cancelling
------------------------------------------------------------------------------
create or replace function app.require_series_version(s app.recurring_series, p_body jsonb) returns void
language plpgsql
as $$
begin
  if (p_body ->> 'seriesVersion')::int is distinct from s.version then
    perform app.raise(409, 'SERIES_VERSION_STALE',
      format('The series is at version %s, not %s; reload the content list and retry.', s.version, p_body ->> 'seriesVersion'),
      jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'expectedSeriesVersion', p_body -> 'seriesVersion'));
  end if;
end
$$;

-- Cancels the draft and scheduled editions of an occurrence (their jobs go
-- with them) and the occurrence. Returns { cancelled, kept } edition ids.
create or replace function app.cancel_occurrence(o app.recurring_occurrences) returns jsonb
language plpgsql
as $$
declare
  v_cancelled uuid[];
  v_kept uuid[];
begin
  if o.root_id is not null then
    perform 1 from app.content_items where root_id = o.root_id and deleted_at is null for update;
    v_cancelled := array(select id from app.content_items
                         where root_id = o.root_id and deleted_at is null and status in ('draft', 'scheduled') order by id);
    update app.content_items set status = 'cancelled' where id = any (v_cancelled);
    v_kept := array(select id from app.content_items
                    where root_id = o.root_id and deleted_at is null and status not in ('cancelled') order by id);
  end if;
  update app.recurring_occurrences set status = 'cancelled', cancelled_at = now() where id = o.id;
  return jsonb_build_object('cancelled', to_jsonb(coalesce(v_cancelled, '{}')), 'kept', to_jsonb(coalesce(v_kept, '{}')));
end
$$;

create or replace function api.cancel_recurring_occurrence(p_occurrence_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  o app.recurring_occurrences;
  s app.recurring_series;
  v_out jsonb;
begin
  perform app.require_role('editor');
  select * into o from app.recurring_occurrences
  where id = p_occurrence_id and workspace_id = app.current_workspace_id();
  if o.id is null then
    perform app.raise_not_found('recurring occurrence', p_occurrence_id);
  end if;
  select * into s from app.recurring_series where id = o.series_id for update;
  select * into o from app.recurring_occurrences where id = o.id for update;
  perform app.require_series_version(s, p_body);
  if o.status = 'cancelled' then
    perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is already cancelled.',
      jsonb_build_object('occurrenceId', o.id));
  end if;
  if (select app.recurring_occurrence_published(o.root_id)) then
    perform app.raise(409, 'OCCURRENCE_ALREADY_PUBLISHED', 'This occurrence was already published; it cannot be cancelled.',
      jsonb_build_object('occurrenceId', o.id, 'rootId', o.root_id));
  end if;
  v_out := app.cancel_occurrence(o);
  update app.recurring_series set version = version + 1 where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', jsonb_build_array(o.id), 'cancelledContentIds', v_out -> 'cancelled',
    'keptContentIds', v_out -> 'kept');
end
$$;

create or replace function api.cancel_recurring_series(p_series_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  s app.recurring_series;
  v_from int;
  o app.recurring_occurrences;
  v_out jsonb;
  v_occurrences uuid[] := '{}';
  v_cancelled jsonb := '[]';
  v_kept jsonb := '[]';
begin
  perform app.require_role('editor');
  select * into s from app.recurring_series
  where id = p_series_id and workspace_id = app.current_workspace_id() for update;
  if s.id is null then
    perform app.raise_not_found('recurring series', p_series_id);
  end if;
  perform app.require_series_version(s, p_body);
  if s.status = 'cancelled' then
    perform app.raise(409, 'SERIES_ALREADY_CANCELLED', 'This series is already cancelled.', jsonb_build_object('seriesId', s.id));
  end if;
  if p_body ->> 'effectiveOccurrenceId' is not null then
    select occurrence_index into v_from from app.recurring_occurrences
    where id = (p_body ->> 'effectiveOccurrenceId')::uuid and series_id = s.id;
    if v_from is null then
      perform app.raise(404, 'NOT_FOUND', 'No occurrence with this id in this series.',
        jsonb_build_object('seriesId', s.id, 'effectiveOccurrenceId', p_body -> 'effectiveOccurrenceId'));
    end if;
  else
    select min(occurrence_index) into v_from from app.recurring_occurrences
    where series_id = s.id and status = 'materialized' and not app.recurring_occurrence_published(root_id);
    v_from := coalesce(v_from, s.next_index);
  end if;
  for o in select * from app.recurring_occurrences
           where series_id = s.id and occurrence_index >= v_from and status <> 'cancelled'
           order by occurrence_index for update loop
    continue when (select app.recurring_occurrence_published(o.root_id));
    v_out := app.cancel_occurrence(o);
    v_occurrences := v_occurrences || o.id;
    v_cancelled := v_cancelled || (v_out -> 'cancelled');
    v_kept := v_kept || (v_out -> 'kept');
  end loop;
  update app.recurring_series set status = 'cancelled', cancelled_at = now(), version = version + 1
  where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', to_jsonb(v_occurrences), 'cancelledContentIds', v_cancelled, 'keptContentIds', v_kept);
end
$$;

------------------------------------------------------------------------------
-- Grants (functions of this file only)
------------------------------------------------------------------------------
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array[
        'tg_recurring_guard', 'recurrence_local_times', 'series_occurrence_times', 'create_occurrence_root',
        'create_occurrence_editions', 'materialize_series', 'materialize_due_series', 'create_recurring_series',
        'recurring_occurrence_published', 'content_recurring_metadata_batch', 'require_series_version', 'cancel_occurrence',
        'cancel_recurring_occurrence', 'cancel_recurring_series'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'app' then
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request', f.sig);
    end if;
  end loop;
end
$$;
-- Only the job extends every workspace's series.
revoke execute on function app.materialize_due_series(interval) from pressroom_request, pressroom_definer;
