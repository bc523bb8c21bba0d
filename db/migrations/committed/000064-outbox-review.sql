--! Previous: sha1:63854061ab630119dafd1082d11a239b48799dc3
--! Hash: sha1:45cc0b4a576580a09f9d9b9d040788bb0d2c2772
--! Message: outbox review

--! split: 01-current.sql
-- Review of 000058 (the job outbox).
--
-- app.job_send looked pgboss.job up by the job's id before every insert, so that an outbox
-- operation applied twice sends nothing more; every job queued on one PostgreSQL paid that
-- look-up, for a case only the outbox has. It now looks only when its insert added nothing.
--
-- app.drain_job_outbox read the workspace's operations, applied them, then deleted them: two
-- drains at once (a request's and the worker's sweep) could both read and apply the same ones.
-- It now takes them with one DELETE ... RETURNING (one statement on the workspace's shard), so a
-- second drain waits for the first and finds them gone.

CREATE OR REPLACE FUNCTION app.job_send(p_id uuid, p_name text, p_data jsonb, p_start_after timestamp with time zone, p_singleton_key text, p_on_taken text)
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
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy,
    dead_letter, heartbeat_seconds)
  values (p_id, p_name, p_data, 0, p_start_after, p_singleton_key, null, null, null,
    v_queue.expire_seconds, v_queue.deletion_seconds, p_start_after + v_queue.retention_seconds * interval '1 second',
    v_queue.retry_limit, v_queue.retry_delay, v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy,
    v_queue.dead_letter, v_queue.heartbeat_seconds)
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  -- Sent already (an outbox operation applied twice): nothing more.
  if v_rows = 1 or exists (select 1 from pgboss.job j where j.name = p_name and j.id = p_id) then
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
  -- The workspace's operations, taken (deleted, so a concurrent drain waits and finds none) and
  -- read into a value in one statement, then applied in order (no statement inside a loop over
  -- an open query on a distributed table).
  with o as (delete from app.job_outbox o where o.workspace_id = p_workspace_id
             returning o.seq, o.op, o.job_id, o.name, o.data, o.start_after, o.singleton_key, o.on_taken, o.guard)
  select coalesce(jsonb_agg(jsonb_build_object('seq', o.seq, 'op', o.op, 'jobId', o.job_id, 'name', o.name, 'data', o.data,
           'startAfter', o.start_after, 'singletonKey', o.singleton_key, 'onTaken', o.on_taken, 'guard', o.guard) order by o.seq), '[]')
  into v_ops
  from o;
  for v in select e from jsonb_array_elements(v_ops) e loop
    if v.e ->> 'op' = 'send' then
      perform app.job_send((v.e ->> 'jobId')::uuid, v.e ->> 'name', v.e -> 'data', (v.e ->> 'startAfter')::timestamptz,
        v.e ->> 'singletonKey', v.e ->> 'onTaken');
    else
      perform app.job_cancel(v.e ->> 'name', (v.e ->> 'jobId')::uuid, nullif(v.e -> 'guard', 'null'::jsonb));
    end if;
    v_n := v_n + 1;
  end loop;
  return v_n;
end
$function$;
