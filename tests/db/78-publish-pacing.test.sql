-- Editions over a publish limit come back paced (db/migrations/committed/000026-publish-pacing.sql):
-- app.publish_claim_batch gives the editions it puts back starts spaced by the
-- limit's pace (in flight: how long a post holds a slot over the slots; a rate
-- window: the window over its posts), after those the integration already put
-- back (app.publish_pacing), instead of one start for all.
begin;
select plan(22);
-- @include personas.sql
-- @include content.sql

-- @include due.sql
create function pg_temp.claim_batch(p_labels text[]) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.publish_claim_batch(
    (select jsonb_agg(jsonb_build_object('jobId', i.publish_job_id, 'contentId', i.id, 'workspaceId', i.workspace_id) order by l.n)
     from unnest(p_labels) with ordinality l (label, n) join app.content_items i on i.id = pg_temp.id(l.label)),
    '{sandbox}');
  reset role;
  return v;
end
$$;
-- The start a claim gave each edition it put back, in the batch's order.
create function pg_temp.untils(p_batch jsonb) returns timestamptz[]
language sql as $$
  select array_agg((c ->> 'until')::timestamptz order by n) from jsonb_array_elements(p_batch -> 'claims') with ordinality x (c, n)
  where c ->> 'action' = 'deferred'
$$;
create function pg_temp.gaps(p_at timestamptz[]) returns interval[]
language sql as $$ select array_agg(p_at[k] - p_at[k - 1] order by k) from generate_subscripts(p_at, 1) k where k > 1 $$;
create function pg_temp.next_at(p_integration text) returns timestamptz
language sql as $$ select next_at from app.publish_pacing where integration_id = pg_temp.id(p_integration) $$;

-- How long a post holds an in-flight slot: what the integration's finished attempts took.
select is(app.publish_hold_estimate(pg_temp.id('A1'), pg_temp.id('ig:A1.x'), 500), interval '500 ms', 'no attempt yet: the setting''s default');

-- In flight: 2 slots on ig:A1.x, no attempt measured yet, publish_limit_retry_ms set to 500 here: one slot about every 250 ms.
select is(app.setting_int('publish_limit_retry_ms'), 100, 'the default hold is 100 ms');
update app.settings set value = '500' where key = 'publish_limit_retry_ms';
insert into app.integration_publish_limits (integration_id, organization_id, workspace_id, max_in_flight)
values (pg_temp.id('ig:A1.x'), pg_temp.id('A'), pg_temp.id('A1'), 2);
select pg_temp.due(x, 'ig:A1.x') from unnest(array['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7']) x;
create temp table c1 as select pg_temp.claim_batch(array['p1', 'p2', 'p3', 'p4', 'p5']) v, clock_timestamp() at;
select is((select array_agg(c ->> 'action' order by n) from c1, jsonb_array_elements(v -> 'claims') with ordinality x (c, n)),
          array['send', 'send', 'deferred', 'deferred', 'deferred'], 'two claimed, three over the in-flight limit put back');
select is((select pg_temp.gaps(pg_temp.untils(v)) from c1), array[interval '250 ms', interval '250 ms'],
  '... one after another, a slot''s turn apart (500 ms held / 2 slots)');
select ok((select (pg_temp.untils(v))[1] between now() + interval '250 ms' and at + interval '250 ms' from c1),
  '... the first when the first slot is expected to free');
select is((select array_agg(j.start_after = (c ->> 'until')::timestamptz) from c1, jsonb_array_elements(v -> 'claims') c
           join pgboss.job j on j.id = (c ->> 'jobId')::uuid where c ->> 'action' = 'deferred'), array[true, true, true],
  '... each job starting at its turn');
select is(pg_temp.next_at('ig:A1.x'), (select (pg_temp.untils(v))[3] + interval '250 ms' from c1),
  'the integration''s pace goes on after the last one');

-- The next batch of the same channel is paced after the first one's, not on top of it.
create temp table c2 as select pg_temp.claim_batch(array['p6', 'p7']) v;
select is((select pg_temp.untils(v) from c2), (select array[(pg_temp.untils(v))[3] + interval '250 ms', (pg_temp.untils(v))[3] + interval '500 ms'] from c1),
  'a later batch over the limit continues the pace');
select is((select count(*)::int from app.publish_attempts where content_item_id in (pg_temp.id('p3'), pg_temp.id('p6'))), 0,
  'no attempt is written for an edition put back');

-- The measured hold: the mean from claim to record of the finished attempts.
update app.publish_attempts set finished_at = started_at + interval '80 ms', outcome = 'published'
where content_item_id = pg_temp.id('p1');
update app.publish_attempts set finished_at = started_at + interval '120 ms', outcome = 'published'
where content_item_id = pg_temp.id('p2');
select is(app.publish_hold_estimate(pg_temp.id('A1'), pg_temp.id('ig:A1.x'), 500), interval '100 ms', 'two finished attempts: their median');
update app.publish_attempts set finished_at = started_at where content_item_id in (pg_temp.id('p1'), pg_temp.id('p2'));
select is(app.publish_hold_estimate(pg_temp.id('A1'), pg_temp.id('ig:A1.x'), 500), interval '1 ms', '... at least 1 ms');
update app.publish_attempts set finished_at = started_at + interval '2 hours' where content_item_id in (pg_temp.id('p1'), pg_temp.id('p2'));
select is(app.publish_hold_estimate(pg_temp.id('A1'), pg_temp.id('ig:A1.x'), 500), interval '1 minute', '... at most a minute');
update app.publish_attempts set finished_at = started_at + interval '100 ms' where content_item_id in (pg_temp.id('p1'), pg_temp.id('p2'));
-- Slots full again (p1, p2 finished; two more claimed), the pace from the measured hold: 100 ms / 2 slots.
delete from app.publish_pacing where integration_id = pg_temp.id('ig:A1.x');
select pg_temp.due(x, 'ig:A1.x') from unnest(array['q1', 'q2', 'q3', 'q4']) x;
create temp table c3 as select pg_temp.claim_batch(array['q1', 'q2', 'q3', 'q4']) v;
select is((select pg_temp.gaps(pg_temp.untils(v)) from c3), array[interval '50 ms'],
  'the pace follows the measured hold: 100 ms / 2 slots');

-- A rate window: ig:A1.li may post 2 per 10 s, both taken: the rest from the window's end, 5 s apart.
insert into app.integration_publish_limits (integration_id, organization_id, workspace_id, max_per_window, window_seconds)
values (pg_temp.id('ig:A1.li'), pg_temp.id('A'), pg_temp.id('A1'), 2, 10);
insert into app.publish_windows (scope, key, window_start, used) values ('integration', pg_temp.id('ig:A1.li')::text, now() - interval '4 s', 2);
select pg_temp.due(x, 'ig:A1.li') from unnest(array['w1', 'w2', 'w3']) x;
create temp table c4 as select pg_temp.claim_batch(array['w1', 'w2', 'w3']) v;
select is((select pg_temp.untils(v) from c4), array[now() + interval '6 s', now() + interval '11 s', now() + interval '16 s'],
  'over a rate window: from its end, one post''s share of the window apart');
select is(pg_temp.next_at('ig:A1.li'), now() + interval '21 s', '... and the pace goes on after them');
-- A pace far ahead (a long burst, slots stuck a while): at most 10 s after the limit's next opening.
update app.publish_pacing set next_at = now() + interval '1 hour' where integration_id = pg_temp.id('ig:A1.li');
select pg_temp.due('w6', 'ig:A1.li');
select is((select pg_temp.untils(pg_temp.claim_batch(array['w6']))), array[now() + interval '16 s'], 'a pace far ahead: 10 s after the window''s end');
-- A pace in the past does not hold anything back: the start is the limit's own next opening.
update app.publish_pacing set next_at = now() - interval '1 hour' where integration_id = pg_temp.id('ig:A1.li');
select pg_temp.due('w4', 'ig:A1.li');
select is((select pg_temp.untils(pg_temp.claim_batch(array['w4']))), array[now() + interval '6 s'], 'an old pace: from the window''s end');
-- Other integrations are not held back by this one's pace.
delete from app.integration_publish_limits where integration_id = pg_temp.id('ig:A1.x');
select pg_temp.due('w5', 'ig:A1.li'), pg_temp.due('n1', 'ig:A1.x');
select is((select array_agg(c ->> 'action' order by c ->> 'action') from jsonb_array_elements(pg_temp.claim_batch(array['w5', 'n1']) -> 'claims') c),
          array['deferred', 'send'], 'another channel''s edition in the same batch is claimed');

-- Engine-only.
select ok(not has_table_privilege('pressroom_api', 'app.publish_pacing', 'select'), 'requests cannot read the pace');
select ok(not has_table_privilege('pressroom_bi', 'app.publish_pacing', 'select'), 'nor BI');
select ok(not has_table_privilege('pressroom_api', 'app.publish_pacing', 'update'), 'requests cannot write it');
select is((select relrowsecurity and relforcerowsecurity from pg_class where oid = 'app.publish_pacing'::regclass), true,
  'row-level security on, forced');

select * from finish();
rollback;
