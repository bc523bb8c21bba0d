-- Hostile traffic (db/migrations/committed/000004-hostile-input.sql): failed credentials
-- limited per client address and minute, audited one by one only up to a
-- number and then as one summary row; authenticated calls matching no route
-- audited with route null.
begin;
select plan(16);

-- @include personas.sql

-- The gate as the pipeline calls it, with the limits in force (app.settings):
-- 3 failures a minute, the first 2 audited one by one.
update app.settings set value = '3' where key = 'auth_failure_limit';
update app.settings set value = '2' where key = 'auth_failure_audit';
create function pg_temp.gg(p_secret text, p_client text) returns jsonb
language sql as $$
  select api.gate_guarded(case when p_secret is not null then pg_temp.token(p_secret) end, null, 'read', 'basic',
                          null, p_client)
$$;

create temp table answers (n int, a jsonb);
insert into answers values (1, pg_temp.gg('bogus-1', 'ip:203.0.113.7'));
insert into answers values (2, pg_temp.gg(null, 'ip:203.0.113.7'));
insert into answers values (3, pg_temp.gg('bogus-3', 'ip:203.0.113.7'));
insert into answers values (4, pg_temp.gg('bogus-4', 'ip:203.0.113.7'));
insert into answers values (5, pg_temp.gg('session:A.editor', 'ip:203.0.113.7'));

select is((select array_agg(a -> 'error' ->> 'code' order by n) from answers where n <= 3),
  array['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED'], 'the first 3 failures of an address are 401 (a missing credential counts too)');
select is((select array_agg((a ->> 'audit')::boolean order by n) from answers where n <= 3),
  array[true, true, false], 'only the first 2 are audited one by one');
select is((select a -> 'error' ->> 'code' from answers where n = 4), 'AUTH_THROTTLED', 'the 4th failure is throttled');
select is((select (a -> 'error' ->> 'status')::int from answers where n = 4), 429, '... with 429');
select ok((select (a ->> 'retryAfter')::int between 1 and 60 from answers where n = 4), '... and the seconds to wait');
select is((select a -> 'error' ->> 'code' from answers where n = 5), 'AUTH_THROTTLED',
  'a right credential from the throttled address is refused the same way: no oracle');
select is(pg_temp.gg('session:A.editor', 'ip:198.51.100.9') -> 'principal' ->> 'userId', pg_temp.id('A.editor')::text,
  'another address is not throttled');
select is((select (failures, audited)::text from app.auth_failures where client = 'ip:203.0.113.7'), '(5,2)',
  'the window counts 5 failures, 2 audited');

-- The minute closes: one summary row for the 3 not audited one by one.
update app.auth_failures set window_start = window_start - interval '1 minute';
select is(app.flush_auth_failures(), 1, 'flushing writes one summary row');
select is((select (actor_kind, method, route, status, error_code, calls)::text from audit.api_calls
           where error_code = 'AUTH_FAILURE_BURST' and request_id like 'auth-failures:ip:203.0.113.7:%'),
  '(anonymous,*,,401,AUTH_FAILURE_BURST,3)', 'the summary: anonymous, route null, calls 3');
select is((select count(*)::int from app.auth_failures), 0, 'flushed windows are forgotten');
select is((app.purge_expired() ->> 'authFailureSummaries')::int, 0, 'app.purge_expired flushes too (nothing left here)');

-- Calls that match no route.
select is(api.record_unmatched_call(pg_temp.token('session:A.editor'), 'GET', 404, 'NOT_FOUND', 1.5, 'unmatched-1'), true,
  'an authenticated unmatched call is audited');
select is((select (actor_kind, actor_id, organization_id, method, route, status, error_code, calls)::text
           from audit.api_calls where request_id = 'unmatched-1'),
  format('(user,%s,%s,GET,,404,NOT_FOUND,1)', pg_temp.id('A.editor'), pg_temp.id('A')), '... with route null');
select is(api.record_unmatched_call(pg_temp.token('bogus'), 'GET', 404, 'NOT_FOUND', 1.5, 'unmatched-2'), false,
  'an unauthenticated one is not');
select is((select count(*)::int from audit.api_calls where request_id = 'unmatched-2'), 0, '... and writes nothing');

select * from finish();
rollback;
