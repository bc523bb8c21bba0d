-- A platform's rate limit puts the edition back until its reset
-- (app.publish_record_rate_limited, db/migrations/committed/000031-publishing-to-real-platforms.sql, split 20-publish-real-platforms.sql):
-- the attempt ends transient with the platform's answer, the job starts again at the reset on a
-- new job attempt number (app.publish_defer_job), no run attempt is spent, and a reset beyond a
-- day, or in the past, is brought within bounds; the integration's rate window, where its
-- limits have one, is full until the reset, so its other editions are put back by the claim
-- without an attempt. Worker only.
begin;
select plan(16);
-- @include personas.sql
-- @include content.sql
-- @include due.sql

create function pg_temp.claim(p_label text) returns uuid
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.publish_claim_batch(jsonb_build_array(jsonb_build_object('jobId', (select publish_job_id from app.content_items where id = pg_temp.id(p_label)),
         'contentId', pg_temp.id(p_label), 'workspaceId', (select workspace_id from app.content_items where id = pg_temp.id(p_label)))), '{sandbox}');
  reset role;
  return (v #>> '{claims,0,attemptId}')::uuid;
end
$$;
create function pg_temp.limited(p_attempt uuid, p_at timestamptz) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.publish_record_rate_limited((select x.workspace_id from app.publish_attempts x where x.id = p_attempt), p_attempt, 'Too many requests (429)', p_at);
  reset role;
  return v;
end
$$;
create function pg_temp.job(p_label text) returns pgboss.job
language sql as $$ select j.* from pgboss.job j join app.content_items i on j.id = i.publish_job_id where i.id = pg_temp.id(p_label) $$;

select pg_temp.due('r1'), pg_temp.due('r2'), pg_temp.due('r3');
create temp table j1 as select * from pg_temp.job('r1');
create temp table a1 as select pg_temp.claim('r1') as id;
create temp table reset_at as select clock_timestamp() + interval '30 seconds' as at;

select is(pg_temp.limited((select id from a1), (select at from reset_at)) ->> 'action', 'retry', 'a rate-limited attempt is recorded as a retry');
select is((select outcome || ': ' || error from app.publish_attempts where id = (select id from a1)), 'transient: Too many requests (429)',
  'the attempt ends transient with the platform''s answer');
select is((select state from app.publishing_states where content_item_id = pg_temp.id('r1')), 'retrying', 'the edition is retrying');
select is((select next_attempt_at from app.publishing_states where content_item_id = pg_temp.id('r1')), (select at from reset_at),
  '... next at the platform''s reset, not after the backoff');
select is((select run_attempts from app.publishing_states where content_item_id = pg_temp.id('r1')), 0, 'no run attempt is spent');
select is(((pg_temp.job('r1')).state::text, (pg_temp.job('r1')).start_after), ('retry'::text, (select at from reset_at)),
  'the job goes back to start at the reset');
select is((pg_temp.job('r1')).retry_count - (select retry_count from j1), 1, '... on a new job attempt number (the batch cannot complete it)');
select is((pg_temp.job('r1')).retry_limit - (select retry_limit from j1), 1, '... without spending the job''s retry limit');
select is(pg_temp.limited((select id from a1), (select at from reset_at)) ->> 'reason', 'attempt already finished', 'a second record of the attempt is ignored');

-- The channel has a rate window (an operator's limit here; X's and LinkedIn's own otherwise).
insert into app.integration_publish_limits (integration_id, organization_id, workspace_id, max_per_window, window_seconds)
values (pg_temp.id('ig:A1.li'), pg_temp.id('A'), pg_temp.id('A1'), 50, 60);
select pg_temp.due('w1', 'ig:A1.li'), pg_temp.due('w2', 'ig:A1.li');
create temp table w_reset as select clock_timestamp() + interval '20 seconds' as at;
select pg_temp.limited(pg_temp.claim('w1'), (select at from w_reset));
select is((select (used, window_start + interval '60 seconds') from app.publish_windows where scope = 'integration' and key = pg_temp.id('ig:A1.li')::text),
  (50, (select at from w_reset)), 'the integration''s window is full until the reset');
create temp table w2 as select app.publish_claim_batch(jsonb_build_array(jsonb_build_object('jobId', (select publish_job_id from app.content_items where id = pg_temp.id('w2')),
  'contentId', pg_temp.id('w2'), 'workspaceId', pg_temp.id('A1'))), '{sandbox}') #> '{claims,0}' as c;
select is((select c ->> 'action' from w2), 'deferred', 'another edition of the integration is put back by the claim');
select ok((select (c ->> 'until')::timestamptz >= (select at from w_reset) from w2), '... until the reset at the earliest');
select is((select count(*)::int from app.publish_attempts where content_item_id = pg_temp.id('w2')), 0, '... without an attempt');

select pg_temp.limited(pg_temp.claim('r2'), clock_timestamp() + interval '3 days');
select ok((select next_attempt_at from app.publishing_states where content_item_id = pg_temp.id('r2')) <= clock_timestamp() + interval '1 day',
  'a reset more than a day ahead waits a day at most');
select pg_temp.limited(pg_temp.claim('r3'), now() - interval '1 hour');
select ok((select next_attempt_at from app.publishing_states where content_item_id = pg_temp.id('r3')) >= now(), 'a reset in the past goes again now');

set local role pressroom_api;
select throws_ok($$ select app.publish_record_rate_limited(gen_random_uuid(), gen_random_uuid(), 'x', now()) $$, '42501', null, 'a request cannot record a publish outcome');
reset role;

select * from finish();
rollback;
