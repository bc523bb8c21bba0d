--! Previous: sha1:d72074f4a841c02c880108a6017d7c48a932beeb
--! Hash: sha1:35a8de67034b6078073446116bfb328e4cfa9013
--! Message: publish batch lookups

--! split: 10-publish-batch-lookups.sql
-- The engine's batch statements look rows up from the batch, one by key.
--
-- app.publish_claim_batch, app.publish_record_batch and app.grid_mark_sent
-- run generic plans (plan_cache_mode = force_generic_plan, so a plan does not
-- know how many jobs or outcomes it gets). Statements written as joins of the
-- batch with app.content_items could be planned from the table's side: by the
-- partial index on sent editions (status = 'sent', small when the plan was
-- made, thousands of rows a few seconds later) or by the channel index for
-- the claim's grouping, with the batch scanned again for each row; and a
-- look-up by id that also tested the status could walk that partial index,
-- filtering on the id (auto_explain in the publishing bench, bench/README.md:
-- "Index Scan using content_items_workspace_sent_idx ... Filter: (id = u.id),
-- Rows Removed by Filter: 2199", 100 times per batch). The grid tiles'
-- classification took 0.31 to 0.54 ms per edition and the claim's grouping
-- 0.07 to 0.18 ms, for a few microseconds of work each. Each of these
-- statements now starts from the batch and looks every row up by its key alone
-- in a lateral subquery that cannot be flattened (offset 0, or a row lock),
-- and tests the rest outside it. The same for an edition's attempt in flight
-- (the claim's grouping and app.publish_claim_editions): the partial index of
-- open attempts by channel was taken for it, filtering on the edition, a walk
-- of every attempt in flight of the channel per edition.
-- Answers and locking order are unchanged (75-publish-batch, 77-publish-record-sent).

create or replace function app.grid_mark_sent(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
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
  -- Looked up by id alone (offset 0 keeps the status test out of the look-up): a plan may
  -- otherwise walk the partial index of sent editions, filtering on the id.
  cross join lateral (select * from app.content_items i where i.id = u.id offset 0) i
  join app.integrations g on g.id = i.integration_id
  left join app.platforms p on p.code = g.platform
  left join app.grid_tiles t on t.content_item_id = i.id
  cross join lateral (select i.deleted_at is null and i.kind = 'post' and coalesce(p.feed_grid, false) as eligible) x
  where i.status = 'sent';
  if v_drop is not null then
    delete from app.grid_tiles where id = any (v_drop);
  end if;
  if v_keep is not null then
    update app.grid_tiles set position_key = null where id = any (v_keep);
  end if;
  if v_add is not null then
    insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
    select i.organization_id, i.workspace_id, i.integration_id, i.id, i.created_by
    from unnest(v_add) u (id) join app.content_items i on i.id = u.id
    order by i.id;
  end if;
end
$function$;

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
  v_sent uuid[];
  v_items uuid[];
  v_out jsonb[];
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
    with o as (
      select (e ->> 'attemptId')::uuid as id, e ->> 'error' as error, e ->> 'platformPostId' as post_id, e ->> 'permalink' as permalink
      from jsonb_array_elements(p_outcomes) e
      where (e ->> 'attemptId')::uuid = any (v_sent)
    ),
    a as (
      update app.publish_attempts a set finished_at = clock_timestamp(), outcome = 'published', error = o.error,
        platform_post_id = o.post_id, permalink = o.permalink
      from o where a.id = o.id
      returning a.content_item_id, o.post_id, o.permalink
    ),
    i as (
      update app.content_items i set status = 'sent', sent_at = clock_timestamp(), permalink = a.permalink,
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
    -- The first v_allowed editions are claimed together (the common case set-based, the rest one by one).
    if v_allowed > 0 then
      v_claim_list := v_claim_list || app.publish_claim_editions(g.content_ids[1:v_allowed], g.job_ids[1:v_allowed], p_resendable, v_batch);
    end if;
    for k in v_allowed + 1 .. cardinality(g.job_ids) loop
      -- Over a limit: the job goes back with a later start, no attempt is written.
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

create or replace function app.publish_claim_editions(p_content_ids uuid[], p_job_ids uuid[], p_resendable text[], p_batch uuid)
 RETURNS jsonb[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_fast uuid[];         -- the jobs of the common case
  v_sent jsonb := '{}';  -- their claims, by job id
  v_out jsonb[];
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
      on conflict (content_item_id) do update set job_id = excluded.job_id, state = 'publishing',
        run_attempts = excluded.run_attempts, next_attempt_at = null, updated_at = now()
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
