-- The batched publishing engine and its limits (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15a-publish-batch.sql):
-- app.publish_claim_batch claims a fetched batch in one statement (attempts
-- written with their integration and claim batch, refusals as for one edition),
-- app.publish_record_batch records a batch of outcomes, and the publish limits
-- a connector declares (app.declare_connector_limits) or an operator sets for
-- one integration (app.integration_publish_limits) put editions over them back
-- with a later start and no attempt, without holding back other integrations.
begin;
select plan(38);
-- @include personas.sql
-- @include content.sql

-- @include due.sql
create function pg_temp.jobs(p_labels text[]) returns jsonb
language sql as $$
  select jsonb_agg(jsonb_build_object('jobId', i.publish_job_id, 'contentId', i.id, 'workspaceId', i.workspace_id))
  from unnest(p_labels) l join app.content_items i on i.id = pg_temp.id(l)
$$;
create function pg_temp.claim_jobs(p_jobs jsonb) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.publish_claim_batch(p_jobs, '{sandbox}');
  reset role;
  return v;
end
$$;
create function pg_temp.claim_batch(p_labels text[]) returns jsonb
language sql as $$ select pg_temp.claim_jobs(pg_temp.jobs(p_labels)) $$;
create function pg_temp.action(p_batch jsonb, p_label text) returns text
language sql as $$
  select c ->> 'action' from jsonb_array_elements(p_batch -> 'claims') c where (c ->> 'contentId')::uuid = pg_temp.id(p_label)
$$;

select pg_temp.due(x, 'ig:A1.x') from unnest(array['a1', 'a2', 'a3', 'a4']) x;
select pg_temp.due(x, 'ig:A1.li') from unnest(array['b1', 'b2']) x;
-- One edition already sent: its stale job is refused in the batch as alone.
select pg_temp.due('gone', 'ig:A1.x');
update pgboss.job set state = 'created', started_on = null where id = (select publish_job_id from app.content_items where id = pg_temp.id('gone'));
update app.content_items set deleted_at = now() where id = pg_temp.id('gone');

-- No limits: the whole batch is claimed in one statement.
create temp table b1 as select pg_temp.claim_batch(array['a1', 'a2', 'b1', 'gone']) as v;
select is((select jsonb_array_length(v -> 'claims') from b1), 4, 'one claim per job of the batch');
select is((select pg_temp.action(v, 'a1') from b1), 'send', 'a due edition is claimed');
select is((select pg_temp.action(v, 'b1') from b1), 'send', '... of any integration');
select is((select pg_temp.action(v, 'gone') from b1), 'skip', 'a deleted edition is skipped, as by app.publish_claim');
select is((select count(*)::int from app.publish_attempts where claim_batch = (select (v ->> 'batch')::uuid from b1)), 3,
  'the attempts carry the claim batch');
select is((select count(*)::int from app.publish_attempts where content_item_id = pg_temp.id('a1') and integration_id = pg_temp.id('ig:A1.x')), 1,
  '... and their integration');
select is((select array_agg((c ->> 'contentId')::uuid order by n) from b1, jsonb_array_elements(v -> 'claims') with ordinality x (c, n)),
          (select array_agg(i.id order by i.integration_id, i.id) from app.content_items i
           where i.id in (pg_temp.id('a1'), pg_temp.id('a2'), pg_temp.id('b1'), pg_temp.id('gone'))),
          'claims come back integration by integration, editions by id (the order every worker locks in)');
select is((select jsonb_typeof(v -> 'media') from b1), 'array', 'the storage of the media to send comes with the batch');

-- Requests cannot claim or record batches.
select pg_temp.act_as('A.owner', 'A1');
select throws_ok($$select app.publish_claim_batch('[]', '{}')$$, '42501', null, 'a request cannot claim a batch');
select throws_ok($$select app.publish_record_batch('[]')$$, '42501', null, 'a request cannot record a batch');
select throws_ok($$select app.declare_connector_limits('{}')$$, '42501', null, 'a request cannot declare limits');
reset role;

-- The batch record: one statement, each outcome through app.publish_record.
select pg_temp.act_as_owner();
create temp table outcomes as
  select jsonb_agg(jsonb_build_object('attemptId', c ->> 'attemptId', 'workspaceId', c #>> '{edition,workspaceId}', 'outcome', case when c ->> 'contentId' = pg_temp.id('b1')::text then 'failed' else 'published' end,
    'error', case when c ->> 'contentId' = pg_temp.id('b1')::text then 'refused' end, 'platformPostId', 'p-' || (c ->> 'contentId'), 'permalink', null)) as v
  from b1, jsonb_array_elements(b1.v -> 'claims') c where c ->> 'action' = 'send';
create temp table r1 (v jsonb);
grant select on outcomes to pressroom_worker;
grant insert on r1 to pressroom_worker;
set local role pressroom_worker;
insert into r1 select app.publish_record_batch(v) from outcomes;
reset role;
select is((select jsonb_array_length(v) from r1), 3, 'one result per outcome');
select is((select status from app.content_items where id = pg_temp.id('a1')), 'sent', 'a published outcome sends the edition');
select is((select status from app.content_items where id = pg_temp.id('b1')), 'failed', 'a failed outcome fails it');
select is((select count(*)::int from app.publish_attempts where claim_batch = (select (v ->> 'batch')::uuid from b1) and finished_at is null), 0,
  'every attempt of the batch is finished');

-- Set-based claim and record (db/migrations/committed/000020-publish-throughput-set-based-claim-and-record.sql): the common case
-- together, every other edition exactly as alone, in one batch.
create function pg_temp.claim_of(p_batch jsonb, p_label text) returns jsonb
language sql as $$
  select c from jsonb_array_elements(p_batch -> 'claims') c where (c ->> 'contentId')::uuid = pg_temp.id(p_label)
$$;
select pg_temp.due(x, 'ig:A1.x') from unnest(array['m1', 'm2', 'm3', 'm4']) x;
-- m2 awaits the confirmation of its job's last attempt; the batch names a job for m3 that is not its own;
-- m4 has an attempt in flight (a worker died): the sandbox takes a re-send with the same token.
insert into app.publishing_states (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
select id, organization_id, workspace_id, publish_job_id, 'awaiting_confirmation', 1 from app.content_items where id = pg_temp.id('m2');
insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
  idempotency_token, integration_id)
select organization_id, workspace_id, id, 1, 1, publish_job_id, 'sandbox', 'pr_m4_token', integration_id
from app.content_items where id = pg_temp.id('m4');
create temp table b3 as select pg_temp.claim_jobs(pg_temp.jobs(array['m1', 'm2', 'm4'])
  || jsonb_build_array(jsonb_build_object('jobId', gen_random_uuid(), 'contentId', pg_temp.id('m3'), 'workspaceId', (select workspace_id from app.content_items where id = pg_temp.id('m3'))))) as v;
select is((select pg_temp.claim_of(v, 'm1') #>> '{action}' || ' ' || (pg_temp.claim_of(v, 'm1') #>> '{resend}')
                  || ' ' || (pg_temp.claim_of(v, 'm1') #>> '{attempt}') from b3), 'send false 1',
  'mixed batch: the common case is sent, a first attempt');
select is((select pg_temp.claim_of(v, 'm1') -> 'edition' from b3), app.publish_edition_json((select workspace_id from app.content_items where id = pg_temp.id('m1')), pg_temp.id('m1')),
  '... with the edition a claim alone sends');
select is((select (state, run_attempts, job_id = (select publish_job_id from app.content_items where id = pg_temp.id('m1')))::text
           from app.publishing_states where content_item_id = pg_temp.id('m1')), '(publishing,1,t)',
  '... its publishing state is this job''s first attempt');
select is((select pg_temp.claim_of(v, 'm2') ->> 'reason' from b3), 'awaiting confirmation',
  'an edition awaiting confirmation is skipped, as alone');
select is((select pg_temp.claim_of(v, 'm3') ->> 'reason' from b3), 'stale job', 'a job that is not the edition''s is skipped, as alone');
select is((select (pg_temp.claim_of(v, 'm4') ->> 'resend', pg_temp.claim_of(v, 'm4') ->> 'token')::text from b3), '(true,pr_m4_token)',
  'an attempt in flight is re-sent with its token, as alone');
select is((select count(*)::int from app.publish_attempts where content_item_id in (pg_temp.id('m1'), pg_temp.id('m2'), pg_temp.id('m3'), pg_temp.id('m4'))), 2,
  'attempts: one written for the common case, none for the skipped, the one in flight reused');
select is((select array_agg((c ->> 'contentId')::uuid order by n) from b3, jsonb_array_elements(v -> 'claims') with ordinality x (c, n)),
          array[pg_temp.id('m4')] || (select array_agg(i order by i) from unnest(array[pg_temp.id('m1'), pg_temp.id('m2'), pg_temp.id('m3')]) i),
  'claims come back in the order the editions are locked: in flight first, then by id');

-- Record: an unknown attempt, m4 and m1 published; answers in the order given.
create temp table outcomes2 as
  select jsonb_build_array(
    jsonb_build_object('attemptId', gen_random_uuid(), 'workspaceId', pg_temp.claim_of(v, 'm4') #>> '{edition,workspaceId}', 'outcome', 'published', 'platformPostId', 'p-x', 'permalink', null, 'error', null),
    jsonb_build_object('attemptId', pg_temp.claim_of(v, 'm4') ->> 'attemptId', 'workspaceId', pg_temp.claim_of(v, 'm4') #>> '{edition,workspaceId}', 'outcome', 'published', 'platformPostId', 'p-m4', 'permalink', 'https://x/m4', 'error', null),
    jsonb_build_object('attemptId', pg_temp.claim_of(v, 'm1') ->> 'attemptId', 'workspaceId', pg_temp.claim_of(v, 'm1') #>> '{edition,workspaceId}', 'outcome', 'published', 'platformPostId', 'p-m1', 'permalink', 'https://x/m1', 'error', null)) as v
  from b3;
create temp table r2 (v jsonb);
grant select on outcomes2 to pressroom_worker;
grant insert on r2 to pressroom_worker;
select pg_temp.act_as_owner();
set local role pressroom_worker;
insert into r2 select app.publish_record_batch(v) from outcomes2;
reset role;
select is((select array_agg(a ->> 'attemptId' order by n) from r2, jsonb_array_elements(r2.v) with ordinality x (a, n)),
          (select array_agg(o ->> 'attemptId' order by n) from outcomes2, jsonb_array_elements(outcomes2.v) with ordinality x (o, n)),
  'the record answers in the order of the outcomes');
select is((select array_agg(coalesce(a ->> 'status', a ->> 'reason') order by n) from r2, jsonb_array_elements(r2.v) with ordinality x (a, n)),
          array['no attempt', 'sent', 'sent'], '... an unknown attempt ignored, the published editions sent');
select is((select array_agg((status, platform_post_id, permalink)::text order by id) from app.content_items where id in (pg_temp.id('m1'), pg_temp.id('m4'))),
          (select array_agg(x order by i) from (values (pg_temp.id('m1'), '(sent,p-m1,https://x/m1)'), (pg_temp.id('m4'), '(sent,p-m4,https://x/m4)')) v (i, x)),
  '... with their post ids and permalinks');
select is((select array_agg((a.outcome, a.finished_at is not null, s.state)::text) from app.publish_attempts a
           join app.publishing_states s on s.content_item_id = a.content_item_id
           where a.content_item_id in (pg_temp.id('m1'), pg_temp.id('m4'))), array['(published,t,published)', '(published,t,published)'],
  '... their attempts finished, their publishing states published');
select pg_temp.act_as_owner();
set local role pressroom_worker;
select is(app.publish_record_batch((select jsonb_build_array(v -> 2) from outcomes2)) -> 0 ->> 'reason', 'attempt already finished',
  'a late second answer for a recorded attempt is ignored');
reset role;
select is((select sum(n)::int from app.content_item_counts where integration_id = pg_temp.id('ig:A1.x') and status = 'sent'),
          (select count(*)::int from app.content_items where integration_id = pg_temp.id('ig:A1.x') and status = 'sent' and deleted_at is null),
  'the list counters follow the editions sent together');

-- Limits: the sandbox declares 1 in flight per integration; linkedin's channel is lowered to 1 post per hour.
select pg_temp.act_as_owner();
set local role pressroom_worker;
select is(app.declare_connector_limits('{"sandbox": {"perIntegration": {"maxInFlight": 1}}}') #>> '{sandbox,integration_max_in_flight}', '1',
  'a connector declares its limits');
reset role;
insert into app.integration_publish_limits (integration_id, organization_id, workspace_id, max_per_window, window_seconds)
values (pg_temp.id('ig:A1.li'), pg_temp.id('A'), pg_temp.id('A1'), 1, 3600);
-- b1 went a minute ago in this hour's window.
insert into app.publish_windows (scope, key, window_start, used) values ('integration', pg_temp.id('ig:A1.li')::text, now() - interval '1 minute', 1);
create temp table b2 as select pg_temp.claim_batch(array['a3', 'a4', 'b2']) as v;
select is((select pg_temp.action(v, 'a3') from b2), 'send', 'within the in-flight limit: claimed');
select is((select pg_temp.action(v, 'a4') from b2), 'deferred', 'beyond it: deferred');
select is((select state::text from pgboss.job where id = (select publish_job_id from app.content_items where id = pg_temp.id('a4'))), 'retry',
  '... its job goes back to the queue');
select ok((select start_after > now() from pgboss.job where id = (select publish_job_id from app.content_items where id = pg_temp.id('a4'))),
  '... to start later');
select is((select count(*)::int from app.publish_attempts where content_item_id = pg_temp.id('a4')), 0, '... with no attempt written');
-- (from pg-boss's defaults here: retry_count 0, retry_limit 2)
select is((select (retry_count, retry_limit)::text from pgboss.job
           where id = (select publish_job_id from app.content_items where id = pg_temp.id('a4'))), '(1,3)',
  '... on a new attempt number (pg-boss fences completion on id and retry_count: the deferring batch cannot complete it), its retry budget untouched');
select is((select pg_temp.action(v, 'b2') from b2), 'deferred',
  'the operator''s window for one integration (1 per hour, taken) defers its edition, while the other integration''s went');
select is((select (c ->> 'until')::timestamptz > now() + interval '50 minutes' from b2, jsonb_array_elements(v -> 'claims') c
           where (c ->> 'contentId')::uuid = pg_temp.id('b2')), true, '... until its window ends');

select * from finish();
rollback;
