--! Previous: sha1:12b62639ea8be5a8564180a81d24d7cdb2432423
--! Hash: sha1:e9023be8565bdbd20bfd73aacc479a480951c642
--! Message: one helper enqueues pg-boss jobs

--! split: 02-enqueue-job.sql
-- One helper writes pg-boss jobs from SQL: app.enqueue_job.
--
-- Four rules write a job in the transaction of the change it acts on (so the
-- job commits with it): app.inbox_enqueue, app.webhook_enqueue and the
-- triggers app.tg_analytics_reports_job and app.tg_content_items_publish_job.
-- Each had its own copy of pg-boss's insert into its private table pgboss.job;
-- now they call app.enqueue_job, the only function that inserts into it.
--
-- app.enqueue_job writes the row pg-boss's own send writes (insertJobs in
-- node_modules/pg-boss/dist/plans.js, pg-boss 12.35.0, schema version 43),
-- taking every option from the queue's row in pgboss.queue:
--   priority 0; start_after as given; keep_until = start_after + the queue's
--   retention_seconds; expire_seconds, deletion_seconds, retry_limit,
--   retry_delay, retry_backoff, retry_delay_max, policy, dead_letter,
--   heartbeat_seconds: the queue's; singleton_on, group_id, group_tier null
--   (no throttling, no groups); created_on, state, retry_count, blocked,
--   blocking, pending_dependencies: the column defaults (now(), created, 0,
--   false, false, 0), which are what send writes (send's created_on is
--   pgboss.job_now(), which is now() unless a pg-boss TestClock is attached).
-- It inserts through the parent table pgboss.job, which routes the row to the
-- queue's own table (pgboss.job_common, or the queue's partition when it was
-- created with partition: true) as send's insert into that table does.
-- ON CONFLICT DO NOTHING, as send: a job whose singleton key the queue's
-- policy refuses (stately, the policy of inbox.fold and webhooks.deliver: one
-- job per singleton key in each of the states created, retry, active) adds
-- nothing, and the function returns null where send returns null.
-- app.inbox_enqueue and app.webhook_enqueue return that null, as before; the
-- two triggers (queues analytics.report and content.publish, policy standard,
-- which refuse no key) raise 23505 on a null, as their insert did.
-- It sends no NOTIFY: pg-boss does (pg_notify) only for a queue created with
-- notify: true, and no queue of server/jobs/queues.ts is one; workers poll.
--
-- tests/db/98-enqueue-job.test.sql pins the pg-boss schema version and the
-- columns of pgboss.job: an upgrade of pg-boss fails it until this function
-- has been checked against the new insertJobs.

create or replace function app.enqueue_job(p_name text, p_data jsonb, p_start_after timestamptz default now(),
                                            p_singleton_key text default null) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_queue record;
  v_job uuid := gen_random_uuid();
  v_rows int;
begin
  -- plpgsql, and a record: pgboss.queue is created by pg-boss after the migrations.
  select * into v_queue from pgboss.queue q where q.name = p_name;
  if v_queue.name is null then
    raise exception 'pg-boss queue % is not installed (server/jobs/queues.ts installQueues)', p_name;
  end if;
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy,
    dead_letter, heartbeat_seconds)
  values (v_job, p_name, p_data, 0, p_start_after, p_singleton_key, null, null, null,
    v_queue.expire_seconds, v_queue.deletion_seconds, p_start_after + v_queue.retention_seconds * interval '1 second',
    v_queue.retry_limit, v_queue.retry_delay, v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy,
    v_queue.dead_letter, v_queue.heartbeat_seconds)
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  return case when v_rows = 1 then v_job end;
end
$$;
alter function app.enqueue_job(text, jsonb, timestamptz, text) owner to pressroom_definer;
comment on function app.enqueue_job(text, jsonb, timestamptz, text) is 'Writes a pg-boss job of queue p_name into pgboss.job in the caller''s transaction, as pg-boss''s send would (priority 0; retries, expiry, retention, deletion, policy, dead letter and heartbeat from the queue''s row in pgboss.queue). Returns the job id, or null when the queue''s policy refused the singleton key (nothing added). The only function that inserts into pgboss.job; written for pg-boss schema version 43 (tests/db/98-enqueue-job.test.sql).';
revoke all on function app.enqueue_job(text, jsonb, timestamptz, text) from public;

------------------------------------------------------------------------------
-- The four callers: as before, with the insert replaced by the helper.
------------------------------------------------------------------------------
create or replace function app.inbox_enqueue(p_queue text, p_data jsonb, p_singleton text) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
begin
  if p_queue not in ('inbox.fold', 'inbox.action') then
    raise exception 'app.inbox_enqueue: unknown queue %', p_queue;
  end if;
  return app.enqueue_job(p_queue, p_data, now(), p_singleton);
end
$$;

create or replace function app.webhook_enqueue(p_subscription uuid, p_start timestamptz default now()) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_job uuid;
begin
  v_job := app.enqueue_job('webhooks.deliver', jsonb_build_object('subscriptionId', p_subscription), p_start,
    p_subscription::text);
  if v_job is null then
    -- one is queued already: make it due no later than asked (a resume, a new event after a retry wait)
    update pgboss.job j set start_after = p_start
    where j.name = 'webhooks.deliver' and j.singleton_key = p_subscription::text and j.state in ('created', 'retry')
      and j.start_after > p_start;
  end if;
  return v_job;
end
$$;

create or replace function app.tg_analytics_reports_job() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_job uuid;
begin
  v_job := app.enqueue_job('analytics.report', jsonb_build_object('reportId', new.id, 'workspaceId', new.workspace_id),
    now(), new.id::text);
  if v_job is null then
    -- (the insert of pgboss.job failed here before the helper returned null instead)
    raise exception using errcode = 'unique_violation',
      message = format('pg-boss queue analytics.report refused the job of report %s (singleton key taken)', new.id);
  end if;
  new.job_id := v_job;
  new.status := 'queued';
  return new;
end
$$;

create or replace function app.tg_content_items_publish_job() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_live boolean := new.status = 'scheduled' and new.deleted_at is null;
  v_was boolean := tg_op = 'UPDATE' and old.status = 'scheduled' and old.deleted_at is null;
  v_state text;
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
    v_start := greatest(new.scheduled_at, now());
    v_job := app.enqueue_job('content.publish',
      jsonb_build_object('contentId', new.id, 'workspaceId', new.workspace_id, 'version', new.version),
      v_start, new.id::text);
    if v_job is null then
      -- (the insert of pgboss.job failed here before the helper returned null instead)
      raise exception using errcode = 'unique_violation',
        message = format('pg-boss queue content.publish refused the publish job of content %s (singleton key taken)', new.id);
    end if;
    new.publish_job_id := v_job;
  end if;
  return new;
end
$$;
