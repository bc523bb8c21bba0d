--! Previous: sha1:ce6182ba1d564be52b919d9bd871255ec38c0349
--! Hash: sha1:6d34065e3783412670c58611400093ae96bbd68d
--! Message: deferred publish jobs on a new attempt number

--! split: 01-current.sql
-- A deferred publish job can never be completed by the batch that deferred it.
--
-- app.publish_defer_job (migration 000011) put an edition's job back in the
-- queue with its retry_count unchanged and started_on cleared. pg-boss fences
-- a batch's completion on (id, retry_count) of the jobs it fetched, and its
-- fetch only counts a retry when started_on is set; so when the job came due
-- again and the worker's other fetch loop took it while the deferring batch was
-- still sending its other editions, that batch's completion matched the job
-- and completed it. If the second claim deferred it again, the edition stayed
-- scheduled with a completed job and no attempt (seen in
-- tests/api/publish-crash.test.ts). Deferral now moves the job to a new
-- attempt number (retry_count + 1, with retry_limit + 1 so a deferral never
-- spends the job's failure budget): the deferring batch's completion no longer
-- matches it.
create or replace function app.publish_defer_job(p_job_id uuid, p_until timestamptz)
returns void
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
begin
  -- plpgsql: pgboss.job is created by pg-boss after the migrations.
  update pgboss.job set state = 'retry', start_after = p_until, started_on = null,
    retry_count = retry_count + 1, retry_limit = retry_limit + 1
  where name = 'content.publish' and id = p_job_id and state = 'active';
end
$$;
comment on function app.publish_defer_job(uuid, timestamptz) is 'Puts an active content.publish job back to start at the given time (an edition over a publish limit), on a new attempt number so the batch that deferred it cannot complete it (pg-boss fences completion on id and retry_count); a deferral does not spend the job''s retry limit.';

select app.harden_api_functions();
