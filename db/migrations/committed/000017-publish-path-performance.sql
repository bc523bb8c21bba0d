--! Previous: sha1:2275aef2e15e1f7feb90851aafa9acf060b0ba41
--! Hash: sha1:b224309a106600763500fed6620fe4b92f8b4c49
--! Message: publish path performance

--! split: 20-perf.sql
-- Performance of the per-edition write path (publishing engine, scheduling).
--
-- 1. Plans cached while a table was nearly empty. The engine's batch functions
--    run in long-lived worker sessions; PL/pgSQL caches each statement's plan
--    (a generic plan after five calls). A plan made while publish_attempts,
--    publishing_states, grid_tiles or content_versions held a few rows is a
--    sequential scan, and it stays cached while the table grows by thousands
--    of rows during a burst: every claim, record and version lookup then
--    reads the whole table (quadratic in the burst). Every statement of the
--    engine finds its rows by key, so the batch entry points (and everything
--    they call, triggers included) plan with enable_seqscan off: index scans
--    whatever the table's size when the plan was made.
-- 2. Bulk scheduling (Workbench) called api.schedule_content per edition and
--    threw away its answer (app.content_mutation_json, the whole edition as
--    JSON). The rules of scheduling now live in app.schedule_edition, which
--    both api.schedule_content and api.schedule_workbench_rows call; the JSON
--    is built only where it is returned.
-- 3. The batch functions built their answer by appending to a jsonb value
--    (v := v || ...), which copies the whole value at every append: quadratic
--    in the batch (100 claims with their editions). They append to a jsonb[]
--    (in place) and convert once.

create or replace function app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
AS $function$
declare
  v_batch uuid := gen_random_uuid();
  g record;
  l record;
  w_take record;
  k int;
  v_claim jsonb;
  v_claims jsonb;
  v_claim_list jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
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
      v_claim_list := array_append(v_claim_list, v_claim || jsonb_build_object('jobId', g.job_ids[k], 'contentId', g.content_ids[k]));
    end loop;
  end loop;

  v_claims := to_jsonb(v_claim_list);
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

create or replace function app.publish_record_batch(p_outcomes jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
AS $function$
declare
  r record;
  v_out jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
begin
  -- p_outcomes: [{"attemptId", "outcome", "error", "platformPostId", "permalink"}]; in edition order, as the claim locks.
  for r in
    select e, a.content_item_id
    from jsonb_array_elements(p_outcomes) e
    left join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
    order by a.content_item_id
  loop
    v_out := array_append(v_out, jsonb_build_object('attemptId', r.e ->> 'attemptId', 'contentId', r.content_item_id)
      || app.publish_record((r.e ->> 'attemptId')::uuid, r.e ->> 'outcome', r.e ->> 'error', r.e ->> 'platformPostId', r.e ->> 'permalink'));
  end loop;
  return to_jsonb(v_out);
end
$function$;

alter function app.publish_claim_batch(jsonb, text[]) set enable_seqscan = off;
alter function app.publish_record_batch(jsonb) set enable_seqscan = off;
alter function app.sandbox_receive_posts(jsonb) set enable_seqscan = off;
-- The grid trigger is deferred: it runs at commit, outside the batch function's
-- settings, so it carries the setting itself (its tile lookups are by key too).
alter function app.tg_content_items_grid_tile() set enable_seqscan = off;

create or replace function app.schedule_edition(p_id uuid, p_scheduled_at timestamptz)
returns app.content_items
language plpgsql
as $$
declare
  v app.content_items;
begin
  v := app.content_item_for_update(p_id);
  perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
  perform app.require_content_status(v, array['draft', 'scheduled']);
  if p_scheduled_at < now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
      'A time in the past cannot be scheduled.');
  end if;
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = p_scheduled_at
  where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return v;
end
$$;
comment on function app.schedule_edition(uuid, timestamptz) is 'Schedules or reschedules a draft or scheduled edition at a future time (status, time, platform rules, review, publish job by trigger); the caller checks the role. Called by api.schedule_content and, per edition, by api.schedule_workbench_rows.';
grant execute on function app.schedule_edition(uuid, timestamptz) to pressroom_api, pressroom_definer;

create or replace function api.schedule_content(p_id uuid, p_scheduled_at timestamp with time zone)
 returns jsonb
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'public', 'pg_temp'
as $function$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.schedule_edition(p_id, p_scheduled_at);
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$function$;

create or replace function api.schedule_workbench_rows(p_body jsonb, p_dry_run boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_row_id uuid;
  v app.workbench_rows;
  v_item app.content_items;
  v_n int := 0;
  v_row_results jsonb;
  v_results jsonb[] := '{}';
  v_e jsonb;
  v_failed boolean;
  v_rows_ok int := 0;
  v_channels_ok int := 0;
  v_channels_failed int := 0;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_err jsonb;
begin
  perform app.require_role('editor');
  for v_row_id in select (e #>> '{}')::uuid from jsonb_array_elements(p_body -> 'rowIds') e loop
    v_row_results := '[]';
    v_failed := false;
    begin
      select * into v from app.workbench_rows where id = v_row_id and workspace_id = app.current_workspace_id();
      if v.id is null then
        perform app.raise_not_found('workbench row', v_row_id);
      end if;
      if v.content_root_id is null or not exists (select 1 from app.content_roots where id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CONTENT', 'This row has no content to schedule; give it a caption or media and channels.',
          jsonb_build_object('rowId', v.id));
      end if;
      if v.planned_at is null then
        perform app.raise(400, 'ROW_TIME_REQUIRED', 'This row has no date and time to schedule at (a date alone is a plan, not a time).',
          jsonb_build_object('rowId', v.id, 'scheduledAt', v.planned_on));
      end if;
      if not exists (select 1 from app.content_items where root_id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CHANNELS', 'This row has no channel to schedule on.', jsonb_build_object('rowId', v.id));
      end if;
      for v_item in select i.* from app.content_items i join app.integrations g on g.id = i.integration_id
                    where i.root_id = v.content_root_id and i.deleted_at is null order by g.created_at, g.id loop
        begin
          -- The content route's own path (app.schedule_edition, as api.schedule_content): status, time,
          -- platform rules, review, publish job; without the answer's JSON, which nobody reads here.
          perform app.schedule_edition(v_item.id, v.planned_at);
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null);
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint));
          v_failed := true;
        end;
      end loop;
      if v_failed or p_dry_run then
        raise exception using errcode = 'ZW001', message = 'workbench dry run or failed row: roll back';
      end if;
    exception
      when sqlstate 'ZW001' then
        null;
      when others then
        get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
        v_row_results := jsonb_build_array(jsonb_build_object('rowId', v_row_id, 'contentId', null, 'integrationId', null,
          'outcome', 'failed', 'error', v_err));
        v_failed := true;
    end;
    if v_failed then
      -- The row's other channels were rolled back with it: a row is scheduled whole or not at all.
      v_row_results := (select jsonb_agg(case when r ->> 'outcome' = 'scheduled' then r || '{"outcome": "not_scheduled"}' else r end)
                        from jsonb_array_elements(v_row_results) r);
    else
      v_rows_ok := v_rows_ok + 1;
    end if;
    v_channels_ok := v_channels_ok + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' in ('scheduled', 'valid'));
    v_channels_failed := v_channels_failed + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' = 'failed');
    for v_e in select jsonb_array_elements(v_row_results) loop
      v_results := array_append(v_results, v_e);
    end loop;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('dryRun', p_dry_run, 'rows', v_n, 'rowsOk', v_rows_ok, 'rowsFailed', v_n - v_rows_ok,
    'channelsOk', v_channels_ok, 'channelsFailed', v_channels_failed, 'results', to_jsonb(v_results));
end
$function$;

select app.harden_api_functions();
