-- Content rules in the database: the transition table move by move, edits only
-- while editable, platform rules and time, the one-live-publish-job rule,
-- versions, and the personas (editor can, viewer cannot, stranger sees nothing).
begin;
select plan(116);


-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- Channels (integrations) of A1 and B1 and media of A1:
-- @include content.sql

-- ---------------------------------------------------------------------------
-- Helpers for content rows and publish jobs.
-- ---------------------------------------------------------------------------

-- A root and one edition in any status, written with triggers off (the
-- starting point of a transition probe), in A1 on the given channel.
create function pg_temp.make_item(p_label text, p_status text, p_integration text default 'ig:A1.x') returns uuid
language plpgsql as $$
begin
  set local session_replication_role = replica;
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), 'hello');
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), pg_temp.id(p_integration),
          p_status, case when p_status = 'scheduled' then now() + interval '1 day' end);
  set local session_replication_role = origin;
  return pg_temp.id(p_label);
end
$$;

-- A root and a draft edition written normally (triggers on).
create function pg_temp.draft(p_label text, p_integration text default 'ig:A1.x', p_caption text default 'hello') returns uuid
language plpgsql as $$
begin
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), p_caption);
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), pg_temp.id(p_integration), 'draft');
  return pg_temp.id(p_label);
end
$$;

create function pg_temp.live_jobs(p_item uuid) returns int
language sql as $$
  select count(*)::int from pgboss.job
  where name = 'content.publish' and singleton_key = p_item::text and state in ('created', 'retry')
$$;

create function pg_temp.job_of(p_item uuid) returns uuid
language sql as $$ select publish_job_id from app.content_items where id = p_item $$;

create function pg_temp.job_state(p_job uuid) returns text
language sql as $$ select state::text from pgboss.job where name = 'content.publish' and id = p_job $$;

------------------------------------------------------------------------------
-- The transition table: every move between the seven statuses, whoever
-- writes it (here the owner, who bypasses row-level security but not the
-- triggers).
------------------------------------------------------------------------------
select pg_temp.make_item('from:' || s, s) from unnest(array['draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled']) s;

select is(
  pg_temp.sqlerr(format($$update app.content_items set status = %L, scheduled_at = coalesce(scheduled_at, now() + interval '2 days') where id = %L$$,
                        t.to_status, pg_temp.id('from:' || t.from_status))),
  case when (t.from_status, t.to_status) in (
      ('draft', 'scheduled'), ('draft', 'cancelled'), ('draft', 'pending_approval'),
      ('scheduled', 'draft'), ('scheduled', 'sent'), ('scheduled', 'failed'), ('scheduled', 'cancelled'),
      ('failed', 'scheduled'), ('pending_approval', 'draft'), ('pending_approval', 'scheduled'),
      ('pending_approval', 'rejected'), ('rejected', 'draft'))
    then 'ok' else 'PT409 INVALID_STATUS_TRANSITION' end,
  format('%s -> %s', t.from_status, t.to_status))
from unnest(array['draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled']) with ordinality f (from_status, i)
cross join unnest(array['draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled']) with ordinality t2 (to_status, j)
cross join lateral (select f.from_status, t2.to_status) t
where t.from_status <> t.to_status
order by f.i, t2.j;

select is(pg_temp.sqlerr(format($$update app.content_items set scheduled_at = now() + interval '3 days' where id = %L$$, pg_temp.id('from:scheduled'))),
  'ok', 'scheduled -> scheduled (reschedule) is allowed');
select is(app.content_transition_allowed('scheduled', 'draft') and not app.content_transition_allowed('sent', 'draft'), true,
  'app.content_transition_allowed answers the same table');

-- New content starts as draft or scheduled only.
select is(pg_temp.sqlerr(format($$insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status)
  values (%L, %L, %L, %L, %L)$$, pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:from:draft'), pg_temp.id('ig:A1.li'), s)),
  'PT409 INVALID_STATUS_TRANSITION', format('(none) -> %s is refused', s))
from unnest(array['pending_approval', 'rejected', 'sent', 'failed', 'cancelled']) s;

------------------------------------------------------------------------------
-- Editing, time and platform rules
------------------------------------------------------------------------------
select is(pg_temp.sqlerr(format($$update app.content_items set caption = 'edited' where id = %L$$, pg_temp.id('from:' || s))),
  case when s in ('draft', 'scheduled') then 'ok' else 'PT400 INVALID_CONTENT_STATUS' end,
  format('the caption of %s content %s', s, case when s in ('draft', 'scheduled') then 'can change' else 'cannot change' end))
from unnest(array['draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled']) s;
select is(pg_temp.sqlerr(format($$insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
  values (%L, %L, %L, %L, 0)$$, pg_temp.id('from:sent'), pg_temp.id('media:A1.img'), pg_temp.id('A1'), pg_temp.id('A'))),
  'PT400 INVALID_CONTENT_STATUS', 'the media of sent content cannot change either');
select is(pg_temp.sqlerr(format($$update app.content_items set root_id = %L where id = %L$$, pg_temp.id('root:from:sent'), pg_temp.id('from:draft'))),
  'PT400 IMMUTABLE_FIELD', 'an edition cannot move to another root');

select pg_temp.draft('rules:x');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'scheduled', scheduled_at = now() - interval '1 minute' where id = %L$$, pg_temp.id('rules:x'))),
  'PT400 VALIDATION_FAILED', 'a time in the past cannot be scheduled');
select is(pg_temp.sqlerr(format($$update app.content_items set caption = repeat('x', 281), status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = %L$$, pg_temp.id('rules:x'))),
  'PT400 VALIDATION_FAILED', 'a draft promoted to scheduled is held to the platform rules (281 characters on X)');
select is(pg_temp.sqlerr(format($$update app.content_items set caption = repeat('x', 281) where id = %L$$, pg_temp.id('rules:x'))),
  'ok', 'a draft is not held to the platform rules');
select is(app.content_item_problems(pg_temp.id('A1'), pg_temp.id('rules:x'), 'p.') -> 0 ->> 'field', null, 'content_item_problems of a fine X draft is empty');

select pg_temp.draft('rules:insta', 'ig:A1.insta');
select is(
  (select array_agg(p ->> 'code' order by p ->> 'code') from jsonb_array_elements(app.content_item_problems(pg_temp.id('A1'), pg_temp.id('rules:insta'))) p),
  array['media_required'], 'Instagram without media: media_required');
insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
values (pg_temp.id('rules:insta'), pg_temp.id('media:A1.huge'), pg_temp.id('A1'), pg_temp.id('A'), 0);
update app.content_items set own_media = true where id = pg_temp.id('rules:insta');
select is(
  (select array_agg(p ->> 'field' || ':' || (p ->> 'code') order by p ->> 'code') from jsonb_array_elements(app.content_item_problems(pg_temp.id('A1'), pg_temp.id('rules:insta'))) p),
  array['mediaIds.0:media_too_large'], 'Instagram with a 20 MB image: media_too_large on mediaIds.0');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = %L$$, pg_temp.id('rules:insta'))),
  'PT400 VALIDATION_FAILED', 'and it cannot be scheduled');

select pg_temp.draft('rules:pin', 'ig:A1.pin');
update app.content_items set own_media = true, settings = '{"title": "t"}' where id = pg_temp.id('rules:pin');
insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position) values
  (pg_temp.id('rules:pin'), pg_temp.id('media:A1.img'), pg_temp.id('A1'), pg_temp.id('A'), 0),
  (pg_temp.id('rules:pin'), pg_temp.id('media:A1.video'), pg_temp.id('A1'), pg_temp.id('A'), 1);
select is(
  (select array_agg(x order by x) from (select p ->> 'field' || ':' || (p ->> 'code') as x
                                        from jsonb_array_elements(app.content_item_problems(pg_temp.id('A1'), pg_temp.id('rules:pin'))) p) q),
  array['mediaIds:mixed_media_not_allowed', 'mediaIds:too_many_media', 'settings.boardId:required_setting_missing'],
  'Pinterest: one entry per problem (too many media, mixed kinds, missing boardId)');
select is(
  (select array_agg(p ->> 'field' || ':' || (p ->> 'code') order by p ->> 'field')
   from jsonb_array_elements(app.settings_problems('pinterest', '{"boardId": 1, "colour": "red"}', '', false)) p),
  array['settings.boardId:invalid_setting', 'settings.colour:unknown_setting'],
  'settings of the wrong type and unknown settings are refused at write time');
select is(app.sanitize_settings('pinterest', '{"boardId": "b", "token": "secret"}'), '{"boardId": "b"}'::jsonb,
  'sanitized settings keep only what the platform declares');

------------------------------------------------------------------------------
-- The publish job: exactly one live job per scheduled edition, written in
-- the same transaction as the change.
------------------------------------------------------------------------------
select pg_temp.draft('job');
select is(pg_temp.live_jobs(pg_temp.id('job')), 0, 'a draft has no publish job');
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = pg_temp.id('job');
select is(pg_temp.live_jobs(pg_temp.id('job')), 1, 'scheduling queues one job');
select is((select jsonb_build_object('data', data, 'at', start_after = now() + interval '1 day', 'id', id)
           from pgboss.job where name = 'content.publish' and singleton_key = pg_temp.id('job')::text),
  jsonb_build_object('data', jsonb_build_object('contentId', pg_temp.id('job'), 'workspaceId', pg_temp.id('A1'), 'version', 1),
                     'at', true, 'id', pg_temp.job_of(pg_temp.id('job'))),
  'the job starts at the scheduled time, carries {contentId, workspaceId, version}, and its id is kept on the edition');
create temp table job_ids (label text primary key, id uuid);
insert into job_ids values ('first', pg_temp.job_of(pg_temp.id('job')));
update app.content_items set caption = 'still scheduled' where id = pg_temp.id('job');
select is(pg_temp.job_of(pg_temp.id('job')), (select id from job_ids where label = 'first'), 'an edit that keeps the time keeps the job');
update app.content_items set scheduled_at = now() + interval '2 days' where id = pg_temp.id('job');
select is(pg_temp.live_jobs(pg_temp.id('job')), 1, 'rescheduling leaves one live job');
select isnt(pg_temp.job_of(pg_temp.id('job')), (select id from job_ids where label = 'first'), '... a new one');
select is(pg_temp.job_state((select id from job_ids where label = 'first')), 'cancelled', '... and the old one is cancelled');
select is((select completed_on is not null from pgboss.job where name = 'content.publish' and id = (select id from job_ids where label = 'first')), true,
  '... with completed_on set');
update app.content_items set publish_job_id = gen_random_uuid() where id = pg_temp.id('job');
select is(pg_temp.job_state(pg_temp.job_of(pg_temp.id('job'))), 'created', 'nobody but the trigger sets publish_job_id');
update app.content_items set status = 'draft', scheduled_at = null where id = pg_temp.id('job');
select is(pg_temp.live_jobs(pg_temp.id('job')), 0, 'reverting to draft cancels the job');
select is(pg_temp.job_of(pg_temp.id('job')), null, '... and forgets it');
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = pg_temp.id('job');
update app.content_items set deleted_at = now() where id = pg_temp.id('job');
select is(pg_temp.live_jobs(pg_temp.id('job')), 0, 'deleting cancels the job');
select is(pg_temp.sqlerr(format($$update app.content_items set caption = 'ghost' where id = %L$$, pg_temp.id('job'))),
  'PT409 CONTENT_DELETED', 'a deleted edition cannot change');

select pg_temp.draft('job:sent');
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = pg_temp.id('job:sent');
insert into job_ids values ('sent', pg_temp.job_of(pg_temp.id('job:sent')));
update app.content_items set status = 'sent' where id = pg_temp.id('job:sent');
select is(pg_temp.live_jobs(pg_temp.id('job:sent')), 0, 'a sent edition has no live job');
select is(pg_temp.job_of(pg_temp.id('job:sent')), (select id from job_ids where label = 'sent'), '... and keeps the id of its job');
select is((select caption from app.content_items where id = pg_temp.id('job:sent')), 'hello', '... and freezes the caption it published');

select pg_temp.draft('job:retry');
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = pg_temp.id('job:retry');
update pgboss.job set state = 'active', started_on = now() where name = 'content.publish' and id = pg_temp.job_of(pg_temp.id('job:retry'));
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'draft' where id = %L$$, pg_temp.id('job:retry'))),
  'PT409 PUBLISHING_IN_PROGRESS', 'a running job locks the edition against revert');
select is(pg_temp.sqlerr(format($$update app.content_items set scheduled_at = now() + interval '5 hours' where id = %L$$, pg_temp.id('job:retry'))),
  'PT409 PUBLISHING_IN_PROGRESS', '... and against reschedule');
update app.content_items set status = 'failed' where id = pg_temp.id('job:retry');
update pgboss.job set state = 'failed' where name = 'content.publish' and id = pg_temp.job_of(pg_temp.id('job:retry'));
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = pg_temp.id('job:retry');
select is(pg_temp.live_jobs(pg_temp.id('job:retry')), 1, 'failed -> scheduled (retry) queues a new job');

-- The invariant over everything above: scheduled and live <=> one live job.
-- (The transition probes' starting rows were written with triggers off.)
select is(
  (select count(*)::int from app.content_items i
   where i.id not in (select pg_temp.id('from:' || s) from unnest(array['draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled']) s)
     and (((i.status = 'scheduled' and i.deleted_at is null) <> (pg_temp.live_jobs(i.id) = 1)) or pg_temp.live_jobs(i.id) > 1)),
  0, 'every live scheduled edition has exactly one live job, every other edition none');

------------------------------------------------------------------------------
-- Versions (this file is one transaction: changes in one transaction make
-- one version)
------------------------------------------------------------------------------
select pg_temp.draft('ver');
select is((select array_agg(version) from app.content_versions where content_item_id = pg_temp.id('ver')), array[1], 'creation records version 1');
update app.content_items set caption = 'a' where id = pg_temp.id('ver');
update app.content_items set thread = '[{"caption": "b", "mediaIds": []}]' where id = pg_temp.id('ver');
select is((select array_agg(version) from app.content_versions where content_item_id = pg_temp.id('ver')), array[1],
  'changes in the same transaction amend that transaction''s version');
select is((select snapshot -> 'thread' -> 0 ->> 'caption' from app.content_versions where content_item_id = pg_temp.id('ver')), 'b',
  '... which holds the latest content');
insert into app.content_versions (organization_id, workspace_id, content_item_id, version, snapshot, source, xact, xact_key)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('ver'), 2, '{}', 'update', '1'::xid8, '1');
select is(pg_temp.sqlerr(format($$update app.content_versions set snapshot = '{"x": 1}' where content_item_id = %L and version = 2$$, pg_temp.id('ver'))),
  'PT409 VERSION_IMMUTABLE', 'a version written by another transaction never changes');

------------------------------------------------------------------------------
-- Personas through the api functions and around them
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.create_content('{"intent": "schedule", "scheduledAt": "2030-01-01T09:00:00Z", "caption": "hi", "channels": [{"integrationId": "%s"}]}')$$,
  pg_temp.id('ig:A1.x'))), 'ok', 'editor: api.create_content schedules');
select set_config('test.made', api.create_content(format('{"caption": "persona", "channels": [{"integrationId": "%s"}]}', pg_temp.id('ig:A1.li'))::jsonb)::text, true);
select is(current_setting('test.made')::jsonb -> 'editions' -> 0 ->> 'status', 'draft', 'editor: a draft is made');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, current_setting('test.made')::jsonb -> 'editions' -> 0 ->> 'id')),
  'ok', 'editor: api.schedule_content');
select is(pg_temp.sqlerr(format($$select api.update_content(%L, '{"caption": "x"}')$$, pg_temp.id('from:sent'))),
  'PT400 INVALID_CONTENT_STATUS', 'editor: api.update_content of sent content -> PT400 INVALID_CONTENT_STATUS');
select is(pg_temp.sqlerr(format($$select api.revert_content_to_draft(%L, '{}')$$, pg_temp.id('from:draft'))),
  'PT400 INVALID_CONTENT_STATUS', 'editor: revert of a draft -> PT400');
select is(pg_temp.sqlerr(format($$select api.revert_content_to_draft(%L, '{"expectedRootPostId": "%s", "expectedRootEditionIds": []}')$$,
  pg_temp.id('from:scheduled'), pg_temp.id('root:from:scheduled'))), 'PT409 REVERT_SCOPE_STALE', 'editor: a stale revert scope -> PT409 REVERT_SCOPE_STALE');
select is(pg_temp.sqlerr(format($$select api.get_content(%L)$$, gen_random_uuid())), 'PT404 NOT_FOUND', 'editor: unknown content -> PT404');

select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.sqlerr(format($$select api.create_content('{"caption": "by key", "channels": [{"integrationId": "%s"}]}')$$, pg_temp.id('ig:A1.x'))),
  'ok', 'editor key: api.create_content');

select pg_temp.act_as('A.viewer', 'A1');
select cmp_ok((select count(*)::int from app.content_items), '>', 10, 'viewer: sees the workspace''s content');
select is(jsonb_array_length(api.list_content('{"limit": 100}') -> 'items') > 0, true, 'viewer: api.list_content');
select is(pg_temp.sqlerr($$select api.create_content('{"caption": "no"}')$$), 'PT403 ROLE_REQUIRED', 'viewer: api.create_content -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(format($$select api.update_content(%L, '{"caption": "no"}')$$, pg_temp.id('from:draft'))), 'PT403 ROLE_REQUIRED', 'viewer: api.update_content -> PT403');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, pg_temp.id('from:draft'))), 'PT403 ROLE_REQUIRED', 'viewer: api.schedule_content -> PT403');
select is(pg_temp.sqlerr(format($$select api.delete_content(%L)$$, pg_temp.id('from:draft'))), 'PT403 ROLE_REQUIRED', 'viewer: api.delete_content -> PT403');
select is(pg_temp.write_outcome(format($$update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = %L$$, pg_temp.id('from:draft'))),
  '42501', 'viewer: a direct UPDATE is refused (42501)');
select is(pg_temp.write_outcome(format($$insert into app.content_roots (organization_id, workspace_id, caption) values (%L, %L, 'x')$$, pg_temp.id('A'), pg_temp.id('A1'))),
  '42501', 'viewer: a direct INSERT of a root -> 42501');

select pg_temp.act_as('A.stranger', 'A1');
select is((select count(*)::int from app.content_items), 0, 'stranger (no role in A1, forged context): sees no content');
select is((select count(*)::int from app.content_roots), 0, 'stranger: sees no roots');
select is(pg_temp.sqlerr($$select api.list_content('{}')$$), 'PT403 ROLE_REQUIRED', 'stranger: api.list_content -> PT403');
select is(pg_temp.write_outcome(format($$update app.content_items set caption = 'x' where id = %L$$, pg_temp.id('from:draft'))), 'rows=0', 'stranger: a direct UPDATE touches no row');

select pg_temp.act_as('B.editor', 'B1');
select is((select count(*)::int from app.content_items), 0, 'editor of another organization: sees none of A''s content');
select is(pg_temp.sqlerr(format($$select api.get_content(%L)$$, pg_temp.id('from:draft'))), 'PT404 NOT_FOUND', '... api.get_content of it -> PT404');
select is(pg_temp.sqlerr(format($$select api.create_content('{"caption": "x", "channels": [{"integrationId": "%s"}]}')$$, pg_temp.id('ig:A1.x'))),
  'PT400 VALIDATION_FAILED', '... and cannot use A''s channel');
select is(pg_temp.write_outcome(format($$insert into app.content_items (organization_id, workspace_id, root_id, integration_id) values (%L, %L, %L, %L)$$,
  pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('root:from:draft'), pg_temp.id('ig:B1.x'))), 'PT400', '... nor hang an edition on A''s root');
select pg_temp.act_as_owner();

select * from finish();
rollback;
