-- Idempotency keys: claim, in flight, replay, body mismatch, scope by
-- workspace, principal, method and route, expiry, release and purge.
begin;
select plan(35);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

create function pg_temp.begin_(p_key text, p_body text, p_method text default 'POST', p_route text default '/v1/workspaces/{workspaceId}/content')
returns jsonb language sql as $$
  select api.idempotency_begin(p_method, p_route, p_key, pg_temp.token(p_body))
$$;
create function pg_temp.finish_(p_key text, p_status int, p_body jsonb) returns void
language sql as $$
  select api.idempotency_finish('POST', '/v1/workspaces/{workspaceId}/content', p_key, p_status, p_body)
$$;
create function pg_temp.begin_err(p_key text, p_body text) returns text
language sql as $$
  select pg_temp.sqlerr(format('select pg_temp.begin_(%L, %L)', p_key, p_body))
$$;

------------------------------------------------------------------------------
-- One principal, one workspace: claim, in flight, replay, mismatch.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'editor: the first begin claims the key');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'a second begin while in flight -> PT409');
select is(pg_temp.begin_err('k1', 'body-2'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'a different body while in flight -> PT422');
select lives_ok($$select pg_temp.finish_('k1', 201, '{"data": {"id": 1}, "meta": {}}')$$, 'finish records the outcome');
select is(pg_temp.begin_('k1', 'body-1'),
  '{"state": "replay", "status": 201, "body": {"data": {"id": 1}, "meta": {}}}'::jsonb,
  'the same key and body replays the stored status and body');
select is(pg_temp.begin_('k1', 'body-1'),
  '{"state": "replay", "status": 201, "body": {"data": {"id": 1}, "meta": {}}}'::jsonb,
  'and replays it again');
select is(pg_temp.begin_err('k1', 'body-2'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'the same key with a different body -> PT422');
select lives_ok($$select pg_temp.finish_('k1', 500, '{"changed": true}')$$, 'a late second finish runs');
select is(pg_temp.begin_('k1', 'body-1') -> 'status', '201'::jsonb, 'but cannot overwrite the recorded outcome');
select is(pg_temp.begin_('k1', 'body-2', 'PATCH'), '{"state": "claimed"}'::jsonb, 'the same key on another method claims anew');
select is(pg_temp.begin_('k1', 'body-2', 'POST', '/v1/workspaces/{workspaceId}/articles'), '{"state": "claimed"}'::jsonb,
  'the same key on another route claims anew');

-- release forgets an in-flight claim (after a 5xx), never a finished one.
select is(pg_temp.begin_('k2', 'body-1'), '{"state": "claimed"}'::jsonb, 'k2 claimed');
select lives_ok($$select api.idempotency_release('POST', '/v1/workspaces/{workspaceId}/content', 'k2')$$, 'release k2');
select is(pg_temp.begin_('k2', 'body-9'), '{"state": "claimed"}'::jsonb, 'a released key can be claimed again, with any body');
select lives_ok($$select api.idempotency_release('POST', '/v1/workspaces/{workspaceId}/content', 'k1')$$, 'release of a finished key runs');
select is(pg_temp.begin_('k1', 'body-1') ->> 'state', 'replay', 'but leaves the finished record in place');

------------------------------------------------------------------------------
-- Scope: workspace, principal, method, route.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'another user in the same workspace claims k1 independently');
select is(
  (select count(*)::int from app.idempotency_keys),
  1, 'and sees only its own records');
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.begin_('k1', 'body-3'), '{"state": "claimed"}'::jsonb, 'the owner in A1 claims k1 independently');
select pg_temp.act_as('A.owner', 'A2');
select is(pg_temp.begin_('k1', 'body-3'), '{"state": "claimed"}'::jsonb, 'the same owner in another workspace claims k1 independently');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'an API key in A1 claims k1 independently of its creator');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'and is then in flight for that key');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.begin_('k1', 'body-1'), '{"state": "claimed"}'::jsonb, 'a user of org B claims k1 independently');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-1') ->> 'state', 'replay', 'the editor''s own k1 is untouched by all the others');
select is(
  (select count(*)::int from app.idempotency_keys where key = 'k1'),
  3, 'the editor sees only its own three k1 records (POST, PATCH, other route)');

------------------------------------------------------------------------------
-- Expiry: an expired record, or a claim whose request died, starts afresh.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.idempotency_keys set expires_at = now() - interval '1 second'
where principal_id = pg_temp.id('A.editor') and key = 'k1' and method = 'POST' and route = '/v1/workspaces/{workspaceId}/content';
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k1', 'body-new'), '{"state": "claimed"}'::jsonb, 'an expired record is claimed afresh, even with another body');
select is(pg_temp.begin_err('k1', 'body-new'), 'PT409 IDEMPOTENCY_KEY_IN_USE', 'the fresh claim is in flight');
select is(pg_temp.begin_err('k1', 'body-1'), 'PT422 IDEMPOTENCY_KEY_REUSED', 'and bound to the new body');
select pg_temp.act_as_owner();
update app.idempotency_keys set locked_until = now() - interval '1 second'
where principal_id = pg_temp.id('A.editor') and key = 'k2';
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.begin_('k2', 'body-5'), '{"state": "claimed"}'::jsonb, 'a claim whose lock ran out (the request died) is claimed afresh');

------------------------------------------------------------------------------
-- Purge (a worker job).
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.idempotency_keys set expires_at = now() - interval '1 minute'
where principal_id in (pg_temp.id('A.manager'), pg_temp.id('B.editor'));
select set_config('pgtap.expired', (select count(*)::text from app.idempotency_keys where expires_at <= now()), true);
select set_config('pgtap.kept', (select count(*)::text from app.idempotency_keys where expires_at > now()), true);
select cmp_ok(current_setting('pgtap.expired')::int, '>=', 3, 'at least three expired records exist before the purge');
select pg_temp.act_as('A.editor', 'A1');
select throws_ok('select app.purge_expired()', '42501', null, 'the request role cannot run app.purge_expired');
select pg_temp.act_as_owner();
set local role pressroom_worker;
select is((app.purge_expired() ->> 'idempotencyKeys')::int, current_setting('pgtap.expired')::int,
  'pressroom_worker runs app.purge_expired, which removes every expired record');
reset role;
select is((select count(*)::int from app.idempotency_keys where expires_at <= now()), 0, 'no expired record remains');
select is((select count(*)::int from app.idempotency_keys), current_setting('pgtap.kept')::int, 'every live record remains');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.begin_('k1', 'body-7'), '{"state": "claimed"}'::jsonb, 'a purged key can be claimed again');

select pg_temp.act_as_owner();
select * from finish();
rollback;
