--! Previous: sha1:b84d85dcb39c859cd2c136b1b1bcabe0631ef74c
--! Hash: sha1:246519953d89150e2e6a4959cfe6aec09f877dce
--! Message: jobs through the workspace outbox

--! split: 01-current.sql
-- Jobs queued where pg-boss is not (docs/citus.md, "Jobs").
--
-- pg-boss's tables live on the coordinator only. On a Citus cluster a trigger of a workspace
-- table runs on the workspace's shard, on a worker, where pgboss.job does not exist: creating
-- scheduled content failed there (relation "pgboss.queue" does not exist, from
-- app.tg_content_items_publish_job). So a job is queued in two steps where it must be:
--
-- - app.enqueue_job (queue a job) and app.dequeue_job (cancel one) act on pg-boss at once where
--   pg-boss is (one node, or the coordinator), as before; on a node without it (a Citus worker)
--   they write the operation to the workspace's outbox, app.job_outbox, a workspace table on the
--   same shard, in the same transaction, with the job's id chosen up front.
-- - app.drain_job_outbox (the one that applies the operations, on the coordinator) runs them in
--   order and deletes them: at the end of every request transaction of that workspace
--   (api.drain_job_outbox, called by the server's request pipeline on a distributed database), so
--   the job commits with the change as before and a refusal (PUBLISHING_IN_PROGRESS, a singleton
--   taken) still fails the request; and every second for any workspace (app.drain_job_outboxes,
--   the worker), for the changes made by jobs.
--
-- app.job_send (the only function that inserts into pgboss.job, as app.enqueue_job was) and
-- app.job_cancel do the pg-boss side, with what a singleton taken means named by the caller:
-- nothing (null), raise (unique_violation, as the publish and report triggers did), or advance
-- (the queued job made due no later than asked, as app.webhook_enqueue did).

create table app.job_outbox (
  workspace_id uuid not null,
  organization_id uuid not null,
  seq bigserial,
  op text not null,
  job_id uuid not null,
  name text not null,
  data jsonb,
  start_after timestamptz,
  singleton_key text,
  on_taken text,
  guard jsonb,
  created_at timestamptz not null default clock_timestamp(),
  constraint job_outbox_pkey primary key (seq, workspace_id),
  constraint job_outbox_op_check check (op in ('send', 'cancel')),
  constraint job_outbox_on_taken_check check (on_taken in ('nothing', 'raise', 'advance')),
  constraint job_outbox_workspace_id_fkey foreign key (workspace_id) references app.workspaces (id) on delete cascade,
  constraint job_outbox_organization_id_fkey foreign key (organization_id) references app.organizations (id) on delete cascade
);
create index job_outbox_organization_id_idx on app.job_outbox (organization_id);
create index job_outbox_created_at_idx on app.job_outbox (created_at);
comment on table app.job_outbox is 'pg-boss operations (send a job, cancel one) written where pg-boss is not: by a trigger on a Citus worker, in the transaction of the change. Applied in seq order and deleted on the coordinator by app.drain_job_outbox: at the end of the request transaction (api.drain_job_outbox) or within a second by the worker (app.drain_job_outboxes). Empty on a single PostgreSQL, where the operations act on pg-boss at once. Requests read and delete their own workspace''s rows only (tenant policies: select, delete).';
-- Any member's request may apply its workspace's outbox (a viewer's request queues jobs too: an
-- analytics report): write role viewer.
select app.apply_tenant_policies('app.job_outbox', '{select,delete}', 'viewer');
grant select (workspace_id, seq, op, job_id, name, data, start_after, singleton_key, on_taken, guard), delete
  on app.job_outbox to pressroom_api;
-- apply_tenant_policies gives the worker every command; it reads and applies outboxes through
-- app.drain_job_outboxes (pressroom_definer) only.
revoke all on app.job_outbox from pressroom_worker;
-- The writers (app.enqueue_job, app.dequeue_job) are pressroom_definer's.
grant usage on sequence app.job_outbox_seq_seq to pressroom_definer;

drop function app.enqueue_job(text, jsonb, timestamptz, text);
drop function app.webhook_enqueue(uuid, timestamptz);

CREATE OR REPLACE FUNCTION app.jobs_here()
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
  -- A Citus worker has the citus extension and no pg-boss; one node and the coordinator have pg-boss.
  select to_regclass('pgboss.job') is not null or to_regclass('pg_catalog.pg_dist_partition') is null
$function$;
revoke all on function app.jobs_here() from public;
grant execute on function app.jobs_here() to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.jobs_here() is 'Whether pg-boss''s tables are on this node (one PostgreSQL, or a Citus coordinator), so that jobs are queued at once; false on a Citus worker, where app.enqueue_job and app.dequeue_job write the workspace''s outbox (app.job_outbox).';

CREATE OR REPLACE FUNCTION app.job_send(p_id uuid, p_name text, p_data jsonb, p_start_after timestamp with time zone,
  p_singleton_key text, p_on_taken text)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
declare
  v_queue record;
  v_rows int;
begin
  -- plpgsql, and a record: pgboss.queue is created by pg-boss after the migrations.
  select * into v_queue from pgboss.queue q where q.name = p_name;
  if v_queue.name is null then
    raise exception 'pg-boss queue % is not installed (server/jobs/queues.ts installQueues)', p_name;
  end if;
  -- Sent already (an outbox operation applied twice): nothing more.
  if exists (select 1 from pgboss.job j where j.name = p_name and j.id = p_id) then
    return p_id;
  end if;
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy,
    dead_letter, heartbeat_seconds)
  values (p_id, p_name, p_data, 0, p_start_after, p_singleton_key, null, null, null,
    v_queue.expire_seconds, v_queue.deletion_seconds, p_start_after + v_queue.retention_seconds * interval '1 second',
    v_queue.retry_limit, v_queue.retry_delay, v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy,
    v_queue.dead_letter, v_queue.heartbeat_seconds)
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  if v_rows = 1 then
    return p_id;
  end if;
  if p_on_taken = 'raise' then
    raise exception using errcode = 'unique_violation',
      message = format('pg-boss queue %s refused job %s (singleton key %s taken)', p_name, p_id, p_singleton_key);
  elsif p_on_taken = 'advance' then
    -- one is queued already: make it due no later than asked (a resume, a new event after a retry wait)
    update pgboss.job j set start_after = p_start_after
    where j.name = p_name and j.singleton_key = p_singleton_key and j.state in ('created', 'retry')
      and j.start_after > p_start_after;
  end if;
  return null;
end
$function$;
alter function app.job_send(uuid, text, jsonb, timestamptz, text, text) owner to pressroom_definer;
comment on function app.job_send(uuid, text, jsonb, timestamptz, text, text) is 'Writes pg-boss job p_id of queue p_name into pgboss.job, as pg-boss''s send would (priority 0; retries, expiry, retention, deletion, policy, dead letter and heartbeat from the queue''s row in pgboss.queue). When the queue''s policy refuses the singleton key: p_on_taken nothing returns null, raise fails with unique_violation, advance makes the queued job due no later than p_start_after and returns null. A job p_id that exists already is not sent again (p_id). The only function that inserts into pgboss.job; written for pg-boss schema version 43 (tests/db/98-enqueue-job.test.sql). Called by app.enqueue_job and app.drain_job_outbox only.';
revoke all on function app.job_send(uuid, text, jsonb, timestamptz, text, text) from public;

CREATE OR REPLACE FUNCTION app.job_cancel(p_name text, p_id uuid, p_guard jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_state text;
begin
  -- p_guard {code, message, details}: the 409 to raise when the job is running.
  if p_guard is not null then
    select state::text into v_state from pgboss.job where name = p_name and id = p_id;
    if v_state = 'active' then
      perform app.raise(409, p_guard ->> 'code', p_guard ->> 'message', p_guard -> 'details');
    end if;
  end if;
  update pgboss.job set state = 'cancelled', completed_on = now()
  where name = p_name and id = p_id and state in ('created', 'retry');
end
$function$;
alter function app.job_cancel(text, uuid, jsonb) owner to pressroom_definer;
comment on function app.job_cancel(text, uuid, jsonb) is 'Cancels pg-boss job p_id of queue p_name when it waits (created or retry); with p_guard {code, message, details}, raises that 409 when the job is running instead. Called by app.dequeue_job and app.drain_job_outbox only.';
revoke all on function app.job_cancel(text, uuid, jsonb) from public;

CREATE OR REPLACE FUNCTION app.enqueue_job(p_workspace_id uuid, p_name text, p_data jsonb,
  p_start_after timestamp with time zone DEFAULT now(), p_singleton_key text DEFAULT NULL::text, p_on_taken text DEFAULT 'nothing')
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_job uuid := gen_random_uuid();
  v_org uuid;
begin
  if app.jobs_here() then
    return app.job_send(v_job, p_name, p_data, p_start_after, p_singleton_key, p_on_taken);
  end if;
  if p_workspace_id is null then
    raise exception 'app.enqueue_job: a job of queue % queued on a node without pg-boss needs its workspace', p_name;
  end if;
  -- The organization first, then the row by value (an INSERT ... SELECT from the reference table
  -- would be planned across every shard, which a trigger on a worker may not reach).
  select w.organization_id into v_org from app.workspaces w where w.id = p_workspace_id;
  insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, data, start_after, singleton_key, on_taken)
  values (p_workspace_id, v_org, 'send', v_job, p_name, p_data, p_start_after, p_singleton_key, p_on_taken);
  return v_job;
end
$function$;
alter function app.enqueue_job(uuid, text, jsonb, timestamptz, text, text) owner to pressroom_definer;
comment on function app.enqueue_job(uuid, text, jsonb, timestamptz, text, text) is 'Queues a pg-boss job of queue p_name in the caller''s transaction: at once where pg-boss is (app.job_send; null when the singleton is taken and p_on_taken is nothing or advance), or on a Citus worker through workspace p_workspace_id''s outbox (app.job_outbox; the job''s id, which app.drain_job_outbox gives the job, unless the singleton is taken then). The one way SQL queues jobs (000058).';
revoke all on function app.enqueue_job(uuid, text, jsonb, timestamptz, text, text) from public;

CREATE OR REPLACE FUNCTION app.dequeue_job(p_workspace_id uuid, p_name text, p_id uuid, p_guard jsonb DEFAULT NULL::jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_org uuid;
begin
  if app.jobs_here() then
    perform app.job_cancel(p_name, p_id, p_guard);
    return;
  end if;
  select w.organization_id into v_org from app.workspaces w where w.id = p_workspace_id;
  insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, guard)
  values (p_workspace_id, v_org, 'cancel', p_id, p_name, p_guard);
end
$function$;
alter function app.dequeue_job(uuid, text, uuid, jsonb) owner to pressroom_definer;
comment on function app.dequeue_job(uuid, text, uuid, jsonb) is 'Cancels a waiting pg-boss job in the caller''s transaction (app.job_cancel: with p_guard, a running job raises that 409), at once where pg-boss is or through workspace p_workspace_id''s outbox on a Citus worker (000058).';
revoke all on function app.dequeue_job(uuid, text, uuid, jsonb) from public;

CREATE OR REPLACE FUNCTION app.drain_job_outbox(p_workspace_id uuid)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ops jsonb;
  v record;
  v_n int := 0;
begin
  -- The workspace's operations, read into a value first (no statement inside a loop over an open
  -- query on a distributed table), applied in order, then deleted.
  select coalesce(jsonb_agg(jsonb_build_object('seq', o.seq, 'op', o.op, 'jobId', o.job_id, 'name', o.name, 'data', o.data,
           'startAfter', o.start_after, 'singletonKey', o.singleton_key, 'onTaken', o.on_taken, 'guard', o.guard) order by o.seq), '[]')
  into v_ops
  from app.job_outbox o where o.workspace_id = p_workspace_id;
  for v in select e from jsonb_array_elements(v_ops) e loop
    if v.e ->> 'op' = 'send' then
      perform app.job_send((v.e ->> 'jobId')::uuid, v.e ->> 'name', v.e -> 'data', (v.e ->> 'startAfter')::timestamptz,
        v.e ->> 'singletonKey', v.e ->> 'onTaken');
    else
      perform app.job_cancel(v.e ->> 'name', (v.e ->> 'jobId')::uuid, nullif(v.e -> 'guard', 'null'::jsonb));
    end if;
    v_n := v_n + 1;
  end loop;
  if v_n > 0 then
    delete from app.job_outbox o where o.workspace_id = p_workspace_id
      and o.seq <= (select max((e ->> 'seq')::bigint) from jsonb_array_elements(v_ops) e);
  end if;
  return v_n;
end
$function$;
comment on function app.drain_job_outbox(uuid) is 'Applies workspace p_workspace_id''s outbox (app.job_outbox) to pg-boss, in order (app.job_send, app.job_cancel), and deletes what it applied; returns how many. Runs as its caller, on the coordinator: api.drain_job_outbox (the request''s workspace) and app.drain_job_outboxes (the worker).';
revoke all on function app.drain_job_outbox(uuid) from public;
grant execute on function app.drain_job_outbox(uuid) to pressroom_api, pressroom_definer;
grant execute on function app.job_send(uuid, text, jsonb, timestamptz, text, text), app.job_cancel(text, uuid, jsonb) to pressroom_api;

CREATE OR REPLACE FUNCTION api.drain_job_outbox()
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
begin
  if app.current_workspace_id() is null then
    return 0;
  end if;
  return app.drain_job_outbox(app.current_workspace_id());
end
$function$;
comment on function api.drain_job_outbox() is 'The end of a request transaction on a distributed database (server/http/pipeline.ts): applies the request''s workspace''s outbox to pg-boss (app.drain_job_outbox), as the request''s role, so the jobs commit with the change and a refusal fails the request. 0 without a workspace.';

CREATE OR REPLACE FUNCTION app.drain_job_outboxes(p_limit integer DEFAULT 100)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ws uuid[];
  v uuid;
  v_n int := 0;
begin
  -- The workspaces with operations, oldest first (one read of every shard), then each one's.
  v_ws := array(select o.workspace_id from app.job_outbox o group by o.workspace_id order by min(o.created_at) limit p_limit);
  foreach v in array v_ws loop
    v_n := v_n + app.drain_job_outbox(v);
  end loop;
  return v_n;
end
$function$;
alter function app.drain_job_outboxes(integer) owner to pressroom_definer;
comment on function app.drain_job_outboxes(integer) is 'The worker''s sweep (server/jobs/worker.ts, every second on a distributed database): applies the outboxes of up to p_limit workspaces, oldest first, for the changes jobs made (a request drains its own). Returns how many operations.';
revoke all on function app.drain_job_outboxes(integer) from public;
grant execute on function app.drain_job_outboxes(integer) to pressroom_worker;

CREATE OR REPLACE FUNCTION app.webhook_enqueue(p_subscription uuid, p_start timestamp with time zone DEFAULT now(),
  p_workspace_id uuid DEFAULT NULL::uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
begin
  -- One queued per subscription (queue policy stately); one queued already is made due no later than p_start.
  return app.enqueue_job(p_workspace_id, 'webhooks.deliver', jsonb_build_object('subscriptionId', p_subscription), p_start,
    p_subscription::text, 'advance');
end
$function$;
alter function app.webhook_enqueue(uuid, timestamptz, uuid) owner to pressroom_definer;
comment on function app.webhook_enqueue(uuid, timestamptz, uuid) is 'Queues job webhooks.deliver for a subscription in the caller''s transaction; one queued per subscription (queue policy stately), so a burst of events makes one job; when one is queued already it is made due no later than p_start. Returns the job id or null when one was already queued (on a Citus worker, through workspace p_workspace_id''s outbox: the id).';
revoke all on function app.webhook_enqueue(uuid, timestamptz, uuid) from public;
grant execute on function app.webhook_enqueue(uuid, timestamptz, uuid) to pressroom_api, pressroom_worker;

CREATE OR REPLACE FUNCTION app.webhook_emit(p_org uuid, p_ws uuid, p_type text, p_subject uuid, p_data jsonb)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
declare
  v_event uuid;
  v_sub record;
begin
  if not exists (select 1 from app.webhook_subscriptions s where s.workspace_id = p_ws and p_type = any (s.events)) then
    return null;
  end if;
  insert into app.webhook_events (organization_id, workspace_id, type, subject_id, data)
  values (p_org, p_ws, p_type, p_subject, p_data) returning id into v_event;
  for v_sub in select s.id, s.active from app.webhook_subscriptions s
               where s.workspace_id = p_ws and p_type = any (s.events) order by s.id loop
    insert into app.webhook_deliveries (organization_id, workspace_id, subscription_id, event_id)
    values (p_org, p_ws, v_sub.id, v_event);
    if v_sub.active then
      perform app.webhook_enqueue(v_sub.id, now(), p_ws);
    end if;
  end loop;
  return v_event;
end
$function$;
CREATE OR REPLACE FUNCTION app.inbox_enqueue(p_queue text, p_data jsonb, p_singleton text)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
begin
  if p_queue not in ('inbox.fold', 'inbox.action') then
    raise exception 'app.inbox_enqueue: unknown queue %', p_queue;
  end if;
  return app.enqueue_job((p_data ->> 'workspaceId')::uuid, p_queue, p_data, now(), p_singleton);
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_analytics_reports_job()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_job uuid;
begin
  v_job := app.enqueue_job(new.workspace_id, 'analytics.report', jsonb_build_object('reportId', new.id, 'workspaceId', new.workspace_id),
    now(), new.id::text, 'raise');
  new.job_id := v_job;
  new.status := 'queued';
  return new;
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_content_items_publish_job()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_live boolean := new.status = 'scheduled' and new.deleted_at is null;
  v_was boolean := tg_op = 'UPDATE' and old.status = 'scheduled' and old.deleted_at is null;
  v_guard jsonb;
  v_start timestamptz;
  v_job uuid;
begin
  -- Nobody but this trigger sets the job id.
  new.publish_job_id := case when tg_op = 'UPDATE' then old.publish_job_id end;
  if v_was and (not v_live or new.scheduled_at is distinct from old.scheduled_at) then
    if old.publish_job_id is not null then
      -- The engine's own outcome (sent, failed) passes; any other move waits for it.
      if new.status not in ('sent', 'failed') then
        -- A running job refuses the move (checked where pg-boss is: app.job_cancel).
        v_guard := jsonb_build_object('code', 'PUBLISHING_IN_PROGRESS',
          'message', 'This content is being published right now; wait for the outcome, then try again.',
          'details', jsonb_build_object('contentId', old.id));
        -- The last attempt may have reached the platform: its outcome is
        -- recorded first (resolve-publishing-result), so nothing is published twice.
        if exists (
             select 1 from app.publishing_states ps
             where ps.workspace_id = old.workspace_id and ps.content_item_id = old.id and ps.state = 'awaiting_confirmation'
               and ps.job_id is not distinct from old.publish_job_id) then
          perform app.raise(409, 'PUBLISHING_AWAITS_CONFIRMATION',
            'The outcome of the last publish attempt is unknown; record it with resolve-publishing-result first.',
            jsonb_build_object('contentId', old.id));
        end if;
      end if;
      perform app.dequeue_job(old.workspace_id, 'content.publish', old.publish_job_id, v_guard);
    end if;
    -- A sent or failed edition keeps the id of the job that published it.
    if new.status not in ('sent', 'failed') then
      new.publish_job_id := null;
    end if;
  end if;
  if v_live and (not v_was or new.scheduled_at is distinct from old.scheduled_at) then
    v_start := greatest(new.scheduled_at, now());
    v_job := app.enqueue_job(new.workspace_id, 'content.publish',
      jsonb_build_object('contentId', new.id, 'workspaceId', new.workspace_id, 'version', new.version),
      v_start, new.id::text, 'raise');
    new.publish_job_id := v_job;
  end if;
  return new;
end
$function$;

select app.harden_api_functions();
