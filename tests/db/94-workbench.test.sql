-- Workbench rules in the database: fractional ordering keys, a move writes
-- one row, rebalance keeps the order, rows edit their content through the
-- content functions (status machine, platform rules, versions, publish job),
-- bulk scheduling and its dry run, and the personas (editor writes, viewer
-- reads, other workspaces and organizations see nothing).
begin;
select plan(49);

-- @include personas.sql
-- @include content.sql

-- Ids the api functions made, by label, for the statements after.
create function pg_temp.remember(p_label text, p_id uuid) returns uuid
language sql as $$ select set_config('workbench_test.' || p_label, p_id::text, false)::uuid $$;
create function pg_temp.ref(p_label text) returns uuid
language sql stable as $$ select current_setting('workbench_test.' || p_label)::uuid $$;

------------------------------------------------------------------------------
-- Ordering keys
------------------------------------------------------------------------------
select is(app.workbench_key_between(null, null), 'V', 'the first key is the middle digit');
select ok(app.workbench_key_between('V', null) collate "C" > 'V', 'a key after the last is greater');
select ok(app.workbench_key_between('V', 'W') collate "C" > 'V' and app.workbench_key_between('V', 'W') collate "C" < 'W',
  'a key between two adjacent digits lies between them');
select is(pg_temp.sqlerr($$select app.workbench_key_between('W', 'V')$$), 'P0001', 'bounds out of order are refused');

-- 1,000 keys in one go: strictly ascending, distinct, short.
select ok((select bool_and(k collate "C" < lead collate "C") from (
             select k, lead(k) over (order by n) lead from unnest(app.workbench_keys_between(null, null, 1000)) with ordinality x (k, n)) q
           where lead is not null),
  '1,000 bulk keys are strictly ascending');
select cmp_ok((select max(length(k)) from unnest(app.workbench_keys_between(null, null, 1000)) k), '<=', 3,
  '1,000 bulk keys are at most 3 digits');

-- Random insertions between neighbours keep a total order (a property run, seeded).
create temporary table pg_temp.keys (k text collate "C" primary key);
insert into pg_temp.keys values (app.workbench_key_between(null, null));
do $$
declare
  v_a text;
  v_b text;
begin
  perform setseed(0.42);
  for i in 1 .. 500 loop
    select k into v_a from pg_temp.keys order by random() limit 1;
    if random() < 0.2 then v_a := null; end if;
    select min(k) into v_b from pg_temp.keys where v_a is null or k > v_a;
    if v_a is null then
      insert into pg_temp.keys values (app.workbench_key_between(null, v_b));
    else
      insert into pg_temp.keys values (app.workbench_key_between(v_a, v_b));
    end if;
  end loop;
end
$$;
select is((select count(*)::int from pg_temp.keys), 501, '500 random insertions made 500 distinct new keys');
select ok((select bool_and(k ~ '^[0-9A-Za-z]*[1-9A-Za-z]$') from pg_temp.keys), 'no key ends in the smallest digit');

------------------------------------------------------------------------------
-- Pages, sections, roles
------------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr($$select api.create_workbench_page('{"name": "Nope"}')$$), 'PT403 ROLE_REQUIRED', 'a viewer cannot create a page');

select pg_temp.act_as('A.editor', 'A1');
select pg_temp.remember('page', (api.create_workbench_page('{"name": "March", "sections": [{"name": "Week 1"}, {"name": "Week 2"}]}') ->> 'id')::uuid);
select pg_temp.remember('w1', (select id from app.workbench_sections where name = 'Week 1'));
select pg_temp.remember('w2', (select id from app.workbench_sections where name = 'Week 2'));
select is((select count(*)::int from app.workbench_sections where page_id = pg_temp.ref('page')), 2,
  'the page has its two sections');
select is((select count(*)::int from app.workbench_sections where name = 'Week 1' and position collate "C" < (select position from app.workbench_sections where name = 'Week 2')), 1,
  'sections keep the order they were given');

select pg_temp.act_as('A.viewer', 'A1');
select is(jsonb_array_length(api.list_workbench_pages('{}') -> 'items'), 1, 'a viewer reads the page list');
select is(pg_temp.sqlerr(format($$select api.create_workbench_row('{"sectionId": "%s", "title": "x"}')$$, pg_temp.ref('w1'))),
  'PT403 ROLE_REQUIRED', 'a viewer cannot create a row');
select pg_temp.act_as('B.owner', 'B1');
select is((select count(*)::int from app.workbench_pages), 0, 'another organization sees no page of A');
select is(pg_temp.sqlerr(format($$select api.get_workbench_page(%L, '{}')$$, pg_temp.ref('page'))),
  'PT404 NOT_FOUND', 'another organization gets 404 for A''s page');
select pg_temp.act_as('A.stranger', 'A1');
select is((select count(*)::int from app.workbench_rows), 0, 'a member without a role in A1 sees no row');

------------------------------------------------------------------------------
-- Rows and their content
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select pg_temp.remember('idea', (api.create_workbench_row(jsonb_build_object('sectionId', pg_temp.ref('w1'),
  'title', 'Just an idea', 'scheduledAt', '2030-03-02')) ->> 'id')::uuid);
select is((select content_root_id from app.workbench_rows where id = pg_temp.ref('idea')), null,
  'a row with only a title and a date has no content root');
select is(api.get_workbench_row(pg_temp.ref('idea')) ->> 'status', 'idea', 'its status is idea');
select is(api.get_workbench_row(pg_temp.ref('idea')) ->> 'scheduledAt', '2030-03-02', 'a date-only plan stays a date');

select pg_temp.remember('post', (api.create_workbench_row(jsonb_build_object('sectionId', pg_temp.ref('w1'),
  'title', 'Launch', 'caption', 'We launch on Monday', 'channels', jsonb_build_array(pg_temp.id('ig:A1.x'), pg_temp.id('ig:A1.li')),
  'scheduledAt', (now() + interval '3 days')::text)) ->> 'id')::uuid);
select isnt((select content_root_id from app.workbench_rows where id = pg_temp.ref('post')), null,
  'a row with a caption and channels gets a content root');
select is((select count(*)::int from app.content_items i join app.workbench_rows w on w.content_root_id = i.root_id
           where w.id = pg_temp.ref('post') and i.status = 'draft' and i.deleted_at is null), 2,
  'one draft edition per channel');
select is((select caption from app.content_roots r join app.workbench_rows w on w.content_root_id = r.id
           where w.id = pg_temp.ref('post')), 'We launch on Monday', 'the caption is the root''s');
select ok((select bool_and(i.intended_publish_at = w.planned_at) from app.content_items i join app.workbench_rows w on w.content_root_id = i.root_id
           where w.id = pg_temp.ref('post')), 'the drafts carry the row''s time as their intended time');

-- Editing the row edits the root; a channel removed deletes its edition, one added makes a draft.
select lives_ok(format($$select api.update_workbench_row(%L, '{"caption": "We launch on Tuesday", "channels": ["%s", "%s"]}')$$,
  pg_temp.ref('post'), pg_temp.id('ig:A1.x'), pg_temp.id('ig:A1.insta')), 'a row''s caption and channels change');
select is((select caption from app.content_roots r join app.workbench_rows w on w.content_root_id = r.id
           where w.id = pg_temp.ref('post')), 'We launch on Tuesday', 'the root''s caption changed');
select is((select array_agg(g.platform order by g.platform) from app.content_items i join app.integrations g on g.id = i.integration_id
           join app.workbench_rows w on w.content_root_id = i.root_id
           where w.id = pg_temp.ref('post') and i.deleted_at is null), array['instagram', 'x'],
  'linkedin''s edition went, instagram''s came');
select is(pg_temp.sqlerr(format($$select api.update_workbench_row(%L, '{"channels": ["%s"]}')$$,
  pg_temp.ref('post'), pg_temp.id('ig:B1.x'))), 'PT400 VALIDATION_FAILED',
  'a channel of another workspace is refused');

------------------------------------------------------------------------------
-- Bulk scheduling through api.schedule_content
------------------------------------------------------------------------------
-- Instagram needs media: the dry run says so for that channel and writes nothing.
select is((select r ->> 'outcome' from jsonb_array_elements(api.schedule_workbench_rows(
             jsonb_build_object('rowIds', jsonb_build_array(pg_temp.ref('post'))), true) -> 'results') r
           where r ->> 'integrationId' = pg_temp.id('ig:A1.x')::text), 'valid', 'dry run: the X channel would schedule');
select is((select r -> 'error' ->> 'code' from jsonb_array_elements(api.schedule_workbench_rows(
             jsonb_build_object('rowIds', jsonb_build_array(pg_temp.ref('post'))), true) -> 'results') r
           where r ->> 'integrationId' = pg_temp.id('ig:A1.insta')::text), 'VALIDATION_FAILED', 'dry run: Instagram without media fails its platform rule');
select is((select count(*)::int from app.content_items where status = 'scheduled'), 0, 'the dry run scheduled nothing');
select pg_temp.act_as_owner();
select is((select count(*)::int from pgboss.job where name = 'content.publish'), 0, 'the dry run enqueued no publish job');
select pg_temp.act_as('A.editor', 'A1');

-- Commit: the failing channel keeps the whole row back; the idea row has its own error.
select is(api.schedule_workbench_rows(jsonb_build_object('rowIds', jsonb_build_array(
            pg_temp.ref('post'), pg_temp.ref('idea'))), false) - 'results',
  '{"dryRun": false, "rows": 2, "rowsOk": 0, "rowsFailed": 2, "channelsOk": 0, "channelsFailed": 2}'::jsonb,
  'a row with a failing channel is not scheduled at all, and an idea row fails on its own');
select is((select count(*)::int from app.content_items where status = 'scheduled'), 0, 'nothing was scheduled');

select lives_ok(format($$select api.update_workbench_row(%L, '{"channels": ["%s"]}')$$,
  pg_temp.ref('post'), pg_temp.id('ig:A1.x')), 'the row drops Instagram');
select is(api.schedule_workbench_rows(jsonb_build_object('rowIds', jsonb_build_array(pg_temp.ref('post'))), false) ->> 'rowsOk',
  '1', 'now the row schedules');
select is(api.get_workbench_row(pg_temp.ref('post')) ->> 'status', 'scheduled', 'the row''s status is derived: scheduled');
select pg_temp.act_as_owner();
select is((select count(*)::int from pgboss.job j join app.content_items i on i.publish_job_id = j.id where i.status = 'scheduled'), 1,
  'the scheduled edition has its publish job, from the content trigger');
select pg_temp.act_as('A.editor', 'A1');
select cmp_ok((select count(*)::int from app.content_versions v join app.content_items i on i.id = v.content_item_id
               join app.workbench_rows w on w.content_root_id = i.root_id where w.id = pg_temp.ref('post')), '>=', 2,
  'the caption change recorded a version, as through /v1');

-- A rule added to scheduling later (here a stand-in review policy, a trigger
-- refusing to schedule) applies to the dry run and the commit unchanged.
select pg_temp.remember('later', (api.create_workbench_row(jsonb_build_object('sectionId', pg_temp.ref('w1'),
  'caption', 'Needs review', 'channels', jsonb_build_array(pg_temp.id('ig:A1.x')), 'scheduledAt', (now() + interval '4 days')::text)) ->> 'id')::uuid);
select pg_temp.act_as_owner();
create function app.tg_content_items_test_review() returns trigger language plpgsql as $$
begin
  if new.status = 'scheduled' and old.status is distinct from 'scheduled' then
    perform app.raise(409, 'REVIEW_REQUIRED', 'This content needs an approved review before it is scheduled.');
  end if;
  return new;
end
$$;
grant execute on function app.tg_content_items_test_review() to pressroom_api;
create trigger content_items_99_test_review before update on app.content_items for each row execute function app.tg_content_items_test_review();
select pg_temp.act_as('A.editor', 'A1');
select is((select r -> 'error' ->> 'code' from jsonb_array_elements(api.schedule_workbench_rows(
             jsonb_build_object('rowIds', jsonb_build_array(pg_temp.ref('later'))), true) -> 'results') r),
  'REVIEW_REQUIRED', 'the dry run answers a rule added to the schedule path later, unchanged');
select is((select r -> 'error' ->> 'code' from jsonb_array_elements(api.schedule_workbench_rows(
             jsonb_build_object('rowIds', jsonb_build_array(pg_temp.ref('later'))), false) -> 'results') r),
  'REVIEW_REQUIRED', 'and so does the commit');
select pg_temp.act_as_owner();
drop trigger content_items_99_test_review on app.content_items;
select pg_temp.act_as('A.editor', 'A1');

------------------------------------------------------------------------------
-- A committed bulk schedule places the feed-grid tiles of a channel in one pass,
-- by time among the channel's scheduled tiles; the deferred trigger keeps them.
------------------------------------------------------------------------------
select pg_temp.remember('batch' || n, (api.create_workbench_row(jsonb_build_object('sectionId', pg_temp.ref('w1'),
  'caption', 'Batch ' || n, 'channels', jsonb_build_array(pg_temp.id('ig:A1.x')),
  'scheduledAt', (now() + make_interval(days => d))::text)) ->> 'id')::uuid)
from (values (1, 9), (2, 3), (3, 11), (4, 8), (5, 3), (6, 12)) v (n, d);
set constraints app.content_items_70_grid_tile deferred;
select is(api.schedule_workbench_rows(jsonb_build_object('rowIds',
  (select jsonb_agg(pg_temp.ref('batch' || n) order by n) from generate_series(1, 6) n)), false) ->> 'channelsOk', '6',
  'six rows on X scheduled in one call');
set constraints app.content_items_70_grid_tile immediate;  -- what commit does
select is((select count(*)::int from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
           join app.workbench_rows w on w.content_root_id = i.root_id
           where w.id in (select pg_temp.ref('batch' || n) from generate_series(1, 6) n) and t.position_key is not null), 6,
  'each has its tile');
select ok((select bool_and(app.grid_in_time_order(t.workspace_id, t.id)) from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
           where t.integration_id = pg_temp.id('ig:A1.x') and i.status = 'scheduled'),
  'every scheduled tile of the channel is in time order (checked against all of them)');

------------------------------------------------------------------------------
-- Moves write one row; rebalance keeps the order
------------------------------------------------------------------------------
select api.bulk_create_workbench_rows(jsonb_build_object('rows',
  (select jsonb_agg(jsonb_build_object('sectionId', pg_temp.ref('w2'), 'title', 'r' || n)) from generate_series(1, 50) n)));
select pg_temp.act_as_owner();
create temporary table pg_temp.before_move as select id, position from app.workbench_rows where section_id = pg_temp.ref('w2');
grant select on pg_temp.before_move to public;
select pg_temp.act_as('A.editor', 'A1');
select api.move_workbench_row((select id from app.workbench_rows where title = 'r50'),
  jsonb_build_object('afterId', (select id from app.workbench_rows where title = 'r1')));
select is((select count(*)::int from app.workbench_rows w join pg_temp.before_move b on b.id = w.id where w.position <> b.position), 1,
  'a move writes one row''s key');
select is((select array_agg(title order by position) from app.workbench_rows where section_id = pg_temp.ref('w2'))[1:3],
  array['r1', 'r50', 'r2'], 'the moved row sits after the one named');
-- Keys stay short: 100 moves to the same slot trigger rebalances, never a long key.
do $$
begin
  for i in 1 .. 100 loop
    perform api.move_workbench_row((select id from app.workbench_rows where title = 'r' || (2 + i % 40)),
      jsonb_build_object('afterId', (select id from app.workbench_rows where title = 'r1')));
  end loop;
end
$$;
select cmp_ok((select max(length(position)) from app.workbench_rows), '<=', app.workbench_key_max_length(),
  '100 moves into one gap never leave a key longer than the maximum');
select is((select count(distinct position)::int from app.workbench_rows where section_id = pg_temp.ref('w2')), 50,
  'no position lost or duplicated');

-- The import's duplicate check (db/migrations/committed/000028-import-duplicates-hash.sql): it still
-- flags a line that repeats an earlier one, and the join setting it changes for that one
-- statement is back as it was afterwards.
select pg_temp.act_as('A.editor', 'A1');
select set_config('workbench_test.import', api.import_workbench_csv(pg_temp.ref('page'), jsonb_build_object('dryRun', true,
  'header', jsonb_build_array('title', 'caption', 'channels', 'scheduled_at'),
  'lines', jsonb_build_array(
    jsonb_build_object('line', 2, 'fields', jsonb_build_array('one', 'Same words', 'ig:A1.x', '2031-03-02 09:00')),
    jsonb_build_object('line', 3, 'fields', jsonb_build_array('two', 'same words ', 'ig:A1.x', '2031-03-02 15:00')))))::text, false);
select is(current_setting('workbench_test.import')::jsonb #>> '{results,1,warnings,0,code}', 'possible_duplicate', 'the import flags a line repeating an earlier one');
select is(current_setting('enable_nestloop'), 'on', '... and leaves nested loops as they were');

select * from finish();
rollback;
