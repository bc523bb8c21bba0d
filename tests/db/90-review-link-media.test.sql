-- What a client reviewer's link reads (db/migrations/committed/000033-review-link-media.sql):
-- api.review_link_get answers each item's media with alt text, dimensions
-- and the storage key the route signs (app.review_link_media_json), and each
-- thread message with its own media, in order; media of another item or
-- workspace never appear.
begin;
select plan(9);

-- @include personas.sql
-- @include content.sql

create function pg_temp.media(p_label text, p_alt text, p_type text default 'image') returns uuid
language plpgsql as $$
begin
  insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key, alt_text, width, height)
  values (pg_temp.id('m:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), p_type, p_label || case when p_type = 'video' then '.mp4' else '.png' end,
          case when p_type = 'video' then 'video/mp4' else 'image/png' end, 1000, 'media/' || p_label, p_alt, 640, 480);
  return pg_temp.id('m:' || p_label);
end
$$;
select pg_temp.media('cover', 'A canvas bag on a table');
select pg_temp.media('second', null);
select pg_temp.media('reply', 'The bag in blue');
select pg_temp.media('clip', null, 'video');
select pg_temp.media('other', 'Not in this review');

-- A root with two media, an X edition with a thread of two messages (the first with media).
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root:c1'), pg_temp.id('A'), pg_temp.id('A1'), 'Spring is here');
insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
values (pg_temp.id('root:c1'), pg_temp.id('m:cover'), pg_temp.id('A1'), pg_temp.id('A'), 0),
       (pg_temp.id('root:c1'), pg_temp.id('m:second'), pg_temp.id('A1'), pg_temp.id('A'), 1);
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, thread)
values (pg_temp.id('c1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:c1'), pg_temp.id('ig:A1.x'), 'draft',
        jsonb_build_array(jsonb_build_object('caption', 'Part two', 'mediaIds', jsonb_build_array(pg_temp.id('m:reply'), pg_temp.id('m:clip'))),
                          jsonb_build_object('caption', 'Part three')));

select pg_temp.act_as('A.editor', 'A1');
select set_config('test.review', api.create_review(jsonb_build_object('title', 'R', 'contentIds', jsonb_build_array(pg_temp.id('c1')),
  'stages', jsonb_build_array(jsonb_build_object('name', 'S', 'rule', 'any', 'approvers', jsonb_build_array(
    jsonb_build_object('type', 'client', 'email', 'client@example.test', 'name', 'Clara')))))) ->> 'id', true);
select api.send_review(current_setting('test.review')::uuid);

-- The client reviewer persona (as the pipeline sets it after api.gate_review_link).
reset role;
select set_config('pressroom.actor_kind', 'review_link', true), set_config('pressroom.user_id', '', true),
       set_config('pressroom.api_key_id', '', true),
       set_config('pressroom.review_link_id', (select id from app.review_links where review_id = current_setting('test.review')::uuid)::text, true),
       set_config('pressroom.organization_id', pg_temp.id('A')::text, true), set_config('pressroom.workspace_id', pg_temp.id('A1')::text, true),
       set_config('pressroom.workspace_role', '', true);
set local role pressroom_request;
select set_config('test.view', api.review_link_get()::text, true);
reset role;

create function pg_temp.item() returns jsonb language sql as $$ select current_setting('test.view')::jsonb #> '{items,0}' $$;

select is(jsonb_array_length(pg_temp.item() -> 'media'), 2, 'the item has the root''s two media');
select is(pg_temp.item() #> '{media,0}', jsonb_build_object('id', pg_temp.id('m:cover'), 'type', 'image', 'contentType', 'image/png',
  'filename', 'cover.png', 'altText', 'A canvas bag on a table', 'width', 640, 'height', 480, 'durationMs', null, 'storageKey', 'media/cover'),
  'a media: type, file, alt text, dimensions and the storage key the route signs');
select is(pg_temp.item() #>> '{media,1,altText}', null, 'a media without alt text says null');
select is(jsonb_array_length(pg_temp.item() -> 'thread'), 2, 'both thread messages');
select is(pg_temp.item() #>> '{thread,0,caption}', 'Part two', 'a thread message''s text');
select is((select array_agg(m ->> 'filename' order by n) from jsonb_array_elements(pg_temp.item() #> '{thread,0,media}') with ordinality x (m, n)),
  array['reply.png', 'clip.mp4'], 'a thread message''s media, in order, with their files');
select is(pg_temp.item() #>> '{thread,0,media,0,altText}', 'The bag in blue', '... and their alt text');
select is(pg_temp.item() #> '{thread,1}', '{"caption": "Part three", "media": []}'::jsonb, 'a message without media has an empty list, no ids');
select ok(position(pg_temp.id('m:other')::text in current_setting('test.view')) = 0, 'a media of the workspace outside the review is not there');

select * from finish();
rollback;
