-- The inbox in the database (db/migrations/committed/000013-inbox.sql): receiving
-- de-duplicates on (integration, event id) and queues one fold job; folding
-- converges whatever the arrival order (a reaction before its comment, an
-- edit before the original); read state is per member; roles, tenant scope
-- and secrets.
begin;
select plan(44);
-- @include personas.sql
-- @include content.sql

create function pg_temp.ev(p_id text, p_type text, p_thread text, p_message text, p_at text, p_extra jsonb default '{}') returns jsonb
language sql as $$
  select jsonb_build_object('eventId', p_id, 'type', p_type, 'threadKind', 'comment', 'threadKey', p_thread,
    'messageKey', p_message, 'occurredAt', p_at) || p_extra
$$;
create function pg_temp.receive(p_integration text, p_events jsonb) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_app;
  v := api.inbox_receive('sandbox', pg_temp.id(p_integration), convert_to(p_events::text, 'UTF8'), '{}', p_events);
  reset role;
  return v;
end
$$;
create function pg_temp.fold(p_integration text) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.inbox_fold(pg_temp.id(p_integration));
  reset role;
  return v;
end
$$;
create function pg_temp.purge() returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_worker;
  v := app.inbox_purge_deliveries(500);
  reset role;
  return v;
end
$$;
create function pg_temp.msg(p_integration text, p_key text) returns app.inbox_messages
language sql as $$ select * from app.inbox_messages where integration_id = pg_temp.id(p_integration) and message_key = p_key $$;
create function pg_temp.thread(p_integration text, p_key text) returns uuid
language sql as $$ select id from app.inbox_threads where integration_id = pg_temp.id(p_integration) and thread_key = p_key $$;

------------------------------------------------------------------------------
-- Receiving: raw storage, de-duplication, one queued fold per integration.
------------------------------------------------------------------------------
select is(pg_temp.receive('ig:A1.x', jsonb_build_array(
    pg_temp.ev('e1', 'message.created', 'post-1', 'c1', '2026-11-01T10:00:00Z', '{"author":{"id":"u1","name":"Ada"},"text":"first"}'),
    pg_temp.ev('e2', 'message.created', 'post-1', 'c2', '2026-11-01T10:01:00Z', '{"author":{"id":"u2","name":"Bo"},"text":"second"}'))) - 'deliveryId' - 'organizationId' - 'workspaceId',
  '{"events": 2, "newEvents": 2}', 'a delivery stores its events');
select is(pg_temp.receive('ig:A1.x', jsonb_build_array(
    pg_temp.ev('e1', 'message.created', 'post-1', 'c1', '2026-11-01T10:00:00Z', '{"author":{"id":"u1","name":"Ada"},"text":"first"}'))) ->> 'deliveryId',
  null, 'a redelivery keeps nothing (deliveryId null)');
select is((select count(*)::int from app.inbox_events where integration_id = pg_temp.id('ig:A1.x')), 2, 'each event once: unique (integration, event id)');
select is((select count(*)::int from app.inbox_deliveries where integration_id = pg_temp.id('ig:A1.x')), 1, 'the raw delivery is kept once');
select is((select count(*)::int from pgboss.job where name = 'inbox.fold' and singleton_key = pg_temp.id('ig:A1.x')::text and state = 'created'), 1,
  'one fold job queued for the integration, however many deliveries');
select matches(pg_temp.sqlerr($$insert into app.inbox_events (organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind, thread_key, message_key, occurred_at)
    select organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind, thread_key, message_key, occurred_at from app.inbox_events limit 1$$),
  '^23505 ', 'the unique constraint refuses a second copy of an event');

------------------------------------------------------------------------------
-- Folding.
------------------------------------------------------------------------------
select is(pg_temp.fold('ig:A1.x'), '{"more": false, "folded": 2}', 'the fold takes the new events');
select is(pg_temp.fold('ig:A1.x'), '{"more": false, "folded": 0}', 'and nothing twice');
select is((select jsonb_build_object('n', message_count, 'people', participants, 'last', last_message_at = '2026-11-01T10:01:00Z', 'kind', kind, 'platform', platform)
           from app.inbox_threads where integration_id = pg_temp.id('ig:A1.x')),
  '{"n": 2, "kind": "comment", "last": true, "people": [{"id": "u1", "name": "Ada"}, {"id": "u2", "name": "Bo"}], "platform": "x"}',
  'one comment thread per post: count, participants, last message');

-- Out of order: a reaction and an edit arrive before the original, a removal of a reaction before its addition.
select pg_temp.receive('ig:A1.insta', jsonb_build_array(
  pg_temp.ev('r1', 'reaction.added', 'post-9', 'c9', '2026-11-01T10:05:00Z', '{"reaction":"like","reactorId":"u5"}'),
  pg_temp.ev('x1', 'message.edited', 'post-9', 'c9', '2026-11-01T10:03:00Z', '{"author":{"id":"u4","name":"Di"},"text":"edited text"}')));
select pg_temp.fold('ig:A1.insta');
select is((pg_temp.msg('ig:A1.insta', 'c9')).body, 'edited text', 'an edit before its original shows the edit');
select pg_temp.receive('ig:A1.insta', jsonb_build_array(
  pg_temp.ev('o1', 'message.created', 'post-9', 'c9', '2026-11-01T10:02:00Z', '{"author":{"id":"u4","name":"Di"},"text":"original"}'),
  pg_temp.ev('r3', 'reaction.removed', 'post-9', 'c9', '2026-11-01T10:07:00Z', '{"reaction":"like","reactorId":"u6"}'),
  pg_temp.ev('r2', 'reaction.added', 'post-9', 'c9', '2026-11-01T10:06:00Z', '{"reaction":"like","reactorId":"u6"}'),
  pg_temp.ev('d1', 'message.hidden', 'post-9', 'c9', '2026-11-01T10:08:00Z')));
select pg_temp.fold('ig:A1.insta');
select is((select jsonb_build_object('text', body, 'reactions', reactions, 'at', occurred_at = '2026-11-01T10:02:00Z', 'edited', edited_at = '2026-11-01T10:03:00Z', 'moderation', moderation)
           from app.inbox_messages where integration_id = pg_temp.id('ig:A1.insta') and message_key = 'c9'),
  '{"at": true, "text": "edited text", "edited": true, "reactions": {"like": 1}, "moderation": "hidden"}',
  'the original arriving last keeps the later edit; reactions net out per person; hidden');
-- A deletion whose thread is unknown is placed by the message's other events.
select pg_temp.receive('ig:A1.insta', jsonb_build_array(
  jsonb_build_object('eventId', 'del-9', 'type', 'message.deleted', 'threadKind', 'comment', 'threadKey', null, 'messageKey', 'c9', 'occurredAt', '2026-11-01T10:09:00Z')));
select pg_temp.fold('ig:A1.insta');
select is((pg_temp.msg('ig:A1.insta', 'c9')).moderation, 'deleted', 'a deletion without its thread still reaches the message');
select matches(pg_temp.sqlerr($$insert into app.inbox_events (organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind, thread_key, message_key, occurred_at)
    select organization_id, workspace_id, integration_id, delivery_id, 'x9', 'message.created', thread_kind, null, message_key, occurred_at from app.inbox_events limit 1$$),
  '^23514 ', 'only a deletion may lack its thread');

------------------------------------------------------------------------------
-- Read state per member.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is((api.get_inbox_thread(pg_temp.thread('ig:A1.x', 'post-1')) ->> 'unreadCount')::int, 2, 'editor: 2 unread');
select is((api.mark_inbox_thread(pg_temp.thread('ig:A1.x', 'post-1'), true) ->> 'unreadCount')::int, 0, 'editor marks it read');
select pg_temp.act_as('A.viewer', 'A1');
select is((api.get_inbox_thread(pg_temp.thread('ig:A1.x', 'post-1')) ->> 'unreadCount')::int, 2, 'the viewer still has 2 unread');
select is((api.mark_inbox_thread(pg_temp.thread('ig:A1.x', 'post-1'), false) ->> 'unreadCount')::int, 1, 'a viewer may mark unread: the newest message is unread again');
select is((select count(*)::int from app.inbox_reads), 1, 'a principal sees only its own read state');
select pg_temp.act_as('A.editor', 'A1');
select is((api.inbox_unread_counts() ->> 'messages')::int, 0, 'the editor''s counts are untouched by the viewer');

------------------------------------------------------------------------------
-- Roles, scope, secrets.
------------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr(format($$select api.reply_inbox_thread(%L, 'hi', null)$$, pg_temp.thread('ig:A1.x', 'post-1'))),
  'PT403 ROLE_REQUIRED', 'viewers do not reply');
select is(pg_temp.sqlerr(format($$select api.add_inbox_note(%L, 'hi')$$, pg_temp.thread('ig:A1.x', 'post-1'))),
  'PT403 ROLE_REQUIRED', 'viewers do not write notes');
select is(pg_temp.write_outcome(format($$update app.inbox_threads set status = 'archived' where id = %L$$, pg_temp.thread('ig:A1.x', 'post-1'))),
  '42501', 'viewers do not change threads, even directly');
select pg_temp.act_as('A.editor', 'A1');
select is(api.reply_inbox_thread(pg_temp.thread('ig:A1.x', 'post-1'), 'thanks', null) #>> '{delivery,state}', 'pending', 'an editor replies: pending, with its job');
select pg_temp.act_as_owner();
select is((select count(*)::int from pgboss.job where name = 'inbox.action'), 1, 'the reply''s job commits with it');
-- The job's claim, twice (pg-boss handing the job out again after a worker died): the same attempt.
create function pg_temp.claim_reply() returns jsonb
language plpgsql as $$
declare v jsonb; m app.inbox_messages;
begin
  perform pg_temp.act_as_owner();
  select * into m from app.inbox_messages where direction = 'outbound';
  set local role pressroom_worker;
  v := app.inbox_action_claim(m.id, m.action_job_id, 'reply');
  reset role;
  return v;
end
$$;
select is(pg_temp.claim_reply() #>> '{message,attempt}', '1', 'the job claims the reply: attempt 1');
select is(pg_temp.claim_reply() #>> '{message,attempt}', '1', 'the same job claiming again re-sends attempt 1 (same token)');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.write_outcome(format($$update app.inbox_messages set delivery_state = 'sent', body = 'changed' where thread_id = %L$$, pg_temp.thread('ig:A1.x', 'post-1'))),
  '42501', 'the text of a message is engine-only');
select is(pg_temp.sqlerr(format($$select api.set_inbox_hook_secret(%L, 'x', 'a-secret-of-sixteen', '\x00'::bytea, null)$$, pg_temp.id('ig:A1.x'))),
  'PT403 ROLE_REQUIRED', 'editors do not set hook secrets');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(format($$select api.set_inbox_hook_secret(%L, 'facebook', 'a-secret-of-sixteen', '\x00'::bytea, null)$$, pg_temp.id('ig:A1.x'))),
  'PT400 HOOK_SOURCE_MISMATCH', 'a source that is not the integration''s platform');
select ok(not has_column_privilege('pressroom_api', 'app.inbox_hook_secrets', 'secret_ciphertext', 'select')
          and not has_function_privilege('pressroom_request', 'api.inbox_receive(text,uuid,bytea,jsonb,jsonb)', 'execute')
          and not has_function_privilege('pressroom_request', 'api.inbox_hook_target(text,uuid)', 'execute'),
  'hook secrets are never readable by requests; receiving is the server login''s only');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.sqlerr(format($$select api.get_inbox_thread(%L)$$, pg_temp.thread('ig:A1.x', 'post-1'))),
  'PT404 NOT_FOUND', 'another organization sees no thread of A');

------------------------------------------------------------------------------
-- Retention of raw deliveries: only folded ones past inbox_delivery_retention_days
-- go; their events (and so de-duplication) stay.
------------------------------------------------------------------------------
select is(pg_temp.purge(), '{"more": false, "purged": 0, "retentionDays": 30}', 'nothing is purged before the retention period');
select pg_temp.receive('ig:A1.x', jsonb_build_array(
  pg_temp.ev('e3', 'message.created', 'post-1', 'c3', '2026-11-01T10:02:00Z', '{"author":{"id":"u3","name":"Cy"},"text":"third"}')));
select pg_temp.act_as_owner();
update app.inbox_deliveries set received_at = now() - interval '31 days' where integration_id = pg_temp.id('ig:A1.x');
select is(pg_temp.purge() ->> 'purged', '1', 'an old delivery whose events are folded is purged; an old one not yet folded is not');
select pg_temp.act_as_owner();
select is((select count(*)::int from app.inbox_events where integration_id = pg_temp.id('ig:A1.x') and event_id in ('e1', 'e2') and delivery_id is null), 2,
  'the purged delivery''s events stay, without their delivery');
select is((select count(*)::int from app.inbox_deliveries where integration_id = pg_temp.id('ig:A1.insta')), 3, 'recent deliveries stay');
select is(pg_temp.receive('ig:A1.x', jsonb_build_array(
    pg_temp.ev('e1', 'message.created', 'post-1', 'c1', '2026-11-01T10:00:00Z', '{"author":{"id":"u1","name":"Ada"},"text":"first"}'))) - 'organizationId' - 'workspaceId',
  '{"events": 1, "newEvents": 0, "deliveryId": null}', 'a redelivery after the purge is still recognised and keeps nothing');
select pg_temp.fold('ig:A1.x');
select is(pg_temp.purge() ->> 'purged', '1', 'once folded, the other old delivery goes too');
select pg_temp.act_as_owner();
update app.settings set value = '400' where key = 'inbox_delivery_retention_days';
update app.inbox_deliveries set received_at = now() - interval '399 days' where integration_id = pg_temp.id('ig:A1.insta');
select is(pg_temp.purge() ->> 'purged', '0', 'the retention period is the setting''s');
select ok(not has_function_privilege('pressroom_api', 'app.inbox_purge_deliveries(int)', 'execute')
          and not has_function_privilege('pressroom_app', 'app.inbox_purge_deliveries(int)', 'execute'),
  'only the worker purges');

------------------------------------------------------------------------------
-- Platform tokens: managers set them for facebook, instagram and x only;
-- requests never read the ciphertext; the job's claim carries it.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.set_inbox_platform_token(%L, 32, '\x00'::bytea)$$, pg_temp.id('ig:A1.x'))),
  'PT403 ROLE_REQUIRED', 'editors do not set platform tokens');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(format($$select api.set_inbox_platform_token(%L, 8, decode(repeat('ab', 40), 'hex'))$$, pg_temp.id('ig:A1.x'))),
  'PT400 VALIDATION_FAILED', 'a token of fewer than 16 characters is refused');
select is(api.set_inbox_platform_token(pg_temp.id('ig:A1.x'), 32, decode(repeat('ab', 40), 'hex')) ->> 'platform', 'x', 'a manager sets the token of an x integration');
select ok(not has_column_privilege('pressroom_api', 'app.inbox_platform_tokens', 'token_ciphertext', 'select'),
  'requests never read a platform token''s ciphertext');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.sqlerr(format($$select api.set_inbox_platform_token(%L, 32, decode(repeat('ab', 40), 'hex'))$$, pg_temp.id('ig:A1.x'))),
  'PT404 INTEGRATION_NOT_FOUND', 'another organization cannot set A''s token');

select * from finish();
rollback;
