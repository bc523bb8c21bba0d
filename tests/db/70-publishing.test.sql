-- Publishing engine in the database (app.publish_claim, app.publish_record
-- and the api.* publishing functions in db/schema.sql): the claim records
-- the attempt before the platform is called and is refused twice, outcomes
-- move statuses, transient failures put the job back with backoff, unknown
-- outcomes await confirmation, locks while a job runs, and the personas of
-- the routes' functions.
begin;
select plan(42);
-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql
-- The retry policy in force (app.settings): 3 attempts, 1 s doubled.
update app.settings set value = '3' where key = 'publish_max_attempts';
update app.settings set value = '1000' where key = 'publish_retry_base_ms';

-- Channels (integrations) of A1 and B1 and media of A1:
-- @include content.sql


-- Scheduled editions due now with their live jobs (written as the owner, triggers on), the
-- jobs left created (p_fetched => false): pg_temp.due of tests/db/support/due.sql.
-- @include due.sql
create function pg_temp.job(p_label text) returns uuid
language sql as $$ select publish_job_id from app.content_items where id = pg_temp.id(p_label) $$;
create function pg_temp.as_worker() returns void
language plpgsql as $$ begin perform pg_temp.act_as_owner(); set local role pressroom_worker; end $$;
-- The job a worker took (pg-boss marks it active before the handler runs).
create function pg_temp.take(p_label text) returns void
language sql as $$ update pgboss.job set state = 'active', started_on = now() where id = pg_temp.job(p_label) $$;
-- The workspace of a labelled edition (the engine's helpers take it with the id).
create function pg_temp.ws_of(p_label text) returns uuid
language sql as $$ select workspace_id from app.content_items where id = pg_temp.id(p_label) $$;
create function pg_temp.claim(p_label text, p_resendable text[] default '{sandbox}') returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.as_worker();
  v := app.publish_claim(pg_temp.ws_of(p_label), pg_temp.id(p_label), pg_temp.job(p_label), p_resendable);
  perform pg_temp.act_as_owner();
  return v;
end
$$;
create function pg_temp.record(p_attempt uuid, p_outcome text, p_error text default null, p_post text default null) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.as_worker();
  v := app.publish_record((select a.workspace_id from app.publish_attempts a where a.id = p_attempt), p_attempt, p_outcome, p_error, p_post, case when p_post is not null then 'https://p.example/' || p_post end);
  perform pg_temp.act_as_owner();
  return v;
end
$$;
create function pg_temp.state(p_label text) returns text
language sql as $$ select app.publishing_json(pg_temp.id(p_label)) ->> 'state' $$;

select pg_temp.due('p1', p_fetched => false);
select pg_temp.due('p2', p_fetched => false);
select pg_temp.due('p3', p_fetched => false);
select pg_temp.due('p4', p_fetched => false);
select pg_temp.due('p5', p_fetched => false);
select pg_temp.due('p6', p_fetched => false);
select pg_temp.take(x) from unnest(array['p1', 'p2', 'p3', 'p4', 'p5', 'p6']) x;

-- Queued before any attempt.
select is(pg_temp.state('p1'), 'queued', 'a scheduled edition with its job is queued');
select is((app.publishing_json(pg_temp.id('p1'))) ->> 'attempts', '0', '... with no attempts');

-- Claim: only with the edition's own job.
select pg_temp.as_worker();
select is(app.publish_claim(pg_temp.ws_of('p1'), pg_temp.id('p1'), gen_random_uuid(), '{}') ->> 'reason', 'stale job', 'another job id is refused');
select pg_temp.act_as_owner();

create temp table c1 as select pg_temp.claim('p1') as c;
select is((select c ->> 'action' from c1), 'send', 'the first claim sends');
select is((select count(*)::int from app.publish_attempts where content_item_id = pg_temp.id('p1') and finished_at is null), 1,
  'the attempt is recorded (open) before the platform is called');
select ok((select c ->> 'token' from c1) like 'pr_%', 'the attempt carries an idempotency token');
select is((select c #>> '{edition,caption}' from c1), 'hello p1', 'the claim hands over the effective edition');
select is(pg_temp.state('p1'), 'publishing', 'state publishing while the attempt is open');

-- A second claim while the attempt is open (its worker died): a connector
-- that takes the token re-sends the same attempt; one that does not, does not.
create temp table c1b as select pg_temp.claim('p1', '{sandbox}') as c;
select is((select c ->> 'action' from c1b), 'send', 'an open attempt on a token-taking connector is re-sent...');
select is((select (c ->> 'resend')::boolean from c1b), true, '... marked as a re-send');
select is((select c ->> 'attemptId' from c1b), (select c ->> 'attemptId' from c1), '... as the same attempt');
select is((select c ->> 'token' from c1b), (select c ->> 'token' from c1), '... with the same token');
select is((select count(*)::int from app.publish_attempts where content_item_id = pg_temp.id('p1')), 1, '... and no second attempt');

select pg_temp.claim('p2');
select is(pg_temp.claim('p2', '{}') ->> 'action', 'skip', 'an open attempt on a connector without tokens is not sent again');
select is(pg_temp.state('p2'), 'awaiting_confirmation', '... the edition awaits confirmation');
select is((select outcome from app.publish_attempts where content_item_id = pg_temp.id('p2')), 'unknown', '... the attempt is closed as unknown');
select is(pg_temp.claim('p2', '{sandbox}') ->> 'reason', 'awaiting confirmation', 'a claim never sends what awaits confirmation');

-- Outcomes.
select pg_temp.record((select (c ->> 'attemptId')::uuid from c1), 'published', null, 'post-1');
select is((select status from app.content_items where id = pg_temp.id('p1')), 'sent', 'published: sent');
select is((select platform_post_id || ' ' || permalink from app.content_items where id = pg_temp.id('p1')), 'post-1 https://p.example/post-1', '... with post id and permalink');
select ok((select sent_at is not null from app.content_items where id = pg_temp.id('p1')), '... and sentAt');
select is(pg_temp.state('p1'), 'published', '... state published');
select is(pg_temp.claim('p1') ->> 'action', 'skip', 'a sent edition is never claimed again');

create temp table c3 as select pg_temp.claim('p3') as c;
select pg_temp.record((select (c ->> 'attemptId')::uuid from c3), 'failed', 'refused for good');
select is((select status || ': ' || error from app.content_items where id = pg_temp.id('p3')), 'failed: refused for good', 'a permanent failure: failed with the reason');

create temp table c4 as select pg_temp.claim('p4') as c;
select is(pg_temp.record((select (c ->> 'attemptId')::uuid from c4), 'transient', 'try later') ->> 'action', 'retry', 'transient: retried');
select is((select state::text from pgboss.job where id = pg_temp.job('p4')), 'retry', '... the same job goes back to retry');
select ok((select start_after between now() + interval '0.9 s' and clock_timestamp() + interval '1.1 s' from pgboss.job where id = pg_temp.job('p4')),
  '... after PUBLISH_RETRY_BASE_MS (first retry)');
select is(pg_temp.state('p4'), 'retrying', '... state retrying');
select is((select status from app.content_items where id = pg_temp.id('p4')), 'scheduled', '... still scheduled');
select pg_temp.take('p4');
create temp table c4b as select pg_temp.claim('p4') as c;
select is((select (c ->> 'runAttempt')::int from c4b), 2, 'the retry is attempt 2 of the run');
select pg_temp.record((select (c ->> 'attemptId')::uuid from c4b), 'transient', 'try later');
select ok((select start_after > clock_timestamp() + interval '1.5 s' from pgboss.job where id = pg_temp.job('p4')), 'backoff doubles');
select pg_temp.take('p4');
create temp table c4c as select pg_temp.claim('p4') as c;
select is(pg_temp.record((select (c ->> 'attemptId')::uuid from c4c), 'transient', 'still down') ->> 'status', 'failed',
  'transient at the last attempt (PUBLISH_MAX_ATTEMPTS): failed');

create temp table c5 as select pg_temp.claim('p5') as c;
select pg_temp.record((select (c ->> 'attemptId')::uuid from c5), 'unknown', 'timed out');
select is((select status from app.content_items where id = pg_temp.id('p5')), 'scheduled', 'unknown: stays scheduled');
select is(pg_temp.state('p5'), 'awaiting_confirmation', '... awaiting confirmation');

-- Locks: the job is active (a worker holds it): no revert, no delete.
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'draft' where id = %L$$, pg_temp.id('p6'))),
  'PT409 PUBLISHING_IN_PROGRESS', 'revert while publishing: 409 PUBLISHING_IN_PROGRESS');
select is(pg_temp.sqlerr(format($$select api.delete_content(%L)$$, pg_temp.id('p6'))),
  'PT409 PUBLISHING_IN_PROGRESS', 'delete while publishing: 409 PUBLISHING_IN_PROGRESS');

-- Personas of the routes' functions.
select is(pg_temp.sqlerr(format($$select api.resolve_publishing_result(%L, '{"outcome":"published"}')$$, pg_temp.id('p6'))),
  'PT409 NOTHING_TO_RESOLVE', 'resolve on content that awaits nothing: 409');
select is(pg_temp.sqlerr(format($$select api.retry_content(%L)$$, pg_temp.id('p6'))),
  'PT400 INVALID_CONTENT_STATUS', 'retry of scheduled content: 400');
select is(pg_temp.sqlerr(format($$select api.resolve_publishing_result(%L, '{"outcome":"published","platformPostId":"x1"}')$$, pg_temp.id('p5'))),
  'ok', 'the editor resolves what awaits confirmation');
select is(pg_temp.sqlerr(format($$select app.publish_claim(%L, %L, gen_random_uuid(), '{}')$$, pg_temp.ws_of('p6'), pg_temp.id('p6'))),
  '42501', 'requests cannot claim');
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr(format($$select api.publish_content(%L)$$, pg_temp.id('p6'))), 'PT403 ROLE_REQUIRED', 'a viewer cannot publish');
select is((select app.publishing_json(pg_temp.id('p1')) ->> 'state'), 'published', 'a viewer reads the publishing state');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.sqlerr(format($$select api.retry_content(%L)$$, pg_temp.id('p3'))), 'PT404 NOT_FOUND', 'another organization: 404');
select pg_temp.act_as_owner();

select * from finish();
rollback;
