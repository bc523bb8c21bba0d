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
