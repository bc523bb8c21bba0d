-- What the engine's batch record does around a sent edition
-- (db/migrations/committed/000024-publish-record-lighter.sql): the freeze at send
-- records no version of its own, grid tiles of a batch are placed in one pass
-- (app.grid_mark_sent) as the deferred grid trigger places them one by one,
-- and the engine's own rows (attempts, publishing states, sandbox posts) keep
-- their edition's or channel's organization and workspace, and go with them.
begin;
select plan(21);
-- @include personas.sql
-- @include content.sql

set constraints app.content_items_70_grid_tile immediate;

-- Editions due in an hour, their jobs fetched: pg_temp.due of tests/db/support/due.sql.
-- @include due.sql
-- Claims the editions as the worker; returns each edition's attempt id.
create function pg_temp.claim(p_labels text[]) returns table (label text, attempt_id uuid)
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.publish_claim_batch((select jsonb_agg(jsonb_build_object('jobId', i.publish_job_id, 'contentId', i.id, 'workspaceId', i.workspace_id))
                                from unnest(p_labels) l join app.content_items i on i.id = pg_temp.id(l)), '{sandbox}');
  reset role;
  return query select l, (c ->> 'attemptId')::uuid
    from unnest(p_labels) l join jsonb_array_elements(v -> 'claims') c on (c ->> 'contentId')::uuid = pg_temp.id(l);
end
$$;
create function pg_temp.published(p_attempts uuid[]) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.publish_record_batch((select jsonb_agg(jsonb_build_object('attemptId', a, 'outcome', 'published', 'error', null,
         'platformPostId', 'post-' || a, 'permalink', 'https://example.test/' || a,
         'workspaceId', (select x.workspace_id from app.publish_attempts x where x.id = a))) from unnest(p_attempts) a));
  reset role;
  return v;
end
$$;
create function pg_temp.tile_key(p_label text) returns text
language sql as $$ select coalesce(position_key, '(none)') from app.grid_tiles where content_item_id = pg_temp.id(p_label) $$;
create function pg_temp.versions(p_label text) returns int
language sql as $$ select count(*)::int from app.content_versions where content_item_id = pg_temp.id(p_label) $$;

select pg_temp.due('s1', 'ig:A1.x', p_at => now() + interval '1 hour'),
       pg_temp.due('s2', 'ig:A1.x', 'its own caption', now() + interval '1 hour'),
       pg_temp.due('s3', 'ig:A1.li', p_at => now() + interval '1 hour'), pg_temp.due('s4', 'ig:A1.x', p_at => now() + interval '1 hour');
-- s2 lost its tile (an edition written before the grid existed): the send gives it a published one.
delete from app.grid_tiles where content_item_id = pg_temp.id('s2');

select isnt(pg_temp.tile_key('s1'), null, 'a scheduled X edition has a tile with a position key');
select is(pg_temp.tile_key('s3'), null, 'a LinkedIn edition has no tile (not a feed-grid platform)');
create temp table before_send as select pg_temp.versions('s1') v1, pg_temp.versions('s2') v2;

create temp table att as select * from pg_temp.claim(array['s1', 's2', 's3', 's4']);
select is((select count(*)::int from att where attempt_id is not null), 4, 'the four editions are claimed');
select is((select jsonb_agg(x ->> 'status') from jsonb_array_elements(pg_temp.published(
             (select array_agg(attempt_id) from att where label in ('s1', 's2', 's3')))) x),
          '["sent", "sent", "sent"]'::jsonb, 'a batch of three published outcomes is recorded together');
select is(current_setting('pressroom.grid_sent_batch', true) is distinct from 'on', true,
  'the switch that lets the grid trigger skip the batch''s rows is off again after the record');

-- Grid tiles of the batch.
select is(pg_temp.tile_key('s1'), '(none)', 'a sent edition''s tile loses its position key (published tiles sort by sent_at)');
select is(pg_temp.tile_key('s2'), '(none)', 'a sent edition without a tile gets a published one');
select is((select integration_id from app.grid_tiles where content_item_id = pg_temp.id('s2')), pg_temp.id('ig:A1.x'),
  '... on its channel');
select is(pg_temp.tile_key('s3'), null, 'a sent edition of a channel without a grid still has no tile');
set constraints app.content_items_70_grid_tile deferred;
set constraints app.content_items_70_grid_tile immediate;
select is((select count(*)::int from app.grid_tiles where content_item_id in (pg_temp.id('s1'), pg_temp.id('s2'))), 2,
  'the deferred grid trigger left the batch''s tiles as they are (one each)');

-- An outcome recorded by app.publish_record (one edition) keeps the deferred grid trigger.
create function pg_temp.record_one(p_attempt uuid) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.publish_record((select x.workspace_id from app.publish_attempts x where x.id = p_attempt), p_attempt, 'published', null, 'post-s4', null);
  reset role;
  return v;
end
$$;
select is(pg_temp.record_one((select attempt_id from att where label = 's4')) ->> 'status', 'sent',
  'one outcome through app.publish_record');
select is(pg_temp.tile_key('s4'), '(none)', '... and its tile is published by the grid trigger');

-- The freeze at send: what was published stays, and no version is written for it.
select is((select caption from app.content_items where id = pg_temp.id('s1')), 'hello s1',
  'an edition without a caption of its own keeps its root''s caption once sent');
select is((select own_media from app.content_items where id = pg_temp.id('s1')), true, '... and its media as its own');
select is(pg_temp.versions('s1'), (select v1 from before_send), 'the freeze at send writes no version (the content is unchanged)');
select is(pg_temp.versions('s2'), (select v2 from before_send), '... nor for an edition with its own caption');
select throws_ok($$update app.content_items set caption = 'edited' where id = pg_temp.id('s3')$$, 'PT400', null,
  'a sent edition''s caption cannot change (the status machine), so no version is missed');

-- The engine's rows carry their edition's organization and workspace, and go with it.
create function pg_temp.sandbox(p_posts jsonb) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  set local role pressroom_worker;
  v := app.sandbox_receive_posts(p_posts);
  reset role;
  return v;
end
$$;
select pg_temp.sandbox(jsonb_build_array(jsonb_build_object('integrationId', pg_temp.id('ig:A1.li'), 'token', 'tok-s3',
  'contentId', pg_temp.id('s3'), 'platformPostId', 'p1', 'permalink', null, 'caption', 'hello s3', 'payload', '{}'::jsonb)));
select is((select count(*)::int from app.publish_attempts a join app.content_items i on i.id = a.content_item_id
           where i.id in (pg_temp.id('s1'), pg_temp.id('s2'), pg_temp.id('s3'), pg_temp.id('s4'))
             and a.organization_id = i.organization_id and a.workspace_id = i.workspace_id), 4,
  'attempts carry their edition''s organization and workspace');
select is((select count(*)::int from app.publishing_states s join app.content_items i on i.id = s.content_item_id
           where i.id in (pg_temp.id('s1'), pg_temp.id('s2'), pg_temp.id('s3'), pg_temp.id('s4'))
             and s.organization_id = i.organization_id and s.workspace_id = i.workspace_id), 4,
  'publishing states too');
select is((select count(*)::int from app.sandbox_posts p join app.integrations g on g.id = p.integration_id
           where p.idempotency_token = 'tok-s3' and p.organization_id = g.organization_id and p.workspace_id = g.workspace_id), 1,
  'a sandbox post carries its channel''s organization and workspace');
delete from app.content_items where id in (pg_temp.id('s1'), pg_temp.id('s2'), pg_temp.id('s3'), pg_temp.id('s4'));
delete from app.integrations where id = pg_temp.id('ig:A1.li');
select is((select count(*)::int from app.publish_attempts where organization_id = pg_temp.id('A'))
        + (select count(*)::int from app.publishing_states where organization_id = pg_temp.id('A'))
        + (select count(*)::int from app.sandbox_posts where organization_id = pg_temp.id('A')), 0,
  'deleting the editions and the channel deletes their attempts, publishing states and sandbox posts');

select * from finish();
rollback;
