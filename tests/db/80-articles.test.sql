-- Article rules in the database: creation through api.create_article (editor
-- only, channels that publish articles), the media rules of inline images and
-- cover (still image, at most 5 MB, active, same workspace), the body version
-- counter and 409 POST_BODY_CHANGED, edits of drafts only (the API and direct
-- writes), the image list following the body, and the personas (editor can,
-- viewer reads, stranger and other organization see nothing).
begin;
select plan(42);



-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- Channels (integrations) of A1 and B1 and media of A1:
-- @include content.sql

-- ---------------------------------------------------------------------------
-- Article fixture: more media of A1 and B1.
-- ---------------------------------------------------------------------------
insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key)
select pg_temp.id(label), pg_temp.id(org), pg_temp.id(ws), type, label, ct, size, label
from (values ('media:A1.gif', 'A', 'A1', 'gif', 'image/gif', 1000), ('media:A1.edge', 'A', 'A1', 'image', 'image/png', 5242880),
             ('media:A1.over', 'A', 'A1', 'image', 'image/png', 5242881), ('media:B1.img', 'B', 'B1', 'image', 'image/png', 1000))
  m (label, org, ws, type, ct, size);

create function pg_temp.img(p_label text) returns text
language sql immutable as $$ select format('<img data-media-id="%s" />', pg_temp.id(p_label)) $$;

-- Codes of the VALIDATION_FAILED entries a statement raises, sorted ('field:code,...').
create function pg_temp.problems(p_sql text) returns text
language plpgsql as $$
declare
  v_hint text;
begin
  execute p_sql;
  return 'ok';
exception when others then
  get stacked diagnostics v_hint = pg_exception_hint;
  return (select string_agg((e ->> 'field') || ':' || (e ->> 'code'), ',' order by (e ->> 'field') || ':' || (e ->> 'code'))
          from jsonb_array_elements(v_hint::jsonb -> 'fields') e);
end
$$;

-- ---------------------------------------------------------------------------
-- Creation
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.article', api.create_article(jsonb_build_object('integrationId', pg_temp.id('ig:A1.x'), 'title', 'First',
  'bodyHtml', '<p>Hi</p>' || pg_temp.img('media:A1.img') || pg_temp.img('media:A1.edge'), 'characterCount', 2,
  'coverMediaId', pg_temp.id('media:A1.img'))) ->> 'contentId', false);
select is((select status || '/' || kind from app.content_items where id = current_setting('test.article')::uuid), 'draft/article',
  'an article is a draft content item of kind article');
select is((select body_version from app.articles where content_item_id = current_setting('test.article')::uuid), 1, 'body_version starts at 1');
select is((select array_agg(media_id order by position) from app.article_images where content_item_id = current_setting('test.article')::uuid),
  array[pg_temp.id('media:A1.img'), pg_temp.id('media:A1.edge')], 'the image list follows the body, in body order');
select is((select title from app.content_roots r join app.content_items i on i.root_id = r.id where i.id = current_setting('test.article')::uuid),
  'First', 'the root carries the article title');
select is((api.get_article(current_setting('test.article')::uuid) #>> '{article,bodyVersion}'), '1', 'get_article answers the detail');

select is(pg_temp.problems($$select api.create_article(jsonb_build_object('integrationId', pg_temp.id('ig:A1.li'), 'title', 'T'))$$),
  'integrationId:articles_not_supported', 'a LinkedIn channel cannot take articles');
select is(pg_temp.problems($$select api.create_article(jsonb_build_object('integrationId', pg_temp.id('ig:B1.x'), 'title', 'T'))$$),
  'integrationId:integration_not_found', 'another organization''s channel is unknown');
select is(pg_temp.problems($$select api.create_article(jsonb_build_object('integrationId', pg_temp.id('ig:A1.x'), 'title', 'T',
  'bodyHtml', pg_temp.img('media:A1.gif') || pg_temp.img('media:A1.video') || pg_temp.img('media:A1.over') || pg_temp.img('media:B1.img')
    || '<img />', 'coverMediaId', pg_temp.id('media:A1.huge')))$$),
  'bodyHtml.images.0:media_not_still_image,bodyHtml.images.1:media_not_still_image,bodyHtml.images.2:media_too_large,'
  || 'bodyHtml.images.3:media_not_found,bodyHtml.images.4:media_id_required,coverMediaId:media_too_large',
  'every media problem is one entry');
select is(pg_temp.problems(format($$select api.create_article(jsonb_build_object('integrationId', %L::uuid, 'title', 'T', 'bodyHtml', %L))$$,
  pg_temp.id('ig:A1.x'), repeat(pg_temp.img('media:A1.img'), 21))), 'bodyHtml:too_many_images', 'at most 20 images');

-- Direct writes hold the same rules.
select is(pg_temp.sqlerr(format($$update app.articles set cover_media_id = %L where content_item_id = %L$$,
  pg_temp.id('media:A1.gif'), current_setting('test.article')::uuid)), 'PT400 VALIDATION_FAILED', 'a GIF cover is refused on a direct write');
select is(pg_temp.sqlerr(format($$update app.articles set body_html = %L where content_item_id = %L$$,
  pg_temp.img('media:A1.video'), current_setting('test.article')::uuid)), 'PT400 VALIDATION_FAILED', 'a video in the body is refused on a direct write');
select is(pg_temp.sqlerr(format($$update app.articles set character_count = 100001 where content_item_id = %L$$,
  current_setting('test.article')::uuid)), '23514', 'at most 100,000 characters of text');
select is(pg_temp.sqlerr(format($$update app.articles set title = '' where content_item_id = %L$$,
  current_setting('test.article')::uuid)), '23514', 'a title has at least one character');
select is(pg_temp.sqlerr(format($$update app.articles set title = %L where content_item_id = %L$$, repeat('t', 201),
  current_setting('test.article')::uuid)), '23514', 'a title has at most 200 characters');
select is(pg_temp.sqlerr(format($$insert into app.article_images (content_item_id, position, media_id, organization_id, workspace_id)
  values (%L, 5, %L, %L, %L)$$, current_setting('test.article')::uuid, pg_temp.id('media:A1.gif'), pg_temp.id('A'), pg_temp.id('A1'))),
  'PT400 VALIDATION_FAILED', 'the image list takes still images only');

-- ---------------------------------------------------------------------------
-- Body versions
-- ---------------------------------------------------------------------------
select is(pg_temp.sqlerr(format($$select api.update_article(%L, '{"bodyHtml": "<p>x</p>", "expectedBodyVersion": "7"}')$$,
  current_setting('test.article')::uuid)), 'PT409 POST_BODY_CHANGED', 'a stale expectedBodyVersion is 409 POST_BODY_CHANGED');
select is(pg_temp.problems(format($$select api.update_article(%L, '{"bodyHtml": "<p>x</p>"}')$$, current_setting('test.article')::uuid)),
  'expectedBodyVersion:required', 'a body replacement needs expectedBodyVersion');
select is((api.update_article(current_setting('test.article')::uuid, '{"bodyHtml": "<p>New</p>", "expectedBodyVersion": "1", "characterCount": 3}')
  #>> '{article,bodyVersion}'), '2', 'a body change bumps the version');
select is((select count(*)::int from app.article_images where content_item_id = current_setting('test.article')::uuid), 0,
  'the image list follows the new body');
select is(pg_temp.sqlerr(format($$update app.articles set body_version = 40 where content_item_id = %L$$,
  current_setting('test.article')::uuid)), '42501', 'the request role may not write body_version');
select pg_temp.act_as_owner();
update app.articles set title = 'Renamed', body_version = 40 where content_item_id = current_setting('test.article')::uuid;
select is((select body_version from app.articles where content_item_id = current_setting('test.article')::uuid), 2,
  'a title change keeps the version, and nobody sets it by hand');
update app.articles set body_html = '<p>Direct</p>' where content_item_id = current_setting('test.article')::uuid;
select is((select body_version from app.articles where content_item_id = current_setting('test.article')::uuid), 3,
  'a direct body change bumps the version too');
select pg_temp.act_as('A.editor', 'A1');

-- ---------------------------------------------------------------------------
-- Draft only
-- ---------------------------------------------------------------------------
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = current_setting('test.article')::uuid;
select is((api.get_article(current_setting('test.article')::uuid) #>> '{article,editable}'), 'false', 'a scheduled article is not editable');
select is(pg_temp.sqlerr(format($$select api.update_article(%L, '{"title": "No"}')$$, current_setting('test.article')::uuid)),
  'PT400 INVALID_CONTENT_STATUS', 'the API edits drafts only');
select is(pg_temp.sqlerr(format($$update app.articles set title = 'No' where content_item_id = %L$$, current_setting('test.article')::uuid)),
  'PT400 INVALID_CONTENT_STATUS', 'a direct edit of a scheduled article is refused');
select is(pg_temp.sqlerr(format($$update app.articles set body_html = '<p>No</p>' where content_item_id = %L$$, current_setting('test.article')::uuid)),
  'PT400 INVALID_CONTENT_STATUS', 'a direct body edit of a scheduled article is refused');
select is(pg_temp.sqlerr(format($$update app.articles set platform_draft_article_id = 'd1' where content_item_id = %L$$, current_setting('test.article')::uuid)),
  'ok', 'recording a platform draft is not an edit');
update app.content_items set status = 'draft' where id = current_setting('test.article')::uuid;
select is((api.update_article(current_setting('test.article')::uuid, '{"title": "Back"}') #>> '{article,title}'), 'Back', 'a draft again is editable');

-- ---------------------------------------------------------------------------
-- Personas
-- ---------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is((api.list_articles(25, 0) #>> '{pagination,total}'), '1', 'a viewer lists the articles');
select is(pg_temp.sqlerr(format($$select api.update_article(%L, '{"title": "V"}')$$, current_setting('test.article')::uuid)),
  'PT403 ROLE_REQUIRED', 'a viewer may not edit');
select is(pg_temp.sqlerr($$select api.create_article(jsonb_build_object('integrationId', pg_temp.id('ig:A1.x'), 'title', 'V'))$$),
  'PT403 ROLE_REQUIRED', 'a viewer may not create');
select is(pg_temp.write_outcome(format($$update app.articles set title = 'V' where content_item_id = %L$$, current_setting('test.article')::uuid)),
  '42501', 'a viewer''s direct write is refused by row-level security');
select is(pg_temp.sqlerr(format($$select api.begin_article_platform_draft(%L)$$, current_setting('test.article')::uuid)),
  'PT403 ROLE_REQUIRED', 'a viewer may not send platform drafts');
select is(pg_temp.sqlerr(format($$select app.article_integration_ref(%L)$$, current_setting('test.article')::uuid)),
  'PT403 ROLE_REQUIRED', 'a viewer may not read the channel secret');
select pg_temp.act_as('A.stranger', 'A1');
select is(pg_temp.sqlerr(format($$select api.get_article(%L)$$, current_setting('test.article')::uuid)), 'PT403 ROLE_REQUIRED',
  'a stranger to the workspace is refused');
select is((select count(*)::int from app.articles), 0, 'a stranger sees no article rows, even with a forged context');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.sqlerr(format($$select api.get_article(%L)$$, current_setting('test.article')::uuid)), 'PT404 NOT_FOUND',
  'another organization''s editor finds nothing');
select is((select count(*)::int from app.articles) + (select count(*)::int from app.article_images), 0,
  'another organization sees no article rows');
select is(pg_temp.sqlerr(format($$select app.article_integration_ref(%L)$$, current_setting('test.article')::uuid)), 'PT404 NOT_FOUND',
  'the secret-reading helper stays in the caller''s workspace');
select pg_temp.act_as('key:A1', 'A1');
select is((api.get_article(current_setting('test.article')::uuid) #>> '{article,title}'), 'Back', 'an editor key reads the article');
select ok((app.article_integration_ref(current_setting('test.article')::uuid) ? 'webhookSecret'), 'an editor gets the channel for the connector');
select pg_temp.act_as('key:A1.revoked', 'A1');
select is((select count(*)::int from app.articles), 0, 'a revoked key sees nothing');

select pg_temp.act_as_owner();
select * from finish();
rollback;
