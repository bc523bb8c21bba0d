--! Previous: sha1:1f595ae13372296a78eaf48c32b5c91140f93b66
--! Hash: sha1:5759f812017b4fbd2286433b7d9e7cbb83f3ad22
--! Message: publish throughput set-based claim and record

--! split: 10-publish-throughput.sql
-- Publishing throughput: less PostgreSQL work per published edition.
--
-- 1. Set-based claim. app.publish_claim_batch claimed each edition through
--    app.publish_claim (a PL/pgSQL call, seven statements and the edition's
--    JSON per edition). The common case (a scheduled, live edition whose job is
--    this one, no attempt in flight, not awaiting a confirmation, its channel
--    connected) is now claimed for all the allowed editions of an integration
--    at once (app.publish_claim_editions): their rows locked in the claim's
--    order, one INSERT of the attempts, one upsert of the publishing states,
--    the editions' JSON in one query (app.publish_editions_json). Every other
--    edition still goes through app.publish_claim, exactly as before.
-- 2. Set-based record. app.publish_record_batch recorded each outcome through
--    app.publish_record. The common outcome (published, for an attempt in
--    flight of an edition still scheduled) is now recorded for the whole batch
--    with one UPDATE of the attempts, one UPDATE of app.content_items and one
--    of the publishing states; the others (failed, transient, unknown, a late
--    or settled attempt) keep the per-edition path. Answers come back in the
--    order of the outcomes given (the worker matches them by position).
-- 3. The list counters (app.content_item_counts) are kept by statement-level
--    triggers with transition tables: one INSERT of grouped deltas per
--    statement instead of two single-row INSERTs per changed edition.
-- 4. Indexes of app.content_items that other indexes serve (each was written
--    by every status change; a status is indexed, so no update is HOT):
--    content_items_workspace_status_idx (a prefix of
--    content_items_workspace_status_scheduled_idx), content_items_workspace_list_idx
--    (the same keys as content_items_workspace_status_scheduled_idx in another
--    direction) and content_items_workspace_updated_idx (live editions by
--    content_items_workspace_live_updated_idx, tombstones by
--    content_items_workspace_deleted_idx).
-- 5. The publish-job trigger no longer reads the job's state when the engine
--    marks an edition sent or failed (the state only decides a refusal that
--    does not apply to those moves).
-- 6. The batch entry points (app.publish_claim_batch, app.publish_record_batch,
--    app.sandbox_receive_posts) plan with plan_cache_mode = force_generic_plan:
--    their statements take arrays of ids whose size changes from call to call
--    (one edition per integration over many channels, a hundred over one);
--    a custom plan for a short array looks cheaper than the generic plan, so
--    PL/pgSQL planned such a statement again at every call (about 2 ms each,
--    once per integration of a batch). Every statement finds its rows by key
--    (enable_seqscan off), so the generic plan is the right one.

------------------------------------------------------------------------------
-- Indexes
------------------------------------------------------------------------------
drop index if exists app.content_items_workspace_status_idx;
drop index if exists app.content_items_workspace_list_idx;
drop index if exists app.content_items_workspace_updated_idx;

------------------------------------------------------------------------------
-- List counters: statement-level
------------------------------------------------------------------------------
drop trigger if exists content_items_90_count on app.content_items;
drop trigger if exists content_items_90_count_update on app.content_items;

create or replace function app.tg_content_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_rows bigint;
  v_ws uuid;
begin
  -- old_rows / new_rows: the statement's transition tables (an insert has only new_rows, a delete only old_rows).
  if tg_op = 'INSERT' then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select x.organization_id, x.workspace_id, x.integration_id, x.status, count(*)
    from new_rows x where x.deleted_at is null group by 1, 2, 3, 4;
  elsif tg_op = 'DELETE' then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select o.organization_id, o.workspace_id, o.integration_id, o.status, -count(*)
    from old_rows o where o.deleted_at is null group by 1, 2, 3, 4;
  else
    -- Only editions whose status, deletion or channel changed: -1 as they were, +1 as they are.
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select d.organization_id, d.workspace_id, d.integration_id, d.status, sum(d.n)
    from old_rows o join new_rows x on x.id = o.id
    cross join lateral (
      select o.organization_id, o.workspace_id, o.integration_id, o.status, -1 as n where o.deleted_at is null
      union all
      select x.organization_id, x.workspace_id, x.integration_id, x.status, 1 where x.deleted_at is null) d
    where x.status is distinct from o.status or x.deleted_at is distinct from o.deleted_at
       or x.integration_id is distinct from o.integration_id
    group by 1, 2, 3, 4 having sum(d.n) <> 0;
  end if;
  get diagnostics v_rows = row_count;
  -- Now and then, fold the deltas (about one changed edition in 500).
  if v_rows > 0 and random() < 0.002 * v_rows then
    select workspace_id into v_ws from app.content_item_counts order by id desc limit 1;
    perform app.compact_content_item_counts(v_ws);
  end if;
  return null;
end
$function$;
alter function app.tg_content_items_count() owner to pressroom_definer;
comment on function app.tg_content_items_count() is 'Statement-level triggers content_items_90_count_insert, _update and _delete: keeps app.content_item_counts from the statement''s transition tables, one INSERT of deltas grouped by workspace, integration and status (-1 for editions as they were, +1 as they are; live editions only; edits that change no status, deletion or channel write nothing).';
revoke all on function app.tg_content_items_count() from public;

create trigger content_items_90_count_insert after insert on app.content_items
  referencing new table as new_rows for each statement execute function app.tg_content_items_count();
create trigger content_items_90_count_update after update on app.content_items
  referencing old table as old_rows new table as new_rows for each statement execute function app.tg_content_items_count();
create trigger content_items_90_count_delete after delete on app.content_items
  referencing old table as old_rows for each statement execute function app.tg_content_items_count();

comment on table app.content_item_counts is 'Live (not deleted) editions per workspace, integration and status, as deltas: the sum of n over the rows of a key is its count. Written only by the statement-level triggers content_items_90_count_insert, _update and _delete (app.tg_content_items_count; insert-only, so concurrent writers never wait on each other) and compacted by app.compact_content_item_counts; read by app.content_list_total.';

------------------------------------------------------------------------------
-- Publish-job trigger: the engine's move to sent or failed reads no job state
------------------------------------------------------------------------------
create or replace function app.tg_content_items_publish_job()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_live boolean := new.status = 'scheduled' and new.deleted_at is null;
  v_was boolean := tg_op = 'UPDATE' and old.status = 'scheduled' and old.deleted_at is null;
  v_state text;
  v_queue record;
  v_start timestamptz;
  v_job uuid;
begin
  -- Nobody but this trigger sets the job id.
  new.publish_job_id := case when tg_op = 'UPDATE' then old.publish_job_id end;
  if v_was and (not v_live or new.scheduled_at is distinct from old.scheduled_at) then
    if old.publish_job_id is not null then
      -- The engine's own outcome (sent, failed) passes; any other move waits for it.
      if new.status not in ('sent', 'failed') then
        select state::text into v_state from pgboss.job where name = 'content.publish' and id = old.publish_job_id;
        if v_state = 'active' then
          perform app.raise(409, 'PUBLISHING_IN_PROGRESS',
            'This content is being published right now; wait for the outcome, then try again.',
            jsonb_build_object('contentId', old.id));
        end if;
        -- The last attempt may have reached the platform: its outcome is
        -- recorded first (resolve-publishing-result), so nothing is published twice.
        if exists (
             select 1 from app.publishing_states ps
             where ps.content_item_id = old.id and ps.state = 'awaiting_confirmation'
               and ps.job_id is not distinct from old.publish_job_id) then
          perform app.raise(409, 'PUBLISHING_AWAITS_CONFIRMATION',
            'The outcome of the last publish attempt is unknown; record it with resolve-publishing-result first.',
            jsonb_build_object('contentId', old.id));
        end if;
      end if;
      update pgboss.job set state = 'cancelled', completed_on = now()
      where name = 'content.publish' and id = old.publish_job_id and state in ('created', 'retry');
    end if;
    -- A sent or failed edition keeps the id of the job that published it.
    if new.status not in ('sent', 'failed') then
      new.publish_job_id := null;
    end if;
  end if;
  if v_live and (not v_was or new.scheduled_at is distinct from old.scheduled_at) then
    select * into v_queue from pgboss.queue where name = 'content.publish';
    if v_queue.name is null then
      raise exception 'pg-boss queue content.publish is not installed (server/jobs/queues.ts installQueues)';
    end if;
    v_start := greatest(new.scheduled_at, now());
    v_job := gen_random_uuid();
    insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
      keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
    values (v_job, 'content.publish',
      jsonb_build_object('contentId', new.id, 'workspaceId', new.workspace_id, 'version', new.version),
      0, v_start, new.id::text, v_queue.expire_seconds, v_queue.deletion_seconds,
      v_start + v_queue.retention_seconds * interval '1 second', v_queue.retry_limit, v_queue.retry_delay,
      v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy, v_queue.dead_letter, v_queue.heartbeat_seconds);
    new.publish_job_id := v_job;
  end if;
  return new;
end
$function$;

------------------------------------------------------------------------------
-- The editions' JSON, for many at once
------------------------------------------------------------------------------
create or replace function app.publish_editions_json(p_item_ids uuid[])
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
                             where cm.content_item_id = i.id)
                          else (select coalesce(array_agg(rm.media_id order by rm.position), '{}') from app.content_root_media rm
                                where rm.root_id = i.root_id) end) with ordinality x (id, n)
              join app.media_items m on m.id = x.id),
    'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                 'mediaIds', coalesce(e -> 'mediaIds', '[]')) order by n), '[]')
               from jsonb_array_elements(i.thread) with ordinality t (e, n)),
    'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
      'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret,
      'status', g.status, 'deleted', g.deleted_at is not null))
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = any (p_item_ids);
end
$function$;
comment on function app.publish_editions_json(uuid[]) is 'What the engine sends to a connector for each of the editions given (caption, title, sanitized settings, media, thread, the integration with its webhook secret): one query for a claim batch. Worker only.';
grant execute on function app.publish_editions_json(uuid[]) to pressroom_definer;
grant execute on function app.publish_editions_json(uuid[]) to pressroom_worker;
revoke all on function app.publish_editions_json(uuid[]) from public;

create or replace function app.publish_edition_json(p_item_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$ select edition from app.publish_editions_json(array[p_item_id]) $function$;
comment on function app.publish_edition_json(uuid) is 'What the engine sends to a connector for one edition (app.publish_editions_json).';

------------------------------------------------------------------------------
-- Set-based claim of the common case
------------------------------------------------------------------------------
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
          and not exists (select 1 from app.publish_attempts a where a.content_item_id = i.id and a.finished_at is null)
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
comment on function app.publish_claim_editions(uuid[],uuid[],text[],uuid) is 'Claims editions of one integration that the limits allow, for app.publish_claim_batch: rows locked in the order given; the common case (scheduled, live, this job, no attempt in flight, not awaiting a confirmation, channel connected) in one INSERT of attempts and one upsert of publishing states; every other edition through app.publish_claim. Returns the claims in the order given, each with its jobId and contentId.';
grant execute on function app.publish_claim_editions(uuid[],uuid[],text[],uuid) to pressroom_definer;
grant execute on function app.publish_claim_editions(uuid[],uuid[],text[],uuid) to pressroom_worker;
revoke all on function app.publish_claim_editions(uuid[],uuid[],text[],uuid) from public;

create or replace function app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
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
comment on function app.publish_claim_batch(jsonb,text[]) is 'Claims a fetched batch of publish jobs in one statement, integration by integration: the editions its limits allow through app.publish_claim_editions (the common case set-based, the rest through app.publish_claim; attempts written and committed before any platform call), editions over their integration''s or connector''s publish limits put back with a later start; returns the claims and where the media to send are stored.';

------------------------------------------------------------------------------
-- Set-based record of the common outcome
------------------------------------------------------------------------------
create or replace function app.publish_record_batch(p_outcomes jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_sent uuid[];
  v_out jsonb[];
begin
  -- p_outcomes: [{"attemptId", "outcome", "error", "platformPostId", "permalink"}].
  -- Published outcomes: their editions locked by id (as the claim locks them), then their attempts.
  perform 1 from app.content_items i
  where i.id in (select a.content_item_id from jsonb_array_elements(p_outcomes) e
                 join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
                 where e ->> 'outcome' = 'published')
  order by i.id for update;
  -- The common case: an attempt in flight of an edition still scheduled (once per attempt).
  select coalesce(array_agg(a.id order by a.content_item_id), '{}') into v_sent
  from app.publish_attempts a
  join app.content_items i on i.id = a.content_item_id
  where a.id in (select (e ->> 'attemptId')::uuid from jsonb_array_elements(p_outcomes) e where e ->> 'outcome' = 'published'
                 group by 1 having count(*) = 1)
    and a.finished_at is null and i.deleted_at is null and i.status = 'scheduled';
  perform 1 from app.publish_attempts a where a.id = any (v_sent) order by a.content_item_id for update;

  if cardinality(v_sent) > 0 then
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
    )
    update app.publishing_states s set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
    from i where s.content_item_id = i.id;
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
comment on function app.publish_record_batch(jsonb) is 'Records a batch of publish outcomes in one statement: published outcomes of attempts in flight of editions still scheduled together (editions locked by id, then attempts; one UPDATE each of the attempts, the editions and their publishing states), every other outcome through app.publish_record (failed, retries, awaiting confirmation, late or settled attempts); returns one result per outcome, in the order given.';

------------------------------------------------------------------------------
-- The sandbox platform receives a group of posts in one INSERT
------------------------------------------------------------------------------
create or replace function app.sandbox_receive_posts(p_posts jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_out jsonb;
begin
  -- One token twice in the group (a post re-sent while the first delivery is in the same group):
  -- one by one, in order, so the second counts as a repeated delivery.
  if exists (select 1 from jsonb_array_elements(p_posts) p group by p ->> 'integrationId', p ->> 'token' having count(*) > 1) then
    return (select coalesce(jsonb_agg(app.sandbox_receive_post((p ->> 'integrationId')::uuid, p ->> 'token', (p ->> 'contentId')::uuid,
              p ->> 'platformPostId', p ->> 'permalink', p ->> 'caption', p -> 'payload') order by n), '[]')
            from jsonb_array_elements(p_posts) with ordinality x (p, n));
  end if;
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
      on conflict (integration_id, idempotency_token) do update set deliveries = sp.deliveries + 1, updated_at = clock_timestamp()
      returning sp.integration_id, sp.idempotency_token, sp.platform_post_id, sp.permalink, sp.deliveries
    )
    select coalesce(jsonb_agg(jsonb_build_object('platformPostId', ins.platform_post_id, 'permalink', ins.permalink,
             'deliveries', ins.deliveries) order by x.n), '[]')
    into v_out
    from x left join ins on ins.integration_id = x.integration_id and ins.idempotency_token = x.token;
  return v_out;
end
$function$;
comment on function app.sandbox_receive_posts(jsonb) is 'The sandbox platform receives a group of posts in one statement (one INSERT; one by one through app.sandbox_receive_post when a token comes twice in the group); returns one answer per post, in order.';
