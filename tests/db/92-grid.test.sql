-- Grid planner rules in the database: fractional keys, the grid's order
-- (published newest first, then by key; scheduled tiles in publish order),
-- moves with the exchange of publish times and the publish jobs following,
-- published tiles fixed, swap media (versions recorded), cover, promote, the
-- placement trigger for content written by the content routes, and roles.
begin;
select plan(84);

-- @include personas.sql
-- @include content.sql

-- The placement trigger is deferred to commit; this file is one transaction,
-- so it runs it at once (the deferral itself is checked below, and over HTTP
-- in tests/api/grid.test.ts).
set constraints app.content_items_70_grid_tile immediate;

create temp table inserted (n int, id uuid);
grant insert, select on inserted to pressroom_api;
create function pg_temp.v(p text) returns uuid language sql as $$ select current_setting('grid.' || p)::uuid $$;
create function pg_temp.t(p text) returns timestamptz language sql as $$ select current_setting('grid.' || p)::timestamptz $$;
-- Walking the whole grid one tile per page gives the grid (keys compare bytewise, whatever the database's collation).
create function pg_temp.walk(p_integration text) returns uuid[]
language plpgsql as $$
declare
  v_page jsonb;
  v_cursor text;
  v_ids uuid[] := '{}';
begin
  loop
    v_page := api.get_grid(pg_temp.id(p_integration), 1, v_cursor);
    v_ids := v_ids || array(select (x ->> 'id')::uuid from jsonb_array_elements(v_page -> 'data') x);
    v_cursor := v_page -> 'meta' ->> 'nextCursor';
    exit when v_cursor is null;
  end loop;
  return v_ids;
end
$$;
create function pg_temp.kinds(p_integration text) returns text
language sql as $$
  select string_agg(x ->> 'kind', ',' order by (x ->> 'position')::int)
  from jsonb_array_elements(api.get_grid(pg_temp.id(p_integration), 200, null) -> 'data') x
$$;
create function pg_temp.grid_ids(p_integration text) returns uuid[]
language sql as $$
  select array_agg((x ->> 'id')::uuid order by (x ->> 'position')::int)
  from jsonb_array_elements(api.get_grid(pg_temp.id(p_integration), 200, null) -> 'data') x
$$;
create function pg_temp.tile_of(p_content uuid) returns uuid
language sql as $$ select id from app.grid_tiles where content_item_id = p_content $$;
create function pg_temp.at(p_content uuid) returns timestamptz
language sql as $$ select scheduled_at from app.content_items where id = p_content $$;
create function pg_temp.job_start(p_content uuid) returns timestamptz
language sql as $$
  select j.start_after from app.content_items i join pgboss.job j on j.name = 'content.publish' and j.id = i.publish_job_id
  where i.id = p_content
$$;
-- An Instagram post scheduled in p_hours hours with the image, through the content route's function.
create function pg_temp.schedule_insta(p_hours int, p_integration text default 'ig:A1.insta') returns uuid
language sql as $$
  select (api.create_content(jsonb_build_object('intent', 'schedule', 'caption', 'post in ' || p_hours || 'h',
    'scheduledAt', now() + make_interval(hours => p_hours), 'mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')),
    'channels', jsonb_build_array(jsonb_build_object('integrationId', pg_temp.id(p_integration))))) -> 'editions' -> 0 ->> 'id')::uuid
$$;

------------------------------------------------------------------------------
-- Fractional keys.
------------------------------------------------------------------------------
select is(app.grid_key_between(null, null), 'V', 'the first key');
select ok(app.grid_key_between('V', null) > 'V' collate "C", 'a key after');
select ok(app.grid_key_between(null, 'V') < 'V' collate "C", 'a key before');
select ok(app.grid_key_between('V', 'W') > 'V' collate "C" and app.grid_key_between('V', 'W') < 'W' collate "C",
  'a key between adjacent digits');
select ok(app.grid_key_between(null, '1') < '1' collate "C" and app.grid_key_between(null, '01') < '01' collate "C",
  'keys before the smallest ones still exist');
select throws_ok($$select app.grid_key_between('W', 'V')$$, 'P0001', null, 'a reversed pair is refused');

-- Property: 400 insertions at random places keep a strict order, never end in 0.
create temp table keys (k text collate "C" primary key);
do $$
declare
  v_a text;
  v_b text;
  i int;
begin
  perform setseed(0.42);
  insert into keys values (app.grid_key_between(null, null));
  for i in 1..400 loop
    select k into v_a from keys order by random() limit 1;
    if random() < 0.2 then v_a := null; end if;
    select min(k) into v_b from keys where k > coalesce(v_a, '');
    insert into keys values (app.grid_key_between(v_a, v_b));
  end loop;
end
$$;
select is((select count(*)::int from keys), 401, '401 distinct keys (no collision)');
select is((select count(*)::int from keys where k !~ '^[0-9A-Za-z]*[1-9A-Za-z]$'), 0, 'no key ends in 0 or leaves the alphabet');
select ok((select max(length(k)) from keys) <= 20, 'keys stay short under random insertion');
select ok(app.grid_key_at(1) < app.grid_key_at(2) collate "C" and app.grid_key_at(61) < app.grid_key_at(62) collate "C"
  and app.grid_key_at(3843) < app.grid_key_at(3844) collate "C", 'the evenly spaced sequence is ordered');

------------------------------------------------------------------------------
-- The grid of a channel: editions by the content routes, placeholders.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('grid.s1', pg_temp.schedule_insta(10)::text, true);
select set_config('grid.s3', pg_temp.schedule_insta(30)::text, true);
select set_config('grid.s2', pg_temp.schedule_insta(20)::text, true);
select set_config('grid.d1', (api.create_content(jsonb_build_object('caption', 'draft',
  'channels', jsonb_build_array(jsonb_build_object('integrationId', pg_temp.id('ig:A1.insta'))))) -> 'editions' -> 0 ->> 'id'), true);
select set_config('grid.p1', api.create_grid_placeholder(pg_temp.id('ig:A1.insta'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.video')), 'note', 'reel idea')) ->> 'id', true);
select set_config('grid.p2', api.create_grid_placeholder(pg_temp.id('ig:A1.insta'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img'), pg_temp.id('media:A1.video')))) ->> 'id', true);


select is(pg_temp.kinds('ig:A1.insta'), 'scheduled,scheduled,scheduled,draft,placeholder,placeholder',
  'scheduled editions, then the draft, then the placeholders');
select is(pg_temp.grid_ids('ig:A1.insta'),
  array[pg_temp.tile_of(pg_temp.v('s1')), pg_temp.tile_of(pg_temp.v('s2')), pg_temp.tile_of(pg_temp.v('s3')),
        pg_temp.tile_of(pg_temp.v('d1')), pg_temp.v('p1'), pg_temp.v('p2')],
  'scheduled tiles in publish order, whatever order they were created in');
select is((api.get_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2')) - 'createdAt' - 'updatedAt' - 'id' - 'integrationId' - 'cover'),
  jsonb_build_object('kind', 'placeholder', 'contentId', null, 'status', null, 'position', 5, 'scheduledAt', null,
    'publishedAt', null, 'permalink', null, 'note', null, 'mediaCount', 2,
    'mediaIds', jsonb_build_array(pg_temp.id('media:A1.img'), pg_temp.id('media:A1.video'))),
  'a placeholder tile');
select is(api.get_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2')) -> 'cover' ->> 'mediaId', pg_temp.id('media:A1.img')::text,
  'the cover defaults to the first media item');
select is(pg_temp.kinds('ig:A1.x'), null, 'another channel''s grid is its own');

-- Pages: a cursor continues where the previous page stopped.
select is((select array_agg((x ->> 'id')::uuid order by (x ->> 'position')::int)
           from jsonb_array_elements(api.get_grid(pg_temp.id('ig:A1.insta'), 4,
             api.get_grid(pg_temp.id('ig:A1.insta'), 2, null) -> 'meta' ->> 'nextCursor') -> 'data') x),
  (pg_temp.grid_ids('ig:A1.insta'))[3:6], 'the second page starts after the first');
select is(api.get_grid(pg_temp.id('ig:A1.insta'), 6, null) -> 'meta' ->> 'nextCursor', null, 'the last page has no next cursor');
select is(api.get_grid(pg_temp.id('ig:A1.insta'), 6, null) -> 'meta' -> 'counts',
  '{"published": 0, "scheduled": 3, "draft": 1, "placeholder": 2}'::jsonb, 'counts by kind');
select is(pg_temp.sqlerr($$select api.get_grid(pg_temp.id('ig:A1.insta'), 10, 'bm90LWEtY3Vyc29y')$$), 'PT400 VALIDATION_FAILED',
  'a cursor that is not ours is refused');
select is(pg_temp.sqlerr($$select api.get_grid(pg_temp.id('ig:A1.insta'), 201, null)$$), 'PT400 VALIDATION_FAILED', 'limit is bounded');

------------------------------------------------------------------------------
-- Moves.
------------------------------------------------------------------------------
select set_config('grid.t1', pg_temp.at(pg_temp.v('s1'))::text, true);
select set_config('grid.t2', pg_temp.at(pg_temp.v('s2'))::text, true);
select set_config('grid.t3', pg_temp.at(pg_temp.v('s3'))::text, true);

-- A placeholder between scheduled tiles: nothing is rescheduled.
select is(api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), 1) -> 'rescheduled', '[]'::jsonb,
  'moving a placeholder reschedules nothing');
select is(pg_temp.kinds('ig:A1.insta'), 'scheduled,placeholder,scheduled,scheduled,draft,placeholder', 'the placeholder moved');
select ok((select count(distinct position_key) = count(*) from app.grid_tiles where integration_id = pg_temp.id('ig:A1.insta')),
  'keys stay distinct');

-- The last scheduled tile to the front: times rotate so feed order = publish order.
select set_config('grid.move', api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s3')), 0)::text, true);
select is((select jsonb_agg(x ->> 'contentId' order by x ->> 'scheduledAt') from jsonb_array_elements(current_setting('grid.move')::jsonb -> 'rescheduled') x),
  jsonb_build_array(pg_temp.v('s3'), pg_temp.v('s1'), pg_temp.v('s2')), 'every edition whose time changed is listed');
select is(array[pg_temp.at(pg_temp.v('s3')), pg_temp.at(pg_temp.v('s1')), pg_temp.at(pg_temp.v('s2'))],
  array[pg_temp.t('t1'), pg_temp.t('t2'), pg_temp.t('t3')], 'the moved tile took the first time, the others shifted');
select pg_temp.act_as_owner();
select is(array[pg_temp.job_start(pg_temp.v('s3')), pg_temp.job_start(pg_temp.v('s1')), pg_temp.job_start(pg_temp.v('s2'))],
  array[pg_temp.t('t1'), pg_temp.t('t2'), pg_temp.t('t3')], 'each publish job follows its edition''s new time');
select is((select count(*)::int from pgboss.job where name = 'content.publish' and state = 'created'
           and singleton_key in (pg_temp.v('s1')::text, pg_temp.v('s2')::text, pg_temp.v('s3')::text)), 3,
  'still one live job per scheduled edition');
select pg_temp.act_as('A.editor', 'A1');
select is((current_setting('grid.move')::jsonb -> 'tile' ->> 'position')::int, 0, 'the answer gives the tile''s new position');
select is(pg_temp.grid_ids('ig:A1.insta'),
  array[pg_temp.tile_of(pg_temp.v('s3')), pg_temp.tile_of(pg_temp.v('s1')), pg_temp.v('p1'), pg_temp.tile_of(pg_temp.v('s2')),
        pg_temp.tile_of(pg_temp.v('d1')), pg_temp.v('p2')], 'the grid in its new order');
select ok((select bool_and(app.grid_in_time_order(t.workspace_id, t.id)) from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
           where i.status = 'scheduled'), 'every scheduled tile agrees with its time');

-- Moving a scheduled tile past the draft (to the end): times rotate the other way.
select is(jsonb_array_length(api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s3')), 5) -> 'rescheduled'), 3,
  'moving the first scheduled tile last retimes all three');
select is(array[pg_temp.at(pg_temp.v('s1')), pg_temp.at(pg_temp.v('s2')), pg_temp.at(pg_temp.v('s3'))],
  array[pg_temp.t('t1'), pg_temp.t('t2'), pg_temp.t('t3')], 'back to the original times');
select is(api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('d1')), 0) -> 'rescheduled', '[]'::jsonb,
  'a draft moves without retiming anything');
select is(api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('d1')), 0) -> 'tile' ->> 'position', '0',
  'moving a tile to where it is changes nothing');
select is(pg_temp.sqlerr($$select api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), 6)$$), 'PT400 VALIDATION_FAILED',
  'a position past the end is refused');
select is(pg_temp.sqlerr($$select api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), -1)$$), 'PT400 VALIDATION_FAILED',
  'a negative position is refused');

-- Content routes: a reschedule places the tile by its new time.
select lives_ok($$select api.schedule_content(pg_temp.v('s1'), now() + interval '40 hours')$$, 'reschedule through the content route');
select ok((select bool_and(app.grid_in_time_order(t.workspace_id, t.id)) from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
           where i.status = 'scheduled'), 'the rescheduled tile moved to agree with its time');
select ok(array_position(pg_temp.grid_ids('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s1')))
        > array_position(pg_temp.grid_ids('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s3'))), 'now after the last scheduled one');
select lives_ok($$select api.revert_content_to_draft(pg_temp.v('s1'), '{}')$$, 'revert to draft');
select ok(pg_temp.tile_of(pg_temp.v('s1')) = any (pg_temp.grid_ids('ig:A1.insta')), 'a reverted edition keeps its tile (a draft now)');
select lives_ok($$select api.delete_content(pg_temp.v('s1'))$$, 'delete through the content route');
select is(pg_temp.tile_of(pg_temp.v('s1')), null, 'a deleted edition leaves the grid');

-- Deferred: within a transaction the tile comes at commit (here: when the constraint is set immediate).
set constraints app.content_items_70_grid_tile deferred;
select set_config('grid.s4', pg_temp.schedule_insta(60)::text, true);
select is(pg_temp.tile_of(pg_temp.v('s4')), null, 'deferred: no tile before commit');
set constraints app.content_items_70_grid_tile immediate;
select ok(pg_temp.tile_of(pg_temp.v('s4')) is not null and app.grid_in_time_order(pg_temp.id('A1'), pg_temp.tile_of(pg_temp.v('s4'))),
  'at commit the edition has its tile, placed by time');

------------------------------------------------------------------------------
-- Published tiles.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.content_items set status = 'sent', sent_at = now() - interval '1 day', permalink = 'https://example.test/p/1'
where id = pg_temp.v('s2');
select pg_temp.act_as('A.editor', 'A1');
select is(split_part(pg_temp.kinds('ig:A1.insta'), ',', 1), 'published', 'a published edition goes to the top');
select is((select position_key from app.grid_tiles where content_item_id = pg_temp.v('s2')), null, 'and has no key');
select is(pg_temp.sqlerr($$select api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s2')), 2)$$),
  'PT400 GRID_TILE_PUBLISHED', 'a published tile cannot move');
select is(pg_temp.sqlerr($$select api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), 0)$$), 'PT400 VALIDATION_FAILED',
  'nothing moves above a published tile');
select is(pg_temp.sqlerr($$select api.update_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s2')),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.video'))))$$), 'PT400 GRID_TILE_PUBLISHED',
  'a published tile keeps its media');

------------------------------------------------------------------------------
-- Swap media, cover, update.
------------------------------------------------------------------------------
select lives_ok($$select api.swap_grid_tile_media(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), pg_temp.tile_of(pg_temp.v('s3')))$$,
  'swap a placeholder''s media with a scheduled edition''s');
select is(app.content_item_media_ids((select workspace_id from app.content_items where id = pg_temp.v('s3')), pg_temp.v('s3'), (select root_id from app.content_items where id = pg_temp.v('s3')), true),
  array[pg_temp.id('media:A1.video')], 'the edition has the placeholder''s media');
select is((select array_agg(media_id) from app.grid_tile_media where tile_id = pg_temp.v('p1')), array[pg_temp.id('media:A1.img')],
  'the placeholder has the edition''s');
select is((select snapshot -> 'effectiveMediaIds' from app.content_versions where content_item_id = pg_temp.v('s3')
           order by version desc limit 1), jsonb_build_array(pg_temp.id('media:A1.video')),
  'the edition''s version records the swapped media');
select is(pg_temp.sqlerr($$select api.swap_grid_tile_media(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'), pg_temp.v('p1'))$$),
  'PT400 VALIDATION_FAILED', 'a tile does not swap with itself');

select is(pg_temp.sqlerr($$select api.set_grid_tile_cover(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'), pg_temp.id('media:A1.huge'), null)$$),
  'PT400 VALIDATION_FAILED', 'the cover is one of the tile''s media');
select is(pg_temp.sqlerr($$select api.set_grid_tile_cover(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'), pg_temp.id('media:A1.img'), 1000)$$),
  'PT400 VALIDATION_FAILED', 'a frame time needs a video');
select is((api.set_grid_tile_cover(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'), pg_temp.id('media:A1.video'), 1500) -> 'cover')
  - 'storageKey' - 'contentType' - 'filename',
  jsonb_build_object('mediaId', pg_temp.id('media:A1.video'), 'type', 'video', 'frameAtMs', 1500), 'a video frame as the cover');
select is(api.update_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'),
  jsonb_build_object('note', 'carousel', 'mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')))) -> 'cover' ->> 'mediaId',
  pg_temp.id('media:A1.img')::text, 'a cover whose media left the tile falls back to the first media');
select is(pg_temp.sqlerr($$select api.update_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img'), pg_temp.id('media:A1.img'))))$$),
  'PT400 VALIDATION_FAILED', 'a media item listed twice is refused');

------------------------------------------------------------------------------
-- Promote and delete.
------------------------------------------------------------------------------
select is(pg_temp.sqlerr($$select api.promote_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'),
  jsonb_build_object('scheduledAt', now() - interval '1 hour'))$$), 'PT400 VALIDATION_FAILED', 'a past time is refused like any schedule');
select is(pg_temp.sqlerr($$select api.promote_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('s3')),
  jsonb_build_object('scheduledAt', now() + interval '1 day'))$$), 'PT400 GRID_TILE_NOT_PLACEHOLDER', 'only placeholders are promoted');
select set_config('grid.promote', api.promote_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'),
  jsonb_build_object('scheduledAt', now() + interval '5 hours'))::text, true);
select is(current_setting('grid.promote')::jsonb -> 'tile' ->> 'id', pg_temp.v('p2')::text, 'the placeholder becomes the edition''s tile');
select is(current_setting('grid.promote')::jsonb -> 'tile' ->> 'kind', 'scheduled', 'a scheduled tile');
select is((select status || ' ' || coalesce(r.caption, '') from app.content_items i join app.content_roots r on r.id = i.root_id
           where i.id = (current_setting('grid.promote')::jsonb -> 'tile' ->> 'contentId')::uuid), 'scheduled carousel',
  'the edition is scheduled with the note as caption');
select pg_temp.act_as_owner();
select ok(pg_temp.job_start((current_setting('grid.promote')::jsonb -> 'tile' ->> 'contentId')::uuid) is not null, 'with its publish job');
select pg_temp.act_as('A.editor', 'A1');
select ok(app.grid_in_time_order(pg_temp.id('A1'), pg_temp.v('p2')), 'placed by its time among the scheduled tiles');
select is(pg_temp.sqlerr($$select api.delete_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p2'))$$), 'PT400 GRID_TILE_NOT_PLACEHOLDER',
  'an edition tile is not deleted here');
select lives_ok($$select api.delete_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.v('p1'))$$, 'a placeholder is deleted');

-- Keys of both cases and digits in the planned part of the grid.
select pg_temp.act_as('A.editor', 'A1');
select set_config('grid.p9', api.create_grid_placeholder(pg_temp.id('ig:A1.insta'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')), 'position', 1)) ->> 'id', true);
select set_config('grid.p10', api.create_grid_placeholder(pg_temp.id('ig:A1.insta'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')))) ->> 'id', true);
select ok((select bool_or(position_key ~ '[A-Z]') and bool_or(position_key ~ '[a-z]') from app.grid_tiles
           where integration_id = pg_temp.id('ig:A1.insta')), 'the grid holds upper- and lower-case keys');
select is(pg_temp.walk('ig:A1.insta'), pg_temp.grid_ids('ig:A1.insta'), 'pages of one tile walk the whole grid in order');

-- Keys stay short: 300 insertions at one spot renumber the grid once it needs it, order kept.
select pg_temp.act_as('A.editor', 'A1');
do $$
declare
  i int;
begin
  insert into inserted values (0, (api.create_grid_placeholder(pg_temp.id('ig:A1.x'),
    jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')))) ->> 'id')::uuid);
  insert into inserted values (-1, (api.create_grid_placeholder(pg_temp.id('ig:A1.x'),
    jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')))) ->> 'id')::uuid);
  for i in 1..300 loop
    insert into inserted values (i, (api.create_grid_placeholder(pg_temp.id('ig:A1.x'),
      jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img')), 'position', 1)) ->> 'id')::uuid);
  end loop;
end
$$;
select ok((select count(*) from app.grid_tiles where integration_id = pg_temp.id('ig:A1.x') and length(position_key) = 5) > 100,
  'the grid was renumbered on the way (evenly spaced five-character keys)');
select ok((select max(length(position_key)) from app.grid_tiles where integration_id = pg_temp.id('ig:A1.x')) <= 48,
  'no key longer than 48 characters after 300 insertions at one spot');
select ok(pg_temp.walk('ig:A1.x')
  = array(select id from inserted order by case when n = 0 then -1000 when n = -1 then 1000 else -n end),
  'the order survived the renumbering: the first tile, the newest insertions first, the last tile');

------------------------------------------------------------------------------
-- Roles, tenants, platforms, the unique key.
------------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr($$select api.get_grid(pg_temp.id('ig:A1.insta'), 10, null)$$), 'ok', 'a viewer reads the grid');
select is(pg_temp.sqlerr($$select api.create_grid_placeholder(pg_temp.id('ig:A1.insta'),
  jsonb_build_object('mediaIds', jsonb_build_array(pg_temp.id('media:A1.img'))))$$), 'PT403 ROLE_REQUIRED', 'a viewer cannot add tiles');
select is(pg_temp.sqlerr($$select api.move_grid_tile(pg_temp.id('ig:A1.insta'), pg_temp.tile_of(pg_temp.v('d1')), 2)$$),
  'PT403 ROLE_REQUIRED', 'nor move them');
select is(pg_temp.write_outcome($$update app.grid_tiles set note = 'x'$$), '42501', 'nor write tiles directly (row-level security)');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.sqlerr($$select api.get_grid(pg_temp.id('ig:A1.insta'), 10, null)$$), 'PT404 NOT_FOUND',
  'another organization''s channel is not found');
select is((select count(*)::int from app.grid_tiles), 0, 'nor are its tiles visible');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.get_grid(pg_temp.id('ig:A1.li'), 10, null)$$), 'PT400 GRID_NOT_SUPPORTED',
  'a platform without a feed grid');
select pg_temp.act_as_owner();
select throws_ok(format($$update app.grid_tiles set position_key = (select position_key from app.grid_tiles where id = %L) where id = %L$$,
  pg_temp.tile_of(pg_temp.v('d1')), pg_temp.tile_of(pg_temp.v('s3'))), '23505', null, 'two tiles never share a position');

-- 000057: the workspace's grid writes lock its row of app.grid_locks (a workspace table, on the
-- workspace's shard on a cluster), made on first use; one row per workspace.
select pg_temp.act_as_owner();
select is((select array_agg(workspace_id order by workspace_id) from app.grid_locks where workspace_id = pg_temp.id('A1')),
  array[pg_temp.id('A1')], 'A1''s grid writes made and locked its one row of app.grid_locks');
select ok(not exists (select 1 from pg_proc where oid = to_regprocedure('app.grid_lock(uuid)')),
  'the lock by channel (a row of app.workspaces, a reference table on a cluster) is gone');

select * from finish();
rollback;
