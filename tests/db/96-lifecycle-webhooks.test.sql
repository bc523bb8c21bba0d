-- Lifecycle webhooks in the database (db/migrations/committed/000018-lifecycle-webhooks.sql):
-- subscriptions need the manager role and stay in their workspace; a change
-- writes its event and deliveries in its own transaction and queues one
-- delivery job per subscription; the worker gets deliveries in outbox order,
-- never passes a failed one, and the subscription pauses after the
-- configured run of failures (log entry webhook.paused).
begin;
select plan(24);
-- @include personas.sql
-- @include content.sql

create function pg_temp.sub(p_events text[], p_active boolean default true) returns jsonb
language sql as $$ select api.create_webhook_subscription('http://127.0.0.1:9/hook', p_events, null, p_active,
  decode(repeat('ab', 40), 'hex'), gen_random_uuid()) $$;
create function pg_temp.claim(p_sub uuid) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.webhook_claim(p_sub);
  reset role;
  return v;
end
$$;
create function pg_temp.record(p_delivery uuid, p_ok boolean) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.webhook_record_attempt(p_delivery, p_ok, '{}'::jsonb, case when p_ok then 200 else 503 end, 'body', null, 5);
  reset role;
  return v;
end
$$;

-- Roles and validation
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select pg_temp.sub(array['content.scheduled'])$$), 'PT403 ROLE_REQUIRED', 'an editor cannot create a subscription');
select is(pg_temp.sqlerr($$select api.list_webhook_subscriptions()$$), 'PT403 ROLE_REQUIRED', 'an editor cannot list subscriptions');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select pg_temp.sub(array['content.nope'])$$), 'PT400 UNKNOWN_EVENT_TYPE', 'unknown event types are refused');
select is(pg_temp.sqlerr($$select pg_temp.sub(array[]::text[])$$), 'PT400 VALIDATION_FAILED', 'an empty event list is refused');
select is(pg_temp.sqlerr($$select api.create_webhook_subscription('ftp://x/y', array['content.created'], null, true, decode(repeat('ab', 40), 'hex'), gen_random_uuid())$$),
  'PT400 INVALID_WEBHOOK_URL', 'a non-http URL is refused');
select set_config('test.sub', (pg_temp.sub(array['content.created', 'content.scheduled', 'content.deleted', 'content.created']))->>'id', true);
select is((api.get_webhook_subscription(current_setting('test.sub')::uuid))->'events',
  '["content.created", "content.deleted", "content.scheduled"]'::jsonb, 'events are de-duplicated and sorted');
select ok(not (api.get_webhook_subscription(current_setting('test.sub')::uuid) ? 'secretCiphertext'), 'the secret is never shown');
select is(pg_temp.sqlerr($$select secret_ciphertext from app.webhook_subscriptions$$), '42501', 'requests cannot read the secret column');

-- Tenant scope
select pg_temp.act_as('B.owner', 'B1');
select is(api.list_webhook_subscriptions(), '[]'::jsonb, 'another organization sees no subscription');
select is(pg_temp.sqlerr(format($$select api.get_webhook_subscription(%L)$$, current_setting('test.sub'))), 'PT404 NOT_FOUND', 'nor reads it by id');
select pg_temp.act_as('A.owner', 'A2');
select is(pg_temp.sqlerr(format($$select api.delete_webhook_subscription(%L)$$, current_setting('test.sub'))), 'PT404 NOT_FOUND', 'nor does another workspace');

-- Outbox by trigger, in the transaction of the change
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.c1', (api.create_content(format('{"intent": "schedule", "scheduledAt": "2030-01-01T09:00:00Z", "caption": "one", "channels": [{"integrationId": "%s"}]}',
  pg_temp.id('ig:A1.x'))::jsonb))::text, true);
select pg_temp.act_as_owner();
select is((select array_agg(e.type order by e.seq) from app.webhook_events e where e.workspace_id = pg_temp.id('A1')),
  array['content.created', 'content.scheduled'], 'creating scheduled content writes content.created then content.scheduled');
select is((select count(*)::int from app.webhook_deliveries d where d.subscription_id = current_setting('test.sub')::uuid and d.state = 'pending'),
  2, 'one pending delivery per event');
select is((select count(*)::int from pgboss.job j where j.name = 'webhooks.deliver' and j.singleton_key = current_setting('test.sub') and j.state = 'created'),
  1, 'one queued delivery job for the subscription, however many events');
select pg_temp.act_as('A.editor', 'A1');
select api.create_content(format('{"caption": "b", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:B1.x'))::jsonb) is null
  or true as ignored_other_org;
select pg_temp.act_as_owner();
select is((select count(*)::int from app.webhook_events e where e.workspace_id = pg_temp.id('B1')), 0, 'no event is written for a workspace without subscriptions');

-- Worker: order, retry, pause
select set_config('test.d1', (pg_temp.claim(current_setting('test.sub')::uuid))->>'deliveryId', true);
select is((pg_temp.claim(current_setting('test.sub')::uuid))->'event'->>'type', 'content.created', 'the worker gets the oldest delivery first');
select is((pg_temp.record(current_setting('test.d1')::uuid, false))->>'delivered', 'false', 'a 503 is recorded as a failed attempt');
select is((pg_temp.claim(current_setting('test.sub')::uuid))->>'action', 'wait', 'the failed head waits for its retry: nothing passes it');
update app.webhook_deliveries set next_attempt_at = now() where id = current_setting('test.d1')::uuid;
update app.settings set value = '2' where key = 'webhook_pause_after_failures';
select is((pg_temp.record(current_setting('test.d1')::uuid, false))->>'paused', 'true', 'the configured run of failures pauses the subscription');
select is((select kind from app.webhook_delivery_log where subscription_id = current_setting('test.sub')::uuid order by seq desc limit 1),
  'webhook.paused', 'the log has a webhook.paused entry');
select is((pg_temp.claim(current_setting('test.sub')::uuid))->>'action', 'stop', 'a paused subscription gets nothing');
select pg_temp.act_as('A.manager', 'A1');
select is((api.update_webhook_subscription(current_setting('test.sub')::uuid, '{"active": true}'))->>'active', 'true', 'a manager resumes it');
select is((pg_temp.claim(current_setting('test.sub')::uuid))->>'deliveryId', current_setting('test.d1'), 'the backlog resumes from the failed head');
select pg_temp.record(current_setting('test.d1')::uuid, true);
select is((pg_temp.claim(current_setting('test.sub')::uuid))->'event'->>'type', 'content.scheduled', 'then the next in order');

select * from finish();
rollback;
