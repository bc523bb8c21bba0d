-- Lifecycle webhooks continued (db/migrations/committed/000019-webhooks-retention-batched-delivery-content-check-and-time-range.sql):
-- retention (app.webhook_purge deletes old finished events with their deliveries
-- and log, never a pending one), 410 Gone pauses at once, the batch claim and
-- record keep outbox order and stop at a delivery not yet due; and
-- api.check_content checks a draft channel by channel and writes nothing.
begin;
select plan(28);
-- @include personas.sql
-- @include content.sql

create function pg_temp.sub(p_events text[]) returns uuid
language sql as $$ select ((api.create_webhook_subscription('http://127.0.0.1:9/hook', p_events, null, true,
  decode(repeat('ab', 40), 'hex'), gen_random_uuid()))->>'id')::uuid $$;
create function pg_temp.attempt(p_delivery uuid, p_ok boolean, p_status int) returns jsonb
language sql as $$ select jsonb_build_object('deliveryId', p_delivery, 'ok', p_ok, 'request', '{}'::jsonb, 'status', p_status,
  'excerpt', '', 'error', case when p_ok then null else 'HTTP ' || p_status end, 'durationMs', 3) $$;

select pg_temp.act_as('A.manager', 'A1');
select set_config('test.sub', pg_temp.sub(array['content.created', 'content.scheduled', 'content.deleted'])::text, true);
select pg_temp.act_as('A.editor', 'A1');
select api.create_content(format('{"caption": "one", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.x'))::jsonb) is not null as c1;
select api.create_content(format('{"caption": "two", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.x'))::jsonb) is not null as c2;
select api.create_content(format('{"caption": "three", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.x'))::jsonb) is not null as c3;

-- Batches
select is(pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 2)$$, current_setting('test.sub')))->>'action', 'send', 'the batch claim sends');
select is(jsonb_array_length(pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 2)$$, current_setting('test.sub')))->'deliveries'), 2,
  'at most the asked number of deliveries');
select is((select array_agg(x->'event'->'data'->>'contentId' order by n) from jsonb_array_elements(
    pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 10)$$, current_setting('test.sub')))->'deliveries') with ordinality t(x, n)),
  (select array_agg(e.subject_id::text order by d.seq) from app.webhook_deliveries d join app.webhook_events e on e.id = d.event_id
   where d.subscription_id = current_setting('test.sub')::uuid),
  'in outbox order');
select set_config('test.ds', (select string_agg(d.id::text, ',' order by d.seq) from app.webhook_deliveries d where d.subscription_id = current_setting('test.sub')::uuid), true);
-- the first delivered, the second fails: recorded in one call, the next batch waits for the failed one
select is(pg_temp.as_worker(format($$select app.webhook_record_attempts(%L, jsonb_build_array(pg_temp.attempt(%L, true, 200), pg_temp.attempt(%L, false, 503)), 10)$$,
    current_setting('test.sub'), split_part(current_setting('test.ds'), ',', 1), split_part(current_setting('test.ds'), ',', 2))) - 'next',
  '{"delivered": 1, "failed": 1, "paused": false}'::jsonb, 'a batch of attempts is recorded in order');
select is(pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 10)$$, current_setting('test.sub')))->>'action', 'wait',
  'nothing passes the failed delivery: the next batch waits for its retry');
select is((select count(*)::int from app.webhook_delivery_log l where l.subscription_id = current_setting('test.sub')::uuid and l.kind = 'attempt'), 2,
  'each attempt is in the log');
update app.webhook_deliveries set next_attempt_at = now() where id = split_part(current_setting('test.ds'), ',', 2)::uuid;
update app.webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id = split_part(current_setting('test.ds'), ',', 3)::uuid;
select is((select array_agg(x->>'deliveryId') from jsonb_array_elements(
    pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 10)$$, current_setting('test.sub')))->'deliveries') x),
  array[split_part(current_setting('test.ds'), ',', 2)], 'a batch ends before a delivery not yet due');
update app.webhook_deliveries set next_attempt_at = now() where id = split_part(current_setting('test.ds'), ',', 3)::uuid;

-- 410 Gone pauses at once
select is(pg_temp.as_worker(format($$select app.webhook_record_attempts(%L, jsonb_build_array(pg_temp.attempt(%L, false, 410)), 10)$$,
    current_setting('test.sub'), split_part(current_setting('test.ds'), ',', 2)))->>'paused', 'true', 'a 410 Gone pauses the subscription at once');
select is((select paused_reason from app.webhook_subscriptions where id = current_setting('test.sub')::uuid), 'gone', 'with reason gone');
select matches((select error from app.webhook_delivery_log where subscription_id = current_setting('test.sub')::uuid order by seq desc limit 1),
  '410 Gone', 'and a webhook.paused log entry naming it');
select is(pg_temp.as_worker(format($$select app.webhook_claim_batch(%L, 10)$$, current_setting('test.sub')))->>'action', 'stop', 'nothing more is sent');
select pg_temp.act_as('A.manager', 'A1');
select is((api.get_webhook_subscription(current_setting('test.sub')::uuid))->>'pausedReason', 'gone', 'the API shows pausedReason gone');
select is((api.update_webhook_subscription(current_setting('test.sub')::uuid, '{"active": true}'))->>'pausedReason', null, 'resuming clears it');

-- Retention
select pg_temp.act_as_owner();
select is(pg_temp.as_worker($$select app.webhook_purge(100)$$), '{"more": false, "events": 0, "logEntries": 0, "retentionDays": 30}'::jsonb,
  'nothing is younger than the retention... nothing goes');
-- age everything by 40 days
update app.webhook_events set occurred_at = occurred_at - interval '40 days' where workspace_id = pg_temp.id('A1');
update app.webhook_deliveries set created_at = created_at - interval '40 days', delivered_at = delivered_at - interval '40 days' where workspace_id = pg_temp.id('A1');
update app.webhook_delivery_log set created_at = created_at - interval '40 days' where workspace_id = pg_temp.id('A1');
select is((pg_temp.as_worker($$select app.webhook_purge(100)$$) - 'retentionDays'), '{"more": false, "events": 1, "logEntries": 1}'::jsonb,
  'old finished events go (one delivered), and the webhook.resumed entry of no delivery');
select is((select count(*)::int from app.webhook_deliveries d where d.subscription_id = current_setting('test.sub')::uuid), 2,
  'the pending deliveries stay, with their events');
select is((select count(*)::int from app.webhook_deliveries d where d.subscription_id = current_setting('test.sub')::uuid and d.state = 'pending'), 2,
  'both pending');
select is((select count(*)::int from app.webhook_delivery_log l where l.subscription_id = current_setting('test.sub')::uuid and l.delivery_id is not null), 3,
  'the log entries of pending deliveries stay (the 503, the 410 and its webhook.paused)');
-- delivered now, after 40 days pending: kept until the retention passes after delivery
update app.webhook_deliveries set state = 'delivered', delivered_at = now() where subscription_id = current_setting('test.sub')::uuid;
select is((pg_temp.as_worker($$select app.webhook_purge(100)$$))->>'events', '0', 'an old event delivered lately is kept');
update app.webhook_deliveries set delivered_at = now() - interval '31 days' where subscription_id = current_setting('test.sub')::uuid;
update app.settings set value = '1' where key = 'webhook_retention_days';
select is((pg_temp.as_worker($$select app.webhook_purge(1)$$) - 'retentionDays'), '{"more": true, "events": 1, "logEntries": 0}'::jsonb,
  'the setting is the retention; a batch stops at its limit and says there is more');
select is((pg_temp.as_worker($$select app.webhook_purge(1)$$))->>'events', '1', 'the next batch takes the rest');
select is((select count(*)::int from app.webhook_delivery_log l where l.subscription_id = current_setting('test.sub')::uuid), 0,
  'their log went with them');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select app.webhook_purge(10)$$), '42501', 'only the worker runs the purge');

-- api.check_content
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.before', (select count(*)::text from app.content_items), true);
select is((api.check_content(format('{"caption": "fine", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.x'))::jsonb))
  - 'channels', '{"valid": true, "problems": []}'::jsonb, 'a valid draft checks valid');
select is((api.check_content(format('{"caption": "%s", "channels": [{"integrationId": "%s"}]}', repeat('x', 400), pg_temp.id('ig:A1.x'))::jsonb))
  #>> '{channels,0,problems,0,code}', 'caption_too_long', 'a rule of the channel''s platform is a problem of that channel');
select is((api.check_content(format('{"intent": "schedule", "scheduledAt": "2001-01-01T00:00:00Z", "caption": "x", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.x'))::jsonb))
  #>> '{problems,0,code}', 'in_past', 'a time in the past is a general problem');
select is((select count(*)::text from app.content_items), current_setting('test.before'), 'the check writes nothing');
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr($$select api.check_content('{"caption": "x"}')$$), 'PT403 ROLE_REQUIRED', 'a viewer cannot check (create needs an editor)');

select * from finish();
rollback;
