-- app.enqueue_job (db/migrations/committed/000037-one-helper-enqueues-pg-boss-jobs.sql): the one way
-- SQL queues pg-boss jobs, through app.job_send, the one function that writes them
-- (000058). It is pinned to the pg-boss schema it was written for; its jobs carry
-- the options of their queue as pg-boss's send writes them; a singleton the queue
-- refuses adds nothing and returns null (or raises, or advances the queued job, as
-- the caller says); the four rules that queue jobs in the transaction of a change go
-- through it, and nothing else inserts into pg-boss's tables; only its owner may call
-- it. Where pg-boss is not (a Citus worker) the operations go to the workspace's
-- outbox, app.job_outbox, which app.drain_job_outbox applies in order (000058).
begin;
select plan(36);
-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.act_as, pg_temp.sqlerr, ...:
-- @include personas.sql
-- Channels of A1 (ig:A1.x, ...):
-- @include content.sql
-- pg_temp.due(label, p_fetched => false): a scheduled edition with its publish job:
-- @include due.sql

------------------------------------------------------------------------------
-- The pg-boss schema app.enqueue_job was written for.
------------------------------------------------------------------------------
select is((select max(version) from pgboss.version), 43,
  'pg-boss schema version 43 (pg-boss 12.35.0): after an upgrade, re-check app.job_send (db/migrations/committed/000058-jobs-through-the-workspace-outbox.sql) against insertJobs in node_modules/pg-boss/dist/plans.js, then update this pin');
select is(
  array(select attname || ' ' || format_type(atttypid, atttypmod) from pg_attribute
        where attrelid = 'pgboss.job'::regclass and attnum > 0 and not attisdropped order by attnum),
  array['id uuid', 'name text', 'priority integer', 'data jsonb', 'state pgboss.job_state', 'retry_limit integer',
        'retry_count integer', 'retry_delay integer', 'retry_backoff boolean', 'retry_delay_max integer',
        'expire_seconds integer', 'deletion_seconds integer', 'singleton_key text',
        'singleton_on timestamp without time zone', 'group_id text', 'group_tier text',
        'start_after timestamp with time zone', 'created_on timestamp with time zone',
        'started_on timestamp with time zone', 'completed_on timestamp with time zone',
        'keep_until timestamp with time zone', 'output jsonb', 'dead_letter text', 'policy text',
        'heartbeat_on timestamp with time zone', 'heartbeat_seconds integer', 'blocked boolean', 'blocking boolean',
        'pending_dependencies integer', 'source_name text', 'source_id uuid',
        'source_created_on timestamp with time zone', 'source_retry_count integer', 'source_output jsonb',
        'source_root_id uuid'],
  'pgboss.job has the columns app.job_send was written for (it writes id .. heartbeat_seconds and leaves the rest to their defaults): a new or changed column means re-checking app.job_send');
select is(
  array(select name from pgboss.queue
        where name in ('inbox.fold', 'inbox.action', 'analytics.report', 'content.publish', 'webhooks.deliver') and notify
        order by 1),
  '{}'::text[],
  'none of the queues written from SQL is a notify queue (app.job_send sends no pg_notify: its jobs would wait for the poll)');

------------------------------------------------------------------------------
-- Who may call it.
------------------------------------------------------------------------------
select ok((select bool_and(p.prosecdef and pg_get_userbyid(p.proowner) = 'pressroom_definer'
                           and exists (select 1 from unnest(p.proconfig) c where c like 'search_path=pg_catalog%'))
           from pg_proc p where p.oid in ('app.enqueue_job(uuid, text, jsonb, timestamptz, text, text)'::regprocedure,
                                          'app.job_send(uuid, text, jsonb, timestamptz, text, text)'::regprocedure)),
  'app.enqueue_job and app.job_send are security definer, owned by pressroom_definer (who may insert into pgboss.job), search_path pinned');
select is(
  array(select r from unnest(array['pressroom_api', 'pressroom_worker', 'pressroom_request', 'pressroom_app', 'pressroom_bi', 'public']) r
        where has_function_privilege(r, 'app.enqueue_job(uuid, text, jsonb, timestamptz, text, text)', 'execute') order by 1),
  '{}'::text[],
  'no role but its owner may execute app.enqueue_job: requests and jobs reach it only through the four rules');
select is(
  array(select r from unnest(array['pressroom_worker', 'pressroom_request', 'pressroom_app', 'pressroom_bi', 'public']) r
        where has_function_privilege(r, 'app.job_send(uuid, text, jsonb, timestamptz, text, text)', 'execute') order by 1),
  '{}'::text[],
  'app.job_send: its owner, and pressroom_api for a request''s outbox (api.drain_job_outbox), only');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select app.enqueue_job(null, 'inbox.action', '{}')$$), '42501', 'pressroom_api cannot call app.enqueue_job directly');
select pg_temp.act_as_owner();

------------------------------------------------------------------------------
-- The one writer of pg-boss jobs.
------------------------------------------------------------------------------
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.oid in ('app.inbox_enqueue(text, jsonb, text)'::regprocedure, 'app.webhook_enqueue(uuid, timestamptz, uuid)'::regprocedure,
                        'app.tg_analytics_reports_job()'::regprocedure, 'app.tg_content_items_publish_job()'::regprocedure)
          and (pg_get_functiondef(p.oid) not like '%app.enqueue_job(%'
               or pg_get_functiondef(p.oid) ~* 'insert\s+into\s+"?pgboss"?\.')
        order by 1),
  '{}'::text[],
  'app.inbox_enqueue, app.webhook_enqueue, app.tg_analytics_reports_job and app.tg_content_items_publish_job queue their jobs through app.enqueue_job');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace <> 'pgboss'::regnamespace and p.prokind in ('f', 'p')
          and p.oid <> 'app.job_send(uuid, text, jsonb, timestamptz, text, text)'::regprocedure
          and p.prosrc ~* 'insert\s+into\s+"?pgboss"?\.'
        order by 1),
  '{}'::text[],
  'no function outside pg-boss''s own but app.job_send inserts into a pgboss table');
select throws_ok($$select app.enqueue_job(null, 'no.such-queue', '{}')$$, 'P0001',
  'pg-boss queue no.such-queue is not installed (server/jobs/queues.ts installQueues)',
  'a queue pg-boss does not know is refused by name');

------------------------------------------------------------------------------
-- Jobs carry their queue's options, as pg-boss's send writes them. The
-- queues get options of their own first (none of pg-boss's defaults), so a
-- value taken from the wrong place shows.
------------------------------------------------------------------------------
update pgboss.queue q
set retry_limit = 5 + v.x, retry_delay = 2 + v.x, retry_backoff = true, retry_delay_max = 60 + v.x,
    expire_seconds = 100 + v.x, retention_seconds = 1000 + v.x, deletion_seconds = 500 + v.x,
    heartbeat_seconds = 30 + v.x, dead_letter = 'webhooks.purge'
from (values ('inbox.fold', 1), ('inbox.action', 2), ('analytics.report', 3), ('content.publish', 4),
             ('webhooks.deliver', 5)) v (name, x)
where q.name = v.name;
-- What a job says of its options, and what its queue says they are.
create function pg_temp.options(p_job uuid) returns text
language sql as $$
  select format('%s: priority %s; retry %s, %s, %s, %s; expire %s; delete %s; keep %s; policy %s; dead letter %s; heartbeat %s; state %s; singleton_on %s; group %s %s; blocked %s %s %s',
    j.name, j.priority, j.retry_limit, j.retry_delay, j.retry_backoff, j.retry_delay_max, j.expire_seconds,
    j.deletion_seconds, j.keep_until - j.start_after, j.policy, j.dead_letter, j.heartbeat_seconds, j.state,
    j.singleton_on, j.group_id, j.group_tier, j.blocked, j.blocking, j.pending_dependencies)
  from pgboss.job j where j.id = p_job
$$;
create function pg_temp.queue_options(p_name text) returns text
language sql as $$
  select format('%s: priority %s; retry %s, %s, %s, %s; expire %s; delete %s; keep %s; policy %s; dead letter %s; heartbeat %s; state %s; singleton_on %s; group %s %s; blocked %s %s %s',
    q.name, 0, q.retry_limit, q.retry_delay, q.retry_backoff, q.retry_delay_max, q.expire_seconds,
    q.deletion_seconds, q.retention_seconds * interval '1 second', q.policy, q.dead_letter, q.heartbeat_seconds,
    'created', null, null, null, false, false, 0)
  from pgboss.queue q where q.name = p_name
$$;

-- Each queue's job, written by its rule as the role that runs it.
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.fold', app.inbox_enqueue('inbox.fold', jsonb_build_object('integrationId', pg_temp.id('ig:A1.x')),
                                                  pg_temp.id('ig:A1.x')::text)::text, true);
select set_config('test.action', app.inbox_enqueue('inbox.action', '{"action": "reply"}', null)::text, true);
select pg_temp.act_as_owner();
update app.organizations set plan = 'standard' where id = pg_temp.id('A');
select pg_temp.act_as('A.viewer', 'A1');
select set_config('test.report', api.create_analytics_report('2026-01-01', '2026-01-07', null) ->> 'id', true);
select pg_temp.act_as_owner();
select pg_temp.due('c1', p_fetched => false);
set local role pressroom_worker;
select set_config('test.webhook', app.webhook_enqueue(pg_temp.id('sub:1'), now() + interval '1 hour')::text, true);
reset role;

select is(pg_temp.options(current_setting('test.fold')::uuid), pg_temp.queue_options('inbox.fold'),
  'app.inbox_enqueue: the inbox.fold job has its queue''s options');
select is(pg_temp.options(current_setting('test.action')::uuid), pg_temp.queue_options('inbox.action'),
  'app.inbox_enqueue: the inbox.action job has its queue''s options');
select is(pg_temp.options((select job_id from app.analytics_reports where id = current_setting('test.report')::uuid)),
  pg_temp.queue_options('analytics.report'),
  'trigger analytics_reports_30_job: the analytics.report job has its queue''s options');
select is(pg_temp.options((select publish_job_id from app.content_items where id = pg_temp.id('c1'))),
  pg_temp.queue_options('content.publish'),
  'trigger content_items_30_publish_job: the content.publish job has its queue''s options');
select is(pg_temp.options(current_setting('test.webhook')::uuid), pg_temp.queue_options('webhooks.deliver'),
  'app.webhook_enqueue: the webhooks.deliver job has its queue''s options');

------------------------------------------------------------------------------
-- Singletons: what the queue's policy refuses adds nothing and returns null.
------------------------------------------------------------------------------
set local role pressroom_worker;
select is(app.webhook_enqueue(pg_temp.id('sub:1')), null,
  'webhooks.deliver (stately): a second job of the subscription adds nothing, app.webhook_enqueue returns null');
reset role;
set local role pressroom_definer;
select is(app.enqueue_job(null, 'inbox.fold', '{}', now(), pg_temp.id('ig:A1.x')::text), null,
  'inbox.fold (stately): a second queued job of the integration is refused, app.enqueue_job returns null');
select is((select count(*)::int from pgboss.job where name = 'inbox.fold' and singleton_key = pg_temp.id('ig:A1.x')::text), 1,
  '... and one job of the integration stays queued');
select app.enqueue_job(null, 'inbox.action', '{}', now(), 'same');
select app.enqueue_job(null, 'inbox.action', '{}', now(), 'same');
select is((select count(*)::int from pgboss.job where name = 'inbox.action' and singleton_key = 'same'), 2,
  'inbox.action (standard): the same singleton key twice makes two jobs, as send does');
reset role;
-- A queue with its own partition of pgboss.job (partition: true): the row lands there, and its policy holds.
select pgboss.create_queue('test.partitioned', '{"policy": "stately", "partition": true}');
set local role pressroom_definer;
select is(array[app.enqueue_job(null, 'test.partitioned', '{}', now(), 'k') is not null,
                app.enqueue_job(null, 'test.partitioned', '{}', now(), 'k') is null],
  array[true, true], 'a stately queue with a partition of its own: the second job of a key is refused (null)');
reset role;
select is((select array_agg(j.tableoid::regclass::text) from pgboss.job j where j.name = 'test.partitioned'),
  (select array[format('pgboss.%I', q.table_name)] from pgboss.queue q where q.name = 'test.partitioned'),
  '... and its one job is in the queue''s own partition');

-- The two triggers keep their job id: should their queue ever refuse the job,
-- the change fails as the insert into pgboss.job failed before (23505).
update pgboss.queue set policy = 'stately' where name in ('analytics.report', 'content.publish');
set local role pressroom_definer;
select app.enqueue_job(null, 'analytics.report', '{}', now(), pg_temp.id('report:taken')::text);
select app.enqueue_job(null, 'content.publish', '{}', now(), pg_temp.id('c2')::text);
reset role;
select is(pg_temp.sqlerr(format($$insert into app.analytics_reports (id, organization_id, workspace_id, period_from, period_to)
                                  values (%L, %L, %L, '2026-01-01', '2026-01-07')$$,
                                 pg_temp.id('report:taken'), pg_temp.id('A'), pg_temp.id('A1'))),
  '23505', 'a report whose job the queue refuses is not written');
select is(pg_temp.sqlerr($$select pg_temp.due('c2', p_fetched => false)$$), '23505',
  'an edition whose publish job the queue refuses is not scheduled');

------------------------------------------------------------------------------
-- The workspace's outbox (000058): what a trigger on a Citus worker writes
-- instead, applied here as the coordinator does, by app.drain_job_outbox. On
-- one PostgreSQL nothing writes it: scheduling above left it empty.
------------------------------------------------------------------------------
select is((select count(*)::int from app.job_outbox), 0, 'on one PostgreSQL the jobs went to pg-boss at once: the outbox is empty');
select ok(app.jobs_here(), 'pg-boss is here (app.jobs_here)');
update pgboss.queue set policy = 'standard' where name in ('analytics.report', 'content.publish');
insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, data, start_after, singleton_key, on_taken)
values (pg_temp.id('A1'), pg_temp.id('A'), 'send', pg_temp.id('job:o1'), 'inbox.action', '{"n": 1}', now() + interval '1 minute', null, 'nothing'),
       (pg_temp.id('A1'), pg_temp.id('A'), 'cancel', pg_temp.id('job:o1'), 'inbox.action', null, null, null, null),
       (pg_temp.id('A1'), pg_temp.id('A'), 'send', pg_temp.id('job:o2'), 'inbox.action', '{"n": 2}', now(), null, 'nothing'),
       (pg_temp.id('B1'), pg_temp.id('B'), 'send', pg_temp.id('job:o3'), 'inbox.action', '{"n": 3}', now(), null, 'nothing');
-- A request of A1 applies its own workspace's, in order, as the request's role.
select pg_temp.act_as('A.editor', 'A1');
select is(api.drain_job_outbox(), 3, 'api.drain_job_outbox applies the request''s workspace''s three operations');
select pg_temp.act_as_owner();
select is((select array_agg(format('%s %s %s', j.data ->> 'n', j.state, j.id = pg_temp.id('job:o' || (j.data ->> 'n'))) order by j.data ->> 'n')
           from pgboss.job j where j.name = 'inbox.action' and j.data ? 'n'),
  array['1 cancelled t', '2 created t'],
  'in order, with the ids chosen up front: the first job sent and then cancelled, the second sent');
select is((select array_agg(workspace_id) from app.job_outbox), array[pg_temp.id('B1')], 'A1''s operations are gone, B1''s stay');
select is(app.drain_job_outboxes(), 1, 'the worker''s sweep applies the rest');
select is(app.job_send(pg_temp.id('job:o3'), 'inbox.action', '{"n": 3}', now(), null, 'raise'), pg_temp.id('job:o3'),
  'an operation applied twice sends nothing more (the job exists: its id)');
select is((select count(*)::int from pgboss.job where id = pg_temp.id('job:o3')), 1, '... B1''s job');
-- A singleton taken: raise fails the drain (and the request with it); advance makes the queued job due sooner.
update pgboss.queue set policy = 'stately' where name = 'webhooks.deliver';
select app.job_send(pg_temp.id('job:w1'), 'webhooks.deliver', '{}', now() + interval '1 hour', 'sub:x', 'nothing');
insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, data, start_after, singleton_key, on_taken)
values (pg_temp.id('A1'), pg_temp.id('A'), 'send', pg_temp.id('job:w2'), 'webhooks.deliver', '{}', now() + interval '1 minute', 'sub:x', 'advance');
select is(app.drain_job_outbox(pg_temp.id('A1')), 1, 'a send whose singleton is taken, with advance, is applied');
select ok((select start_after < now() + interval '2 minutes' from pgboss.job where id = pg_temp.id('job:w1')),
  '... and the queued job is due no later than asked');
insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, data, start_after, singleton_key, on_taken)
values (pg_temp.id('A1'), pg_temp.id('A'), 'send', pg_temp.id('job:w3'), 'webhooks.deliver', '{}', now(), 'sub:x', 'raise');
select is(pg_temp.sqlerr($$select app.drain_job_outbox(pg_temp.id('A1'))$$), '23505', 'with raise, the drain fails as the insert did (23505)');
delete from app.job_outbox;
-- A cancel with a guard of a running job: the 409 it names.
update pgboss.job set state = 'active', started_on = now() where id = pg_temp.id('job:o3');
insert into app.job_outbox (workspace_id, organization_id, op, job_id, name, guard)
values (pg_temp.id('B1'), pg_temp.id('B'), 'cancel', pg_temp.id('job:o3'), 'inbox.action',
        '{"code": "PUBLISHING_IN_PROGRESS", "message": "running", "details": {}}');
select is(pg_temp.sqlerr($$select app.drain_job_outbox(pg_temp.id('B1'))$$), 'PT409 PUBLISHING_IN_PROGRESS',
  'a guarded cancel of a running job raises the guard''s 409');
select is(
  array(select r from unnest(array['pressroom_request', 'pressroom_app', 'pressroom_bi', 'public']) r
        where has_function_privilege(r, 'app.drain_job_outbox(uuid)', 'execute') order by 1),
  '{}'::text[], 'requests reach the outbox through api.drain_job_outbox only');

select * from finish();
rollback;
