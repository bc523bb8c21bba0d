--! Previous: sha1:35a8de67034b6078073446116bfb328e4cfa9013
--! Hash: sha1:fe03bc2607a3795d5d6a6461efaee2e27450c1a0
--! Message: publish pacing

--! split: 10-publish-pacing.sql
-- Editions over a publish limit come back paced, not all at once.
--
-- app.publish_claim_batch puts the editions over an integration's limits back
-- in the queue with a later start. Each used to get the same start: for the
-- in-flight limit, publish_limit_retry_ms (500 ms) later. A burst to one
-- channel then came back all together every half second, and all but the few
-- that fit went back again: in the publishing bench (bench/README.md, a
-- webhook channel answering in 100 ms, 8 posts in flight), 2,000 editions took
-- 342 claim batches, 6.2 ms of PostgreSQL CPU each and 23 editions/s, where
-- the limit allows 80.
--
-- The editions put back now get starts spaced by the limit's own pace, one
-- after another, continuing after those the integration already put back
-- (app.publish_pacing, one row per integration, engine-only):
--   - in flight: one slot frees about every (how long a post holds one) /
--     (slots). How long a post holds one is the median time from claim to
--     record of the integration's last 20 finished attempts
--     (app.publish_hold_estimate; while it has none, publish_limit_retry_ms,
--     now 100 ms);
--   - rate windows: (window) / (posts per window), from the window's end.
-- An edition that comes back to find the limit still full goes to the end of
-- the pace again. The pace runs at most 10 s ahead of the limit's next
-- opening, so one that ran ahead (a long burst; slots held by attempts of a
-- killed worker until their recovery) costs a look every 10 s, not a wait. Nothing else changes: the limits, the locking order and the
-- answers (75-publish-batch, 78-publish-pacing).

create table app.publish_pacing (
  integration_id uuid primary key references app.integrations (id) on delete cascade,
  next_at timestamptz not null
);
comment on table app.publish_pacing is 'Per integration, when the next edition put back over its publish limits is due (app.publish_claim_batch paces them). Engine-only.';
comment on column app.publish_pacing.next_at is 'The start the next edition put back gets, if later than the limit''s own next opening.';
alter table app.publish_pacing enable row level security;
alter table app.publish_pacing force row level security;
create policy publish_pacing_worker on app.publish_pacing as permissive for all to pressroom_worker
  using (true)
  with check (true);
grant select, insert, update on table app.publish_pacing to pressroom_worker;

create function app.publish_hold_estimate(p_integration_id uuid, p_default_ms int) returns interval
language sql stable
set search_path = pg_catalog, app
as $$
  -- Its last 20 attempts by start (index publish_attempts_integration_started_idx), the finished ones.
  select case when x.hold is null then p_default_ms * interval '1 millisecond'
              else least(greatest(x.hold, interval '1 millisecond'), interval '1 minute') end
  from (select percentile_cont(0.5) within group (order by a.finished_at - a.started_at) as hold
        from (select a.started_at, a.finished_at from app.publish_attempts a
              where a.integration_id = p_integration_id order by a.started_at desc limit 20) a
        where a.finished_at is not null) x
$$;
comment on function app.publish_hold_estimate(uuid, int) is 'How long a post of the integration holds an in-flight slot: the median time from claim to record of its last 20 finished attempts (1 ms to 1 minute; the median, so a few attempts stuck until a recovery do not count), or p_default_ms when it has none.';
grant execute on function app.publish_hold_estimate(uuid, int) to pressroom_worker;
revoke all on function app.publish_hold_estimate(uuid, int) from public;

-- The default hold is optimistic (100 ms, was a 500 ms wait): an edition that comes back too
-- early only goes back again, paced by the hold measured by then, while one paced too late leaves
-- slots idle (a burst is paced within its first second, before any attempt is measured).
update app.settings set value = '100' where key = 'publish_limit_retry_ms' and value = '500';
update app.settings set description = 'How long an edition holds an in-flight slot of an integration that has no finished attempt yet to measure it by: editions over its in-flight limit are put back spaced by this over the slots (app.publish_claim_batch).'
where key = 'publish_limit_retry_ms';

create or replace function app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_batch uuid := gen_random_uuid();
  g record;
  l record;
  w_take record;
  k int;
  v_claims jsonb;
  v_claim_list jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
  v_allowed int;
  v_until timestamptz;
  v_step interval;       -- the time between two paced editions of one integration
  v_start timestamptz;   -- when the first of them may go
  v_retry_ms int := app.setting_int('publish_limit_retry_ms');
begin
  -- p_jobs: [{"jobId", "contentId"}] as pg-boss fetched them. Locks are taken
  -- in one order by every worker: the app windows of the connectors involved,
  -- then integration by integration (its row when it has an in-flight limit,
  -- its window, then its editions by id).
  -- (Each statement starts from the jobs and looks rows up by key, one lateral look-up each:
  -- a generic plan cannot walk a whole index of a table that grows during a burst.)
  perform 1 from app.publish_windows w
  where w.scope = 'app' and w.key in (
    select distinct c.connector from jsonb_array_elements(p_jobs) e
    cross join lateral (select c.connector from app.content_items i join app.integrations c on c.id = i.integration_id
                        where i.id = (e ->> 'contentId')::uuid offset 0) c)
  order by w.key for update;

  for g in
    select i.integration_id,
      -- editions with an attempt in flight first: their claim settles it whatever the limits
      array_agg((e ->> 'jobId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as job_ids,
      array_agg((e ->> 'contentId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as content_ids,
      count(*) filter (where o.open)::int as resumed
    from jsonb_array_elements(p_jobs) e
    left join lateral (select i.integration_id from app.content_items i where i.id = (e ->> 'contentId')::uuid offset 0) i on true
    -- An attempt in flight: the edition's attempts looked up by the edition alone (a plan may
    -- otherwise walk the partial index of every open attempt of the channel, filtering on the edition).
    cross join lateral (select exists (select 1 from (select a.finished_at from app.publish_attempts a
                                                      where a.content_item_id = (e ->> 'contentId')::uuid offset 0) a
                                       where a.finished_at is null) as open) o
    group by i.integration_id
    order by i.integration_id nulls first
  loop
    -- How many of this integration's editions may go now (limits counted once per integration).
    v_allowed := cardinality(g.job_ids);
    v_until := null;
    v_step := interval '0';
    if g.integration_id is not null then
      select * into l from app.publish_limits_of(g.integration_id);
      if l.max_in_flight is not null then
        -- Claims of one integration count its attempts in flight one after the other
        -- (the integration's row, locked in integration order, as every worker does).
        perform 1 from app.integrations i where i.id = g.integration_id for no key update;
        v_allowed := greatest(least(v_allowed, l.max_in_flight - (select count(*) from app.publish_attempts a
                                      where a.integration_id = g.integration_id and a.finished_at is null)::int), 0);
        if v_allowed < cardinality(g.job_ids) then
          -- Every slot is taken: one frees about every (how long a post holds one) / (slots).
          v_step := app.publish_hold_estimate(g.integration_id, v_retry_ms) / l.max_in_flight;
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
        insert into app.publish_pacing as p (integration_id, next_at) values (g.integration_id, v_until)
        on conflict (integration_id) do nothing;
        -- At most 10 s of pace ahead of the limit's own next opening: a pace that ran ahead (a
        -- long burst, or a hold measured while slots were stuck) costs a look every 10 s at most.
        select greatest(v_until, least(p.next_at, v_until + interval '10 seconds')) into v_start from app.publish_pacing p
        where p.integration_id = g.integration_id for update;
        update app.publish_pacing set next_at = v_start + (cardinality(g.job_ids) - v_allowed) * v_step
        where integration_id = g.integration_id;
      end if;
    end if;
    -- The first v_allowed editions are claimed together (the common case set-based, the rest one by one).
    if v_allowed > 0 then
      v_claim_list := v_claim_list || app.publish_claim_editions(g.content_ids[1:v_allowed], g.job_ids[1:v_allowed], p_resendable, v_batch);
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
comment on function app.publish_claim_batch(jsonb,text[]) is 'Claims a fetched batch of publish jobs in one statement, integration by integration: the editions its limits allow through app.publish_claim_editions (the common case set-based, the rest through app.publish_claim; attempts written and committed before any platform call), editions over their integration''s or connector''s publish limits put back with later starts paced by the limit (app.publish_pacing); returns the claims and where the media to send are stored.';
