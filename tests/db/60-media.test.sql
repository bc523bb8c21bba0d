-- Media library rules, persona by persona: folder depth (root plus one
-- level, whoever writes), the bin state machine (active <-> deleted, only
-- binned items deleted for good, nothing measured from the bytes changes,
-- size limits), the scheduled-use rule and its mirror (binned media cannot
-- go into content, content using binned media cannot be scheduled), labels
-- (merged labels take no items, no cross-workspace links), the purge job,
-- and isolation: editors write, viewers read, strangers, other
-- organizations, revoked keys and forged contexts see and change nothing.
-- (The media tables, triggers and api.*media* functions in db/schema.sql.)
begin;
select plan(95);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- The hint (JSON details) of the error a statement raises; null when it succeeds.
create function pg_temp.sqlhint(p_sql text) returns jsonb
language plpgsql as $$
declare
  v_hint text;
begin
  execute p_sql;
  raise exception using errcode = 'ZZ000', message = 'probe succeeded';
exception when others then
  if sqlstate = 'ZZ000' then
    return null;
  end if;
  get stacked diagnostics v_hint = pg_exception_hint;
  return nullif(v_hint, '')::jsonb;
end
$$;

-- Media fixture (as the owner): folders, media, content that uses media.
-- M.free, M.sched (in a scheduled edition), M.rootsched (in the root of a
-- scheduled edition), M.draft (in a draft), M.binned (in the bin) in A1;
-- M.A2 in A2; M.B in B1.
create function pg_temp.media(p_label text, p_ws text, p_state text default 'active', p_type text default 'image',
  p_size bigint default 1000) returns void
language sql as $$
  insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key,
    source, state, deleted_at, delete_after)
  values (pg_temp.id(p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), p_type, p_label || '.png', 'image/png', p_size,
    format('media/%s/%s', pg_temp.id(p_ws), pg_temp.id(p_label)), 'client_upload', p_state,
    case when p_state = 'deleted' then now() end, case when p_state = 'deleted' then now() + interval '1 day' end)
$$;
select pg_temp.media('M.free', 'A1'), pg_temp.media('M.sched', 'A1'), pg_temp.media('M.rootsched', 'A1'),
       pg_temp.media('M.draft', 'A1'), pg_temp.media('M.binned', 'A1', 'deleted'), pg_temp.media('M.due', 'A1', 'deleted'),
       pg_temp.media('M.A2', 'A2'), pg_temp.media('M.B', 'B1');
insert into app.media_folders (id, organization_id, workspace_id, parent_id, name) values
  (pg_temp.id('F.root'), pg_temp.id('A'), pg_temp.id('A1'), null, 'Root'),
  (pg_temp.id('F.other'), pg_temp.id('A'), pg_temp.id('A1'), null, 'Other'),
  (pg_temp.id('F.A2'), pg_temp.id('A'), pg_temp.id('A2'), null, 'In A2');
insert into app.media_labels (id, organization_id, workspace_id, name) values
  (pg_temp.id('L.A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Label A1'),
  (pg_temp.id('L.target'), pg_temp.id('A'), pg_temp.id('A1'), 'Target'),
  (pg_temp.id('L.A2'), pg_temp.id('A'), pg_temp.id('A2'), 'Label A2');
insert into app.media_labels (id, organization_id, workspace_id, name, merged_into_id, merged_at) values
  (pg_temp.id('L.merged'), pg_temp.id('A'), pg_temp.id('A1'), 'Merged', pg_temp.id('L.target'), now());
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name)
values (pg_temp.id('ig:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'A1 on X');
insert into app.content_roots (id, organization_id, workspace_id, caption)
select pg_temp.id(r), pg_temp.id('A'), pg_temp.id('A1'), 'Hello' from unnest(array['root:sched', 'root:rootsched', 'root:draft']) r;
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
select pg_temp.id(c), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id(r), pg_temp.id('ig:A1'), 'draft'
from (values ('c:sched', 'root:sched'), ('c:rootsched', 'root:rootsched'), ('c:draft', 'root:draft')) v (c, r);
insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position) values
  (pg_temp.id('c:sched'), pg_temp.id('M.sched'), pg_temp.id('A1'), pg_temp.id('A'), 0),
  (pg_temp.id('c:draft'), pg_temp.id('M.draft'), pg_temp.id('A1'), pg_temp.id('A'), 0);
insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position) values
  (pg_temp.id('root:rootsched'), pg_temp.id('M.rootsched'), pg_temp.id('A1'), pg_temp.id('A'), 0);
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day'
where id in (pg_temp.id('c:sched'), pg_temp.id('c:rootsched'));

-- ---------------------------------------------------------------------------
-- Folder depth: root folders and one level of subfolders, whoever writes.
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.create_media_folder('Sub', %L)$$, pg_temp.id('F.root'))), 'ok',
  'an editor creates a subfolder in a root folder');
select is(set_config('media_test.sub', api.create_media_folder('Sub2', pg_temp.id('F.root')) ->> 'id', true) is not null, true, 'a second subfolder in the same root folder');
select is(pg_temp.sqlerr(format($$select api.create_media_folder('Third', %L)$$, current_setting('media_test.sub')::uuid)), 'PT409 FOLDER_DEPTH_EXCEEDED',
  'a folder inside a subfolder is refused (409 FOLDER_DEPTH_EXCEEDED)');
select is(pg_temp.sqlerr(format($$select api.move_media_folder(%L, %L)$$, pg_temp.id('F.root'), pg_temp.id('F.other'))), 'PT409 FOLDER_DEPTH_EXCEEDED',
  'a folder with subfolders cannot move under another folder');
select is(pg_temp.sqlerr(format($$select api.move_media_folder(%L, %L)$$, pg_temp.id('F.other'), pg_temp.id('F.other'))), 'PT409 FOLDER_DEPTH_EXCEEDED',
  'a folder cannot move into itself');
select is(pg_temp.sqlerr(format($$select api.move_media_folder(%L, %L)$$, pg_temp.id('F.other'), current_setting('media_test.sub')::uuid)), 'PT409 FOLDER_DEPTH_EXCEEDED',
  'a folder cannot move into a subfolder');
select is(pg_temp.sqlerr(format($$select api.move_media_folder(%L, %L)$$, pg_temp.id('F.other'), pg_temp.id('F.A2'))), 'PT404 NOT_FOUND',
  'a folder of another workspace is no target');
select is(pg_temp.sqlerr($$select api.create_media_folder('root', null)$$), 'PT409 FOLDER_NAME_TAKEN',
  'sibling folder names are unique ignoring case');
select is(pg_temp.sqlerr(format($$select api.move_media_folder(%L, null)$$, current_setting('media_test.sub')::uuid)), 'ok',
  'a subfolder moves to the root');
select pg_temp.act_as_owner();
select lives_ok(format($$insert into app.media_folders (id, organization_id, workspace_id, parent_id, name)
  values (%L, %L, %L, %L, 'Owner sub')$$, pg_temp.id('F.sub'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('F.root')),
  'the owner makes a subfolder of a root folder');
select is(pg_temp.sqlerr(format($$insert into app.media_folders (organization_id, workspace_id, parent_id, name)
  values (%L, %L, %L, 'Too deep')$$, pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('F.sub'))), 'PT409 FOLDER_DEPTH_EXCEEDED',
  'the rule holds for a DBA too: no third level by INSERT');
select is(pg_temp.sqlerr(format($$update app.media_folders set parent_id = %L where id = %L$$, pg_temp.id('F.sub'), pg_temp.id('F.other'))),
  'PT409 FOLDER_DEPTH_EXCEEDED', 'nor by UPDATE');
select is(pg_temp.sqlerr(format($$insert into app.media_folders (organization_id, workspace_id, parent_id, name)
  values (%L, %L, %L, 'Cross')$$, pg_temp.id('A'), pg_temp.id('A2'), pg_temp.id('F.root'))), 'PT404 NOT_FOUND',
  'a folder cannot hang under a folder of another workspace');
-- (The key is checked at commit, db/migrations/committed/000043-keys-carry-the-workspace.sql: here, at once.)
select is(left(pg_temp.sqlerr(format($$update app.media_items set folder_id = %L where id = %L; set constraints all immediate$$,
    pg_temp.id('F.A2'), pg_temp.id('M.free'))), 5),
  '23503', 'a media item cannot sit in a folder of another workspace (composite key)');

-- ---------------------------------------------------------------------------
-- The bin: active <-> deleted; only binned items go for good.
-- ---------------------------------------------------------------------------
-- The retention in force (app.settings): one hour.
select pg_temp.act_as_owner();
update app.settings set value = '3600' where key = 'media_bin_retention_seconds';
select pg_temp.act_as('A.editor', 'A1');
select is((api.delete_media(pg_temp.id('M.free')) ->> 'state'), 'deleted', 'delete moves an active item to the bin');
select ok((select delete_after between now() + interval '3599 seconds' and now() + interval '3601 seconds' and deleted_at = now()
           from app.media_items where id = pg_temp.id('M.free')), 'deleteAfter is now plus the retention; deletedAt is now');
select is((api.delete_media(pg_temp.id('M.free')) ->> 'deleteAfter')::timestamptz,
          (select delete_after from app.media_items where id = pg_temp.id('M.free')),
          'deleting a binned item again changes nothing');
select ok((select delete_after > now() + interval '3000 seconds' from app.media_items where id = pg_temp.id('M.free')),
  '... its deleteAfter stays');
select is(pg_temp.sqlerr(format($$select api.update_media(%L, '{"isFavorite": true}')$$, pg_temp.id('M.free'))), 'PT409 MEDIA_IN_BIN',
  'a binned item cannot be edited');
select is((api.restore_media(pg_temp.id('M.free')) ->> 'state'), 'active', 'restore brings it back');
select ok((select deleted_at is null and delete_after is null from app.media_items where id = pg_temp.id('M.free')),
  'a restored item has no deletedAt or deleteAfter');
select is(pg_temp.sqlerr(format($$select api.delete_media_permanently(%L)$$, pg_temp.id('M.free'))), 'PT409 MEDIA_NOT_IN_BIN',
  'an active item cannot be deleted for good');
select is((api.delete_media_permanently(pg_temp.id('M.binned')) ->> 'deleted')::boolean, true, 'a binned item can');
select pg_temp.act_as_owner();
select is((select count(*)::int from app.media_items where id = pg_temp.id('M.binned')), 0, '... and its row is gone');
select is((select reason from app.media_storage_garbage where storage_key = format('media/%s/%s', pg_temp.id('A1'), pg_temp.id('M.binned'))),
  'permanent_delete', '... and its bytes are queued for the purge job');
select is(pg_temp.sqlerr(format($$delete from app.media_items where id = %L$$, pg_temp.id('M.free'))), 'PT409 MEDIA_NOT_IN_BIN',
  'a DBA cannot delete an active item either');
select is(left(pg_temp.sqlerr(format($$update app.media_items set state = 'deleted' where id = %L$$, pg_temp.id('M.free'))), 5), '23514',
  'binned without deleteAfter breaks a constraint');
select is(pg_temp.sqlerr(format($$update app.media_items set file_size = 1 where id = %L$$, pg_temp.id('M.free'))), 'PT400 IMMUTABLE_FIELD',
  'what was measured from the bytes never changes');
select is(pg_temp.sqlerr(format($$update app.media_items set storage_key = 'elsewhere' where id = %L$$, pg_temp.id('M.free'))), 'PT400 IMMUTABLE_FIELD',
  'nor where the bytes are');
select is(left(pg_temp.sqlerr($$select pg_temp.media('M.bigimage', 'A1', 'active', 'image', 52428801)$$), 5), '23514',
  'an image over 50 MB cannot exist');
select is(left(pg_temp.sqlerr($$select pg_temp.media('M.bigvideo', 'A1', 'active', 'video', 536870913)$$), 5), '23514',
  'a video over 512 MB cannot exist');
select is(pg_temp.sqlerr($$select pg_temp.media('M.okvideo', 'A1', 'active', 'video', 536870912)$$), 'ok',
  'a video of exactly 512 MB can');
select is(pg_temp.sqlerr($$delete from app.workspaces where id = pg_temp.id('A2')$$), 'ok',
  'deleting a workspace takes its active media along');

-- ---------------------------------------------------------------------------
-- The scheduled-use rule and its mirror.
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.delete_media(%L)$$, pg_temp.id('M.sched'))), 'PT409 MEDIA_IN_USE',
  'media in a scheduled edition cannot be binned (409 MEDIA_IN_USE)');
select is(pg_temp.sqlhint(format($$select api.delete_media(%L)$$, pg_temp.id('M.sched'))) -> 'contentIds',
  jsonb_build_array(pg_temp.id('c:sched')), '... and the refusal names the content');
select is(pg_temp.sqlerr(format($$select api.delete_media(%L)$$, pg_temp.id('M.rootsched'))), 'PT409 MEDIA_IN_USE',
  'media in the root of a scheduled edition cannot be binned either');
select is(pg_temp.sqlhint(format($$select api.delete_media(%L)$$, pg_temp.id('M.rootsched'))) -> 'contentIds',
  jsonb_build_array(pg_temp.id('c:rootsched')), '... naming the edition');
select is((api.delete_media(pg_temp.id('M.draft')) ->> 'state'), 'deleted', 'media used only by a draft can be binned');
select is((select jsonb_agg(jsonb_build_array(r ->> 'status', r -> 'error' ->> 'code') order by o)
           from jsonb_array_elements(api.bulk_media('delete', array[pg_temp.id('M.sched'), pg_temp.id('M.free')],
             '{}') -> 'results') with ordinality x (r, o)),
          '[["409", "MEDIA_IN_USE"], ["200", null]]'::jsonb, 'in bulk, the refused item does not spoil the other');
select is((select state from app.media_items where id = pg_temp.id('M.free')), 'deleted', '... which went to the bin');
select pg_temp.act_as_owner();
select is(pg_temp.sqlerr(format($$update app.media_items set state = 'deleted', delete_after = now() where id = %L$$, pg_temp.id('M.sched'))),
  'PT409 MEDIA_IN_USE', 'the rule holds for a DBA too');
select is(pg_temp.sqlerr(format($$insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
  values (%L, %L, %L, %L, 1)$$, pg_temp.id('c:sched'), pg_temp.id('M.free'), pg_temp.id('A1'), pg_temp.id('A'))), 'PT409 MEDIA_IN_BIN',
  'binned media cannot be put into content');
select is(pg_temp.sqlerr(format($$insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
  values (%L, %L, %L, %L, 1)$$, pg_temp.id('root:sched'), pg_temp.id('M.free'), pg_temp.id('A1'), pg_temp.id('A'))), 'PT409 MEDIA_IN_BIN',
  '... nor into a content root');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = %L$$,
  pg_temp.id('c:draft'))), 'PT409 MEDIA_IN_BIN', 'content that uses binned media cannot be scheduled');
update app.content_items set status = 'draft' where id = pg_temp.id('c:sched');
select pg_temp.act_as('A.editor', 'A1');
select is((api.delete_media(pg_temp.id('M.sched')) ->> 'state'), 'deleted', 'once unscheduled, the media can be binned');
select ok(exists (select 1 from app.media_usage_events where media_id = pg_temp.id('M.sched') and event = 'unscheduled'
                  and content_item_id = pg_temp.id('c:sched')), 'the usage history recorded the unscheduling');

-- ---------------------------------------------------------------------------
-- The purge job (as pressroom_worker).
-- ---------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.media_items set delete_after = now() - interval '1 second' where id = pg_temp.id('M.due');
set local role pressroom_worker;
select is(app.media_purge_bin(100), '{"purged": 1, "skipped": 0}'::jsonb, 'the worker purges the one binned item that is due');
select is(app.media_garbage_batch(100) @> array[format('media/%s/%s', pg_temp.id('A1'), pg_temp.id('M.due'))], true,
  '... and queues its bytes');
reset role;
select is((select count(*)::int from app.media_items where id = pg_temp.id('M.due')), 0, '... whose row is gone');
select is((select count(*)::int from app.media_items where id in (pg_temp.id('M.free'), pg_temp.id('M.draft'))), 2,
  'binned items not yet due stay');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr('select app.media_purge_bin(1)'), '42501', 'a request cannot run the purge');
select pg_temp.act_as_owner();

-- ---------------------------------------------------------------------------
-- Labels.
-- ---------------------------------------------------------------------------
select is(pg_temp.sqlerr(format($$insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id) values (%L, %L, %L, %L)$$,
  pg_temp.id('M.rootsched'), pg_temp.id('L.merged'), pg_temp.id('A1'), pg_temp.id('A'))), 'PT409 LABEL_MERGED',
  'a merged label takes no items');
select is(pg_temp.sqlerr(format($$insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id) values (%L, %L, %L, %L)$$,
  pg_temp.id('M.rootsched'), pg_temp.id('L.A2'), pg_temp.id('A1'), pg_temp.id('A'))) like '23503%', true,
  'an item cannot carry a label of another workspace');
select pg_temp.act_as('A.editor', 'A1');
select is((api.merge_media_labels(pg_temp.id('L.A1'), pg_temp.id('L.target')) ->> 'mergedIntoId')::uuid, pg_temp.id('L.target'),
  'an editor merges a label into another');
select is(pg_temp.sqlerr(format($$select api.merge_media_labels(%L, %L)$$, pg_temp.id('L.target'), pg_temp.id('L.A1'))), 'PT409 LABEL_MERGED',
  'nothing merges into a merged label');

-- ---------------------------------------------------------------------------
-- Isolation, persona by persona.
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select ok((select count(*) from app.media_items) > 0, 'a viewer of A1 sees its media');
select is(pg_temp.sqlerr($$select api.list_media('{}', null, 50)$$), 'ok', 'a viewer lists media');
select is(pg_temp.sqlerr($$select api.create_media_folder('viewer', null)$$), 'PT403 ROLE_REQUIRED', 'a viewer cannot create folders');
select is(pg_temp.sqlerr(format($$select api.delete_media(%L)$$, pg_temp.id('M.rootsched'))), 'PT403 ROLE_REQUIRED', 'nor bin media');
select is(pg_temp.write_outcome(format($$insert into app.media_labels (organization_id, workspace_id, name) values (%L, %L, 'sneaky')$$,
  pg_temp.id('A'), pg_temp.id('A1'))), '42501', 'nor write labels past the api (RLS)');
select is(pg_temp.write_outcome($$update app.media_items set is_favorite = true$$), '42501', 'nor update media rows (42501)');
select pg_temp.act_as('A.stranger', 'A1');
select is((select count(*)::int from app.media_items), 0, 'a member of the organization without access to A1 sees none of its media');
select is(pg_temp.sqlerr($$select api.list_media('{}', null, 50)$$), 'PT403 ROLE_REQUIRED', '... and cannot list it');
select pg_temp.act_as('A.editor', 'A1');
select is((select count(*)::int from app.media_items where workspace_id = pg_temp.id('B1')), 0, 'an editor of A1 sees nothing of B1');
select is(pg_temp.sqlerr(format($$select api.get_media(%L)$$, pg_temp.id('M.B'))), 'PT404 NOT_FOUND', '... B''s media is not found');
select is(pg_temp.write_outcome(format($$update app.media_items set is_favorite = true where id = %L$$, pg_temp.id('M.B'))), 'rows=0',
  '... nor changed');
select is((select jsonb_agg(r ->> 'status') from jsonb_array_elements(api.bulk_media('restore', array[pg_temp.id('M.B')]) -> 'results') r),
  '["404"]'::jsonb, '... nor reached in bulk');
select pg_temp.act_as('A.editor', 'B1');
select is((select count(*)::int from app.media_items), 0, 'a forged context (A''s editor in B1) sees nothing');
select is(pg_temp.sqlerr(format($$select api.get_media(%L)$$, pg_temp.id('M.B'))), 'PT403 ROLE_REQUIRED', '... and may do nothing');
select is(pg_temp.write_outcome(format($$insert into app.media_folders (organization_id, workspace_id, name) values (%L, %L, 'x')$$,
  pg_temp.id('B'), pg_temp.id('B1'))), '42501', '... not even a raw insert');
-- The page builder (a definer function) shows no labels of another workspace's item, even handed its row.
select pg_temp.act_as_owner();
insert into app.media_labels (id, organization_id, workspace_id, name) values (pg_temp.id('L.B1'), pg_temp.id('B'), pg_temp.id('B1'), 'Label B1');
insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id) values (pg_temp.id('M.B'), pg_temp.id('L.B1'), pg_temp.id('B1'), pg_temp.id('B'));
select set_config('media_test.mb', (select to_jsonb(m)::text from app.media_items m where id = pg_temp.id('M.B')), true);
select pg_temp.act_as('A.editor', 'A1');
select is(app.media_json_list(array[jsonb_populate_record(null::app.media_items, current_setting('media_test.mb')::jsonb)]) -> 0 -> 'labels',
  '[]'::jsonb, 'handed a row of B, A''s editor learns none of its labels');
select pg_temp.act_as('A.editor', 'B1');
select is(app.media_json_list(array[jsonb_populate_record(null::app.media_items, current_setting('media_test.mb')::jsonb)]) -> 0 -> 'labels',
  '[]'::jsonb, '... nor in a forged context of B1');
select pg_temp.act_as('B.editor', 'B1');
select is(app.media_json_list(array[jsonb_populate_record(null::app.media_items, current_setting('media_test.mb')::jsonb)]) -> 0 -> 'labels' -> 0 ->> 'name',
  'Label B1', 'B''s own editor sees them');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.sqlerr($$select api.create_media_label('from a key', null, null)$$), 'ok', 'an editor key of A1 writes labels');
select pg_temp.act_as('key:A1.revoked', 'A1');
select is(pg_temp.sqlerr($$select api.create_media_label('from a revoked key', null, null)$$), 'PT403 ROLE_REQUIRED',
  'a revoked key has no role, so no writes');
select is((select count(*)::int from app.media_items), 0, '... and no reads');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.sqlerr(format($$select api.get_media(%L)$$, pg_temp.id('M.rootsched'))), 'PT404 NOT_FOUND', 'B''s editor finds nothing of A');
select is((select count(*)::int from app.media_usage_events), 0, '... and none of its usage history');

-- ---------------------------------------------------------------------------
-- Secrets and the functions of the server and the worker.
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.sqlerr($$select * from app.server_secrets$$), '42501', 'a request cannot read the signing secret');
select is(pg_temp.sqlerr($$select api.storage_signing_secret(gen_random_uuid()::text::bytea)$$), '42501',
  '... nor call the function that keeps it');
select pg_temp.act_as_owner();
select ok(has_function_privilege('pressroom_app', 'api.storage_signing_secret(bytea)', 'execute')
          and has_function_privilege('pressroom_app', 'api.storage_media_object(uuid)', 'execute'),
  'the server''s login role may (outside any request)');
select ok(not has_function_privilege('pressroom_app', 'api.list_media(jsonb, jsonb, integer)', 'execute')
          or has_function_privilege('pressroom_request', 'api.list_media(jsonb, jsonb, integer)', 'execute'),
  'request functions are for the request role');
select ok(has_function_privilege('pressroom_worker', 'app.media_purge_bin(integer)', 'execute')
          and has_function_privilege('pressroom_worker', 'app.media_expire_upload_sessions(integer)', 'execute')
          and not has_function_privilege('pressroom_request', 'app.media_expire_upload_sessions(integer)', 'execute'),
  'the worker runs the purge and the expiry; requests do not');
select is(api.storage_signing_secret(convert_to(repeat('x', 32), 'UTF8')), api.storage_signing_secret(convert_to(repeat('y', 32), 'UTF8')),
  'the first stored secret wins: every process reads the same');

-- ---------------------------------------------------------------------------
-- Upload sessions.
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.init_media_upload('big.png', 'image/png', 52428801, null, null)$$), 'PT413 MEDIA_TOO_LARGE',
  'an upload of an image over 50 MB is refused at the start');
select is(pg_temp.sqlerr($$select api.init_media_upload('doc.pdf', 'application/pdf', 10, null, null)$$), 'PT415 UNSUPPORTED_MEDIA_FORMAT',
  'an unsupported type is refused at the start');
select isnt(set_config('media_test.s', api.init_media_upload('a.png', 'image/png', 10, null, null) ->> 'sessionId', true), null, 'an editor starts an upload');
select is((api.begin_media_upload_completion(current_setting('media_test.s')::uuid) ->> 'state'), 'pending', 'a new session is pending');
select is((api.complete_media_upload(current_setting('media_test.s')::uuid,
  '{"type": "image", "contentType": "image/png", "fileSize": 10, "width": 1, "height": 1, "checksumSha256": null}'::jsonb
    || jsonb_build_object('storageKey', format('media/%s/%s', pg_temp.id('A1'), current_setting('media_test.s')::uuid)), '{}') ->> 'id')::uuid,
  current_setting('media_test.s')::uuid, 'completing makes the media item whose id is the session''s');
select is((api.begin_media_upload_completion(current_setting('media_test.s')::uuid) -> 'media' ->> 'id')::uuid, current_setting('media_test.s')::uuid,
  'completing again answers the same item');
select is(pg_temp.sqlerr(format($$select api.complete_media_upload(%L, '{"type": "video", "contentType": "video/mp4", "fileSize": 10}', '{}')$$,
  current_setting('media_test.s')::uuid)), 'PT404 NOT_FOUND', 'a completed session makes no second item');
select pg_temp.act_as_owner();
update app.media_upload_sessions set expires_at = now() - interval '1 second' where id <> current_setting('media_test.s')::uuid;
select pg_temp.act_as('A.editor', 'A1');
select isnt(set_config('media_test.s2', api.init_media_upload('b.png', 'image/png', 10, null, null) ->> 'sessionId', true), null, 'and another');
select pg_temp.act_as_owner();
update app.media_upload_sessions set expires_at = now() - interval '1 second' where id = current_setting('media_test.s2')::uuid;
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.begin_media_upload_completion(%L)$$, current_setting('media_test.s2')::uuid)), 'PT410 UPLOAD_SESSION_EXPIRED',
  'an expired session cannot be completed');
select pg_temp.act_as_owner();
set local role pressroom_worker;
select is((app.media_expire_upload_sessions(100) ->> 'expired')::int, 1, 'the worker expires the pending session past its expiry');
reset role;
select is((select state from app.media_upload_sessions where id = current_setting('media_test.s2')::uuid), 'expired', '... which reads expired');

select * from finish();
rollback;
