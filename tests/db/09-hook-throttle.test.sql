-- The inbound hooks' failed-credential guard (db/migrations/committed/000029-hostile-input-two.sql, split 02-hook-throttle.sql):
-- refused hook calls count against the client address in app.auth_failures,
-- the same window as the pipeline's failed credentials; past the limit the
-- address is refused before anything is looked at; only the first refusals
-- of the minute are audited one by one, the rest in one summary row.
begin;
select plan(22);

-- @include personas.sql

-- The limits in force (app.settings): 3 failures a minute, the first 2 audited one by one.
update app.settings set value = '3' where key = 'auth_failure_limit';
update app.settings set value = '2' where key = 'auth_failure_audit';

-- Who may call them: the server's login only, as for api.gate_guarded.
select ok(has_function_privilege('pressroom_app', 'api.inbox_hook_guard(text)', 'execute')
          and has_function_privilege('pressroom_app', 'api.inbox_hook_refused(text)', 'execute'),
  'pressroom_app executes api.inbox_hook_guard and api.inbox_hook_refused');
select ok(not has_function_privilege('pressroom_request', 'api.inbox_hook_guard(text)', 'execute')
          and not has_function_privilege('pressroom_request', 'api.inbox_hook_refused(text)', 'execute')
          and not has_function_privilege('public', 'api.inbox_hook_refused(text)', 'execute'),
  '... a request (or PUBLIC) does not: it could throttle any address');

select is(api.inbox_hook_guard('ip:203.0.113.7'), '{"audit": true}'::jsonb, 'a fresh address passes the guard');
select is((select count(*)::int from app.auth_failures), 0, '... and passing counts nothing');

create temp table answers (n int, a jsonb);
insert into answers values (1, api.inbox_hook_refused('ip:203.0.113.7'));
insert into answers values (2, api.inbox_hook_refused('ip:203.0.113.7'));
insert into answers values (3, api.inbox_hook_refused('ip:203.0.113.7'));
select is((select array_agg((a ->> 'audit')::boolean order by n) from answers),
  array[true, true, false], 'of 3 refusals only the first 2 are audited one by one');
select is((select (failures, audited)::text from app.auth_failures where client = 'ip:203.0.113.7'), '(3,2)',
  'the window counts 3 failures, 2 audited');

insert into answers values (4, api.inbox_hook_guard('ip:203.0.113.7'));
select is((select a -> 'error' ->> 'code' from answers where n = 4), 'AUTH_THROTTLED', 'at the limit the guard refuses the address');
select is((select (a -> 'error' ->> 'status')::int from answers where n = 4), 429, '... with 429');
select ok((select (a ->> 'retryAfter')::int between 1 and 60 and (a -> 'error' -> 'details' ->> 'retryAfter')::int = (a ->> 'retryAfter')::int
           from answers where n = 4), '... and the seconds to wait (retryAfter, details.retryAfter)');
select is((select (a ->> 'audit')::boolean from answers where n = 4), false, '... not audited one by one');
select is((select (failures, audited)::text from app.auth_failures where client = 'ip:203.0.113.7'), '(4,2)',
  'the throttled call is counted for the summary row');

-- One window with the pipeline's failed credentials, both ways.
select is(api.gate_guarded(pg_temp.token('session:A.editor'), null, 'read', 'basic', null, 'ip:203.0.113.7') -> 'error' ->> 'code',
  'AUTH_THROTTLED', 'refused hook calls throttle the address on the other routes too, a right credential included');
select is(api.gate_guarded(pg_temp.token('bogus-1'), null, 'read', 'basic', null, 'ip:192.0.2.44') -> 'error' ->> 'code',
  'UNAUTHENTICATED', 'a bad bearer from another address ...');
select is(api.gate_guarded(null, null, 'read', 'basic', null, 'ip:192.0.2.44') -> 'error' ->> 'code', 'UNAUTHENTICATED', '... twice');
select is(api.inbox_hook_refused('ip:192.0.2.44') ->> 'audit', 'false', '... and a refused hook call make its third failure, past the 2 audited');
select is(api.inbox_hook_guard('ip:192.0.2.44') -> 'error' ->> 'code', 'AUTH_THROTTLED',
  '... so the hooks refuse that address: bad bearers count for the hooks too');
select is(api.inbox_hook_guard('ip:198.51.100.9'), '{"audit": true}'::jsonb, 'another address is not throttled');

-- The minute closes: one summary row per address for the refusals not audited one by one.
update app.auth_failures set window_start = window_start - interval '1 minute';
insert into answers values (5, api.inbox_hook_refused('ip:203.0.113.7'));
select is((select (actor_kind, method, route, status, error_code, calls)::text from audit.api_calls
           where error_code = 'AUTH_FAILURE_BURST' and request_id like 'auth-failures:ip:203.0.113.7:%'),
  '(anonymous,*,,401,AUTH_FAILURE_BURST,3)',
  'the next refusal flushes the closed minute of its address: one summary row of 3 calls (a refusal and 2 throttled calls)');
select is((select (failures, audited)::text from app.auth_failures where client = 'ip:203.0.113.7'), '(1,1)',
  '... and opens a new window, whose first refusal is audited again');
select is((select (a ->> 'audit')::boolean from answers where n = 5), true, '... (audit true)');

select throws_ok($$select api.inbox_hook_refused(null)$$, 'P0001', null, 'a refusal without a client address is an error, never a silent count');
select is(app.flush_auth_failures(), 1, 'app.flush_auth_failures summarizes the other address''s closed minute (its 2 calls not audited one by one)');

select * from finish();
rollback;
